#!/usr/bin/env bash
# The collector's pinned dependencies as CPython 3.12 x86-64 wheels in .whl (git-ignored), for a lent GPU machine: it has no network, and its python3 is 3.12, so a
# venv made here does not run there. tests/device/run.sh installs them there into /tmp/site.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .whl
# The collector's pins (collectors/pyproject.toml) with their dependencies, resolved for 3.12 at the
# versions the test venv holds (./scripts/test.sh makes .venv), so what runs there is what was tested.
python3 -m pip download -q --disable-pip-version-check --only-binary=:all: \
    --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -c <(.venv/bin/python -m pip freeze --exclude-editable) -d .whl \
    $(python3 -c 'import tomllib; print(" ".join(tomllib.load(open("collectors/pyproject.toml", "rb"))["project"]["dependencies"]))')
du -sh .whl
