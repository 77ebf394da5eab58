"""``habana_frameworks.torch.distributed.hccl`` on the stand-in: the ``"hccl"`` backend, registered on import.

As the bridge's module does, importing it reads the launcher's variables (``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``, or
Open MPI's), defaults ``MASTER_ADDR=localhost`` and ``MASTER_PORT=12345`` and registers the ``"hccl"`` backend;
:func:`initialize_distributed_hpu` then binds the process to its HPU (see :func:`_on_import`).
"""

from __future__ import annotations

import os

from gaudi_standin.distributed.process_group import register_hccl_standin_backend
from gaudi_standin.emulator import machine

__all__ = ["initialize_distributed_hpu"]

_MPI_VARIABLES = {
    "OMPI_COMM_WORLD_LOCAL_RANK": "LOCAL_RANK",
    "OMPI_COMM_WORLD_SIZE": "WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK": "RANK",
}


def _environment_from_launcher() -> None:
    if all(name in os.environ for name in _MPI_VARIABLES.values()):
        return
    if all(name in os.environ for name in _MPI_VARIABLES):
        for mpi_name, name in _MPI_VARIABLES.items():
            os.environ[name] = os.environ[mpi_name]
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "12345")


def initialize_distributed_hpu(
    world_size: int | None = None, rank: int | None = None, local_rank: int | None = None
) -> tuple[int, int, int]:
    """Set up this process for HCCL and return ``(world_size, rank, local_rank)``.

    Given all three, they are written to ``WORLD_SIZE``, ``RANK`` and ``LOCAL_RANK``; otherwise they are read from
    the launcher's variables. A process of a multi-process run is bound to its HPU by the stand-in backend.
    """
    if world_size is not None and rank is not None and local_rank is not None:
        os.environ.update(WORLD_SIZE=str(world_size), RANK=str(rank), LOCAL_RANK=str(local_rank))
    else:
        _environment_from_launcher()
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", -1))
    local_rank = int(os.environ.get("LOCAL_RANK", -1))
    register_hccl_standin_backend()
    if local_rank >= 0 and world_size > 1:
        machine.current().initialize_distributed(world_size, rank, local_rank)
    # else a single process keeps the device it has; the bridge binds no module then either.
    if rank != -1:
        os.environ["ID"] = str(rank)
    return world_size, rank, local_rank


def _on_import() -> None:
    """What importing the module does: the launcher's variables read, the ``"hccl"`` backend registered.

    The bridge also binds the process to the HPU of the launcher's local rank here; the stand-in binds when a program
    calls :func:`initialize_distributed_hpu` (lightning-hpu does, with the rank Lightning computed), so that the
    one-host emulations of several nodes (whose launcher's local ranks run past the emulated HPUs) keep working.
    """
    _environment_from_launcher()
    register_hccl_standin_backend()
    rank = os.environ.get("RANK")
    if rank is not None:
        os.environ["ID"] = rank


_on_import()
