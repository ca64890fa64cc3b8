#!/usr/bin/env bash
# RLVR + DAPO dynamic sampling: non-diverse groups are discarded and regenerated (filter on the verifier's acc).
# configs/rlvr_dapo.yaml on a GPU cluster; every knob is an environment variable (see recipes/lib/experiment.sh).
#
#   bash recipes/rlvr_dapo.sh [--dry-run] [extra Hydra overrides ...]
set -euo pipefail
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"
experiment_main rlvr_dapo "$@"
