#!/usr/bin/env bash
# ASan + UBSan over the C extension (docs/reliability.md; `make asan-check`, CI runs it after
# `make test`). The extension is built once with -fsanitize=address,undefined in a temporary copy
# of src/ (this checkout's files as they are, uncommitted changes included; its own .so is never
# touched), then the format tests and the fuzz suite (tests/formats tests/fuzz, FUZZ_EXAMPLES as
# set, 300 by default; but the modules of tests/asan_pure_python.txt, which never call it) run
# against it with libasan preloaded into this checkout's Python (.venv).
# Any sanitizer report fails the run, whichever process wrote it (reports go to log files, printed
# at the end): so does a failing test.
#
# usage: scripts/asan-check.sh [PYTHON [PYTEST ARGS...]]
#   PYTHON defaults to .venv/bin/python; PYTEST ARGS to tests/formats tests/fuzz.
#
# The build differs from the normal one (setuptools, Python's CFLAGS) only in: the sanitizers,
# frame pointers, and -fno-wrapv. Python compiles extensions with -fwrapv (signed overflow wraps),
# which also turns off gcc's signed-integer-overflow check; without it, UBSan reports every signed
# overflow: the code must never rely on one. PYTHONMALLOC=malloc sends Python's own small objects
# through malloc too, so that a read past a bytes object is a heap-buffer-overflow, not a silent read
# inside a pymalloc arena.
set -euo pipefail
cd "$(dirname "$0")/.."
here="$PWD"
py="${1:-$here/.venv/bin/python}"
shift || true
[ $# -gt 0 ] || set -- tests/formats tests/fuzz
[ -x "$py" ] || { echo "asan-check: run make env first (no $py)" >&2; exit 2; }
libasan="$(gcc -print-file-name=libasan.so)"
[ -e "$libasan" ] || { echo "asan-check: gcc has no libasan.so (install libasan for gcc $(gcc -dumpversion))" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/tree" "$tmp/logs"
cp -r src "$tmp/tree/src"
find "$tmp/tree/src" \( -name '*.so' -o -name '*.pyc' \) -delete
(
    cd "$tmp/tree"
    "$py" - <<'PY'
from setuptools import Distribution, Extension
from setuptools.command.build_ext import build_ext

san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-wrapv", "-g"]
ext = Extension("logdoctor.formats._speedups", ["src/logdoctor/formats/_speedups.c"],
                extra_compile_args=san, extra_link_args=["-fsanitize=address,undefined"])
cmd = build_ext(Distribution({"ext_modules": [ext], "package_dir": {"": "src"}}))
cmd.inplace = True
cmd.ensure_finalized()
cmd.run()
PY
) >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log" >&2; echo "asan-check: the sanitized build failed" >&2; exit 1; }
so=$(ls "$tmp"/tree/src/logdoctor/formats/_speedups*.so)
# grep -c reads all of nm's output: grep -q exits at the first match, nm's next write then dies of
# SIGPIPE, and pipefail makes that "not instrumented" (CI failed so once)
nm -D "$so" | grep -c __asan_report >/dev/null || { echo "asan-check: $so is not instrumented" >&2; exit 1; }

export PYTHONPATH="$tmp/tree/src"
export LD_PRELOAD="$libasan"
export PYTHONMALLOC=malloc
export LOGDOCTOR_SANITIZED=1  # tests that bound a run time keep only their result checks
export ASAN_OPTIONS="detect_leaks=0:log_path=$tmp/logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$tmp/logs/ubsan"
# the code under test must be the sanitized copy, with the extension loaded (not the pure-Python twins)
"$py" -c "
import sys
from logdoctor.formats import _speedups, native
sys.exit(0 if _speedups.__file__.startswith('$tmp/') and native.HAVE_SPEEDUPS else 1)
" || { echo "asan-check: the sanitized extension was not the one imported" >&2; exit 1; }

# the modules that never call the extension (tests/asan_pure_python.txt, scripts/c_reach.py) are make
# test's alone: a sanitized extension they never call reports nothing of them
ignore=()
while read -r module _; do
    case "$module" in ''|'#'*) continue ;; esac
    [ -e "$module" ] || { echo "asan-check: tests/asan_pure_python.txt names $module, which is not there" >&2; exit 2; }
    ignore+=("--ignore=$module")
done < tests/asan_pure_python.txt
set +e
LOGDOCTOR_PURE_PYTHON= "$py" -m pytest -q -p no:cacheprovider "${ignore[@]}" "$@"
rc=$?
set -e
unset LD_PRELOAD
if compgen -G "$tmp/logs/*" >/dev/null; then
    echo "asan-check: sanitizer reports:" >&2
    for f in "$tmp"/logs/*; do echo "== $f" >&2; cat "$f" >&2; done
    exit 1
fi
[ $rc -eq 0 ] || { echo "asan-check: the tests failed under ASan/UBSan (exit $rc)" >&2; exit $rc; }
echo "asan-check: no sanitizer report (ASan + UBSan: $*)"
