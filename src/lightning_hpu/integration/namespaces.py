"""Which Lightning an object belongs to, ``lightning`` or the standalone ``pytorch_lightning``/``lightning_fabric``,
so that an object of one handed to the other's Trainer or Fabric is refused in one sentence.

Both may be loaded in one process (a library on ``pytorch_lightning`` beside user code on ``lightning``), each with
its own classes: ``pytorch_lightning.Trainer(strategy=lightning_hpu.HPUParallelStrategy())`` cannot work, and
Lightning's own error says only that the strategy is of an unknown type.
"""

from __future__ import annotations

from typing import Any

from lightning.fabric.accelerators import Accelerator

from lightning_hpu.runtime import HPUConfigurationError

UNIFIED = "lightning"
STANDALONE = "pytorch_lightning/lightning_fabric"


def namespace_of(cls: type) -> str | None:
    """The Lightning that class ``cls`` is built on (the first of its bases that is Lightning's), or ``None``."""
    for base in cls.__mro__:
        root = base.__module__.partition(".")[0]
        if root == "lightning":
            return UNIFIED
        if root in ("pytorch_lightning", "lightning_fabric"):
            return STANDALONE
    return None


#: The Lightning these modules were built against (the standalone build renames the import above).
OWN = namespace_of(Accelerator)


def _where_to_import(namespace: str | None) -> str:
    if namespace == UNIFIED:
        return "lightning and lightning_hpu"
    return "pytorch_lightning/lightning_fabric and lightning_hpu.standalone"


def refuse_other_namespaces(owner: str, **arguments: Any) -> None:
    """Raise ``HPUConfigurationError`` naming the argument when an object in ``arguments`` (lists looked into) is
    built on the other Lightning than this ``owner`` (``"Trainer"`` or ``"Fabric"``)."""
    for argument, value in arguments.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            theirs = namespace_of(type(item))
            if theirs is not None and theirs != OWN:
                raise HPUConfigurationError(
                    f"`{owner}({argument}={type(item).__name__}(...))` is a class of {theirs}, but this {owner} is"
                    f" {OWN}'s, whose classes it cannot use: import both from {_where_to_import(OWN)}, or both from"
                    f" {_where_to_import(theirs)}."
                )
