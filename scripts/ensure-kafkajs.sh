#!/usr/bin/env bash
# Make sure the kafkajs test oracle (tests/oracles/kafkajs) has its node_modules.
# No-op when they are there; else `npm ci` from the committed package-lock.json (npm registry only).
# lz4 and cppzst (the lz4/zstd codecs) compile from the sources in their npm tarballs with node-gyp:
# that needs g++, make, python3 and node's headers, which we point node-gyp at (/usr/include/node)
# so that it does not try to download them.
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/oracles/kafkajs"
stamp="$dir/node_modules/.package-lock.json"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "ensure-kafkajs: node and npm are required for the kafkajs oracle tests (tests/formats/test_kafkajs_oracle.py);" \
        "install Node.js >= 18 with npm (Debian: apt-get install -y nodejs npm)" >&2
    exit 1
fi
if [ -f "$stamp" ] && [ -d "$dir/node_modules/kafkajs" ] && [ "$stamp" -nt "$dir/package-lock.json" ]; then
    exit 0
fi
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then
    export npm_config_nodedir=/usr
fi
echo "ensure-kafkajs: installing the kafkajs oracle in $dir (npm ci; compiles the lz4/zstd codecs, about 3 minutes)" >&2
cd "$dir"
log="$(mktemp)"
if ! npm ci --no-audit --no-fund >"$log" 2>&1; then
    echo "ensure-kafkajs: 'npm ci' failed in $dir; the end of its output (all of it in $log):" >&2
    tail -n 40 "$log" >&2
    exit 1
fi
rm -f "$log"
echo "ensure-kafkajs: installed kafkajs $(node -p 'require("kafkajs/package.json").version')" >&2
