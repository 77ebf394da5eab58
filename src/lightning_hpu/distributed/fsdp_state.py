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

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from torch.nn import Module
from torch.optim import Optimizer

from lightning_hpu.distributed.sharding import fsdp_device


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


def _the_fsdp_module(state: Mapping[str, Any]) -> Module:
    from torch.distributed.fsdp import FullyShardedDataParallel

    modules = [obj for obj in state.values() if isinstance(obj, FullyShardedDataParallel)]
    if len(modules) != 1:
        raise ValueError(
            f"A Fabric FSDP checkpoint holds exactly one FSDP-wrapped model, but the state has {len(modules)}; save"
            " the other models in separate checkpoints."
        )
    return modules[0]


def save_fabric_state(path: Path, state: Mapping[str, Any], full: bool, rank: int) -> None:
    """Save Fabric's ``state`` (one FSDP model, its optimizers, plain objects) as Lightning's Fabric FSDP does.

    ``full``: one file written by rank 0 (the model's and optimizers' full state, plain objects beside them).
    Otherwise: a folder with this rank's shards in ``torch.distributed.checkpoint`` form, plain objects in
    ``meta.pt``.
    """
    import torch.distributed.checkpoint as dcp
    from lightning.fabric.utilities.load import _METADATA_FILENAME
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    from lightning_hpu.checkpoint.files import to_host, write_atomically

    module = _the_fsdp_module(state)
    converted: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    if full:
        with full_state_dict_context(module):
            for key, obj in state.items():
                if isinstance(obj, Module):
                    converted[key] = obj.state_dict()
                elif isinstance(obj, Optimizer):
                    converted[key] = FSDP.optim_state_dict(module, obj)
                else:
                    converted[key] = obj.state_dict() if hasattr(obj, "state_dict") else obj
        if rank == 0:
            write_atomically(to_host(converted), path)
        return
    for key, obj in state.items():
        if isinstance(obj, Module):
            converted[key] = sharded_model_state(obj)
        elif isinstance(obj, Optimizer):
            converted[key] = sharded_optimizer_state(module, obj)
        else:
            metadata[key] = obj.state_dict() if hasattr(obj, "state_dict") else obj
    if path.is_file():
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)
    dcp.save(converted, checkpoint_id=path)
    if rank == 0:
        write_atomically(to_host(metadata), path / _METADATA_FILENAME)


def load_fabric_sharded_state(path: Path, state: dict[str, Any], strict: bool = True) -> dict[str, Any]:
    """Restore Fabric's ``state`` in place from a sharded folder; return the saved objects ``state`` did not ask for."""
    import torch
    import torch.distributed.checkpoint as dcp
    from lightning.fabric.utilities.load import _METADATA_FILENAME
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
        set_optimizer_state_dict,
    )

    module = _the_fsdp_module(state)
    loaded: dict[str, Any] = {}
    for key, obj in state.items():
        if isinstance(obj, Module):
            loaded[key] = sharded_model_state(obj)
        elif isinstance(obj, Optimizer):
            loaded[key] = sharded_optimizer_state(module, obj)
    dcp.load(loaded, checkpoint_id=path)
    options = StateDictOptions(full_state_dict=False, strict=strict)
    for key, obj in state.items():
        if isinstance(obj, Module):
            set_model_state_dict(obj, loaded[key], options=options)
        elif isinstance(obj, Optimizer):
            set_optimizer_state_dict(module, obj, loaded[key], options=options)
    metadata: dict[str, Any] = torch.load(path / _METADATA_FILENAME, weights_only=False)
    for key in list(state):
        if key in loaded or key not in metadata:
            continue
        value = metadata.pop(key)
        if hasattr(state[key], "load_state_dict"):
            state[key].load_state_dict(value)
        else:
            state[key] = value
    return metadata
