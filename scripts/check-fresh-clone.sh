#!/usr/bin/env bash
# The suite as a clone outside the workspace sees it: no ../shared beside it. Every test must still
# be collected (a test that needs ../shared skips with its `realworld:` reason at run time); any
# collection error fails. CI runs this after `make test` (.ci/run).
#
# The clone reuses this checkout's interpreter and packages (.venv) with its own src first on the
# path, so what is checked is the clone's code; its C extension is built in place in the clone
# (as `make env` does), without touching the network.
set -euo pipefail
cd "$(dirname "$0")/.."
here="$PWD"
py="$here/.venv/bin/python"
[ -x "$py" ] || { echo "check-fresh-clone: run make env first (no $py)" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git clone --quiet "$here" "$tmp/clone"
cd "$tmp/clone"
[ ! -e ../shared ] || { echo "check-fresh-clone: $tmp/shared exists" >&2; exit 2; }
"$py" - <<'PY' >/dev/null 2>&1
from setuptools import Distribution, Extension
from setuptools.command.build_ext import build_ext

ext = Extension("logdoctor.formats._speedups", ["src/logdoctor/formats/_speedups.c"])
cmd = build_ext(Distribution({"ext_modules": [ext], "package_dir": {"": "src"}}))
cmd.inplace = True
cmd.ensure_finalized()
cmd.run()
PY
ls src/logdoctor/formats/_speedups*.so >/dev/null
out="$tmp/collect.txt"
set +e
PYTHONPATH="$tmp/clone/src" CI= "$py" -m pytest --collect-only -q -p no:cacheprovider >"$out" 2>&1
rc=$?
set -e
tail -3 "$out"
if [ $rc -ne 0 ] || grep -q "error" <(tail -1 "$out"); then
    echo "check-fresh-clone: collection failed in a clone without ../shared (exit $rc):" >&2
    grep -A15 "ERRORS\|Error" "$out" | head -40 >&2
    exit 1
fi
# the code under test must be the clone's, not this checkout's
PYTHONPATH="$tmp/clone/src" "$py" -c "import logdoctor, sys; sys.exit(0 if logdoctor.__file__.startswith('$tmp/clone/') else 1)" \
    || { echo "check-fresh-clone: the clone's src was not the one imported" >&2; exit 1; }
echo "check-fresh-clone: every test collected in a clone without ../shared"
