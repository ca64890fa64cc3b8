#!/usr/bin/env bash
# Shared logic of the Slurm launchers; sourced by ray_cluster.sbatch (pyxis/enroot), ray_cluster_apptainer.sbatch
# and judge_serve.sbatch, which only choose the container runner and call run_ray_job or run_judge_server.
# scripts/slurm/README.md lists the environment variables.
#
# Every srun, ray, vllm, apptainer and scontrol command goes through `launch`: with DRY_RUN=1 it prints the command
# (one line: "+ " and the words shell-quoted) instead of running it, so a launcher can be read and tested without
# Slurm. Only `scontrol show hostnames` still runs, to expand the node list.

die() {
  echo "error: $*" >&2
  exit 2
}

# The recipes' rule for the GPUs of a served judge on the training node (gpu_split, _on_this_host): one rule for the
# recipe and the launcher. Sourcing it only defines functions.
# shellcheck source=recipes/lib/experiment.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../recipes/lib/experiment.sh"

dry_run() { [ "${DRY_RUN:-0}" = 1 ]; }

launch() {
  if dry_run; then
    printf '+'
    printf ' %q' "$@"
    printf '\n'
  else
    "$@"
  fi
}

# Start a long-running step in the background, its output appended to a log file (a requeued job continues its
# logs), its pid in BACKGROUND_PID: the step's own pid (srun's), so that a signal sent there reaches the task. A dry
# run prints the command in order and leaves BACKGROUND_PID empty.
launch_background() {
  local log=$1
  shift
  BACKGROUND_PID=''
  if dry_run; then
    launch "$@"
  else
    "$@" >>"$log" 2>&1 &
    BACKGROUND_PID=$!
  fi
}

