#!/usr/bin/env bash
# Create .venv and install arena-verl with its test and benchmark dependencies. Idempotent.
# torch goes in first: verl does not pin it, and without it pip would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "$TORCH_SPEC"
.venv/bin/python -m pip install --quiet -e ".[test]"
