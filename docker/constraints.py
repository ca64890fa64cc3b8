"""Turn the base image's ``pip list --format=freeze`` into pip constraints for the packages that must not move.

    python3 -m pip list --format=freeze | python3 docker/constraints.py > /etc/arena-verl-constraints.txt
    python3 docker/constraints.py freeze.txt

Held, at exactly the version the base image ships (each line ``name==version`` as given):

- torch, torchvision, torchaudio: the CUDA build of the image (a PyPI build from a resolver would replace it);
  torchvision and torchaudio pin this very torch, so holding them never conflicts with it.
- vllm: built against that torch; its own exact pins (flashinfer, ...) are then held through it.
- flash-attn: compiled against that torch; no matching wheel on PyPI.

Never held: ``nvidia-*`` and triton. torch pins them exactly (torch 2.11.0: nvidia-nccl-cu13==2.28.9) while the base
image installs newer ones, so holding them too makes pip fail with ResolutionImpossible as soon as anything depends
on torch. Unheld, pip keeps them where torch's pins allow and otherwise installs those pins (what torch was built
with). Everything else may move too: verl 0.9.1 needs newer transformers, TransferQueue and tensordict.

Stdlib only. Exits 1 with one line on stderr when torch is not in the input.
"""

from __future__ import annotations

import re
import sys

HELD = frozenset({"torch", "torchvision", "torchaudio", "vllm", "flash-attn"})
LINE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(\S+)\s*$")


def normalise(name: str) -> str:
    """PEP 503: case and runs of ``-``, ``_``, ``.`` do not matter (flash_attn, Flash-Attn and flash-attn agree)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def constraints(freeze: str) -> list[str]:
    """The ``name==version`` lines of ``freeze`` whose name is held, in input order (other lines are ignored)."""
    held = []
    for line in freeze.splitlines():
        match = LINE.match(line)
        if match and normalise(match[1]) in HELD:
            held.append(f"{match[1]}=={match[2]}")
    return held


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: constraints.py [FREEZE_FILE]  (default: stdin)", file=sys.stderr)
        return 2
    if argv:
        with open(argv[0], encoding="utf-8") as file:
            freeze = file.read()
    else:
        freeze = sys.stdin.read()
    held = constraints(freeze)
    if not any(normalise(line.split("==")[0]) == "torch" for line in held):
        print("constraints.py: error: no torch==<version> in the input (pip list --format=freeze)", file=sys.stderr)
        return 1
    sys.stdout.write("".join(line + "\n" for line in held))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
