#!/usr/bin/env bash
# ArenaRL baseline: a full round-robin tournament on every group, diverse or not.
# configs/arenarl.yaml on a GPU cluster; every knob is an environment variable (see recipes/lib/experiment.sh).
#
#   bash recipes/arenarl.sh [--dry-run] [extra Hydra overrides ...]
set -euo pipefail
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"
experiment_main arenarl "$@"
