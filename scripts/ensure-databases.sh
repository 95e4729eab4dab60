#!/usr/bin/env bash
# The databases the CDC tests capture with Debezium (tests/databases.py, tests/cdc_real): PostgreSQL 15 and
# MariaDB 10.11 from Debian's packages, at the versions of connect/databases.lock. Only the servers' and
# clients' binaries are needed (the tests start initdb/postgres and mariadb-install-db/mariadbd themselves, as
# child processes on 127.0.0.1; no systemd, no service): postgresql-15 and mariadb-server-core. No-op when
# every package is installed at its locked version; installs them with apt-get when we are root; else says
# what to do. A locked version apt no longer offers (a Debian point release replaced it) fails with the
# version apt has: write it in the lock after checking the tests pass with it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lock="$root/connect/databases.lock"
say() { echo "ensure-databases: $*" >&2; }

want=()
missing=()
while read -r package version; do
    want+=("$package=$version")
    installed="$(dpkg-query -W -f='${Status} ${Version}' "$package" 2>/dev/null || true)"
    if [ "$installed" != "install ok installed $version" ]; then
        missing+=("$package=$version")
        [ -n "$installed" ] && say "$package: ${installed##* } installed, connect/databases.lock has $version"
    fi
done < <(grep -vE '^(#|$)' "$lock")

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    say "missing ${missing[*]} and not root; run as root: apt-get update && apt-get install -y ${missing[*]}"
    exit 1
fi
say "installing Debian's ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if ! apt-get install -y -qq --no-install-recommends --allow-downgrades "${want[@]}" >/dev/null; then
    for item in "${missing[@]}"; do
        say "${item%%=*}: apt offers $(apt-cache policy "${item%%=*}" | awk '/Candidate/ {print $2}'), connect/databases.lock has ${item#*=}"
    done
    exit 1
fi
say "installed ${want[*]}"