# The job's settings common to every launcher; fills RUN_DIR, LOG_DIR, APP_DIR, CONTAINER_RUNTIME, CONTAINER_IMAGE.
read_common_settings() {
  CONTAINER_RUNTIME=${CONTAINER_RUNTIME:-pyxis}
  case "$CONTAINER_RUNTIME" in
    pyxis | apptainer)
      [ -n "${CONTAINER_IMAGE:-}" ] || die "CONTAINER_IMAGE is not set (pyxis: an enroot URI such as" \
        "docker://registry#arena-verl:0.1.0 or a .sqsh file; apptainer: a .sif file)"
      APP_DIR=${APP_DIR:-/opt/arena-verl}
      ;;
    none) APP_DIR=${APP_DIR:-${SLURM_SUBMIT_DIR:-$PWD}} ;;
    *) die "CONTAINER_RUNTIME=$CONTAINER_RUNTIME: expected pyxis, apptainer or none" ;;
  esac
  [ -n "${RUN_DIR:-}" ] || die "RUN_DIR is not set: give a folder on storage every node sees (checkpoints, logs)"
  case "$RUN_DIR" in /*) ;; *) die "RUN_DIR=$RUN_DIR must be an absolute path (it is mounted at the same path)" ;; esac
  LOG_DIR=${LOG_DIR:-$RUN_DIR/logs/slurm-${SLURM_JOB_ID:-local}}
  if ! dry_run; then mkdir -p "$LOG_DIR"; fi
}

# One array element per node: `scontrol show hostnames` expands gpu[01-03] into three lines. (verl's example wrote
# nodes_array=("$nodes"): one element holding every name, so the head got all of them and no worker started.)
read_job_nodes() {
  [ -n "${SLURM_JOB_NODELIST:-}" ] || die "SLURM_JOB_NODELIST is not set: run inside a Slurm job" \
    "(for DRY_RUN=1, set it and SLURM_NNODES yourself)"
  local names
  names=$(scontrol show hostnames "$SLURM_JOB_NODELIST") || die "scontrol show hostnames $SLURM_JOB_NODELIST failed"
  mapfile -t JOB_NODES <<<"$names"
  [ -n "${JOB_NODES[0]}" ] || die "scontrol show hostnames $SLURM_JOB_NODELIST returned no node"
  if [ -n "${SLURM_NNODES:-}" ] && [ "${#JOB_NODES[@]}" != "$SLURM_NNODES" ]; then
    die "SLURM_NNODES=$SLURM_NNODES but $SLURM_JOB_NODELIST expands to ${#JOB_NODES[@]} nodes: ${JOB_NODES[*]}"
  fi
}

# GPUs per node: RAY_NUM_GPUS, else what Slurm granted (--gpus-per-node=8 or =h100:8 gives "8" or "h100:8").
gpus_per_node() {
  local gpus=${RAY_NUM_GPUS:-${SLURM_GPUS_PER_NODE:-${SLURM_GPUS_ON_NODE:-}}}
  gpus=${gpus##*:}
  [[ $gpus =~ ^[0-9]+$ ]] || die "cannot tell the GPUs per node from RAY_NUM_GPUS/SLURM_GPUS_PER_NODE" \
    "(got '${RAY_NUM_GPUS:-${SLURM_GPUS_PER_NODE:-}}'): submit with --gpus-per-node=N"
  echo "$gpus"
}

# CPUs Ray may use per node. Passed to `ray start --num-cpus` explicitly: Ray's own count is the whole machine, not
# the job's share, and a wrong count is what verl's FAQ "Unable to register worker with raylet" is about.
cpus_per_node() {
  local cpus=${RAY_NUM_CPUS:-${SLURM_CPUS_PER_TASK:-${SLURM_CPUS_ON_NODE:-}}}
  [[ $cpus =~ ^[0-9]+$ ]] || die "cannot tell the CPUs per node: submit with --cpus-per-task=N or set RAY_NUM_CPUS"
  echo "$cpus"
}

# The address other nodes reach NODE at: NODE_IP if set (brackets around an IPv6 address are dropped), else the first
# IPv4 address `hostname --ip-address` gives there that is not loopback (127.x: Debian's 127.0.1.1 line in /etc/hosts).
# Its first word may be another kind: an IPv6 address (fe80::... link-local, or global) or that loopback. An IPv6
# address is used only through NODE_IP (Ray's IPv6 support depends on its version); host_port puts it in brackets.
node_ip() {
  local node=$1 answer word
  if [ -n "${NODE_IP:-}" ]; then
    word=${NODE_IP#[}
    echo "${word%]}"
    return
  fi
  if dry_run; then echo "$node"; return; fi
  answer=$(srun --overlap --nodes=1 --ntasks=1 --nodelist="$node" hostname --ip-address) \
    || die "could not ask $node for its address (srun hostname --ip-address)"
  for word in $answer; do
    if [[ $word =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] && [[ $word != 127.* ]]; then
      echo "$word"
      return
    fi
  done
  die "$node has no IPv4 address other than loopback (hostname --ip-address: '${answer//$'\n'/ }'); set NODE_IP" \
    "to an address the other nodes reach (an IPv6 one only with a Ray that supports IPv6)"
}

# HOST:PORT as Ray's address= and URLs want it: an IPv6 address in brackets ([fd00::1]:6379).
host_port() {
  case $1 in
    *:*) echo "[$1]:$2" ;;
    *) echo "$1:$2" ;;
  esac
}

# Bind mounts, the same "src:dst[,src:dst...]" syntax for pyxis and Apptainer: RUN_DIR at its own path (the recipe
# writes checkpoints and logs there, and the launcher reads the same paths), then CONTAINER_MOUNTS (models, data).
container_mounts() {
  local mounts="$RUN_DIR:$RUN_DIR"
  if [ -n "${CONTAINER_MOUNTS:-}" ]; then mounts+=",$CONTAINER_MOUNTS"; fi
  echo "$mounts"
}

# Fill the array STEP with the srun line that runs COMMAND in the container: on node $1, or with $1 = "all", one task
# on every node of the job. --overlap: the job's steps share the nodes (the ray daemons hold them all along), CPUs
# and memory included. --cpus-per-task is given explicitly: from Slurm 22.05 a step does not inherit the job's
# --cpus-per-task (SLURM_CPUS_PER_TASK), and the raylet with every worker it starts would be bound to one core.
# --mem=0: the step may use all of the job's memory on the node (with --overlap, without taking it from the others).
build_step() {
  local where=$1 cpus=${SLURM_CPUS_PER_TASK:-${SLURM_CPUS_ON_NODE:-}}
  shift
  STEP=(srun --overlap)
  if [[ $cpus =~ ^[1-9][0-9]*$ ]]; then STEP+=(--cpus-per-task="$cpus"); fi
  STEP+=(--mem=0)
  if [ "$where" = all ]; then
    STEP+=(--nodes="${#JOB_NODES[@]}" --ntasks="${#JOB_NODES[@]}" --ntasks-per-node=1)
  else
    STEP+=(--nodes=1 --ntasks=1 --nodelist="$where")
  fi
  case "$CONTAINER_RUNTIME" in
    # pyxis does not run the image's entrypoint: tini is named here (-s: it is not PID 1 under enroot). A named
    # container is imported once per node and reused by the job's later steps.
    pyxis)
      STEP+=(--container-image="$CONTAINER_IMAGE" --container-mounts="$(container_mounts)"
        --container-workdir="$APP_DIR" --container-name=arena-verl tini -s --)
      ;;
    # `apptainer run` runs the image's entrypoint (tini) with the command.
    apptainer) STEP+=(apptainer run --nv --bind "$(container_mounts)" --pwd "$APP_DIR" "$CONTAINER_IMAGE") ;;
    none) STEP+=(--chdir="$APP_DIR") ;;
  esac
  STEP+=("$@")
}

# Ray's ports. Default: Ray's own (GCS 6379, dashboard 8265, workers 10002-19999), fine on nodes the job has to
# itself. RAY_PORT_BASE=B (or "auto": B from the job id) gives the job the block B..B+999 instead, so that jobs
# sharing a node do not collide: B GCS, B+1..B+8 the daemons, B+10..B+999 the worker processes.
read_ray_ports() {
  local base=${RAY_PORT_BASE:-}
  RAY_NODE_PORTS=()
  RAY_HEAD_PORTS=()
  if [ -z "$base" ]; then
    GCS_PORT=6379
    return
  fi
  if [ "$base" = auto ]; then base=$((20000 + (${SLURM_JOB_ID:-0} % 40) * 1000)); fi
  [[ $base =~ ^[0-9]+$ ]] && [ "$base" -ge 1024 ] && [ "$base" -le 64535 ] \
    || die "RAY_PORT_BASE=$RAY_PORT_BASE: expected auto or a port number in 1024..64535"
  GCS_PORT=$base
  RAY_NODE_PORTS=(--node-manager-port=$((base + 1)) --object-manager-port=$((base + 2))
    --runtime-env-agent-port=$((base + 3)) --dashboard-agent-grpc-port=$((base + 4))
    --dashboard-agent-listen-port=$((base + 5)) --metrics-export-port=$((base + 6))
    --min-worker-port=$((base + 10)) --max-worker-port=$((base + 999)))
  RAY_HEAD_PORTS=(--ray-client-server-port=$((base + 7)) --dashboard-port=$((base + 8)))
}

# TERM to background steps (srun passes it on to the tasks), then KILL to those still running after GRACE seconds:
# one deadline for all of them, so that many steps ignoring TERM cannot outlast the early warning before a requeue.
stop_steps() {
  local grace=$1 pid
  shift
  local -a running=()
  for pid in "$@"; do
    if kill -TERM "$pid" 2>/dev/null; then running+=("$pid"); fi
  done
  local deadline=$((SECONDS + grace))
  while :; do
    local -a alive=()
    for pid in ${running[@]+"${running[@]}"}; do
      if kill -0 "$pid" 2>/dev/null; then alive+=("$pid"); fi
    done
    running=(${alive[@]+"${alive[@]}"})
    if [ "${#running[@]}" = 0 ] || [ "$SECONDS" -ge "$deadline" ]; then break; fi
    sleep 0.2
  done
  if [ "${#running[@]}" -gt 0 ]; then
    echo "$(date '+%F %T') pids ${running[*]} still run ${grace}s after TERM: KILL" >&2
    kill -KILL "${running[@]}" 2>/dev/null || true
  fi
  for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
}

# `ray stop` on every node, then the `ray start --block` steps are ended, RAY_STOP_WAIT_S [30] for all of them
# together. RAY_STOP=0 skips the former: `ray stop` ends every Ray process of your user on those nodes, another job's
# of yours included.
stop_ray() {
  if [ "${RAY_STOP:-1}" = 1 ] && [ "${#JOB_NODES[@]}" -gt 0 ]; then
    build_step all ray stop
    launch "${STEP[@]}" || echo "warning: ray stop failed on some node" >&2
  fi
  if [ "${#RAY_STEP_PIDS[@]}" -gt 0 ]; then stop_steps "${RAY_STOP_WAIT_S:-30}" "${RAY_STEP_PIDS[@]}"; fi
  RAY_STEP_PIDS=()
}

# The user's NNODES / GPUS_PER_NODE within the job's nodes ($1) and GPUs per node ($2): checked before any step
# starts (asking the head for its address included).
check_share_values() {
  if [ -n "${NNODES:-}" ]; then
    [[ $NNODES =~ ^[1-9][0-9]*$ ]] && [ "$NNODES" -le "$1" ] \
      || die "NNODES=$NNODES: expected a number of nodes from 1 to the job's $1"
  fi
  if [ -n "${GPUS_PER_NODE:-}" ]; then
    [[ $GPUS_PER_NODE =~ ^[1-9][0-9]*$ ]] && [ "$GPUS_PER_NODE" -le "$2" ] \
      || die "GPUS_PER_NODE=$GPUS_PER_NODE: expected a number of GPUs from 1 to the node's $2"
  fi
}

# Fill TRAINER_SHARE with the NNODES=/GPUS_PER_NODE= words for the recipe (recipe path $1, job nodes $2, GPUs per
# node $3). The whole cluster goes to the trainer only when the user set neither and the judge takes no GPU of this
# Ray cluster: JUDGE_PLACEMENT=serve (a separate job) or a recipe without a judge. With JUDGE_PLACEMENT=ray or verl
# (or unset: the SETTING's default, ray for paper) the judge needs GPUs the trainer leaves free, so only what the user
# set is passed and the recipe falls back to the SETTING's sizes (paper: 4 nodes x 8 GPUs).
trainer_share() {
  local recipe=$1 nodes=$2 gpus=$3
  TRAINER_SHARE=()
  check_share_values "$nodes" "$gpus"
  if [ -n "${NNODES:-}" ]; then TRAINER_SHARE+=("NNODES=$NNODES"); fi
  if [ -n "${GPUS_PER_NODE:-}" ]; then TRAINER_SHARE+=("GPUS_PER_NODE=$GPUS_PER_NODE"); fi
  if [ "${#TRAINER_SHARE[@]}" -gt 0 ]; then return; fi
  local judge_elsewhere=0
  case "$(basename "$recipe")" in rlvr.sh | rlvr_dapo.sh) judge_elsewhere=1 ;; esac
  # A served judge on the head (same_node_judge) takes GPUs there: the setting's sizes, as for ray and verl.
  if [ "${JUDGE_PLACEMENT:-}" = serve ] && [ "${SAME_NODE_JUDGE:-0}" != 1 ]; then judge_elsewhere=1; fi
  if [ "$judge_elsewhere" = 1 ]; then TRAINER_SHARE=("NNODES=$nodes" "GPUS_PER_NODE=$gpus"); fi
}

# Whether the served judge runs on the head node (HEAD, HEAD_IP): JUDGE_PLACEMENT=serve with a JUDGE_URL (or one of
# its comma-separated replicas) that is a loopback address or the head's name or address (unless JUDGE_GPUS=shared:
# it shares the trainer's GPUs).
same_node_judge() {
  local host url
  local -a urls
  [ "${JUDGE_PLACEMENT:-}" = serve ] && [ -n "${JUDGE_URL:-}" ] && [ "${JUDGE_GPUS:-}" != shared ] || return 1
  IFS=, read -r -a urls <<< "$JUDGE_URL"
  for url in "${urls[@]}"; do
    host=$(_url_host "$url")
    if _is_loopback "$host" || [ "$host" = "$1" ] || [ "$host" = "$2" ]; then return 0; fi
  done
  return 1
}

# The trainer's GPUs per node the recipe will use: GPUS_PER_NODE, else its SETTING's (configs/arena_setting/).
setting_gpus_per_node() {
  if [ -n "${GPUS_PER_NODE:-}" ]; then echo "$GPUS_PER_NODE"; return; fi
  case "${SETTING:-node8}" in
    node8) echo 6 ;;
    paper) echo 8 ;;
    *) echo 1 ;;
  esac
}

# Trap of the Ray job. USR1 is the job's own early warning (#SBATCH --signal=B:USR1@300): stop, then requeue if
# REQUEUE=1, the judge job (JUDGE_JOB_ID) with it, so that its time limit starts again with the training job's; with
# REQUEUE=0 the run ends here and the judge job is cancelled. TERM is scancel, or the scheduler preempting (it
# requeues by itself where configured, and the job's next start needs the judge): stop only, the judge job stays.
on_stop_signal() {
  local signal=$1
  if [ "$STOPPING" = 1 ]; then return; fi
  STOPPING=1
  echo "$(date '+%F %T') SIG$signal: stopping the driver (TERM, up to ${STOP_GRACE_S}s), then Ray"
  if [ -n "$WAIT_PID" ]; then stop_steps 5 "$WAIT_PID"; fi
  if [ -n "$DRIVER_PID" ]; then stop_steps "$STOP_GRACE_S" "$DRIVER_PID"; fi
  stop_ray
  if [ "$signal" = USR1 ] && [ "${REQUEUE:-1}" = 1 ]; then
    echo "$(date '+%F %T') requeueing job ${SLURM_JOB_ID:-}; the recipe resumes from the last checkpoint in $RUN_DIR"
    if [ -n "${JUDGE_JOB_ID:-}" ]; then
      echo "$(date '+%F %T') requeueing the judge job $JUDGE_JOB_ID too (its time limit starts again)"
      launch scontrol requeue "$JUDGE_JOB_ID" || echo "warning: scontrol requeue $JUDGE_JOB_ID failed" >&2
    fi
    launch scontrol requeue "${SLURM_JOB_ID:-}" || echo "warning: scontrol requeue ${SLURM_JOB_ID:-} failed" >&2
    exit 0
  fi
  if [ "$signal" = USR1 ]; then
    cancel_judge_job
  elif [ -n "${JUDGE_JOB_ID:-}" ]; then
    echo "the judge job $JUDGE_JOB_ID is left running (a requeued job needs it); if this job is not coming back:" \
      "scancel $JUDGE_JOB_ID"
  fi
  exit 143
}

# The end of the training run: the judge job it was given (JUDGE_JOB_ID) is not needed any more. Its TERM trap
# removes its URL file and stops vllm serve.
cancel_judge_job() {
  if [ -z "${JUDGE_JOB_ID:-}" ]; then return 0; fi
  echo "$(date '+%F %T') cancelling the judge job $JUDGE_JOB_ID"
  launch scancel "$JUDGE_JOB_ID" || echo "warning: scancel $JUDGE_JOB_ID failed" >&2
}

# Run a step in the background and wait for it, so that a signal's trap runs at once rather than at the step's end.
run_waited() {
  if dry_run; then
    launch "$@"
    return
  fi
  "$@" &
  WAIT_PID=$!
  local rc=0
  wait "$WAIT_PID" || rc=$?
  WAIT_PID=''
  return "$rc"
}

# Run on every node before Ray starts (bash -c, in the container): does it see the GPUs Ray will be told it has
# (--num-gpus, $1)? Without GPU passthrough (apptainer without --nv, an enroot/pyxis setup without the NVIDIA hook)
# `ray start --num-gpus` advertises GPUs nobody can use, wait_for_ray.py counts them, and verl fails much later.
# shellcheck disable=SC2016 # expanded by the step's shell on each node, not here
{
  GPU_CHECK_SCRIPT='want=$1 node=${SLURMD_NODENAME:-$(hostname)}; seen=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU ")'
  GPU_CHECK_SCRIPT+='; if [ "$seen" -ge "$want" ]; then echo "$node: $seen GPUs visible, Ray gets $want"; else echo'
  GPU_CHECK_SCRIPT+=' "error: $node: the container sees $seen GPUs (nvidia-smi -L) but Ray would get $want" >&2; exit 1; fi'
}

# The Ray job: a head on the first node, one worker on every other node, the recipe on the head once all joined.
# Arguments are passed to the recipe (Hydra overrides). Ray gets every node and GPU of the job; the recipe's trainer
# gets the share trainer_share decides, and RAY_CLUSTER_NODES / RAY_CLUSTER_GPUS_PER_NODE say what the cluster has.
run_ray_job() {
  read_common_settings
  read_job_nodes
  read_ray_ports
  local gpus cpus head head_ip address recipe=${RECIPE:-recipes/arena_live.sh}
  gpus=$(gpus_per_node)
  cpus=$(cpus_per_node)
  STOP_GRACE_S=${STOP_GRACE_S:-120}
  local wait_s=${RAY_WAIT_S:-600} name
  for name in STOP_GRACE_S RAY_STOP_WAIT_S RAY_WAIT_S; do
    [[ ${!name:-0} =~ ^[0-9]+$ ]] || die "$name=${!name}: expected a number of seconds"
  done
  [[ ${JUDGE_JOB_ID:-0} =~ ^[0-9]+$ ]] \
    || die "JUDGE_JOB_ID=$JUDGE_JOB_ID: expected the judge job's id (what sbatch --parsable printed)"
  check_share_values "${#JOB_NODES[@]}" "$gpus"
  head=${JOB_NODES[0]}
  head_ip=$(node_ip "$head")
  address=$(host_port "$head_ip" "$GCS_PORT")
  # A served judge on the head and the trainer get disjoint GPUs: Ray on the head is given only the trainer's
  # (CUDA_VISIBLE_DEVICES and --num-gpus), so that none of its workers lands on the judge's.
  local trainer_gpus="" judge_gpus="" head_gpus=$gpus split
  SAME_NODE_JUDGE=0
  if same_node_judge "$head" "$head_ip"; then
    [ "${#JOB_NODES[@]}" = 1 ] || die "JUDGE_URL=$JUDGE_URL is on the head node, which the referee on another of" \
      "the job's ${#JOB_NODES[@]} nodes cannot reach as such: give the judge an address every node reaches"
    split=$(gpu_split "$(seq -s, 0 $((gpus - 1)))" "${JUDGE_GPUS:-}" "$(setting_gpus_per_node)") || exit 2
    trainer_gpus=${split% *} judge_gpus=${split#* }
    head_gpus=$(setting_gpus_per_node)
    SAME_NODE_JUDGE=1
  fi
  trainer_share "$recipe" "${#JOB_NODES[@]}" "$gpus"
  # A metrics path set by the caller reaches Ray's worker processes too (the recipe also passes its own through the
  # trainer's runtime_env).
  local -a ray_start=(ray start) head_start=()
  if [ -n "${VERL_FILE_LOGGER_PATH:-}" ]; then
    ray_start=(env VERL_FILE_LOGGER_PATH="$VERL_FILE_LOGGER_PATH" ray start)
  fi
  head_start=("${ray_start[@]}")
  if [ -n "$trainer_gpus" ]; then head_start=(env CUDA_VISIBLE_DEVICES="$trainer_gpus" "${ray_start[@]}"); fi
  STOPPING=0
  DRIVER_PID=''
  WAIT_PID=''
  RAY_STEP_PIDS=()
  trap 'on_stop_signal USR1' USR1
  trap 'on_stop_signal TERM' TERM
  echo "$(date '+%F %T') job ${SLURM_JOB_ID:-?}: ${#JOB_NODES[@]} nodes (${JOB_NODES[*]}), $gpus GPUs and $cpus CPUs" \
    "each; Ray head $address; recipe $recipe; logs in $LOG_DIR"
  if [ -n "$trainer_gpus" ]; then
    echo "the served judge on the head ($JUDGE_URL) keeps GPUs $judge_gpus (start it with" \
      "CUDA_VISIBLE_DEVICES=$judge_gpus); Ray there gets $trainer_gpus"
  fi
  if [ "${#TRAINER_SHARE[@]}" -gt 0 ]; then
    echo "the trainer gets ${TRAINER_SHARE[*]}"
  else
    echo "the trainer gets the sizes of the recipe's SETTING; the GPUs it leaves are the judge's" \
      "(JUDGE_PLACEMENT=${JUDGE_PLACEMENT:-unset})"
  fi

  if [ "${GPU_CHECK:-1}" = 1 ] && [ "$gpus" -gt 0 ]; then
    build_step all bash -c "$GPU_CHECK_SCRIPT" gpu-check "$gpus"
    run_waited "${STEP[@]}" || die "a node does not see the $gpus GPUs Ray would advertise there (see above):" \
      "check the container's GPU passthrough and the job's --gpus-per-node (GPU_CHECK=0 skips this check)"
  fi
  # The dashboard listens on the head's loopback only: its Jobs API runs any code, as you, for whoever reaches it.
  build_step "$head" "${head_start[@]}" --head --node-ip-address="$head_ip" --port="$GCS_PORT" --num-cpus="$cpus" \
    --num-gpus="$head_gpus" --dashboard-host="${RAY_DASHBOARD_HOST:-127.0.0.1}" --disable-usage-stats --block \
    "${RAY_NODE_PORTS[@]}" "${RAY_HEAD_PORTS[@]}"
  launch_background "$LOG_DIR/ray_head.log" "${STEP[@]}"
  RAY_STEP_PIDS+=(${BACKGROUND_PID:+"$BACKGROUND_PID"})
  # Workers are started once the head answers: `ray start --address` gives up if the GCS is not there yet.
  build_step "$head" python3 scripts/slurm/wait_for_ray.py --address="$address" --nodes=1 --timeout-s="$wait_s"
  run_waited "${STEP[@]}" || { stop_ray; die "the Ray head did not start; see $LOG_DIR/ray_head.log"; }
  local node
  for node in "${JOB_NODES[@]:1}"; do
    build_step "$node" "${ray_start[@]}" --address="$address" --num-cpus="$cpus" --num-gpus="$gpus" \
      --disable-usage-stats --block "${RAY_NODE_PORTS[@]}"
    launch_background "$LOG_DIR/ray_worker_$node.log" "${STEP[@]}"
    RAY_STEP_PIDS+=(${BACKGROUND_PID:+"$BACKGROUND_PID"})
  done
  build_step "$head" python3 scripts/slurm/wait_for_ray.py --address="$address" --nodes="${#JOB_NODES[@]}" \
    --gpus=$(((${#JOB_NODES[@]} - 1) * gpus + head_gpus)) --timeout-s="$wait_s"
  run_waited "${STEP[@]}" || { stop_ray; die "not every node joined Ray; see $LOG_DIR/ray_*.log"; }

  echo "$(date '+%F %T') starting the recipe; its output goes to $LOG_DIR/driver.log"
  local -a same_node=()
  if [ -n "$trainer_gpus" ]; then same_node=(TRAINER_GPUS="$trainer_gpus" JUDGE_GPUS="$judge_gpus"); fi
  build_step "$head" env RAY_ADDRESS="$address" ${TRAINER_SHARE[@]+"${TRAINER_SHARE[@]}"} \
    ${same_node[@]+"${same_node[@]}"} RAY_CLUSTER_NODES="${#JOB_NODES[@]}" RAY_CLUSTER_GPUS_PER_NODE="$gpus" \
    RUN_DIR="$RUN_DIR" bash "$recipe" "$@"
  launch_background "$LOG_DIR/driver.log" "${STEP[@]}"
  DRIVER_PID=$BACKGROUND_PID
  local rc=0
  if [ -n "$DRIVER_PID" ]; then
    # A trapped signal interrupts `wait`, and the trap ends the job: reaching the next line means the driver ended.
    wait "$DRIVER_PID" || rc=$?
    DRIVER_PID=''
    echo "$(date '+%F %T') the recipe exited with status $rc"
  fi
  cancel_judge_job
  stop_ray
  return "$rc"
}

# The judge job: `vllm serve` on this job's node; once /health answers, http://<node ip>:<port>/v1 is written to
# JUDGE_URL_FILE (atomically), and removed again when the job ends. A URL file found at the start is removed first: a
# judge job killed with SIGKILL could not remove its own, and a training job would read a dead address. JUDGE_API_KEY
# reaches the server as VLLM_API_KEY, in the environment rather than on a command line that `ps` shows every user of
# the node. Arguments are passed to `vllm serve`.
run_judge_server() {
  read_common_settings
  read_job_nodes
  [ -n "${JUDGE_MODEL:-}" ] || die "JUDGE_MODEL is not set (the judge model's folder, as mounted in the container)"
  [ -n "${JUDGE_URL_FILE:-}" ] || die "JUDGE_URL_FILE is not set (a path on shared storage the training job reads)"
  local node=${JOB_NODES[0]} ip port=${JUDGE_PORT:-8000} tp=${JUDGE_TP:-} start_s=${JUDGE_START_TIMEOUT_S:-3600}
  if [ -z "$tp" ]; then tp=$(gpus_per_node); fi
  ip=$(node_ip "$node")
  local listen=0.0.0.0 health
  case $ip in *:*) listen=:: ;; esac
  JUDGE_URL="http://$(host_port "$ip" "$port")/v1"
  health="http://$(host_port "$ip" "$port")/health"
  build_step "$node" vllm serve "$JUDGE_MODEL" --served-model-name="${JUDGE_SERVED_NAME:-judge}" \
    --tensor-parallel-size="$tp" --host="$listen" --port="$port" \
    --gpu-memory-utilization="${JUDGE_GPU_MEMORY_UTILIZATION:-0.9}" --enable-prompt-tokens-details "$@"
  if [ -n "${JUDGE_API_KEY:-}" ]; then export VLLM_API_KEY=$JUDGE_API_KEY; fi
  echo "$(date '+%F %T') judge ${JUDGE_MODEL} on $node (TP $tp) at $JUDGE_URL" \
    "($([ -n "${JUDGE_API_KEY:-}" ] && echo "API key required" || echo "no API key")); log $LOG_DIR/judge_vllm.log"
  launch rm -f "$JUDGE_URL_FILE"
  if dry_run; then
    launch "${STEP[@]}"
    echo "+ (once $health answers) write $JUDGE_URL to $JUDGE_URL_FILE"
    return 0
  fi
  SERVER_PID=''
  trap remove_judge_url EXIT
  trap 'exit 143' TERM USR1 INT
  launch_background "$LOG_DIR/judge_vllm.log" "${STEP[@]}"
  SERVER_PID=$BACKGROUND_PID
  local deadline=$((SECONDS + start_s))
  until curl --silent --fail --globoff --max-time 5 --output /dev/null "$health"; do
    kill -0 "$SERVER_PID" 2>/dev/null || die "vllm serve exited before it answered; see $LOG_DIR/judge_vllm.log"
    [ "$SECONDS" -lt "$deadline" ] || die "vllm serve did not answer within ${start_s}s; see $LOG_DIR/judge_vllm.log"
    sleep "${JUDGE_POLL_S:-5}" &
    wait $!
  done
  mkdir -p "$(dirname "$JUDGE_URL_FILE")"
  local tmp="$JUDGE_URL_FILE.tmp.$$"
  printf '%s\n' "$JUDGE_URL" >"$tmp"
  mv -f "$tmp" "$JUDGE_URL_FILE"
  echo "$(date '+%F %T') judge ready: wrote $JUDGE_URL to $JUDGE_URL_FILE"
  local rc=0
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=''
  echo "$(date '+%F %T') vllm serve exited with status $rc"
  return "$rc"
}

# EXIT trap of the judge job: the URL file goes first (a training job must not reach a dying server), and only if it
# still holds this job's URL (a newer judge job may have replaced it); then the server is stopped.
remove_judge_url() {
  if [ -n "${JUDGE_URL_FILE:-}" ] && [ "$(cat "$JUDGE_URL_FILE" 2>/dev/null)" = "${JUDGE_URL:-}" ]; then
    rm -f "$JUDGE_URL_FILE"
  fi
  if [ -n "${SERVER_PID:-}" ]; then stop_steps 30 "$SERVER_PID"; fi
}
