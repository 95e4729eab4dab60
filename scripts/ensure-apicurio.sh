#!/usr/bin/env bash
# The real schema registry the tests run (tests/registry_server.py): Apicurio Registry's runnable Quarkus build,
# the archive io.apicurio:apicurio-registry-app:VERSION:tar.gz:all of registry/pom.xml, resolved from Maven
# Central (Maven's cache: .tools/m2), checked against registry/jars.lock (sha256, name) and unpacked into
# .tools/apicurio/VERSION (quarkus-run.jar and its lib/). It runs on Java 21 or newer, which need not be the
# default java: one is looked for (LOGDOCTOR_JAVA21, JAVA_HOME, java on PATH, /usr/lib/jvm/*, /opt/*).
#
#   ensure-apicurio.sh            install what is missing, check the archive (no-op when done)
#   ensure-apicurio.sh --lock     resolve again and write registry/jars.lock (after a pom change)
#
# A machine without Maven, a Java 21+ or a way to Maven Central gets one line naming what is missing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$root/registry/pom.xml"
lock="$root/registry/jars.lock"
m2="$root/.tools/m2"
# the plugin by its full coordinates: Maven 3.8's default copy-dependencies is 2.8 (2013)
plugin="org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"

say() { echo "ensure-apicurio: $*" >&2; }

# the version of apicurio-registry-app the pom names
version="$(grep -A1 '<artifactId>apicurio-registry-app</artifactId>' "$pom" | grep -oE '<version>[^<]+' | cut -c10-)"
[ -n "$version" ] || { say "registry/pom.xml names no apicurio-registry-app version"; exit 1; }
dest="$root/.tools/apicurio/$version"
archive="apicurio-registry-app-$version-all.tar.gz"

java_major() { "$1" -version 2>&1 | sed -nE 's/.*version "([0-9]+).*/\1/p' | head -n 1; }

# the first Java 21+ of the usual places, or nothing (tests/registry_server.py looks in the same places)
find_java21() {
    local candidate major
    for candidate in ${LOGDOCTOR_JAVA21:-} ${JAVA_HOME:+$JAVA_HOME/bin/java} "$(command -v java || true)" \
        /usr/lib/jvm/*/bin/java /opt/*/bin/java /opt/*/*/bin/java; do
        [ -n "$candidate" ] && [ -x "$candidate" ] || continue
        major="$(java_major "$candidate")"
        if [ -n "$major" ] && [ "$major" -ge 21 ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

command -v mvn >/dev/null 2>&1 || {
    say "Maven (mvn) is required to install Apicurio Registry from Maven Central (Debian: apt-get install -y maven)"
    exit 1
}
find_java21 >/dev/null || {
    say "Apicurio Registry $version needs Java 21 or newer, and none was found (LOGDOCTOR_JAVA21, JAVA_HOME, PATH, /usr/lib/jvm, /opt; Debian: apt-get install -y openjdk-21-jre-headless)"
    exit 1
}

# resolve the archive into DIR with mvn; on failure say which artifact could not be had, never a stack
resolve() {
    local into="$1" log
    log="$(mktemp)"
    rm -rf "$into"
    mkdir -p "$into"
    # shellcheck disable=SC2086  # ENSURE_KAFKA_MVN_FLAGS: extra flags (-o: offline), as ensure-kafka.sh takes
    if ! (cd "$root/registry" && mvn -B -q ${ENSURE_KAFKA_MVN_FLAGS:-} -Dmaven.repo.local="$m2" "$plugin" \
        -DoutputDirectory="$into" -DincludeScope=runtime) >"$log" 2>&1; then
        local missing
        missing="$(grep -oE "(Could not (resolve|find|transfer)[^:]*|Failure to find|Non-resolvable)[^\[]*" "$log" \
            | head -n 3 | tr "\n" " " || true)"
        say "could not resolve Apicurio Registry $version (registry/pom.xml) from Maven Central:" \
            "$(echo "${missing:-$(grep -m1 ERROR "$log")}" | sed 's/\x1b\[[0-9;]*m//g')" "(Maven's whole output: $log)"
        rm -rf "$into"
        exit 1
    fi
    rm -f "$log"
}

# "VERSION SHA256 NAME" of the archive in DIR
hashes() { (cd "$2" && sha256sum -- "$archive" | awk -v v="$1" '{print v, $1, $2}'); }

download="$root/.tools/apicurio/.download-$version"
if [ "${1:-}" = "--lock" ]; then
    resolve "$download"
    {
        echo "# The archive of the test registry (scripts/ensure-apicurio.sh): Apicurio version, sha256, file name."
        echo "# Written by 'scripts/ensure-apicurio.sh --lock' from registry/pom.xml; checked at every install."
        hashes "$version" "$download"
    } >"$lock.tmp"
    mv "$lock.tmp" "$lock"
    rm -rf "$download" "$dest/.checked"
    say "wrote $lock"
    exec bash "$0"
fi

[ -f "$lock" ] || { say "no $lock: run scripts/ensure-apicurio.sh --lock"; exit 1; }
want="$(grep -E "^$version " "$lock" || true)"
[ -n "$want" ] || { say "registry/jars.lock has no archive of Apicurio $version: run scripts/ensure-apicurio.sh --lock"; exit 1; }
# checked once per install: the stamp is newer than the lock and the pom
if [ -f "$dest/.checked" ] && [ "$dest/.checked" -nt "$lock" ] && [ "$dest/.checked" -nt "$pom" ] \
    && [ -f "$dest/quarkus-run.jar" ]; then
    exit 0
fi
say "installing Apicurio Registry $version from Maven Central into $dest"
resolve "$download"
got="$(hashes "$version" "$download")"
if [ "$got" != "$want" ]; then
    say "Apicurio $version's archive differs from registry/jars.lock: want '$want', got '$got'"
    rm -rf "$download"
    exit 1
fi
rm -rf "$dest" "$dest.tmp"
mkdir -p "$dest.tmp"
tar -xzf "$download/$archive" -C "$dest.tmp"
rm -rf "$download"
[ -f "$dest.tmp/quarkus-run.jar" ] || { say "$archive holds no quarkus-run.jar"; rm -rf "$dest.tmp"; exit 1; }
mv "$dest.tmp" "$dest"
touch "$dest/.checked"
