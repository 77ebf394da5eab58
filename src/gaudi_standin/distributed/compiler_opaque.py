"""The stand-in's ``"hccl"`` group kept out of TorchDynamo's sight, as the bridge's C++ process group is.

On a Gaudi a collective ends in ``ProcessGroupHCCL``, C++ code that TorchDynamo never compiles. The stand-in's group is
Python, and TorchDynamo compiles any Python frame that starts while a compiled function runs, unless its file is one
it skips. ``torch.distributed``'s files are skipped, but a collective they run eagerly inside a compiled module (FSDP's
all-gather of a ``torch.compile``-d FSDP module on torch 2.9) calls the group's methods as new frames: TorchDynamo
then traced them with fake tensors, down to the host views handed to gloo, and the process crashed. Once TorchDynamo
has loaded (the import hook calls :func:`hide_from`), every method of the group runs with it disabled, as C++ would.
"""

from __future__ import annotations

import inspect
from types import ModuleType

from gaudi_standin.distributed.process_group import HCCLStandInProcessGroup

__all__ = ["hide_from"]


def hide_from(dynamo: ModuleType) -> None:
    """Run every method of :class:`HCCLStandInProcessGroup` outside TorchDynamo (``dynamo``: ``torch._dynamo``)."""
    for name, member in list(vars(HCCLStandInProcessGroup).items()):
        if name.startswith("__") or not inspect.isfunction(member) or getattr(member, "_torchdynamo_disable", False):
            continue
        setattr(HCCLStandInProcessGroup, name, dynamo.disable(member))
