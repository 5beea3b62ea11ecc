#!/usr/bin/env bash
# A venv with only the collector's dependencies (no service): what a GPU host installs.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-collector
.venv-collector/bin/pip install -q --disable-pip-version-check -e ./collectors
du -sh .venv-collector
