#!/usr/bin/env bash
# Adaptive pointwise: verifier rewards; non-diverse groups get the judge's pointwise score.
# configs/adaptive_pointwise.yaml on a GPU cluster; every knob is an environment variable (see recipes/lib/experiment.sh).
#
#   bash recipes/adaptive_pointwise.sh [--dry-run] [extra Hydra overrides ...]
set -euo pipefail
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"
experiment_main adaptive_pointwise "$@"
