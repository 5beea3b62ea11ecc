#!/usr/bin/env bash
# Installs everything the tests need into .venv (the Cypher linter with npm, the Neo4j 5
# server jars with Maven), then runs ruff, mypy --strict and the whole pytest suite, every
# store test on the embedded FalkorDB and on a real local Neo4j server. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "== installing Node.js (needed for Neo4j's Cypher linter)"
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi

if ! command -v chromium >/dev/null; then
    echo "== installing Chromium (for the explorer's browser tests)"
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null || echo "   (no Chromium: the browser tests will skip)"
fi

echo "== fetching the Neo4j 5.26 server jars (Maven Central, cached in tools/neo4j-local/lib)"
NEO4J_CLASS_ARCHIVE=later ./scripts/neo4j-jars.sh
# Its class-data archive (one server start and stop, ~30 s of a loaded 2-core machine) is written
# while the installs below wait on the network; pytest waits for it.
archive_log="$(mktemp)"
./scripts/neo4j-jars.sh > "$archive_log" 2>&1 &
archive_pid=$!

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    echo "== installing Slurm and munge (real slurmctld/slurmd check the Slurm exports)"
    if command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            slurm-wlm munge >/dev/null
    else
        echo "   (no apt-get: tests/slurm will skip, saying why)"
    fi
fi

PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
echo "== installing the service, the collectors package and dev tools"
python -m pip install -q --disable-pip-version-check -e ./collectors -e ".[dev]"
echo "== installing Neo4j's Cypher linter (npm ci)"
(cd tools/cypher-lint && npm ci --no-audit --no-fund --loglevel=error)
echo "== installing the browser assets the service serves itself (GraphiQL, Swagger UI, ReDoc)"
./scripts/ui-assets.sh

echo "== ruff"
ruff check .
ruff format --check .
echo "== mypy --strict"
mypy .
wait "$archive_pid" || echo "   (the Neo4j class archive step failed: the servers start without it)"
cat "$archive_log"
rm -f "$archive_log"
# Two workers (pytest-xdist), each with its own FalkorDB and Neo4j server, each running one test
# file at a time (a file's fixtures and its order stay whole): the store tests wait on a server
# about half of their time, so two processes keep two cores busy. GRAPHSVC_TEST_WORKERS=0 runs in
# one process, and so does a run against one external Neo4j server (GRAPHSVC_TEST_NEO4J_URI: each
# test empties its one database) or one that rewrites docs/ (GRAPHSVC_UPDATE_DOCS=1: two UI test
# files merge their numbers into one file).
WORKERS="${GRAPHSVC_TEST_WORKERS:-2}"
if [ -n "${GRAPHSVC_TEST_NEO4J_URI:-}" ] || [ "${GRAPHSVC_UPDATE_DOCS:-}" = "1" ]; then
    WORKERS=0
fi
echo "== pytest ($WORKERS workers)"
if [ "$WORKERS" = "0" ]; then
    python -m pytest "$@"
else
    python -m pytest -n "$WORKERS" --dist loadfile "$@"
fi
