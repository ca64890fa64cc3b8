"""Names a package exports but loads on first use (PEP 562), so that importing one light module of the package does
not import what its heavier modules need."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, namespace: dict, exports: Mapping[str, str]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for the package ``package`` whose globals are ``namespace``: ``exports`` maps each
    exported name to the module that defines it. A name is imported when first read, then kept in the namespace."""

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
