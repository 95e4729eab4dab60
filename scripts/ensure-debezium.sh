#!/usr/bin/env bash
# The Kafka Connect plugins the CDC tests run (tests/cdc_real, tests/connect_cluster.py): Debezium's connector
# plugins of connect/pom.xml (tar.gz, classifier "plugin") resolved from Maven Central with Maven (cache
# .tools/m2), each archive checked against connect/plugins.lock (sha256, name) and unpacked into
# .tools/debezium/<plugin>/ (Connect's plugin.path is .tools/debezium). Kafka Connect itself runs from the
# installed Kafka 4.4.0's jars (scripts/ensure-kafka.sh). Beside them, Apicurio's Avro converter of
# connect/apicurio-converter/pom.xml (jars with their runtime dependencies, each checked against
# connect/apicurio-converter/plugin.lock) into .tools/debezium/apicurio-registry-converter/.
#
#   ensure-debezium.sh          install what is missing, check what is installed (no-op when done)
#   ensure-debezium.sh --lock   resolve again and write the locks (after a change of a pom)
#
# A machine without Maven, Java 17 or a way to Maven Central gets one line naming what is missing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$root/connect/pom.xml"
lock="$root/connect/plugins.lock"
dest="$root/.tools/debezium"
m2="$root/.tools/m2"
plugin="org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"
conv_pom="$root/connect/apicurio-converter/pom.xml"
conv_lock="$root/connect/apicurio-converter/plugin.lock"
conv_jars="$root/.tools/apicurio-converter-jars"
conv_name="apicurio-registry-converter"

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
    # the converter's jars: its runtime dependencies too, but Kafka's and SLF4J (the worker has them)
    local flags=(-DexcludeTransitive=true) from="$root/connect"
    if [ "${2:-}" = converter ]; then
        flags=(-DincludeScope=runtime -DexcludeGroupIds=org.apache.kafka,org.slf4j) from="$root/connect/apicurio-converter"
    fi
    # shellcheck disable=SC2086  # ENSURE_DEBEZIUM_MVN_FLAGS: extra flags (-o: offline)
    if ! (cd "$from" && mvn -B -q ${ENSURE_DEBEZIUM_MVN_FLAGS:-} -Dmaven.repo.local="$m2" "$plugin" \
        -DoutputDirectory="$into" "${flags[@]}") >"$log" 2>&1; then
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
hashes() { (cd "$1" && sha256sum -- *."${2:-tar.gz}" | sort -k2 | awk '{print $1, $2}'); }

# unpack every archive of DIR into $dest (each holds one top folder: the plugin's)
unpack() {
    local archive
    rm -rf "$dest"
    mkdir -p "$dest"
    for archive in "$1"/*.tar.gz; do
        tar -xzf "$archive" -C "$dest"
    done
    mkdir -p "$dest/$conv_name"
    cp "$conv_jars"/*.jar "$dest/$conv_name/"
}

# the converter's jars into $conv_jars, checked against $conv_lock (resolved again when they differ)
converter() {
    local want got
    [ -f "$conv_lock" ] || { say "no $conv_lock: run scripts/ensure-debezium.sh --lock"; exit 1; }
    want="$(grep -vE '^#' "$conv_lock")"
    if [ ! -d "$conv_jars" ] || [ "$(hashes "$conv_jars" jar 2>/dev/null)" != "$want" ]; then
        say "installing Apicurio's converter of connect/apicurio-converter/pom.xml from Maven Central"
        resolve "$conv_jars" converter
    fi
    got="$(hashes "$conv_jars" jar)"
    if [ "$got" != "$want" ]; then
        say "the converter's jars differ from $conv_lock:"
        diff <(echo "$want") <(echo "$got") | grep -E '^[<>]' | head -n 10 >&2 || true
        rm -rf "$conv_jars" "$dest"
        exit 1
    fi
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
    resolve "$conv_jars" converter
    {
        echo "# Apicurio's converter and its runtime jars (connect/apicurio-converter/pom.xml): sha256, file name."
        echo "# Written by 'scripts/ensure-debezium.sh --lock'; checked at every install."
        hashes "$conv_jars" jar
    } >"$conv_lock.tmp"
    mv "$conv_lock.tmp" "$conv_lock"
    unpack "$archives"
    touch "$dest/.checked"
    say "wrote $lock and $conv_lock"
    exit 0
fi

[ -f "$lock" ] || { say "no $lock: run scripts/ensure-debezium.sh --lock"; exit 1; }
# checked once per install: the stamp is newer than the lock and the pom
if [ -f "$dest/.checked" ] && [ "$dest/.checked" -nt "$lock" ] && [ "$dest/.checked" -nt "$pom" ] \
    && [ "$dest/.checked" -nt "$conv_lock" ] && [ "$dest/.checked" -nt "$conv_pom" ]; then
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
converter
unpack "$archives"
touch "$dest/.checked"
say "installed $(find "$dest" -mindepth 1 -maxdepth 1 -type d -printf '%f ' ) into $dest"
