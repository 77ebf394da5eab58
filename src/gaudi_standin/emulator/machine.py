"""The emulated Gaudi of this process: its devices, binding, step markers, memory and counters.

It is what the bridge's Python API (:mod:`gaudi_standin.bridge`) calls, as the real bridge calls its C++ runtime.
Its HPUs are torch's ``hpu`` device, made real by :mod:`gaudi_standin.device`: tensors live on ``hpu:N`` (bytes in
host memory, counted per device), and every op runs eagerly with the CPU's kernels. It keeps the device's rules:
``mark_step`` is counted (and is a no-op in eager mode, as on the bridge), memory stats have the bridge's keys, and
the emulated generation decides fp16/fp8. :func:`current` creates it on first use; :func:`reset` drops it so the
next use reads the environment again (tests do this). :attr:`StandInRuntime.counters` is what only the stand-in
knows; the bridge's ``hpu.metrics`` reports it the bridge's way.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

import torch

from gaudi_standin import device as hpu_device
from gaudi_standin.emulator import environment
from gaudi_standin.emulator.counters import StandInCounters

if TYPE_CHECKING:
    from gaudi_standin.emulator.lazy_graph_cache import LazyGraphCacheModel

#: Device memory (HBM) of each generation, used as the stand-in's ``Limit``.
_HBM_BYTES = {"GAUDI": 32 * 2**30, "GAUDI2": 96 * 2**30, "GAUDI3": 128 * 2**30}


def _is_are(count: int) -> str:
    """The verb agreeing with ``count`` ("only 1 is visible", "only 2 are visible")."""
    return "is" if count == 1 else "are"


class StandInRuntime:
    """Emulates ``LIGHTNING_HPU_CPU_DEVICES`` Gaudis of generation ``LIGHTNING_HPU_CPU_DEVICE_NAME`` on the CPU."""

    def __init__(self) -> None:
        self._device_count = environment.cpu_device_count()
        self._device_name = environment.cpu_device_name()
        # Read once, like the bridge's cached ``is_lazy``.
        self._lazy = environment.lazy_mode_from_env()
        self._followed: int | None = None
        hpu_device.enable()
        hpu_device.set_device_count(self._device_count)
        # A process opens the first module it may see (HABANA_VISIBLE_MODULES), until HLS_MODULE_ID binds another.
        visible = [module for module in environment.visible_modules(self._device_count) if module < self._device_count]
        hpu_device.set_process_device(visible[0] if visible else 0)
        hpu_device.set_memory_limit(_HBM_BYTES[self._device_name])
        self.follow_binding()
        self.counters = StandInCounters()
        self._graph_cache: LazyGraphCacheModel | None = None
        self._watchers = 0

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return self._device_count

    def device_name(self) -> str:
        return self._device_name

    def torch_device(self) -> torch.device:
        """``hpu:<module>``: the emulated HPU this process is bound to."""
        return torch.device("hpu", self.current_device())

    def follow_binding(self) -> None:
        """Make the bound module the device of every thread of this process (as the bridge opens that module)."""
        module = environment.bound_module()
        if module is not None and module != self._followed:
            self._check_emulated([module])
            hpu_device.set_process_device(module)
            self._followed = module

    def set_device(self, local_rank: int) -> None:
        """The bridge's ``set_device``: bind to the ``local_rank``-th visible module, or keep the bound one.

        As on the bridge, an index other than 0 needs ``HABANA_VISIBLE_MODULES`` (or a bound ``HLS_MODULE_ID``, or
        8 modules); asking for another module than the bound one is refused.
        """
        visible = environment.visible_modules(self._device_count)
        self._check_emulated(visible)
        if not 0 <= local_rank < len(visible):
            raise ValueError(
                f"HPU index {local_rank} is not visible: only {len(visible)} {_is_are(len(visible))} visible"
                f" ({visible}); raise"
                f" {environment.CPU_DEVICES_ENV} or widen {environment.VISIBLE_MODULES_ENV}."
            )
        bound = environment.bound_module()
        if bound is not None:
            if bound not in visible:
                raise ValueError(
                    f"{environment.MODULE_ID_ENV}={bound} binds this process to a module outside the visible ones"
                    f" ({visible}); fix {environment.MODULE_ID_ENV} or {environment.VISIBLE_MODULES_ENV}."
                )
            self.follow_binding()
            return
        if environment.VISIBLE_MODULES_ENV not in os.environ and self._device_count < 8 and local_rank != 0:
            raise ValueError(
                f"set_device({local_rank}) needs {environment.VISIBLE_MODULES_ENV} (the bridge allows only index 0"
                f" without it on fewer than 8 HPUs); set {environment.VISIBLE_MODULES_ENV} or"
                f" {environment.MODULE_ID_ENV}."
            )
        os.environ[environment.MODULE_ID_ENV] = str(visible[local_rank])
        self.follow_binding()

    def current_device(self) -> int:
        """The calling thread's HPU: the module the process is bound to (``HLS_MODULE_ID``), else ``hpu:0``."""
        self.follow_binding()
        return hpu_device.current_device()

    def _check_emulated(self, modules: list[int]) -> None:
        missing = [module for module in modules if module >= self._device_count]
        if missing:
            raise ValueError(
                f"HPU module(s) {missing} are not emulated: the stand-in has modules 0 to {self._device_count - 1};"
                f" raise {environment.CPU_DEVICES_ENV} or fix {environment.VISIBLE_MODULES_ENV}."
            )

    def _setup_module_id(self, local_rank: int, world_size: int) -> None:
        """What ``initialize_distributed_hpu`` does: bind local rank ``r`` to the ``r``-th visible module.

        Nothing happens when ``HLS_MODULE_ID`` is already set (the package sets it for ``devices=[2, 3]``) or for a
        single process.
        """
        if world_size == 1 or environment.bound_module() is not None:
            self.follow_binding()
            return
        visible = environment.visible_modules(self._device_count)
        self._check_emulated(visible)
        if not 0 <= local_rank < len(visible):
            raise ValueError(
                f"Local rank {local_rank} has no emulated HPU: only {len(visible)} {_is_are(len(visible))} visible"
                f" ({visible}); raise {environment.CPU_DEVICES_ENV}."
            )
        os.environ[environment.MODULE_ID_ENV] = str(visible[local_rank])
        self.follow_binding()

    def is_lazy(self) -> bool:
        return self._lazy

    def mark_step(self) -> None:
        if self._lazy:
            self.counters.mark_steps += 1
            if self._graph_cache is not None:
                self._graph_cache.end_graph()

    def synchronize(self) -> None:
        self.counters.synchronizes += 1
        if self._lazy:
            # On the bridge, synchronize in lazy mode also triggers a step marker.
            self.mark_step()

    def watch_graph_compilations(self, enabled: bool) -> None:
        # The model of the graph compiler's cache records every op, so it runs only while a monitor watches.
        if not self._lazy:
            return
        if enabled:
            self._watchers += 1
            if self._graph_cache is None:
                from gaudi_standin.emulator.lazy_graph_cache import LazyGraphCacheModel

                self._graph_cache = LazyGraphCacheModel(self.counters)
            self._graph_cache.start()
        else:
            self._watchers = max(0, self._watchers - 1)
            if self._watchers == 0 and self._graph_cache is not None:
                self._graph_cache.stop()

    def close(self) -> None:
        """Stop recording lazy-mode graphs: a replaced backend's recorder must not stay on the dispatch stack."""
        self._watchers = 0
        if self._graph_cache is not None:
            self._graph_cache.stop()

    def graph_compilation_count(self) -> int | None:
        return self.counters.lazy_graph_compilations if self._lazy else self.counters.compiled_recipes

    def last_graph_compilation_reason(self) -> str | None:
        return self._graph_cache.last_reason if self._graph_cache is not None else None

    def memory_stats(self) -> dict[str, int]:
        """The bridge's statistics of this process's HPU (its keys, in its order), from the bytes of its live ``hpu``
        tensors.

        The stand-in allocates every tensor on its own (there is no caching pool), so the totals of system
        allocations equal the allocations.
        """
        memory = hpu_device.memory_stats(self.current_device())
        return {
            "Limit": _HBM_BYTES[self._device_name],
            "InUse": memory.in_use,
            "MaxInUse": memory.peak,
            "NumAllocs": memory.allocations,
            "NumFrees": memory.frees,
            "ActiveAllocs": memory.active,
            "MaxAllocSize": memory.largest_allocation,
            "TotalSystemAllocs": memory.allocations,
            "TotalSystemFrees": memory.frees,
            "TotalActiveAllocs": memory.active,
        }

    def reset_peak_memory_stats(self) -> None:
        hpu_device.reset_peak_memory_stats(self.current_device())

    def supports_fp16(self) -> bool:
        """fp16 needs Gaudi2 or later (the bridge's ``_is_fp16_supported``)."""
        return self._device_name != "GAUDI"

    def initialize_distributed(self, world_size: int, rank: int, local_rank: int) -> None:
        """Bind this process of a multi-process run to its HPU (the bridge's ``hccl`` registers the process group)."""
        self._setup_module_id(local_rank, world_size)


_lock = threading.Lock()
_machine: StandInRuntime | None = None


def current() -> StandInRuntime:
    """The emulated runtime of this process, created from the environment on first use."""
    global _machine
    with _lock:
        if _machine is None:
            _machine = StandInRuntime()
        return _machine


def reset() -> None:
    """Drop the runtime (stopping what it records) so the next :func:`current` reads the environment again."""
    global _machine
    with _lock:
        if _machine is not None:
            _machine.close()
        _machine = None
