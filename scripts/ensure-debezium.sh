#!/usr/bin/env bash
# The Kafka Connect plugins the CDC tests run (tests/cdc_real, tests/connect_cluster.py): Debezium's connector
# plugins of connect/pom.xml (tar.gz, classifier "plugin") resolved from Maven Central with Maven (cache
# .tools/m2), each archive checked against connect/plugins.lock (sha256, name) and unpacked into
# .tools/debezium/<plugin>/ (Connect's plugin.path is .tools/debezium). Kafka Connect itself runs from the
# installed Kafka 4.4.0's jars (scripts/ensure-kafka.sh).
#
#   ensure-debezium.sh          install what is missing, check what is installed (no-op when done)
#   ensure-debezium.sh --lock   resolve again and write connect/plugins.lock (after a change of connect/pom.xml)
#
# A machine without Maven, Java 17 or a way to Maven Central gets one line naming what is missing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$root/connect/pom.xml"
lock="$root/connect/plugins.lock"
dest="$root/.tools/debezium"
m2="$root/.tools/m2"
plugin="org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"

say() { echo "ensure-debezium: $*" >&2; }

for tool in java mvn tar; do
    command -v "$tool" >/dev/null 2>&1 || { say "$tool is required to install the Debezium plugins (Debian: apt-get install -y maven openjdk-17-jdk-headless)"; exit 1; }
done

# the plugin archives into DIR/archives; on failure say which artifacts could not be had, never a stack
resolve() {
    local into="$1" log
    log="$(mktemp)"
    rm -rf "$into"
    mkdir -p "$into"
    # shellcheck disable=SC2086  # ENSURE_DEBEZIUM_MVN_FLAGS: extra flags (-o: offline)
    if ! (cd "$root/connect" && mvn -B -q ${ENSURE_DEBEZIUM_MVN_FLAGS:-} -Dmaven.repo.local="$m2" "$plugin" \
        -DoutputDirectory="$into" -DexcludeTransitive=true) >"$log" 2>&1; then
        local missing
        missing="$(grep -oE "(Could not (resolve|find|transfer)[^:]*|Failure to find|Non-resolvable)[^\[]*" "$log" \
            | head -n 3 | tr "\n" " " || true)"
        say "could not resolve the Debezium plugins of connect/pom.xml from Maven Central:" \
            "$(echo "${missing:-$(grep -m1 ERROR "$log")}" | sed 's/\x1b\[[0-9;]*m//g')" "(Maven's whole output: $log)"
        rm -rf "$into"
        exit 1
    fi
    rm -f "$log"
}

# "SHA256 NAME" of every archive of DIR, sorted by name
hashes() { (cd "$1" && sha256sum -- *.tar.gz | sort -k2 | awk '{print $1, $2}'); }

# unpack every archive of DIR into $dest (each holds one top folder: the plugin's)
unpack() {
    local archive
    rm -rf "$dest"
    mkdir -p "$dest"
    for archive in "$1"/*.tar.gz; do
        tar -xzf "$archive" -C "$dest"
    done
}

archives="$root/.tools/debezium-archives"
if [ "${1:-}" = "--lock" ]; then
    resolve "$archives"
    {
        echo "# The Debezium connector plugins of connect/pom.xml (scripts/ensure-debezium.sh): sha256, file name."
        echo "# Written by 'scripts/ensure-debezium.sh --lock'; checked at every install."
        hashes "$archives"
    } >"$lock.tmp"
    mv "$lock.tmp" "$lock"
    unpack "$archives"
    touch "$dest/.checked"
    say "wrote $lock"
    exit 0
fi

[ -f "$lock" ] || { say "no $lock: run scripts/ensure-debezium.sh --lock"; exit 1; }
# checked once per install: the stamp is newer than the lock and the pom
if [ -f "$dest/.checked" ] && [ "$dest/.checked" -nt "$lock" ] && [ "$dest/.checked" -nt "$pom" ]; then
    exit 0
fi
want="$(grep -vE '^#' "$lock")"
if [ ! -d "$archives" ] || [ "$(hashes "$archives" 2>/dev/null)" != "$want" ]; then
    say "installing the Debezium plugins of connect/pom.xml from Maven Central into $dest"
    resolve "$archives"
fi
got="$(hashes "$archives")"
if [ "$got" != "$want" ]; then
    say "the Debezium plugins differ from connect/plugins.lock:"
    diff <(echo "$want") <(echo "$got") | grep -E '^[<>]' | head -n 10 >&2 || true
    rm -rf "$archives" "$dest"
    exit 1
fi
unpack "$archives"
touch "$dest/.checked"
say "installed $(find "$dest" -mindepth 1 -maxdepth 1 -type d -printf '%f ' ) into $dest"
