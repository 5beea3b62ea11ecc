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

stamp="$(sha256sum pom.xml Neo4jLocal.java | sha256sum | cut -c1-16)"
if [ -f lib/.stamp ] && [ "$(cat lib/.stamp)" = "$stamp" ] && [ -f classes/Neo4jLocal.class ]; then
    exit 0
fi
echo "== fetching Neo4j 5.26 jars from Maven Central (mvn dependency:copy-dependencies)"
rm -rf lib classes
# jansi.noreset: Debian's Maven 3.8 prints bare colour resets (ESC[0m) even in batch mode.
MAVEN_OPTS="${MAVEN_OPTS:-} -Djansi.noreset=true" mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DoutputDirectory=lib -DincludeScope=runtime
mkdir -p classes
javac -nowarn -cp 'lib/*' -d classes Neo4jLocal.java
echo "$stamp" > lib/.stamp
