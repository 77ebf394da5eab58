"""The HPU accelerator for Lightning Fabric (served as :mod:`lightning_hpu.fabric.accelerator`), below both trees:
the Trainer's :class:`~lightning_hpu.HPUAccelerator` extends it, as Lightning's Trainer accelerators extend Fabric's."""

from __future__ import annotations

import os
from typing import Any

import torch
from lightning.fabric.accelerators.accelerator import Accelerator
from lightning.fabric.accelerators.registry import _AcceleratorRegistry
from typing_extensions import override

from lightning_hpu.device.selection import HPUSelection, read_devices
from lightning_hpu.runtime import get_backend, hpu_available, require_backend
from lightning_hpu.runtime.recipe_cache import RecipeCache


class HPUAccelerator(Accelerator):
    """Intel Gaudi (HPU) accelerator: one process drives one HPU.

    Args:
        recipe_cache: keep compiled graph recipes on disk across runs: a directory, or a
            :class:`~lightning_hpu.RecipeCache` (deletion at start, size). It sets ``PT_HPU_RECIPE_CACHE_CONFIG``
            when the accelerator is built, so build it before anything opens the HPU.
    """

    #: The HPUs the ``devices`` of this accelerator's Trainer or Fabric selected (the connector sets it once it has
    #: read them); ``None`` until then. The strategy binds each process through it.
    selection: HPUSelection | None = None

    def __init__(self, recipe_cache: RecipeCache | str | os.PathLike[str] | None = None) -> None:
        super().__init__()
        if recipe_cache is not None and not isinstance(recipe_cache, RecipeCache):
            recipe_cache = RecipeCache(recipe_cache)
        self.recipe_cache = recipe_cache
        if recipe_cache is not None:
            recipe_cache.apply()

    @override
    def setup_device(self, device: torch.device) -> None:
        backend = require_backend()
        if device.type != backend.torch_device().type:
            raise ValueError(
                f"Device should be HPU: HPUAccelerator got {device}; pass an {backend.torch_device().type} device."
            )
        selection = self.selection
        if selection is not None and selection.indices is not None and len(selection.indices) == 1:
            # One process: bind it here. Several: each binds when its process group is prepared (``initialize_hccl``).
            selection.bind(0, backend.device_count())

    @override
    def teardown(self) -> None:
        pass

    @staticmethod
    @override
    def parse_devices(devices: Any) -> HPUSelection:
        """The HPUs ``devices`` selects, checked against the visible ones: its ``count`` is their number.

        ``devices`` is what the package's connector patch read once (an :class:`HPUSelection`, passed on as it is), or
        a value read here: an int, a string (``"2"``, ``"auto"``, ``"0,1"``), ``-1`` or a list of indices. The
        accelerator the connector builds keeps the selection (:attr:`selection`); this class keeps nothing.
        """
        return read_devices(devices).resolved(HPUAccelerator.auto_device_count())

    @staticmethod
    @override
    def get_parallel_devices(devices: Any) -> list[torch.device]:
        """One torch device per process, for the number of HPUs ``devices`` selects (as for :meth:`parse_devices`).

        That is the unindexed ``hpu`` device: the bridge opens only the process's own module.
        """
        count = read_devices(devices).number(HPUAccelerator.auto_device_count())
        return require_backend().parallel_devices(count)

    @staticmethod
    @override
    def auto_device_count() -> int:
        """The number of HPUs visible to this process; 0 when there are none."""
        backend = get_backend()
        return backend.device_count() if backend is not None and backend.is_available() else 0

    @staticmethod
    @override
    def is_available() -> bool:
        """Whether a Gaudi is visible, or the CPU stand-in was chosen with ``LIGHTNING_HPU_BACKEND=cpu``."""
        return hpu_available()

    @staticmethod
    def is_lazy() -> bool:
        """Whether the HPU runs the legacy lazy mode (``PT_HPU_LAZY_MODE=1``); current Gaudi software runs eager."""
        return require_backend().is_lazy()

    @staticmethod
    def get_device_name() -> str:
        """The Gaudi generation: ``"GAUDI"``, ``"GAUDI2"`` or ``"GAUDI3"``."""
        return require_backend().device_name()

    @staticmethod
    @override
    def name() -> str:
        return "hpu"

    @classmethod
    @override
    def register_accelerators(cls, accelerator_registry: _AcceleratorRegistry) -> None:
        accelerator_registry.register(cls.name(), cls, description=cls.__name__)
