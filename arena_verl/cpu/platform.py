"""A ``cpu`` platform for verl's platform registry (selected with ``VERL_PLATFORM=cpu``, never auto-detected)."""

from __future__ import annotations

import contextlib
from types import ModuleType, SimpleNamespace
from typing import Any

import torch
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry

__all__ = ["PlatformCPU", "register", "cpu_device_module"]


def _cpu_device_module() -> ModuleType:
    """What verl calls on ``torch.cuda``, answered for the CPU: the caches, streams and memory figures a GPU has
    become no-ops, the free-memory query reads the host's memory, and the RNG is torch's default one."""
    module = ModuleType("arena_verl_cpu_device")
    cpu = torch.cpu

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        import psutil

        memory = psutil.virtual_memory()
        return memory.available, memory.total

    module.__dict__.update(
        is_available=lambda: True,
        device_count=lambda: 1,
        current_device=lambda: 0,
        set_device=lambda device=None: None,
        get_device_name=lambda device=None: "cpu",
        synchronize=lambda device=None: None,
        empty_cache=lambda: None,
        ipc_collect=lambda: None,
        mem_get_info=mem_get_info,
        memory_allocated=lambda device=None: 0,
        memory_reserved=lambda device=None: 0,
        max_memory_allocated=lambda device=None: 0,
        max_memory_reserved=lambda device=None: 0,
        reset_peak_memory_stats=lambda device=None: None,
        set_per_process_memory_fraction=lambda fraction, device=None: None,
        manual_seed=torch.manual_seed,
        manual_seed_all=torch.manual_seed,
        get_rng_state=lambda device=None: torch.get_rng_state(),
        set_rng_state=lambda state, device=None: torch.set_rng_state(state),
        Stream=cpu.Stream,
        Event=cpu.Event,
        current_stream=cpu.current_stream,
        stream=cpu.stream,
        memory=SimpleNamespace(_set_allocator_settings=lambda settings: None),
    )
    return module


cpu_device_module = _cpu_device_module()


class PlatformCPU(PlatformBase):
    """verl on the CPU: gloo collectives; Ray still hands out (fake) ``GPU`` resources, because verl's worker
    groups always ask for GPUs (start Ray with ``num_gpus``); no CUDA IPC, so vLLM weight sync goes through
    shared memory."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return cpu_device_module

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        return False  # only ever selected explicitly (VERL_PLATFORM=cpu), never by auto-detection

    def current_device(self) -> str:
        # verl passes this straight to ``.to(device=...)``; an int there means an accelerator index to torch.
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        pass

    def synchronize(self, device_index: int | None = None) -> None:
        pass

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        pass

    def empty_cache(self) -> None:
        pass

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"  # what Ray sets for the fake GPUs; nothing reads it on the CPU

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        pass

    def profiler_stop(self) -> None:
        pass

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return ["RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"]

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def register() -> type:
    """Register the ``cpu`` platform with verl (idempotent) and return its class."""
    if PlatformRegistry.get("cpu") is not PlatformCPU:
        PlatformRegistry.register(platform="cpu")(PlatformCPU)
    return PlatformCPU
