"""HCCL process groups, written once for every HPU strategy that makes the default group (Trainer and Fabric).

* ``initialize_distributed_hpu`` runs with the ranks of Lightning's cluster environment before the process group,
  and the group takes the backend's process-group name (``"hccl"``) unless one was passed;
* the group is created without ``device_id`` (the HPU of a process is the unindexed ``hpu`` device, which
  ``init_process_group`` refuses as ``device_id``), on this attempt's keys under ``torchrun``
  (:mod:`lightning_hpu.distributed.elastic`);
* ``DistributedDataParallel`` gets optimum-habana's Gaudi defaults (:data:`GAUDI_DDP_DEFAULTS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Protocol

from lightning.fabric.plugins import ClusterEnvironment
from lightning.fabric.utilities.distributed import _init_dist_connection
from lightning.fabric.utilities.seed import reset_seed
from typing_extensions import override

from lightning_hpu.device.selection import selection_of
from lightning_hpu.distributed import collectives, elastic
from lightning_hpu.distributed.strategy_methods import StrategyMethods
from lightning_hpu.runtime import require_backend

#: ``DistributedDataParallel`` arguments as optimum-habana sets them on Gaudi (``GaudiTrainingArguments``'s
#: ``ddp_bucket_cap_mb`` default, and ``gradient_as_bucket_view=True`` whenever it runs on HPU).
GAUDI_DDP_DEFAULTS: Mapping[str, Any] = {"bucket_cap_mb": 230, "gradient_as_bucket_view": True}


class ProcessGroupOwner(Protocol):
    """What a strategy (Trainer or Fabric) knows about the process group it makes: the one call shape here."""

    @property
    def cluster_environment(self) -> ClusterEnvironment | None: ...

    @property
    def world_size(self) -> int: ...

    @property
    def global_rank(self) -> int: ...

    @property
    def local_rank(self) -> int: ...


def with_gaudi_ddp_defaults(ddp_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``ddp_kwargs`` with :data:`GAUDI_DDP_DEFAULTS` for the arguments not given; a value given always wins."""
    return {**GAUDI_DDP_DEFAULTS, **ddp_kwargs}


def requested_backend(strategy: ProcessGroupOwner) -> str | None:
    """The ``process_group_backend`` the user passed to ``strategy`` (``None``: the backend's own)."""
    backend: str | None = getattr(strategy, "_process_group_backend", None)
    return backend


def group_timeout(strategy: ProcessGroupOwner) -> timedelta | None:
    """The timeout of ``strategy``'s process group (``timeout=``)."""
    timeout: timedelta | None = getattr(strategy, "_timeout", None)
    return timeout


def process_group_backend(strategy: ProcessGroupOwner) -> str:
    """``"hccl"`` (or the backend passed), known before the process group exists, as lightning-habana's was."""
    return requested_backend(strategy) or require_backend().process_group_backend


def hccl_backend_name(strategy: ProcessGroupOwner) -> str:
    """Prepare this process for HCCL (``initialize_distributed_hpu``); the process-group backend to use.

    The user's ``process_group_backend`` wins; without one it is the backend's (``"hccl"``).
    """
    backend = collectives.initialize_hccl(
        strategy.world_size, strategy.global_rank, strategy.local_rank, selection_of(strategy)
    )
    return requested_backend(strategy) or backend


class HCCLProcessGroupHooks(StrategyMethods):
    """Strategy mixin (Trainer and Fabric: DDP, FSDP, model parallel): the default process group over HCCL.

    ``_setup_distributed`` is where Lightning's FSDP and model-parallel strategies (and Fabric's DDP) make their group:
    here it is the seed, the world ranks and :func:`init_hccl_process_group`; the Trainer's DDP and FSDP pieces call it
    from their own set-up (``setup_distributed``, ``setup_environment``). ``_get_process_group_backend``, asked as
    Lightning asks (one name in both trees), answers once HCCL is prepared for this process.
    """

    _process_group_backend: str | None
    #: Seed again from ``seed_everything``'s seed at set-up, as Lightning's strategies do (not Fabric's DDP).
    reset_seed_at_setup: bool = True

    @override
    def _get_process_group_backend(self) -> str:
        return hccl_backend_name(self)

    def _setup_distributed(self) -> None:
        """Seed, ranks and the default process group over HCCL (Lightning's ``_setup_distributed``, for HCCL)."""
        if self.reset_seed_at_setup:
            reset_seed()
        # Lightning's name for it: ``set_world_ranks`` in the Trainer, ``_set_world_ranks`` in Fabric.
        getattr(self, "set_world_ranks" if hasattr(self, "set_world_ranks") else "_set_world_ranks")()
        self._process_group_backend = init_hccl_process_group(self)


def init_hccl_process_group(strategy: ProcessGroupOwner) -> str:
    """Create ``strategy``'s default process group over HCCL (the stand-in's ``"hccl"`` group on the CPU); return
    its backend name, for the strategy's ``_process_group_backend``.

    Every HPU strategy that makes the default group (DDP, FSDP, model parallel; Trainer and Fabric) goes through
    here, after setting its world ranks.
    """
    name = hccl_backend_name(strategy)
    environment = strategy.cluster_environment
    assert environment is not None
    timeout = group_timeout(strategy)
    store = elastic.attempt_store(timeout)
    if store is None:
        _init_dist_connection(environment, name, timeout=timeout)
    else:
        _init_dist_connection(environment, name, timeout=timeout, store=store)
    return name
