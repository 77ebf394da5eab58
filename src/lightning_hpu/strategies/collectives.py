"""Former home of the HCCL-safe collectives, now :mod:`lightning_hpu.distributed.collectives` (kept importable)."""

from lightning_hpu.distributed.collectives import (
    HCCL_OPS_BY_NAME,
    MEAN_NAMES,
    UnsupportedReduceOpError,
    all_gather,
    all_reduce,
    broadcast_module_states_,
    broadcast_object,
    broadcast_tensors_,
    hccl_reduce_op,
    initialize_hccl,
)

__all__ = [
    "HCCL_OPS_BY_NAME",
    "MEAN_NAMES",
    "UnsupportedReduceOpError",
    "all_gather",
    "all_reduce",
    "broadcast_module_states_",
    "broadcast_object",
    "broadcast_tensors_",
    "hccl_reduce_op",
    "initialize_hccl",
]
