"""The Python side of ``recipes/smoke_1gpu.sh``, the first check of a GPU machine (docs/gpu_smoke.md), run as
``python -m arena_verl.tools.gpu_smoke <subcommand> ...``.

Standard library at import time, so that a machine without torch, vLLM or verl still gets its inventory:

* :mod:`.inventory`: what the machine has and what that allows (the packages are imported in subprocesses);
* :mod:`.checks`: the checks (CUDA, the arena's core, the models, vLLM's engine, the served judge, the training
  figures), each importing what it needs when it runs;
* :mod:`.report`: the prerequisites of each check, its record in the state file, the exit code, the final lines;
* :mod:`.bounded`: a stage under a deadline, reaped afterwards, and a free port;
* :mod:`.cli`: the subcommands (``__main__`` runs it).
"""
