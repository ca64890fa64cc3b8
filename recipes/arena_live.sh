#!/usr/bin/env bash
# Reasoning Arena-Live: the live tournament (each new trace meets the best, worst and median so far).
# configs/arena_live.yaml on a GPU cluster; every knob is an environment variable (see recipes/lib/experiment.sh).
#
#   bash recipes/arena_live.sh [--dry-run] [extra Hydra overrides ...]
set -euo pipefail
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"
experiment_main arena_live "$@"
