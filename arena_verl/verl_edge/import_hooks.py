"""Run a function right after a module is imported, without importing it earlier than its users do.

The plugin is loaded in every verl process; most of them never import the agent loop or vLLM. A patch of those
modules is therefore installed when (and only if) the process imports them."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
from collections.abc import Callable

__all__ = ["after_import"]

logger = logging.getLogger(__name__)


def _run_hook(hook: Callable, module) -> None:
    # A patch that fails must never make the module itself fail to import (it is verl's, on every GPU run too).
    try:
        hook(module)
    except Exception:  # noqa: BLE001
        logger.warning("arena: patching %s failed; left as it is", module.__name__, exc_info=True)


class _PostImportHook(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, hook: Callable):
        self.name, self.hook = name, hook

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module, hook = spec.loader.exec_module, self.hook

        def exec_then_hook(module):
            exec_module(module)
            _run_hook(hook, module)

        spec.loader.exec_module = exec_then_hook
        return spec


def after_import(name: str, hook: Callable) -> None:
    """``hook(module)`` once ``name`` is imported: now if it already is, else right after its import."""
    if name in sys.modules:
        _run_hook(hook, sys.modules[name])
    else:
        sys.meta_path.insert(0, _PostImportHook(name, hook))
