#!/usr/bin/env bash
# Reasoning Arena: verifier rewards; non-diverse groups ranked by a full round-robin tournament.
# configs/arena_round_robin.yaml on a GPU cluster; every knob is an environment variable (see recipes/lib/experiment.sh).
#
#   bash recipes/arena_round_robin.sh [--dry-run] [extra Hydra overrides ...]
set -euo pipefail
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"
experiment_main arena_round_robin "$@"
