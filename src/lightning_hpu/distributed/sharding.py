"""What every sharded HPU strategy (FSDP, FSDP2 + tensor parallel; Trainer and Fabric) shares, written once.

* **Eager only.** Intel's Gaudi documentation ("Using Fully Sharded Data Parallel (FSDP) with Intel Gaudi",
  docs.habana.ai, PyTorch/PyTorch_FSDP) states that FSDP on Gaudi runs in eager mode with ``torch.compile``; its
  examples set ``PT_HPU_LAZY_MODE=0``, and FSDP2/DTensor are eager-mode designs. The sharded strategies therefore
  refuse the legacy lazy mode with one sentence instead of marking steps around collectives the lazy graph cannot
  hold.
* **The process group** comes from ``initialize_distributed_hpu`` and ``"hccl"``, created without ``device_id``
  (the HPU of a process is the unindexed ``hpu`` device, which ``init_process_group`` refuses as one).
* **Reduce ops.** FSDP1 reduces gradients with ``SUM`` and divide factors already; FSDP2 sends ``AVG`` for fp32 and
  bf16 unless told otherwise, so :func:`force_sum_reduction` switches every ``fully_shard`` module to ``SUM``.
* **Checks** of the arguments that would fail only after minutes of setup (:func:`check_before_launch`), and a
  warning for a hybrid sharding strategy on one node.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import torch
from lightning.fabric.utilities.rank_zero import rank_zero_warn
from torch.nn import Module

from lightning_hpu.runtime import require_backend

#: FSDP sharding strategies that shard within a node and replicate across nodes.
MULTI_NODE_SHARDING = frozenset({"HYBRID_SHARD", "_HYBRID_SHARD_ZERO2"})


def refuse_lazy_mode(strategy_name: str) -> None:
    """Raise unless the HPU runs eagerly: sharded training on Gaudi is supported in eager mode only."""
    if require_backend().is_lazy():
        raise RuntimeError(
            f"strategy={strategy_name!r} needs eager mode (Intel Gaudi runs FSDP eagerly, with torch.compile), but"
            " PT_HPU_LAZY_MODE selects lazy mode; unset PT_HPU_LAZY_MODE or set it to 0 before starting Python."
        )


def sharding_strategy_name(sharding_strategy: Any) -> str:
    """The upper-case name of an FSDP ``sharding_strategy`` given as a string or a ``ShardingStrategy``."""
    return str(getattr(sharding_strategy, "name", sharding_strategy)).upper()


def check_sharding_strategy(sharding_strategy: Any, num_nodes: int) -> None:
    """Warn that a hybrid strategy (shard within a node, replicate across nodes) on one node only shards.

    torch's FSDP accepts it: with nothing to replicate across, it shards over the node's devices as ``FULL_SHARD``
    does (``_HYBRID_SHARD_ZERO2``: as ``SHARD_GRAD_OP``), and so does the strategy, whose device mesh is then
    ``(1, devices)``.
    """
    name = sharding_strategy_name(sharding_strategy)
    if name in MULTI_NODE_SHARDING and num_nodes < 2:
        same = "SHARD_GRAD_OP" if name == "_HYBRID_SHARD_ZERO2" else "FULL_SHARD"
        rank_zero_warn(
            f"sharding_strategy={name!r} on one node shards over its devices and replicates nothing: it runs as"
            f" sharding_strategy={same!r}."
        )


def check_tensor_parallel_size(tensor_parallel_size: Any, devices_per_node: int, world_size: int) -> None:
    """Refuse a ``tensor_parallel_size`` that does not divide the number of devices."""
    if tensor_parallel_size == "auto":
        return
    if not isinstance(tensor_parallel_size, int) or tensor_parallel_size < 1 or world_size % tensor_parallel_size:
        raise ValueError(
            f"tensor_parallel_size={tensor_parallel_size!r} must be a positive divisor of the {world_size} devices"
            f" in use ({devices_per_node} per node); choose one such as {devices_per_node}."
        )


def check_before_launch(
    strategy_name: str,
    num_nodes: int,
    num_processes: int,
    sharding_strategy: Any = None,
    tensor_parallel_size: Any = "auto",
) -> None:
    """Every check a sharded strategy makes once the connector knows the devices, before any process starts."""
    refuse_lazy_mode(strategy_name)
    if sharding_strategy is not None:
        check_sharding_strategy(sharding_strategy, num_nodes)
    check_tensor_parallel_size(tensor_parallel_size, num_processes, num_nodes * num_processes)


def fsdp_device() -> torch.device:
    """The ``device_id`` FSDP1 needs: this process's HPU (FSDP takes ``None`` as CUDA)."""
    return require_backend().torch_device()


