"""What the recipes read of a backend's registry entry:

    python -m arena_verl.backend_registry facts NAME [MODULE ...]
    python -m arena_verl.backend_registry probe NAME [MODULE ...] -- [PROBE OPTIONS] -- URL

``probe`` runs the backend's readiness probe (its entry's ``probe`` function: exit 0 up, 1 not up yet, 2 never).
``facts`` prints ``model_folder=0|1 gpu_engines=0|1 needs_url=0|1 takes_callable=0|1 engine_context=0|1
simulated=0|1`` (``takes_callable``: its options have a ``callable`` key; ``engine_context``: a ``max_model_len``
key). Both import the installed plugins and the modules named (``reward.arena.plugins``) first; an unknown name exits
2, naming the registered ones. Stdlib only: the recipes run it with the Python they are given, the package on
``PYTHONPATH``."""

from __future__ import annotations

import dataclasses
import importlib
import sys

from arena_verl.backend_registry import BACKENDS, backend_names
from arena_verl.core.plugin_loader import PluginError, load_plugins


def facts(name: str) -> str:
    entry = BACKENDS[name]
    keys = {f.name for f in dataclasses.fields(entry.options)}
    values = {
        "model_folder": entry.model_folder,
        "gpu_engines": entry.gpu_engines,
        "needs_url": entry.needs_url,
        "takes_callable": "callable" in keys,
        "engine_context": "max_model_len" in keys,
        "simulated": entry.simulated,
    }
    return " ".join(f"{key}={int(value)}" for key, value in values.items())


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("facts", "probe"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    command, name, rest = argv[0], argv[1], argv[2:]
    at = rest.index("--") if "--" in rest else len(rest)
    modules, probe_args = rest[:at], rest[at + 1 :]  # plugin modules, then (after --) the probe's arguments
    try:
        load_plugins(modules)
    except PluginError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if name not in BACKENDS:
        print(f"error: judge backend {name!r} is not registered: one of {', '.join(backend_names())}", file=sys.stderr)
        return 2
    if command == "facts":
        print(facts(name))
        return 0
    probe = BACKENDS[name].probe
    if probe is None:
        print(f"error: the {name} backend has no readiness probe (it is not a served judge)", file=sys.stderr)
        return 2
    module, _, function = probe.partition(":")
    return getattr(importlib.import_module(module), function)(probe_args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
