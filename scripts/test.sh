#!/usr/bin/env bash
# The test suite as CI runs it (.ci/run): the fast tier (tests/unit: pure, no Ray, no trainer) in TEST_WORKERS
# processes (default 2), then the integration tier one test at a time (its trainer, Ray and vLLM runs take every core,
# and several assert time bounds). Arguments go to both pytest runs (e.g. -x, -k, --durations=20); the long tier
# stays out (pyproject's addopts): `.venv/bin/python -m pytest -q -m long`.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
"$PYTHON" -m pytest -q -n "${TEST_WORKERS:-2}" tests/unit "$@"
"$PYTHON" -m pytest -q tests/integration "$@"
