"""Saving and loading FSDP1 state on HPU (Trainer and Fabric), avoiding two torch faults met on the CPU.

* A full state dict gathered with ``offload_to_cpu=True`` while the parameters already live on the CPU (the
  stand-in) crashed rank 0 with a segmentation fault in ``_full_post_state_dict_hook`` (torch 2.13): the offload is
  asked for only when the device is not the CPU.
* Loading a sharded checkpoint through FSDP's ``SHARDED_STATE_DICT`` over a group not named ``"gloo"`` (the
  stand-in's ``"hccl"``) failed with "Torch not compiled with CUDA enabled" in torch's sharded-tensor code for ranks
  with an empty shard. Sharded state therefore goes through ``torch.distributed.checkpoint.state_dict``
  (``get_/set_model_state_dict``, ``get_/set_optimizer_state_dict``) and ``dcp.save``/``dcp.load``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from torch.nn import Module
from torch.optim import Optimizer

from lightning_hpu.strategies.sharding import fsdp_device


def offload_to_host() -> bool:
    """Whether gathered state must be copied to the host: only when the parameters live on a device."""
    return fsdp_device().type != "cpu"


def full_state_dict_context(module: Module, rank0_only: bool = True) -> AbstractContextManager[Any]:
    """FSDP1's ``FULL_STATE_DICT`` context for ``module`` (model and optimizer), offloading only from a device."""
    from torch.distributed.fsdp import FullOptimStateDictConfig, FullStateDictConfig, StateDictType
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    offload = offload_to_host()
    context: AbstractContextManager[Any] = FSDP.state_dict_type(
        module=module,
        state_dict_type=StateDictType.FULL_STATE_DICT,
        state_dict_config=FullStateDictConfig(offload_to_cpu=offload, rank0_only=rank0_only),
        optim_state_dict_config=FullOptimStateDictConfig(offload_to_cpu=offload, rank0_only=rank0_only),
    )
    return context


def _sharded_options() -> Any:
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(full_state_dict=False, cpu_offload=offload_to_host())


def sharded_model_state(module: Module) -> dict[str, Any]:
    """This rank's shard of the model state, in ``torch.distributed.checkpoint`` form."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict

    return get_model_state_dict(module, options=_sharded_options())


def sharded_optimizer_state(module: Module, optimizer: Optimizer) -> dict[str, Any]:
    """This rank's shard of the optimizer state, in ``torch.distributed.checkpoint`` form."""
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    return dict(get_optimizer_state_dict(module, optimizer, options=_sharded_options()))


def load_sharded(
    path: Path, module: Module, optimizers: Sequence[Optimizer], model_key: str, strict: bool = True
) -> None:
    """Load a sharded checkpoint folder saved as ``{model_key: model, "optimizer_<i>": optimizer i}`` in place."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
        set_optimizer_state_dict,
    )

    state: dict[str, Any] = {model_key: sharded_model_state(module)}
    for index, optimizer in enumerate(optimizers):
        state[f"optimizer_{index}"] = sharded_optimizer_state(module, optimizer)
    dcp.load(state, checkpoint_id=path)
    options = StateDictOptions(full_state_dict=False, strict=strict)
    set_model_state_dict(module, state[model_key], options=options)
    for index, optimizer in enumerate(optimizers):
        set_optimizer_state_dict(module, optimizer, state[f"optimizer_{index}"], options=options)
