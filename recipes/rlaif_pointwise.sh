#!/usr/bin/env bash
# RLAIF baseline: every sample scored pointwise by the judge ({0, 0.5, 1}).
# configs/rlaif_pointwise.yaml on a GPU cluster; every knob is an environment variable (see recipes/lib/experiment.sh).
#
#   bash recipes/rlaif_pointwise.sh [--dry-run] [extra Hydra overrides ...]
set -euo pipefail
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"
experiment_main rlaif_pointwise "$@"
