#!/usr/bin/env bash
# Installs the service into .venv and runs it with the embedded store and a demo
# cluster of 1,184 GPUs (H100 SuperPOD SUs, one GB200 NVL72 rack, A100 PCIe, L40S).
# Extra args go to `graphsvc demo` (e.g. --port 9000, --profile superpod-h100:sus=2).
# `./scripts/demo.sh --store neo4j` runs the same demo on a local Neo4j 5 server instead
# (its jars are fetched from Maven Central on first use; needs Java 17).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
# Installed once per dependency list (the code itself is installed editable): pip took seconds of
# every start.
stamp=.venv/.demo-installed
want="$(cat pyproject.toml collectors/pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    python -m pip install -q --disable-pip-version-check -e ./collectors -e .
    echo "$want" > "$stamp"
fi
case " $* " in
    *" --store neo4j "*|*" --store=neo4j "*) ./scripts/neo4j-jars.sh ;;
esac
if command -v npm >/dev/null; then
    ./scripts/ui-assets.sh  # GraphiQL and the API docs, served locally (no CDN)
else
    echo "npm not found: GraphiQL and /docs will say how to install their files (apt-get install npm)" >&2
fi
exec graphsvc demo "$@"
