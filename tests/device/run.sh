#!/usr/bin/env bash
# One prepared run for a lent GPU machine (it has no network): uses a small venv with only
# the collector's dependencies, built here by scripts/collector-venv.sh and carried along.
#   run(command="bash tests/device/run.sh", carry=[".venv-collector"])
set -euo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi -L
PY=.venv-collector/bin/python
PYTHONPATH=collectors "$PY" tests/device/check_collector_on_gpu.py "${OUT:-device-out}"
