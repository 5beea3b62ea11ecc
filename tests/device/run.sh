#!/usr/bin/env bash
# One prepared run for a lent GPU machine (no network; python3 there is 3.12 with its own
# packages). The collector's pinned dependencies travel as wheels, built here first:
#   ./scripts/device-wheels.sh
#   run(command="bash tests/device/run.sh", carry=[".whl"], timeout_s=300)
# Writes into $OUT: facts.json, nvml-recording.json, nvidia-smi-q.xml, topo-m.txt, report.json
# (check_collector_on_gpu.py), extras.json (device_extras.py), metrics.json (metrics_under_load.py)
# and log.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-device-out}"
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="$PWD/collectors:/tmp/site" PYTHONUNBUFFERED=1
python3 --version
nvidia-smi -L
timeout 120 python3 tests/device/check_collector_on_gpu.py "$OUT"
check=$?
timeout 120 python3 tests/device/device_extras.py "$OUT"
extras=$?
timeout 120 python3 tests/device/metrics_under_load.py "$OUT"
load=$?
echo "check rc=$check extras rc=$extras load rc=$load"
[ "$check" = 0 ] && [ "$extras" = 0 ] && [ "$load" = 0 ]
