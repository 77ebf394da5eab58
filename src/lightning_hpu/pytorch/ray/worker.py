"""What a Ray Train worker is given: its HPU, its place in the job, and the process group Ray made for it.

Ray gives a worker that asked for ``resources_per_worker={"HPU": 1}`` one HPU module id and shows it only that
module (``HABANA_VISIBLE_MODULES=<id>``). Ray's ``TorchTrainer`` also creates the default process group before the
training function runs, with ``TorchConfig(backend=...)``: on HPU it must be ``"hccl"``.
"""

from __future__ import annotations

import ray
import ray.train
import torch.distributed as dist

from lightning_hpu.device.selection import bind_process_to_module
from lightning_hpu.runtime import HPUConfigurationError, require_backend

#: Ray's resource name of Gaudi HPUs.
HPU_RESOURCE = "HPU"


def assigned_hpu_module() -> int:
    """The HPU module Ray assigned to this worker; refused unless the worker has exactly one HPU."""
    ids = ray.get_runtime_context().get_accelerator_ids().get(HPU_RESOURCE, [])
    if len(ids) != 1:
        got = "no HPU" if not ids else f"{len(ids)} HPUs ({', '.join(ids)})"
        raise HPUConfigurationError(
            f"Ray gave this worker {got}, but each Lightning process drives one HPU: pass"
            f" `ScalingConfig(resources_per_worker={{'{HPU_RESOURCE}': 1}})` to the TorchTrainer."
        )
    return int(ids[0])


def bind_to_assigned_hpu() -> int:
    """Bind this process to the HPU Ray assigned to it (``HLS_MODULE_ID``, as the bridge reads it); return its id.

    The bridge would otherwise bind a distributed process to the HPU its *local rank* names among the visible ones,
    and Ray shows each worker only its own HPU.
    """
    require_backend()  # a worker without an HPU backend fails here, with its sentence
    return bind_process_to_module(assigned_hpu_module(), "Ray assigned this worker", " in the workers' environment")


def world_shape() -> tuple[int, int]:
    """``(nodes, workers per node)`` of the Ray Train job this worker belongs to."""
    context = ray.train.get_context()
    per_node = context.get_local_world_size()
    return max(1, context.get_world_size() // per_node), per_node


def check_process_group() -> None:
    """Refuse a default process group that Ray made with another backend than the HPU's (``"hccl"``)."""
    wanted = require_backend().process_group_backend
    if dist.is_available() and dist.is_initialized() and dist.get_backend() != wanted:
        raise HPUConfigurationError(
            f"Ray's TorchTrainer made a {dist.get_backend()!r} process group, which cannot run HPU collectives: pass"
            f" `TorchTrainer(..., torch_config=TorchConfig(backend={wanted!r}))`."
        )
