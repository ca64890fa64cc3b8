#!/usr/bin/env bash
# Shared body of the experiment recipes (recipes/<experiment>.sh): builds the `python -m verl.trainer.main_ppo`
# command for configs/<experiment>.yaml from environment variables, prints it with --dry-run, else checks it and runs
# it in the foreground. Sourced, not run. See the README's "Reproduce the paper" and "Run on your cluster".
#
# Environment (defaults in brackets; SETTING's defaults shown as node8 / paper):
#   SETTING [node8]          node8: one 8-GPU node (6 train, 2 judge) | paper: the paper's setting (unverified)
#   MODELS_DIR [/models]     DATA_DIR [/data]      where the defaults below live (shared storage)
#   MODEL_PATH               policy [$MODELS_DIR/Qwen2.5-3B-Instruct / $MODELS_DIR/Ministral-3-8B-Instruct-2512-BF16]
#   TRAIN_FILES              [$DATA_DIR/train.parquet]; comma-separated for several
#   VAL_FILES                [$DATA_DIR/aime2024.parquet,$DATA_DIR/aime2025.parquet]; comma-separated
#   NNODES, GPUS_PER_NODE    trainer.nnodes / trainer.n_gpus_per_node [the setting's: 1x6 / 4x8]
#   JUDGE_PLACEMENT          serve | ray | verl [serve / ray]; ignored by rlvr and rlvr_dapo (no judge)
#     serve: an OpenAI-compatible endpoint (`vllm serve`): JUDGE_URL (http://host:port/v1) or JUDGE_URL_FILE (a file
#            holding it, written by scripts/slurm/judge_serve.sbatch; waited for up to JUDGE_WAIT_S [1800] s),
#            JUDGE_SERVED_NAME [judge] (vllm serve --served-model-name)
#     ray:   vLLM engines in Ray actors on spare GPUs of the same Ray cluster: JUDGE_ENGINES [1], JUDGE_TP [2 / 8]
#     verl:  verl's reward-model serving (its own resource pool): JUDGE_NNODES [1], JUDGE_GPUS_PER_NODE [2 / 8],
#            JUDGE_TP [2 / 8]
#   JUDGE_MODEL              judge folder (ray, verl) [$MODELS_DIR/Qwen3-4B-Instruct-2507 / $MODELS_DIR/DeepSeek-Math-V2]
#   RUN_DIR [./runs/<experiment>]  checkpoints/, validation/ (dumps), metrics/<attempt>.jsonl, train.log (shared storage)
#   TOTAL_STEPS [verl's: epochs]   SAVE_FREQ [20]   TEST_FREQ [20]   VAL_N [16]   VAL_TEMPERATURE [0.6]
#   PROJECT_NAME [arena_verl]      EXPERIMENT_NAME [<experiment>-<setting>]       LOGGER [[console,file]]
#   PYTHON [.venv/bin/python if present, else python3]
#   RAY_ADDRESS              a running Ray cluster to join (e.g. auto, set by scripts/slurm); unset: a local one
#   RECIPE_NO_EXEC [0]       1: run the trainer as a child and return its exit code (default: exec, so that signals
#                            reach it directly)
# Every run logs, per training step, timing_s/step and arena/generations (rollouts generated for the step, the ones
# DAPO discarded included) to the tracker and $RUN_DIR/metrics/<attempt>.jsonl (`python -m arena_verl.runlog
# $RUN_DIR` prints them as a table). A rerun with the same RUN_DIR resumes from the last checkpoint (trainer.resume_mode=auto).

