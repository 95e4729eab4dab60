#!/usr/bin/env bash
# The Kafka Streams application the streams-group tests run (tests/brokers/test_broker_streams_groups.py):
# Kafka Streams 4.4.0 and the examples' WordCountDemo of streams/pom.xml (kafka-streams-examples is not
# published for 4.4.0: 4.3.1's, which runs on 4.4.0's Kafka Streams), resolved from Maven Central with Maven
# (cache .tools/m2) into .tools/kafka-streams/4.4.0/lib, every jar checked against streams/jars.lock
# (sha256, name). The broker is brokers/4.4.0's (scripts/ensure-kafka.sh).
#
#   ensure-kafka-streams.sh          install what is missing, check what is installed (no-op when done)
#   ensure-kafka-streams.sh --lock   resolve again and write streams/jars.lock (after a change of streams/pom.xml)
#
# A machine without Maven, Java 17 or a way to Maven Central gets one line naming what is missing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$root/streams/pom.xml"
lock="$root/streams/jars.lock"
dest="$root/.tools/kafka-streams/4.4.0"
m2="$root/.tools/m2"
plugin="org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"

say() { echo "ensure-kafka-streams: $*" >&2; }

for tool in java mvn; do
    command -v "$tool" >/dev/null 2>&1 || { say "$tool is required to install Kafka Streams (Debian: apt-get install -y maven openjdk-17-jdk-headless)"; exit 1; }
done

# the jars into $dest/lib; on failure say which artifacts could not be had, never a stack
resolve() {
    local log
    log="$(mktemp)"
    rm -rf "$dest"
    mkdir -p "$dest/lib"
    # shellcheck disable=SC2086  # ENSURE_KAFKA_STREAMS_MVN_FLAGS: extra flags (-o: offline)
    if ! (cd "$root/streams" && mvn -B -q ${ENSURE_KAFKA_STREAMS_MVN_FLAGS:-} -Dmaven.repo.local="$m2" "$plugin" \
        -DoutputDirectory="$dest/lib" -DincludeScope=runtime) >"$log" 2>&1; then
        local missing
        missing="$(grep -oE "(Could not (resolve|find|transfer)[^:]*|Failure to find|Non-resolvable)[^\[]*" "$log" \
            | head -n 3 | tr "\n" " " || true)"
        say "could not resolve the Kafka Streams jars of streams/pom.xml from Maven Central:" \
            "$(echo "${missing:-$(grep -m1 ERROR "$log")}" | sed 's/\x1b\[[0-9;]*m//g')" "(Maven's whole output: $log)"
        rm -rf "$dest"
        exit 1
    fi
    rm -f "$log"
}

# "SHA256 NAME" of every jar of $dest/lib, sorted by name
hashes() {
    compgen -G "$dest/lib/*.jar" >/dev/null || return 0
    (cd "$dest/lib" && sha256sum -- *.jar | sort -k2 | awk '{print $1, $2}')
}

if [ "${1:-}" = "--lock" ]; then
    resolve
    {
        echo "# The Kafka Streams jars of streams/pom.xml (scripts/ensure-kafka-streams.sh): sha256, file name."
        echo "# Written by 'scripts/ensure-kafka-streams.sh --lock'; checked at every install."
        hashes
    } >"$lock.tmp"
    mv "$lock.tmp" "$lock"
    touch "$dest/.checked"
    say "wrote $lock"
    exit 0
fi

[ -f "$lock" ] || { say "no $lock: run scripts/ensure-kafka-streams.sh --lock"; exit 1; }
# checked once per install: the stamp is newer than the lock and the pom
if [ -f "$dest/.checked" ] && [ "$dest/.checked" -nt "$lock" ] && [ "$dest/.checked" -nt "$pom" ]; then
    exit 0
fi
want="$(grep -vE '^#' "$lock")"
if [ ! -d "$dest/lib" ] || [ "$(hashes)" != "$want" ]; then
    say "installing the Kafka Streams jars of streams/pom.xml from Maven Central into $dest"
    resolve
fi
got="$(hashes)"
if [ "$got" != "$want" ]; then
    say "the Kafka Streams jars differ from streams/jars.lock:"
    diff <(echo "$want") <(echo "$got") | grep -E '^[<>]' | head -n 10 >&2 || true
    rm -rf "$dest"
    exit 1
fi
touch "$dest/.checked"
