"""Users' own judge backends and strategies, found in every process the way verl finds its plugins: a package declares
an entry point in the group :data:`ENTRY_POINT_GROUP` (``[project.entry-points."arena_verl.plugins"]`` in its
``pyproject.toml``: ``my_judges = "my_package.arena_plugin"``), or a config names modules in
``reward.arena.plugins``. Loading imports each such module, whose import registers its entries
(:func:`arena_verl.backend_registry.register`, :func:`arena_verl.core.strategies.register_strategy`).

The registries call :func:`load_plugins` before they are read, so the driver, the reward workers and the Ray referee
actors (which receive ``reward.arena.plugins`` with the settings) all see the same entries. A plugin that fails to
import is an error naming it: a run must not start with a judge other than the one configured.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from importlib import metadata

__all__ = ["ENTRY_POINT_GROUP", "load_plugins", "PluginError"]

ENTRY_POINT_GROUP = "arena_verl.plugins"
_MODULE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", re.ASCII)
_loaded: set[str] = set()  # entry point values and module names imported in this process
_entry_points = "unread"  # unread | loading | read: a failure leaves it unread, so every later read fails again


class PluginError(ValueError):
    """A plugin module that cannot be imported (or is not a module path)."""


def load_plugins(modules: Iterable[str] = ()) -> None:
    """Import the installed packages' entry points (once a process) and ``modules`` (each once)."""
    global _entry_points
    if _entry_points == "unread":
        _entry_points = "loading"  # a plugin that reads a registry while it loads must not load them again
        try:
            for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
                _import(entry.value.partition(":")[0], f"entry point {entry.name!r} of group {ENTRY_POINT_GROUP!r}")
        except PluginError:
            _entry_points = "unread"
            raise
        _entry_points = "read"
    for module in modules:
        if not isinstance(module, str) or not _MODULE.fullmatch(module):
            raise PluginError(f"reward.arena.plugins: {module!r} is not a module path (package.module)")
        _import(module, "reward.arena.plugins")


def _import(module: str, where: str) -> None:
    if module in _loaded:
        return
    _loaded.add(module)
    try:
        importlib.import_module(module)
    except Exception as exc:  # any import failure: the run must not start without the configured plugin
        _loaded.discard(module)
        raise PluginError(f"{where}: cannot import plugin module {module!r}: {type(exc).__name__}: {exc}") from exc