# The caller's directory for relative paths; the repository for everything else.
_abs() { if [ -n "$1" ]; then realpath -m "$1"; fi; }
_abs_list() {  # a comma-separated list of paths, each made absolute
  local out="" item
  local -a items
  IFS=, read -r -a items <<< "$1"
  for item in "${items[@]}"; do out+="${out:+,}$(_abs "$item")"; done
  printf '%s' "$out"
}
_hq() {  # a Hydra-quoted string: '...' with ' escaped, so '=', ',', spaces and quotes in paths survive
  printf "'%s'" "${1//\'/\\\'}"
}
_hydra_list() {  # a,b -> ['a','b'] (the list is comma-separated, so a path in it cannot contain a comma)
  local out="" item
  local -a items
  IFS=, read -r -a items <<< "$1"
  for item in "${items[@]}"; do out+="${out:+,}$(_hq "$item")"; done
  printf '[%s]' "$out"
}
_check_int() {  # name value minimum: an integer >= minimum (or exactly -1 when minimum is -1, "never")
  local name=$1 value=$2 minimum=$3
  [[ "$value" =~ ^-?[0-9]+$ ]] || _die "$name must be an integer, got '$value'"
  if [ "$minimum" = -1 ]; then
    [ "$value" = -1 ] || [ "$value" -ge 1 ] || _die "$name must be >= 1 or -1 (never), got $value"
  else
    [ "$value" -ge "$minimum" ] || _die "$name must be >= $minimum, got $value"
  fi
}
_url_answers() {  # python url: whether an OpenAI-compatible server answers GET url/models
  "$1" - "$2" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/models", timeout=5)
PY
}
_warn() { echo "warning: $*" >&2; }
_local_or_hub() {  # a path (absolute, ./ or ../, or existing) made absolute; anything else (a hub id) as it is
  if [ -e "$1" ] || [[ "$1" == /* || "$1" == .* ]]; then _abs "$1"; else printf '%s' "$1"; fi
}
_die() { echo "error: $*" >&2; exit 2; }

experiment_main() {
  local experiment=$1
  shift
  local repo
  repo=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../..")
  local dry_run=0 arg
  local -a user_overrides=()
  for arg in "$@"; do
    if [ "$arg" = "--dry-run" ]; then dry_run=1; else user_overrides+=("$arg"); fi
  done

  local setting=${SETTING:-node8}
  local models_dir=${MODELS_DIR:-/models} data_dir=${DATA_DIR:-/data}
  local default_policy default_judge default_placement default_tp default_judge_gpus
  case "$setting" in
    node8)
      default_policy=$models_dir/Qwen2.5-3B-Instruct default_judge=$models_dir/Qwen3-4B-Instruct-2507
      default_placement=serve default_tp=2 default_judge_gpus=2 ;;
    paper)
      default_policy=$models_dir/Ministral-3-8B-Instruct-2512-BF16 default_judge=$models_dir/DeepSeek-Math-V2
      default_placement=ray default_tp=8 default_judge_gpus=8 ;;
    *) _die "SETTING must be node8 or paper, got '$setting'" ;;
  esac
  local model_path train_files val_files judge_model run_dir
  model_path=$(_local_or_hub "${MODEL_PATH:-$default_policy}")
  train_files=$(_abs_list "${TRAIN_FILES:-$data_dir/train.parquet}")
  val_files=$(_abs_list "${VAL_FILES:-$data_dir/aime2024.parquet,$data_dir/aime2025.parquet}")
  judge_model=$(_local_or_hub "${JUDGE_MODEL:-$default_judge}")
  run_dir=$(_abs "${RUN_DIR:-./runs/$experiment}")
  # Absurd values are refused here, before anything starts (verl would fail later, or silently do little).
  local name value
  for value in "$model_path" "$train_files" "$val_files" "$judge_model" "$run_dir" "${JUDGE_URL:-}"; do
    # Hydra's quoted strings treat a backslash before a quote as an escape: keep paths unambiguous.
    case "$value" in *\\*) _die "backslashes are not supported in paths or URLs: '$value'" ;; esac
  done
  for name in NNODES GPUS_PER_NODE TOTAL_STEPS VAL_N JUDGE_ENGINES JUDGE_TP JUDGE_NNODES JUDGE_GPUS_PER_NODE; do
    [ -z "${!name:-}" ] || _check_int "$name" "${!name}" 1
  done
  for name in SAVE_FREQ TEST_FREQ; do [ -z "${!name:-}" ] || _check_int "$name" "${!name}" -1; done
  [[ "${VAL_TEMPERATURE:-0.6}" =~ ^[0-9]+([.][0-9]+)?$ ]] || _die "VAL_TEMPERATURE must be a number >= 0"
  # Each attempt (a requeued job is a new attempt) gets its own metrics file: verl's file logger truncates it.
  local metrics_file
  metrics_file=$run_dir/metrics/$(date +%Y%m%d-%H%M%S)-$$.jsonl
  local python=${PYTHON:-}
  if [ -z "$python" ]; then
    if [ -x "$repo/.venv/bin/python" ]; then python=$repo/.venv/bin/python; else python=python3; fi
  fi

  local -a cmd=(
    "$python" -m verl.trainer.main_ppo --config-path="$repo/configs" --config-name="$experiment"
    arena_setting="$setting"
    actor_rollout_ref.model.path="$(_hq "$model_path")"
    data.train_files="$(_hydra_list "$train_files")" data.val_files="$(_hydra_list "$val_files")"
    actor_rollout_ref.rollout.val_kwargs.n="${VAL_N:-16}"
    actor_rollout_ref.rollout.val_kwargs.temperature="${VAL_TEMPERATURE:-0.6}"
    actor_rollout_ref.rollout.val_kwargs.top_p=0.95 actor_rollout_ref.rollout.val_kwargs.do_sample=True
    trainer.default_local_dir="$(_hq "$run_dir/checkpoints")" trainer.resume_mode=auto
    trainer.validation_data_dir="$(_hq "$run_dir/validation")"
    trainer.save_freq="${SAVE_FREQ:-20}" trainer.test_freq="${TEST_FREQ:-20}"
    trainer.logger="${LOGGER:-[console,file]}"
    trainer.project_name="${PROJECT_NAME:-arena_verl}"
    trainer.experiment_name="${EXPERIMENT_NAME:-$experiment-$setting}"
    hydra.run.dir="$(_hq "$run_dir/hydra")"
    # The tracker lives in verl's TaskRunner actor: on a running cluster (RAY_ADDRESS) it sees the job's
    # runtime_env, not this shell's environment.
    +ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH="$(_hq "$metrics_file")"
  )
  [ -n "${NNODES:-}" ] && cmd+=(trainer.nnodes="$NNODES")
  [ -n "${GPUS_PER_NODE:-}" ] && cmd+=(trainer.n_gpus_per_node="$GPUS_PER_NODE")
  [ -n "${TOTAL_STEPS:-}" ] && cmd+=(trainer.total_training_steps="$TOTAL_STEPS")

  # Where the judge runs.
  local placement=${JUDGE_PLACEMENT:-$default_placement} judge_url=${JUDGE_URL:-}
  local judge_url_file
  judge_url_file=$(_abs "${JUDGE_URL_FILE:-}")
  case "$experiment" in rlvr|rlvr_dapo) placement=none ;; esac
  case "$placement" in
    none) ;;
    serve)
      if [ -z "$judge_url" ] && [ -n "$judge_url_file" ] && [ -s "$judge_url_file" ]; then
        judge_url=$(head -n 1 "$judge_url_file")
      fi
      if [ -z "$judge_url" ]; then
        if [ "$dry_run" = 1 ] || [ -n "$judge_url_file" ]; then
          [ -n "$judge_url_file" ] || _warn "JUDGE_PLACEMENT=serve needs JUDGE_URL or JUDGE_URL_FILE"
          judge_url="http://JUDGE_HOST:8000/v1"  # placeholder, replaced once the judge job has written its address
        else
          _die "JUDGE_PLACEMENT=serve needs JUDGE_URL (http://host:port/v1) or JUDGE_URL_FILE"
        fi
      fi
      cmd+=(reward.arena.judge.backend=openai reward.arena.judge.base_url="$(_hq "$judge_url")"
            reward.arena.judge.model_path="${JUDGE_SERVED_NAME:-judge}") ;;
    ray)
      cmd+=(reward.arena.judge.backend=vllm reward.arena.judge.model_path="$(_hq "$judge_model")"
            reward.arena.judge.num_engines="${JUDGE_ENGINES:-1}"
            reward.arena.judge.tensor_parallel_size="${JUDGE_TP:-$default_tp}") ;;
    verl)
      cmd+=(reward.reward_model.enable=True reward.reward_model.enable_resource_pool=True
            reward.reward_model.model_path="$(_hq "$judge_model")"
            reward.reward_model.nnodes="${JUDGE_NNODES:-1}"
            reward.reward_model.n_gpus_per_node="${JUDGE_GPUS_PER_NODE:-$default_judge_gpus}"
            reward.reward_model.rollout.name=vllm
            reward.reward_model.rollout.tensor_model_parallel_size="${JUDGE_TP:-$default_tp}"
            reward.reward_model.rollout.gpu_memory_utilization=0.85
            # verl 0.9.1 calls the reward manager with a served reward model only when a custom function is set.
            reward.custom_reward_function.path=pkg://arena_verl.verl_reward_fn
            reward.custom_reward_function.name=compute_score
            reward.arena.judge.backend=openai reward.arena.judge.base_url=verl) ;;
    *) _die "JUDGE_PLACEMENT must be serve, ray or verl, got '$placement'" ;;
  esac
  cmd+=(${user_overrides[@]+"${user_overrides[@]}"})

  export VERL_FILE_LOGGER_PATH=$metrics_file
  # The judge server's key (scripts/slurm/judge_serve.sbatch --api-key), for the openai backend's api_key_env.
  if [ -n "${JUDGE_API_KEY:-}" ]; then export OPENAI_API_KEY=$JUDGE_API_KEY; fi
  export TORCH_NCCL_AVOID_RECORD_STREAMS=1 CUDA_DEVICE_MAX_CONNECTIONS=1 PYTHONUNBUFFERED=1
  local -a show=("$python" -m arena_verl.recipe show --config-name "$experiment" "${cmd[@]:5}")

  if [ "$dry_run" = 1 ]; then
    echo "# $experiment (SETTING=$setting, JUDGE_PLACEMENT=$placement, RUN_DIR=$run_dir)"
    echo "# environment"
    env | grep -E '^(VERL_FILE_LOGGER_PATH|TORCH_NCCL_AVOID_RECORD_STREAMS|CUDA_DEVICE_MAX_CONNECTIONS|RAY_ADDRESS)=' | sort
    echo "# command"
    printf '%q ' "${cmd[@]}"; echo
    if [ "$placement" = serve ] && [ -n "$judge_url_file" ] && [ ! -s "$judge_url_file" ]; then
      _warn "JUDGE_URL_FILE $judge_url_file is not there yet (a real run waits for it)"
    fi
    if "$python" -c "import verl, hydra" 2>/dev/null; then
      "${show[@]}"
    else
      _warn "$python cannot import verl: the composed config is not shown (run scripts/setup.sh)"
    fi
    return 0
  fi

  # A real run: wait until the judge answers (a URL file is re-read: a restarted judge job writes a new address),
  # refuse missing paths, then train in the foreground.
  if [ "$placement" = serve ]; then
    local waited=0 wait_s=${JUDGE_WAIT_S:-1800} url=$judge_url
    while true; do
      if [ -z "${JUDGE_URL:-}" ] && [ -n "$judge_url_file" ]; then url=$(head -n 1 "$judge_url_file" 2>/dev/null || true); fi
      if [ -n "$url" ] && _url_answers "$python" "$url"; then break; fi
      [ "$waited" -lt "$wait_s" ] || _die "the judge at '${url:-$judge_url_file}' did not answer within ${wait_s}s"
      sleep 10; waited=$((waited + 10))
    done
    if [ "$url" != "$judge_url" ]; then exec env JUDGE_URL="$url" bash "$0" "$@"; fi
  fi
  local -a cluster_check=()
  if [ -n "${RAY_ADDRESS:-}" ] && [ "$RAY_ADDRESS" != local ]; then cluster_check=(--check-cluster); fi
  "${show[@]}" --strict ${cluster_check[@]+"${cluster_check[@]}"} || exit 2
  mkdir -p "$run_dir"
  echo "# $(date -Is) $experiment: $(printf '%q ' "${cmd[@]}")" >> "$run_dir/commands.log"
  exec > >(tee -a "$run_dir/train.log") 2>&1
  if [ "${RECIPE_NO_EXEC:-0}" = 1 ]; then  # the caller has more to do afterwards (recipes/smoke_1gpu.sh)
    local rc=0
    "${cmd[@]}" || rc=$?
    return "$rc"
  fi
  exec "${cmd[@]}"
}
