"""Collectives that HCCL accepts, written once for every HPU strategy (DDP, fast DDP, DeepSpeed; Trainer and Fabric).

HCCL, Gaudi's collective library, differs from NCCL and gloo in ways a strategy must hide from users:

* it reduces with ``SUM``, ``MIN`` and ``MAX`` only: a mean is a ``SUM`` followed by a division (the package never
  sends ``AVG``, so it runs on bridge releases that refuse it and on those that accept it), and a product is refused
  here with what to do instead;
* it reduces every tensor that is not bf16 or fp32 in fp32: integer sums above 2**24 round as fp32 rounds them;
* in lazy mode (and on Gaudi 1) the device holds ``int64`` as ``int32``: an ``int64`` tensor travels as ``int32``
  and is restored afterwards, and one holding a value that does not fit 32 bits is refused before anything is sent
  (it would come back wrapped). In eager mode on Gaudi2 and later ``int64`` travels as it is;
* ``torch.distributed.broadcast_object_list`` sends its sizes as ``int64``: :func:`broadcast_object` sends them as
  ``int32`` and the pickled payload as ``uint8``.

Every function works on any initialized process group (the stand-in's ``"hccl"`` one included) and is a no-op
without one.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from lightning.fabric.utilities.distributed import _all_gather_ddp_if_available, _distributed_is_initialized
from torch import Tensor
from torch.distributed import ReduceOp

from lightning_hpu.device.selection import HPUSelection
from lightning_hpu.runtime import HCCL_REDUCE_OPS, require_backend

T = TypeVar("T")

#: Names (any case) of the reductions that HCCL runs as ``SUM`` then a division by the world size.
MEAN_NAMES = frozenset({"mean", "avg"})

#: The reductions HCCL runs, by their lower-case names, in ``ReduceOp`` order (lightning-habana's
#: ``supported_reduce_ops``).
HCCL_OPS_BY_NAME: dict[str, ReduceOp.RedOpType] = {op.name.lower(): op for op in sorted(HCCL_REDUCE_OPS, key=int)}


class UnsupportedReduceOpError(ValueError, TypeError):
    """A ``reduce_op`` HCCL cannot run. A ``ValueError``, and a ``TypeError`` as lightning-habana raised it, so code
    written for either catches it; its first sentence is lightning-habana's."""

    def __init__(self, reduce_op: object, advice: str) -> None:
        supported = ", ".join(HCCL_OPS_BY_NAME)
        super().__init__(f"Unsupported ReduceOp {reduce_op}. Supported ops in HCCL are: {supported}. {advice}")


_PRODUCT_REFUSAL = (
    "HCCL cannot multiply across processes (its product reduction is not implemented); reduce on the host, or"
    " all-reduce the logarithms with reduce_op='sum' and exponentiate."
)

_INT32 = torch.iinfo(torch.int32)


def initialize_hccl(world_size: int, global_rank: int, local_rank: int, selection: HPUSelection | None = None) -> str:
    """Prepare this process for collectives (``initialize_distributed_hpu`` on a Gaudi) and return the backend name.

    Must run before ``torch.distributed.init_process_group``: on a Gaudi it registers ``"hccl"`` and binds the
    process to the HPU of its local rank (the one the ``devices=[...]`` of ``selection``, the strategy's accelerator's,
    names for it, when a list was given).
    """
    backend = require_backend()
    if selection is not None:
        selection.bind(local_rank, backend.device_count())
    backend.initialize_distributed(world_size, global_rank, local_rank)
    return backend.process_group_backend


def hccl_reduce_op(reduce_op: ReduceOp | ReduceOp.RedOpType | str | None) -> tuple[ReduceOp.RedOpType, bool]:
    """Translate a Lightning ``reduce_op`` into ``(op HCCL accepts, whether to divide by the world size after)``.

    ``None`` means ``SUM`` (Lightning's default for ``_sync_ddp``); ``"mean"``, ``"avg"`` and ``ReduceOp.AVG`` mean
    ``SUM`` then a division. Ops HCCL cannot run (``PRODUCT``, ``PREMUL_SUM``, the bitwise ones) are refused here,
    before any process waits on a collective that would fail on the device.
    """
    if reduce_op is None:
        return ReduceOp.SUM, False
    if isinstance(reduce_op, str):
        name = reduce_op.lower()
        if name in MEAN_NAMES:
            return ReduceOp.SUM, True
        if name in HCCL_OPS_BY_NAME:
            return HCCL_OPS_BY_NAME[name], False
        if name in ("product", "prod"):
            raise UnsupportedReduceOpError(reduce_op, f"reduce_op={reduce_op!r}: {_PRODUCT_REFUSAL}")
        raise UnsupportedReduceOpError(reduce_op, f"reduce_op={reduce_op!r}: use 'mean', 'sum', 'min' or 'max'.")
    # A ``ReduceOp`` object carries its ``RedOpType`` in ``op``; the sets and comparisons below use the latter.
    op: Any = getattr(reduce_op, "op", reduce_op)
    if op == ReduceOp.AVG:
        return ReduceOp.SUM, True
    if op in HCCL_REDUCE_OPS:
        return op, False
    if op == ReduceOp.PRODUCT:
        raise UnsupportedReduceOpError(op, f"reduce_op={reduce_op!r}: {_PRODUCT_REFUSAL}")
    raise UnsupportedReduceOpError(op, f"reduce_op={reduce_op!r}: use ReduceOp.SUM, MIN, MAX or 'mean'.")


