"""The stand-in group's collectives without a reduce op: checked as the bridge checks them, then run by gloo directly.

Every collective ``torch.distributed`` can call on a group must be a Python method of the stand-in's group. One left
to ``ProcessGroup``'s C++ implementation reaches the stand-in's device fallback, which hands gloo host views that do
not keep the ``hpu`` memory alive (an asynchronous collective then writes into freed memory once the caller drops its
tensors) and keeps the GIL while it waits for gloo's work queue, which a gloo thread freeing a Python tensor needs
(both ranks hang). Through these methods gloo gets owning host views and the GIL is released while it queues.
torch 2.13 added the single-tensor names (``all_gather_single``, ``all_to_all_single``) that
``all_gather_into_tensor`` and ``all_to_all_single`` call, torch 2.14 ``gather_single``/``gather_into_tensor``,
which the bridge's HCCL group does not implement (nor does gloo): the stand-in refuses them as a Gaudi does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import AllgatherOptions as _AllgatherOptions  # not re-exported in the stubs

from gaudi_standin.distributed.hccl_rules import check_collective

__all__ = ["install_direct_collectives"]

# Group method -> the gloo method that runs it (the names differ for the single-tensor forms of torch 2.13+).
_DIRECT_TO_GLOO = {
    "alltoall": "alltoall",
    "alltoall_base": "alltoall_base",
    "all_to_all_single": "alltoall_base",
    "allgather_coalesced": "allgather_coalesced",
    "gather": "gather",
    "scatter": "scatter",
    "send": "send",
    "recv": "recv",
}


def _run_on_gloo(name: str, gloo_name: str) -> Callable[..., dist.Work]:
    """A method ``name`` that checks the call as the bridge does, then hands it to the gloo backend's ``gloo_name``."""
    # The list form of alltoall moves bytes like broadcast; the others look the dtype up and refuse complex.
    complex_allowed = name == "alltoall"

    def delegate(self: Any, *args: Any, **kwargs: Any) -> dist.Work:
        check_collective(name, (args, kwargs), complex_allowed=complex_allowed)
        work: dist.Work = getattr(self._gloo_any, gloo_name)(*args, **kwargs)
        return work

    delegate.__name__ = delegate.__qualname__ = name
    return delegate


#: torch 2.14's single-tensor gathers, which the bridge's HCCL group lacks.
_NOT_IN_HCCL = ("gather_single", "gather_into_tensor")


def _not_in_hccl(name: str) -> Callable[..., dist.Work]:
    """A method ``name`` that refuses the call, as the bridge's group does, and names the collective to use."""

    def refuse(self: Any, *args: Any, **kwargs: Any) -> dist.Work:
        raise RuntimeError(
            f"Backend hccl does not support {name}: gather into a list instead,"
            " dist.gather(tensor, gather_list, dst=...)."
        )

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


def _all_gather_single(self: Any, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> dist.Work:
    """torch 2.13+'s name for ``all_gather_into_tensor``: the group's ``_allgather_base``."""
    work: dist.Work = self._allgather_base(output, input, opts)
    return work


def _all_gather_single_coalesced(
    self: Any, outputTensors: list[torch.Tensor], inputTensors: list[torch.Tensor], opts: Any = None
) -> dist.Work:
    """FSDP's coalesced all-gathers (``_coalescing_manager`` around several ``all_gather_into_tensor`` calls).

    Gloo has no coalesced all-gather into one tensor: they run in turn and the last one's work is returned.
    ``allgather_into_tensor_coalesced``, the older name, reaches this too.
    """
    check_collective("all_gather_into_tensor_coalesced", (outputTensors, inputTensors))
    options = opts if opts is not None else _AllgatherOptions()
    works = [
        self._gloo_any._allgather_base(output, input, options)
        for output, input in zip(outputTensors, inputTensors, strict=True)
    ]
    for pending in works[:-1]:
        pending.wait()
    last: dist.Work = works[-1]
    return last


def install_direct_collectives(group_class: type) -> None:
    """Give ``group_class`` (the stand-in's group, with a ``_gloo_any`` backend) the methods listed above."""
    for name, gloo_name in _DIRECT_TO_GLOO.items():
        setattr(group_class, name, _run_on_gloo(name, gloo_name))
    methods = {
        "all_gather_single": _all_gather_single,
        "all_gather_single_coalesced": _all_gather_single_coalesced,
        "allgather_into_tensor_coalesced": _all_gather_single_coalesced,
    }
    methods.update({name: _not_in_hccl(name) for name in _NOT_IN_HCCL})
    for name, method in methods.items():
        setattr(group_class, name, method)
