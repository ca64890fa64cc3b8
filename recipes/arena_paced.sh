#!/usr/bin/env bash
# This project's paced live tournament (spends the live budget while the group arrives) with a grace deadline.
# configs/arena_paced.yaml on a GPU cluster; every knob is an environment variable (see recipes/lib/experiment.sh).
#
#   bash recipes/arena_paced.sh [--dry-run] [extra Hydra overrides ...]
set -euo pipefail
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"
experiment_main arena_paced "$@"
