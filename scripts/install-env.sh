#!/usr/bin/env bash
# The project-local environment (.venv), as `make demo` / `make env` build it (the Makefile says when).
#
#   install-env.sh create VENV LOCK   a new VENV with LOCK's packages, then this checkout (editable, its C
#                                     extension built in place) and src/'s bytecode
#   install-env.sh add VENV LOCK      LOCK's packages added to VENV (the test tools, over the run lock)
#
# Each lock is complete and pinned, so nothing is resolved: --no-deps, then a check that every installed
# package's requirements are met. The installer is uv (pinned, from PyPI, into .tools/uv: a venv built with
# it takes seconds where pip takes minutes); INSTALLER=pip, or a uv that cannot be installed, uses pip.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
uv_version="0.13.8"
uv_dir="$root/.tools/uv"
python="${PYTHON:-python3.11}"
installer="${INSTALLER:-uv}"

action="$1"
venv="$2"
lock="$3"
py="$venv/bin/python"

# uv into .tools/uv, once per version: with this Python's pip (--target), or from a venv of its own when
# this Python has no pip; prints uv's path, or nothing when it could not be installed.
ensure_uv() {
    local uv="$uv_dir/bin/uv"
    if [ -x "$uv" ] && [ -f "$uv_dir/.installed-$uv_version" ]; then
        echo "$uv"
        return
    fi
    echo "install-env: installing uv $uv_version in $uv_dir" >&2
    rm -rf "$uv_dir"
    if PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --quiet --disable-pip-version-check \
        --target "$uv_dir" "uv==$uv_version" >&2 \
        || { rm -rf "$uv_dir" && "$python" -m venv "$uv_dir" >&2 \
            && "$uv_dir/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$uv_version" >&2; }
    then
        if [ -x "$uv" ] && "$uv" --version >/dev/null 2>&1; then
            touch "$uv_dir/.installed-$uv_version"
            echo "$uv"
            return
        fi
    fi
    rm -rf "$uv_dir"
    echo "install-env: uv $uv_version could not be installed; using pip" >&2
}

uv=""
if [ "$installer" = uv ]; then
    uv="$(ensure_uv)"
elif [ "$installer" != pip ]; then
    echo "install-env: INSTALLER must be uv or pip, not $installer" >&2
    exit 64
fi

say() { echo "install-env: $*" >&2; }
quiet="--quiet"  # INSTALL_ENV_VERBOSE=1: uv's own lines too (what it installed, its times; benchmarks/bench_demo.py)
[ -z "${INSTALL_ENV_VERBOSE:-}" ] || quiet=""

if [ "$action" = create ]; then
    say "a new $venv (${uv:+uv }venv)"
    rm -rf "$venv"
    if [ -n "$uv" ]; then
        # the same interpreter as `$python -m venv` would use: never one uv manages or downloads
        "$uv" venv --quiet --no-managed-python --no-python-downloads --python "$python" "$venv"
    else
        "$python" -m venv "$venv"
    fi
fi

say "$lock into $venv (${uv:+uv }pip install --no-deps, then pip check)"
if [ -n "$uv" ]; then
    # no bytecode here: `make demo` writes that of the modules it imports (the Makefile), `add` all of it below
    # shellcheck disable=SC2086 # $quiet: one word or none
    "$uv" pip install $quiet --python "$py" --no-deps -r "$lock"
    "$uv" pip check --quiet --python "$py"
    if [ "$action" = add ]; then
        # bytecode for every installed library (what pip writes at install), on every core; compileall
        # skips the files already compiled
        say "bytecode of $venv's libraries"
        "$py" -m compileall -q -j0 "$("$py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
            || say "some files of a library do not compile (left so, as pip leaves them)"
    fi
else
    "$py" -m pip install --quiet --disable-pip-version-check --no-deps -r "$lock"
    "$py" -m pip check >/dev/null
fi

if [ "$action" = create ]; then
    say "this checkout, editable, its C extension built in place; src/'s bytecode"
    # the checkout, editable, its C extension built in place: always rebuilt (uv would reuse a build of this
    # folder from its cache, where a changed _speedups.c would not show)
    if [ -n "$uv" ]; then
        "$uv" pip install --quiet --python "$py" --no-deps --no-build-isolation --refresh-package kafka-logdoctor -e "$root"
    else
        "$py" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e "$root"
    fi
    # bytecode for src/ as the installer writes it for every installed library: with PYTHONDONTWRITEBYTECODE
    # set, an editable install would otherwise compile every module at every run (~0.1 s per command)
    "$py" -m compileall -q "$root/src"
fi
