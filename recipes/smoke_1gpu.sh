#!/usr/bin/env bash
# Check a GPU setup: two training steps of a small policy with the arena reward manager on ONE GPU, the judge beside
# it behind `vllm serve` (a small GPU-memory fraction; the `openai` judge backend, since a `vllm` judge engine in a
# Ray actor takes whole GPUs). NOT YET RUN ON A GPU BY THIS PROJECT (see the README); CPU-only machines use
# recipes/cpu_smoke.sh instead.
#
#   bash recipes/smoke_1gpu.sh [--dry-run] [extra Hydra overrides ...]
#
# Environment (defaults in brackets):
#   MODELS_DIR [/models]   MODEL_PATH [$MODELS_DIR/Qwen2.5-0.5B-Instruct]  JUDGE_MODEL [$MODELS_DIR/Qwen2.5-1.5B-Instruct]
#   TRAIN_FILES, VAL_FILES [small arithmetic sets generated in $RUN_DIR/data]      RUN_DIR [./runs/smoke_1gpu]
#   JUDGE_PORT [8011]   JUDGE_GPU_FRACTION [0.25]   ROLLOUT_GPU_FRACTION [0.35]   STEPS [2]   TIMEOUT_S [1800]
#   VLLM [vllm]         the vllm command serving the judge
# Everything it starts (the judge server, the trainer) is stopped when it ends; exit code: the trainer's, 124 on timeout.
set -euo pipefail
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/experiment.sh"

dry_run=0
for arg in "$@"; do [ "$arg" = "--dry-run" ] && dry_run=1; done
models_dir=${MODELS_DIR:-/models}
run_dir=$(realpath -m "${RUN_DIR:-./runs/smoke_1gpu}")
judge_model=$(realpath -m "${JUDGE_MODEL:-$models_dir/Qwen2.5-1.5B-Instruct}")
port=${JUDGE_PORT:-8011}
repo=$(realpath "$(dirname "${BASH_SOURCE[0]}")/..")
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$repo/.venv/bin/python" ]; then PYTHON=$repo/.venv/bin/python; else PYTHON=python3; fi
fi

export SETTING=node8 NNODES=1 GPUS_PER_NODE=1 RUN_DIR=$run_dir TOTAL_STEPS=${STEPS:-2} SAVE_FREQ=-1
export TEST_FREQ=${STEPS:-2} VAL_N=2 PYTHON
export MODEL_PATH=${MODEL_PATH:-$models_dir/Qwen2.5-0.5B-Instruct}
export TRAIN_FILES=${TRAIN_FILES:-$run_dir/data/train.parquet} VAL_FILES=${VAL_FILES:-$run_dir/data/val.parquet}
export JUDGE_PLACEMENT=serve JUDGE_URL=http://127.0.0.1:$port/v1 JUDGE_SERVED_NAME=judge
serve=("${VLLM:-vllm}" serve "$judge_model" --served-model-name judge --host 127.0.0.1 --port "$port"
       --gpu-memory-utilization "${JUDGE_GPU_FRACTION:-0.25}" --max-model-len 8192 --enable-prefix-caching)
small=(
  data.train_batch_size=8 data.max_prompt_length=512 data.max_response_length=1024
  actor_rollout_ref.rollout.n=4 actor_rollout_ref.actor.ppo_mini_batch_size=8
  actor_rollout_ref.rollout.tensor_model_parallel_size=1
  actor_rollout_ref.rollout.gpu_memory_utilization="${ROLLOUT_GPU_FRACTION:-0.35}"
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192
  actor_rollout_ref.actor.fsdp_config.param_offload=True actor_rollout_ref.actor.fsdp_config.optimizer_offload=True
  reward.arena.judge.max_concurrency=16 reward.arena.group_deadline_s=600 trainer.val_before_train=False
)

if [ "$dry_run" = 1 ]; then
  echo "# judge server"
  printf '%q ' "${serve[@]}"; echo
  experiment_main arena_live "${small[@]}" "$@"
  exit 0
fi

mkdir -p "$run_dir/data"
[ -e "$TRAIN_FILES" ] || "$PYTHON" -m arena_verl.data make-arithmetic "$TRAIN_FILES" --rows 64 --split train
[ -e "$VAL_FILES" ] || "$PYTHON" -m arena_verl.data make-arithmetic "$VAL_FILES" --rows 8 --split test --seed 1
[ -e "$judge_model" ] || _die "JUDGE_MODEL $judge_model does not exist"

"${serve[@]}" > "$run_dir/judge.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
trap 'exit 143' TERM INT
echo "waiting for the judge server (log: $run_dir/judge.log)"
for _ in $(seq 1 120); do
  kill -0 "$server" 2>/dev/null || _die "the judge server exited; see $run_dir/judge.log"
  if "$PYTHON" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null; then
    break
  fi
  sleep 5
done
export RECIPE_NO_EXEC=1
rc=0
# shellcheck disable=SC2016  # $1 and $@ belong to the inner bash
timeout --kill-after=30 "${TIMEOUT_S:-1800}" bash -c 'source "$1"; shift; experiment_main arena_live "$@"' _ \
  "$repo/recipes/lib/experiment.sh" "${small[@]}" "$@" || rc=$?
echo "smoke_1gpu: exit code $rc; figures: $PYTHON -m arena_verl.runlog $run_dir"
exit "$rc"
