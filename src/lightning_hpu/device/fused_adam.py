"""A ``torch.optim.AdamW`` turned into the device's fused AdamW, with the same parameter groups and hyperparameters.

optimum-habana's ``use_fused_adam`` builds Habana's ``FusedAdamW`` where the trainer would build AdamW. Here the
user's own AdamW is converted after it was built: each parameter group keeps its parameters, learning rate, betas,
``eps`` and weight decay (the fused optimizer adopts the very group dictionaries, so a learning-rate scheduler that
changes them keeps working). Options the fused kernel does not have (``amsgrad``, ``maximize``) are refused.
"""

from __future__ import annotations

from torch.optim import AdamW, Optimizer

from lightning_hpu.device.fused_optimizers import fused_adamw
from lightning_hpu.runtime import HPUConfigurationError

#: AdamW options the fused kernel cannot honour, with the value it computes as.
_UNSUPPORTED = {"amsgrad": False, "maximize": False}


def to_fused_adamw(optimizer: Optimizer) -> Optimizer:
    """The fused AdamW for a ``torch.optim.AdamW`` that has not stepped yet; any other optimizer unchanged."""
    if type(optimizer) is not AdamW:
        return optimizer
    if optimizer.state:
        raise HPUConfigurationError(
            "GaudiConfig key `use_fused_adam` swaps AdamW for the fused AdamW before training, but this AdamW has"
            " already stepped; build a fresh optimizer or set `use_fused_adam` to false."
        )
    for group in optimizer.param_groups:
        for option, supported in _UNSUPPORTED.items():
            if group.get(option, supported) != supported:
                raise HPUConfigurationError(
                    f"GaudiConfig key `use_fused_adam` needs AdamW({option}={supported}): the fused AdamW has no"
                    f" `{option}`; drop it or set `use_fused_adam` to false."
                )
    first = optimizer.param_groups[0]
    return fused_adamw(
        optimizer.param_groups,
        lr=first["lr"],
        betas=first["betas"],
        eps=first["eps"],
        weight_decay=first["weight_decay"],
    )
