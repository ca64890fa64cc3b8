#!/usr/bin/env bash
# This project's adaptive scheduler (info_gain) at the live call budget.
# configs/arena_info_gain.yaml on a GPU cluster; every knob is an environment variable (see recipes/lib/experiment.sh).
#
#   bash recipes/arena_info_gain.sh [--dry-run] [extra Hydra overrides ...]
set -euo pipefail
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"
experiment_main arena_info_gain "$@"
