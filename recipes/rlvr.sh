#!/usr/bin/env bash
# RLVR baseline (CISPO): verifier rewards only; non-diverse groups keep their zero advantage.
# configs/rlvr.yaml on a GPU cluster; every knob is an environment variable (see recipes/lib/experiment.sh).
#
#   bash recipes/rlvr.sh [--dry-run] [extra Hydra overrides ...]
set -euo pipefail
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"
experiment_main rlvr "$@"
