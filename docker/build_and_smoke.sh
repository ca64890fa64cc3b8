#!/usr/bin/env bash
# Build the arena-verl image (docker/Dockerfile) and smoke-test it in containers, on a machine with Docker.
#
#   docker/build_and_smoke.sh [IMAGE_TAG]
#
# Environment (all optional):
#   IMAGE_TAG     the tag to build and test; the argument wins (default arena-verl:0.1.0)
#   BASE_IMAGE    the base image (default: the Dockerfile's, verlai/verl:vllm024.dev2)
#   SKIP_BUILD=1  test an image already built, without docker build
#   GPUS          auto (default: --gpus all when nvidia-smi exists on this host, else CPU-only), all or none
#   DOCKER        the docker command (default docker; e.g. "sudo docker")
#
# Checks, each in a fresh container: pip check (of what the image adds to its base: docker/pip_check.py), the
# import smoke, the arena_live config composes (missing data and model paths are warnings), and with GPUs
# nvidia-smi and torch.cuda.is_available(). On stdout: one PASS, FAIL or SKIP line each, a failed check's last output lines, and a summary; the build's output goes to stderr. Exit status:
# 0 when all passed, 1 when any failed (a failed build stops there), 2 on a usage error.
set -euo pipefail

if [ "$#" -gt 1 ]; then
  echo "usage: $0 [IMAGE_TAG]" >&2
  exit 2
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=${1:-${IMAGE_TAG:-arena-verl:0.1.0}}
read -r -a docker <<<"${DOCKER:-docker}"
if ! command -v "${docker[0]}" >/dev/null; then
  echo "error: ${docker[0]} not found (set DOCKER to the docker command)" >&2
  exit 2
fi

gpu_args=()
case "${GPUS:-auto}" in
  auto) if command -v nvidia-smi >/dev/null; then gpu_args=(--gpus all); fi ;;
  all) gpu_args=(--gpus all) ;;
  none) ;;
  *) echo "error: GPUS must be auto, all or none, got '${GPUS}'" >&2; exit 2 ;;
esac
if [ "${#gpu_args[@]}" -eq 0 ]; then
  echo "note: CPU-only smoke (no nvidia-smi on this host, or GPUS=none): the GPU checks are skipped"
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed=0 passed=0 skipped=0

# check NAME COMMAND...: run COMMAND, print PASS or FAIL (with the last lines of its output).
check() {
  local name=$1 log
  shift
  log="$logs/$((passed + failed + 1)).log"
  if "$@" >"$log" 2>&1; then
    echo "PASS  $name"
    passed=$((passed + 1))
  else
    echo "FAIL  $name (exit $?); last lines:"
    tail -n 20 "$log" | sed 's/^/      /'
    failed=$((failed + 1))
  fi
}

skip() {
  echo "SKIP  $1"
  skipped=$((skipped + 1))
}

# in_image COMMAND...: COMMAND in a fresh container of the image, with the GPUs when there are any.
in_image() {
  "${docker[@]}" run --rm ${gpu_args[@]+"${gpu_args[@]}"} "$tag" "$@"
}

if [ "${SKIP_BUILD:-0}" = 1 ]; then
  skip "build $tag (SKIP_BUILD=1)"
else
  build=("${docker[@]}" build -f "$repo/docker/Dockerfile" -t "$tag")
  if [ -n "${BASE_IMAGE:-}" ]; then build+=(--build-arg "BASE_IMAGE=$BASE_IMAGE"); fi
  # The build's own output goes to stderr as it comes (it is long); stdout keeps the PASS/FAIL lines.
  if "${build[@]}" "$repo" >&2; then
    echo "PASS  build $tag${BASE_IMAGE:+ on $BASE_IMAGE}"
    passed=$((passed + 1))
  else
    echo "FAIL  build $tag (exit $?; its output is above, on stderr)"
    echo "FAIL  summary: the build failed, nothing else was tried"
    exit 1
  fi
fi

# pip check of what the image adds to its base (the base's own pins are notes): docker/pip_check.py.
check "pip check" in_image python3 /usr/local/share/arena-verl/pip_check.py check /usr/local/share/arena-verl
check "imports (vllm, verl, arena_verl, transfer_queue)" \
  in_image python3 -I -c "import vllm, verl, arena_verl, transfer_queue"
# The judge's address and name are what recipes/arena_live.sh adds for its default JUDGE_PLACEMENT=serve.
check "arena_live composes (recipe show)" \
  in_image python3 -m arena_verl.recipe show --config-name arena_live \
  reward.arena.judge.base_url=http://JUDGE_HOST:8000/v1 reward.arena.judge.model_path=judge
if [ "${#gpu_args[@]}" -gt 0 ]; then
  check "nvidia-smi in the container" in_image nvidia-smi
  check "torch.cuda.is_available()" in_image python3 -c \
    "import sys, torch; print(torch.__version__, torch.version.cuda); sys.exit(not torch.cuda.is_available())"
else
  skip "nvidia-smi in the container (CPU-only)"
  skip "torch.cuda.is_available() (CPU-only)"
fi

if [ "$failed" -gt 0 ]; then
  echo "FAIL  summary: $failed failed, $passed passed, $skipped skipped ($tag)"
  exit 1
fi
echo "PASS  summary: $passed passed, $skipped skipped ($tag)"