def _to_wire(tensor: Tensor) -> Tensor:
    """``tensor`` as it can travel: ``int64`` becomes ``int32`` where the device holds it so, if its values fit."""
    if tensor.dtype != torch.int64 or tensor.numel() == 0:
        return tensor
    backend = require_backend()
    if backend.native_int64():
        return tensor
    low, high = int(tensor.min()), int(tensor.max())
    if low < _INT32.min or high > _INT32.max:
        mode = "lazy mode" if backend.is_lazy() else f"eager mode on {backend.device_name()}"
        raise ValueError(
            f"An int64 tensor holding {high if high > _INT32.max else low} cannot go through a collective in {mode},"
            " where the device holds int64 as int32 (-2**31 to 2**31 - 1) and the value would come back"
            " wrapped; split it into two int32 halves before sending, or run in eager mode (PT_HPU_LAZY_MODE=0) on"
            " Gaudi2 or later."
        )
    return tensor.to(torch.int32)


def _divide_(tensor: Tensor, divisor: int) -> Tensor:
    if tensor.is_floating_point() or tensor.is_complex():
        return tensor.div_(divisor)
    # Integers keep their dtype, truncated like Lightning's own mean of integer tensors.
    return tensor.copy_(torch.div(tensor, divisor, rounding_mode="trunc"))


def all_reduce(tensor: Tensor, group: Any | None = None, reduce_op: ReduceOp | str | None = "mean") -> Tensor:
    """Reduce ``tensor`` over ``group`` in place and return it, the way HCCL can (see the module docstring)."""
    op, divide = hccl_reduce_op(reduce_op)
    if not _distributed_is_initialized():
        return tensor
    group = dist.group.WORLD if group is None else group
    wire = _to_wire(tensor)
    dist.all_reduce(wire, op=op, group=group)
    if divide:
        _divide_(wire, dist.get_world_size(group))
    if wire is not tensor:
        tensor.copy_(wire)
    return tensor


def all_reduce_if_tensor(value: Any, group: Any | None = None, reduce_op: ReduceOp | str | None = "mean") -> Any:
    """:func:`all_reduce` for a tensor; any other value passes through (the strategies' ``reduce``/``all_reduce``)."""
    if isinstance(value, Tensor):
        return all_reduce(value, group=group, reduce_op=reduce_op)
    return value


def all_gather(tensor: Tensor, group: Any | None = None, sync_grads: bool = False) -> Tensor:
    """Gather ``tensor`` from every process into a tensor of shape ``(world_size, *tensor.shape)``."""
    if not _distributed_is_initialized():
        return tensor
    wire = _to_wire(tensor)
    gathered = _all_gather_ddp_if_available(wire, group=group, sync_grads=sync_grads)
    return gathered if wire is tensor else gathered.to(tensor.dtype)


def broadcast_object(obj: T, src: int = 0, group: Any | None = None, device: torch.device | None = None) -> T:
    """Send a picklable object from global rank ``src`` to every process of ``group`` and return it.

    The object travels as a ``uint8`` tensor and its length as an ``int32`` one, on ``device`` (the HPU of this
    process by default), so nothing reaches HCCL in a dtype it does not carry.
    """
    if not _distributed_is_initialized():
        return obj
    device = require_backend().torch_device() if device is None else device
    is_source = dist.get_rank() == src
    if is_source:
        payload = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8).to(device)
        size = torch.tensor([payload.numel()], dtype=torch.int32, device=device)
    else:
        size = torch.zeros(1, dtype=torch.int32, device=device)
    dist.broadcast(size, src=src, group=group)
    if not is_source:
        payload = torch.empty(int(size.item()), dtype=torch.uint8, device=device)
    dist.broadcast(payload, src=src, group=group)
    if is_source:
        return obj
    received: T = pickle.loads(payload.cpu().numpy().tobytes())
    return received


def _by_dtype(tensors: Iterable[Tensor]) -> dict[torch.dtype, list[Tensor]]:
    buckets: dict[torch.dtype, list[Tensor]] = {}
    for tensor in tensors:
        buckets.setdefault(tensor.dtype, []).append(tensor)
    return buckets


def _copy_from_flat_(flat: Tensor, tensors: Sequence[Tensor]) -> None:
    offset = 0
    for tensor in tensors:
        count = tensor.numel()
        tensor.copy_(flat[offset : offset + count].view_as(tensor))
        offset += count


@torch.no_grad()
def broadcast_tensors_(tensors: Iterable[Tensor], src: int = 0, group: Any | None = None) -> None:
    """Overwrite ``tensors`` in place with those of global rank ``src``: one flat broadcast per dtype."""
    if not _distributed_is_initialized():
        return
    for dtype_tensors in _by_dtype(tensors).values():
        flat = _to_wire(torch.cat([tensor.detach().reshape(-1) for tensor in dtype_tensors]))
        dist.broadcast(flat, src=src, group=group)
        _copy_from_flat_(flat, [tensor.detach() for tensor in dtype_tensors])


def broadcast_module_states_(module: torch.nn.Module, src: int = 0, group: Any | None = None) -> None:
    """Give every replica the parameters and buffers of global rank ``src`` (what DDP does when it wraps)."""
    broadcast_tensors_([*module.parameters(), *module.buffers()], src=src, group=group)
