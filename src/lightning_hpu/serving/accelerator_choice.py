"""What a serving library's ``accelerator`` argument means once lightning-hpu is installed: ``"hpu"`` always the HPU,
``"auto"`` (or ``None``) the HPU where one is present, as for Lightning's Trainer and Fabric; every other value is the
library's own. Read here once for LitServe and LitGPT's API alike."""

from __future__ import annotations

from lightning_hpu.runtime import hpu_available

#: The values that leave the choice to the library (and, where an HPU is present, choose it).
AUTO = ("auto", None)


def wants_hpu(accelerator: object) -> bool:
    """Whether ``accelerator`` (any case) asks for the HPU, or leaves the choice open on a machine that has one."""
    name = accelerator.strip().lower() if isinstance(accelerator, str) else accelerator
    if name == "hpu":
        return True
    return name in AUTO and hpu_available()
