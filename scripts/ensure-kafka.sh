#!/usr/bin/env bash
# The real Kafka brokers the tests run (tests/kafka_cluster.py, tests/brokers): each version that has a
# brokers/VERSION/pom.xml is resolved from Maven Central (Kafka's released jars, its tools and a logging
# binding) into .tools/kafka/VERSION/lib, and every jar there is checked against brokers/jars.lock
# (sha256, name). Maven's own cache is project-local too (.tools/m2).
#
#   ensure-kafka.sh            install what is missing, check every installed jar (no-op when done)
#   ensure-kafka.sh --lock     resolve every version again and write brokers/jars.lock (after a pom change)
#
# A machine without Maven, Java 17 or a way to Maven Central gets one line naming what is missing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lock="$root/brokers/jars.lock"
tools="$root/.tools/kafka"
m2="$root/.tools/m2"
# the plugin by its full coordinates: Maven 3.8's default copy-dependencies is 2.8 (2013)
plugin="org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"

say() { echo "ensure-kafka: $*" >&2; }

for tool in java mvn; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        case "$tool" in
            java) say "Java 17 or newer is required to run the test brokers (Debian: apt-get install -y openjdk-17-jdk-headless)" ;;
            mvn) say "Maven (mvn) is required to install the test brokers from Maven Central (Debian: apt-get install -y maven)" ;;
        esac
        exit 1
    fi
done

versions() { find "$root/brokers" -mindepth 2 -maxdepth 2 -name pom.xml -printf '%h\n' | xargs -n1 basename | sort; }

# resolve VERSION into DIR/lib with mvn; on failure say which artifacts could not be had, never a stack
resolve() {
    local version="$1" dest="$2" log
    log="$(mktemp)"
    rm -rf "$dest"
    mkdir -p "$dest/lib"
    # shellcheck disable=SC2086  # ENSURE_KAFKA_MVN_FLAGS: extra flags (-o: offline, as a test of the message)
    if ! (cd "$root/brokers/$version" && mvn -B -q ${ENSURE_KAFKA_MVN_FLAGS:-} -Dmaven.repo.local="$m2" "$plugin" \
        -DoutputDirectory="$dest/lib" -DincludeScope=runtime) >"$log" 2>&1; then
        local missing
        missing="$(grep -oE "(Could not (resolve|find|transfer)[^:]*|Failure to find|Non-resolvable)[^\[]*" "$log" \
            | head -n 3 | tr "\n" " " || true)"
        say "could not resolve Kafka $version's jars (brokers/$version/pom.xml) from Maven Central:" \
            "$(echo "${missing:-$(grep -m1 ERROR "$log")}" | sed 's/\x1b\[[0-9;]*m//g')" "(Maven's whole output: $log)"
        rm -rf "$dest"
        exit 1
    fi
    rm -f "$log"
}

# "VERSION SHA256 NAME" for every jar of DIR/lib, sorted by name
hashes() {
    local version="$1" dir="$2"
    compgen -G "$dir/lib/*.jar" >/dev/null || return 0
    (cd "$dir/lib" && sha256sum -- *.jar | sort -k2 | awk -v v="$version" '{print v, $1, $2}')
}

if [ "${1:-}" = "--lock" ]; then
    tmp="$(mktemp)"
    {
        echo "# Every jar of the test brokers (scripts/ensure-kafka.sh): Kafka version, sha256, file name."
        echo "# Written by 'scripts/ensure-kafka.sh --lock' from brokers/VERSION/pom.xml; checked at every install."
    } >"$tmp"
    for version in $(versions); do
        resolve "$version" "$tools/$version"
        hashes "$version" "$tools/$version" >>"$tmp"
        touch "$tools/$version/.checked"
    done
    mv "$tmp" "$lock"
    say "wrote $lock"
    exit 0
fi

[ -f "$lock" ] || { say "no $lock: run scripts/ensure-kafka.sh --lock"; exit 1; }
for version in $(versions); do
    dest="$tools/$version"
    want="$(grep -E "^$version " "$lock" || true)"
    if [ -z "$want" ]; then
        say "brokers/jars.lock has no jar of Kafka $version: run scripts/ensure-kafka.sh --lock"
        exit 1
    fi
    # checked once per install: the stamp is newer than the lock and the pom
    if [ -f "$dest/.checked" ] && [ "$dest/.checked" -nt "$lock" ] && [ "$dest/.checked" -nt "$root/brokers/$version/pom.xml" ]; then
        continue
    fi
    if [ ! -d "$dest/lib" ] || [ "$(hashes "$version" "$dest")" != "$want" ]; then
        say "installing Kafka $version from Maven Central into $dest"
        resolve "$version" "$dest"
    fi
    got="$(hashes "$version" "$dest")"
    if [ "$got" != "$want" ]; then
        say "Kafka $version's jars differ from brokers/jars.lock:"
        diff <(echo "$want") <(echo "$got") | grep -E '^[<>]' | head -n 10 >&2 || true
        rm -rf "$dest"
        exit 1
    fi
    touch "$dest/.checked"
done
