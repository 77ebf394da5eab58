"""One process on one HPU, written once for the Trainer's and Fabric's ``SingleHPUStrategy``.

It sits beside the other strategy mixins both trees share (fast DDP, context parallelism), though nothing is
distributed: the HPU is the one this process is bound to.
"""

from __future__ import annotations

from typing import Any

from lightning_hpu.device.selection import single_process_device
from lightning_hpu.distributed.strategy_methods import StrategyMethods


class SingleHPUHooks(StrategyMethods):
    """What both ``SingleHPUStrategy`` classes add to Lightning's ``SingleDeviceStrategy``: the HPU of this process
    as the default device, and ``pipeline_forward_backward``. Mix it in before Lightning's strategy."""

    strategy_name = "hpu_single"

    def __init__(self, device: Any, *, pipeline_forward_backward: bool, **lightning_kwargs: Any) -> None:
        """``device`` (``None``: the HPU of this process) and the rest of Lightning's arguments, by name; each
        ``SingleHPUStrategy`` declares them all in its own signature."""
        super().__init__(single_process_device(device), **lightning_kwargs)
        self.pipeline_forward_backward = pipeline_forward_backward


__all__ = ["SingleHPUHooks"]