def device_mesh_from_shape(shape: tuple[int, ...]) -> Any:
    """A ``DeviceMesh`` of the given shape on this backend's device type (Lightning builds it on ``"cuda"``)."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh(require_backend().torch_device().type, shape)


def set_fsdp_device_mesh(
    fsdp_kwargs: dict[str, Any], sharding_strategy: Any, num_nodes: int, num_processes: int
) -> None:
    """Give FSDP1 a device mesh of the HPUs unless the user gave a mesh or a process group.

    With a mesh, FSDP1's sharded state dicts hold ``DTensor`` shards instead of ``ShardedTensor`` ones. The latter
    ask ``torch.cuda.current_device()`` for the device of a rank whose shard is empty unless the group is named
    ``"gloo"``, so saving or loading a sharded checkpoint over HCCL fails ("Torch not compiled with CUDA enabled").
    Hybrid strategies get the ``(nodes, devices per node)`` mesh Lightning documents; the others a flat one.
    """
    mesh = fsdp_kwargs.get("device_mesh")
    if isinstance(mesh, tuple):
        fsdp_kwargs["device_mesh"] = device_mesh_from_shape(mesh)
    elif mesh is None and "process_group" not in fsdp_kwargs:
        hybrid = sharding_strategy_name(sharding_strategy) in MULTI_NODE_SHARDING
        shape = (num_nodes, num_processes) if hybrid else (num_nodes * num_processes,)
        fsdp_kwargs["device_mesh"] = device_mesh_from_shape(shape)


def force_sum_reduction(module: Module) -> int:
    """Make every FSDP2 (``fully_shard``) module of ``module`` reduce gradients with ``SUM``; return how many.

    FSDP2 otherwise reduce-scatters fp32 and bf16 gradients with ``ReduceOp.AVG`` (and ``PREMUL_SUM`` with a custom
    divide factor), which HCCL refuses; with this it sums and divides afterwards.
    """
    from torch.distributed.fsdp import FSDPModule

    count = 0
    for submodule in module.modules():
        if isinstance(submodule, FSDPModule):
            submodule.set_force_sum_reduction_for_comms(True)
            count += 1
    return count


def wrap_fsdp(module: Module, *, activation_checkpointing_kwargs: dict[str, Any], **fsdp_kwargs: Any) -> Module:
    """Wrap ``module`` in FSDP1 on this process's HPU, as Lightning's FSDP strategies do (Trainer and Fabric).

    Lightning passes ``device_id=root_device.index``, which is ``None`` for the HPU (and the stand-in's CPU), and FSDP
    reads ``None`` as "the current CUDA device"; here FSDP gets the device itself. A module the user already wrapped
    is kept (the auto-wrap policy dropped, with a warning, as is one about parameters left on the meta device), then
    activation checkpointing is applied, as in Lightning.
    """
    from lightning.fabric.strategies.fsdp import _move_torchmetrics_to_device, _setup_activation_checkpointing
    from lightning.fabric.utilities.init import _has_meta_device_parameters_or_buffers
    from lightning.fabric.utilities.rank_zero import rank_zero_warn
    from torch.distributed.fsdp import FullyShardedDataParallel

    if any(isinstance(submodule, FullyShardedDataParallel) for submodule in module.modules()):
        # The user wrapped submodules themselves: say what that leaves undone, as Lightning's FSDP strategies do.
        if _has_meta_device_parameters_or_buffers(module):
            rank_zero_warn(
                "The model is already wrapped in FSDP, but there are still parameters on the meta device:"
                " materialize them (or let the strategy wrap the model) before setting it up."
            )
        if fsdp_kwargs.pop("auto_wrap_policy", None) is not None:
            rank_zero_warn("An FSDP `auto_wrap_policy` is set, but the model is already wrapped: the policy is ignored")
    else:
        module = FullyShardedDataParallel(module=module, device_id=fsdp_device(), **fsdp_kwargs)
    _move_torchmetrics_to_device(module, fsdp_device())
    _setup_activation_checkpointing(module, activation_checkpointing_kwargs)
    return module


def fsdp_wrap_context(**fsdp_kwargs: Any) -> AbstractContextManager[Any]:
    """``enable_wrap`` for FSDP1 on this process's HPU (``model_sharded_context``/``module_sharded_context``)."""
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import enable_wrap

    context: AbstractContextManager[Any] = enable_wrap(
        wrapper_cls=FullyShardedDataParallel, device_id=fsdp_device(), **fsdp_kwargs
    )
    return context


@torch.no_grad()
def clip_grad_norm_across_meshes(parameters: Any, max_norm: float) -> torch.Tensor:
    """Clip gradients by their global 2-norm when they mix DTensors (FSDP2 shards, TP shards) and plain tensors.

    ``torch.nn.utils.clip_grad_norm_`` refuses such a mix. Here the gradients are grouped by mesh and placements;
    each group's norm is reduced over its mesh (a SUM of squares), the groups' norms are combined, and every
    gradient is scaled by the same factor. Returns the total norm before clipping.
    """
    from torch.distributed.tensor import DTensor

    grads = [parameter.grad for parameter in parameters if parameter.grad is not None]
    groups: dict[Any, list[torch.Tensor]] = {}
    for grad in grads:
        key = (id(grad.device_mesh), grad.placements) if isinstance(grad, DTensor) else None
        groups.setdefault(key, []).append(grad)
    norms = []
    for group in groups.values():
        norm = torch.nn.utils.get_total_norm(group, 2.0)
        norms.append(norm.full_tensor() if isinstance(norm, DTensor) else norm)
    if not norms:
        return torch.zeros((), device=fsdp_device())
    total = torch.linalg.vector_norm(torch.stack([norm.float() for norm in norms]))
    scale = float(max_norm) / (float(total) + 1e-6)
    if scale < 1.0:
        for grad in grads:
            grad.mul_(scale)
    return total


def register_fsdp_names(strategy_cls: type, strategy_registry: Any) -> None:
    """Register an ``HPUFSDPStrategy`` (Trainer or Fabric) as ``hpu_fsdp`` and ``hpu_fsdp_cpu_offload``."""
    description = f"{strategy_cls.__name__}: fully sharded data parallel over HCCL"
    strategy_registry.register(strategy_cls.strategy_name, strategy_cls, description=description)  # type: ignore[attr-defined]
    offload = f"{description}, parameters offloaded to the host"
    strategy_registry.register("hpu_fsdp_cpu_offload", strategy_cls, description=offload, cpu_offload=True)
