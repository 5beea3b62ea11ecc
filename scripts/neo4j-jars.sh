#!/usr/bin/env bash
# Fetches the Neo4j 5.26 LTS Community jars (GPLv3) from Maven Central into
# tools/neo4j-local/lib (git-ignored, never committed) and compiles the launcher.
# Cached: a second run with the same pom.xml does nothing.
set -euo pipefail
cd "$(dirname "$0")/../tools/neo4j-local"

if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
    echo "== installing Java 17 and Maven (for the local Neo4j server)"
    apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
fi

# A class-data archive (AppCDS) of the classes a started server loads, mapped by every later start
# (graphsvc/store/neo4j_local.py): a start read ~9,000 classes out of ~200 jars, 11.7 s to the ready
# line on a quiet 2-core machine, 7.4 s with the archive (2026-12-07). The archive is written when
# this one run exits; a JVM that cannot use it (another JDK build) starts without it.
make_class_archive() {
    local scratch pid
    scratch="$(mktemp -d)"
    echo "== archiving the classes a local Neo4j start loads (lib/neo4j-local.jsa)"
    java -Xmx1g -XX:+UseSerialGC -XX:ArchiveClassesAtExit=lib/neo4j-local.jsa -cp 'lib/*' Neo4jLocal \
        --port 0 --data "$scratch/db" > "$scratch/out" 2>&1 &
    pid=$!
    for _ in $(seq 1 1200); do  # up to 5 min: a loaded machine
        grep -q '^NEO4J READY' "$scratch/out" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
    done
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" || true
    [ -f lib/neo4j-local.jsa ] || echo "   (no archive: $(tail -n 1 "$scratch/out"); the server starts without one)"
    rm -rf "$scratch"
}

stamp="$(sha256sum pom.xml Neo4jLocal.java | sha256sum | cut -c1-16)"
if ! { [ -f lib/.stamp ] && [ "$(cat lib/.stamp)" = "$stamp" ] && [ -f classes/Neo4jLocal.class ]; }; then
    echo "== fetching Neo4j 5.26 jars from Maven Central (mvn dependency:copy-dependencies)"
    rm -rf lib classes
    # jansi.noreset: Debian's Maven 3.8 prints bare colour resets (ESC[0m) even in batch mode.
    MAVEN_OPTS="${MAVEN_OPTS:-} -Djansi.noreset=true" mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
        -DoutputDirectory=lib -DincludeScope=runtime
    mkdir -p classes
    javac -nowarn -cp 'lib/*' -d classes Neo4jLocal.java
    echo "$stamp" > lib/.stamp
fi
# The launcher as a jar among the others: a class-data archive takes jars only on its class path.
[ -f lib/neo4j-local-launcher.jar ] || jar cf lib/neo4j-local-launcher.jar -C classes .
# NEO4J_CLASS_ARCHIVE=later: not now (scripts/test.sh writes it while the installs run).
if [ "${NEO4J_CLASS_ARCHIVE:-now}" != "later" ] && [ ! -f lib/neo4j-local.jsa ]; then
    make_class_archive
fi
