"""Context parallelism for ``HPUModelParallelStrategy`` (Trainer and Fabric): the mesh, the batch split, the gradients.

With ``context_parallel_size=P`` the device mesh is ``(data_parallel, context_parallel, tensor_parallel)``. The P
ranks of a ``"context_parallel"`` group get the same batch (the sampler splits over ``"data_parallel"`` only), each
keeps the P-th part of every sequence (:func:`shard_sequence`), and :class:`~lightning_hpu.ContextParallelAttention`
exchanges what attention needs over the group. Parameters are replicated over data and context parallel ranks, so
gradients are reduced over both: by FSDP2 sharded over :func:`gradient_mesh`, or else by :func:`all_reduce_gradients`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.distributed as dist
from lightning.fabric.utilities.apply_func import apply_to_collection
from torch import Tensor
from torch.nn import Module
from typing_extensions import override

from lightning_hpu.distributed.sharding import check_before_launch
from lightning_hpu.distributed.strategy_methods import StrategyMethods
from lightning_hpu.distributed.ulysses import ContextParallelAttention, check_heads
from lightning_hpu.runtime import HPUConfigurationError

DATA, CONTEXT, TENSOR = "data_parallel", "context_parallel", "tensor_parallel"
#: The flattened ``(data_parallel, context_parallel)`` dimension: the ranks that hold the same parameters.
DATA_CONTEXT = "data_context_parallel"
#: The batch dimension that holds the sequence (batch first, as in ``(batch, sequence, ...)``).
SEQUENCE_DIM = 1
#: The attribute under which a mesh :func:`build_mesh` made keeps its flattened :data:`DATA_CONTEXT` mesh (torch asks
#: to keep it, not slice it). On the mesh object itself: torch's meshes of equal layout compare and hash equal, so a
#: table keyed by mesh would lose a live mesh's entry when an equal, older one is collected.
GRADIENT_MESH_ATTRIBUTE = "_lightning_hpu_gradient_mesh"


def check_context_parallel_size(
    context_parallel_size: Any, data: Any, tensor: Any, num_nodes: int, num_processes: int
) -> None:
    """Before any process starts: refuse a ``context_parallel_size`` that does not divide the devices in use, or mesh
    sizes that do not multiply to them."""
    size, world_size = context_parallel_size, num_nodes * num_processes
    if isinstance(size, bool) or not isinstance(size, int) or size < 1 or world_size % size:
        raise HPUConfigurationError(
            f"context_parallel_size={size!r} must be a positive divisor of the {world_size} devices in use;"
            " choose 1 (no context parallelism) or a divisor such as 2."
        )
    resolve_sizes(data, size, tensor, num_nodes, num_processes)


def resolve_sizes(data: Any, context: int, tensor: Any, num_nodes: int, num_processes: int) -> tuple[Any, Any]:
    """The ``(data_parallel_size, tensor_parallel_size)`` to use beside ``context`` (``"auto"`` ones filled in).

    Without context parallelism Lightning's defaults stand (data = nodes, tensor = devices per node). With it,
    ``"auto"`` tensor parallelism is 1 and ``"auto"`` data parallelism takes the devices left over.
    """
    if context == 1:
        return data, tensor
    world_size = num_nodes * num_processes
    tensor = 1 if tensor == "auto" else tensor
    data = world_size // (context * tensor) if data == "auto" else data
    if data * context * tensor != world_size:
        raise HPUConfigurationError(
            f"data_parallel_size={data} x context_parallel_size={context} x tensor_parallel_size={tensor} must equal"
            f" the {world_size} devices in use; change data_parallel_size (or leave it 'auto')."
        )
    return data, tensor


def needs_no_parallelization(context: int, tensor: Any) -> bool:
    """Whether the model may stay as it is: context parallelism without tensor parallelism keeps every parameter
    replicated, and the strategy averages the gradients itself, so there is nothing for a parallelization hook
    (``configure_model``, Fabric's ``parallelize_fn``) to do."""
    return context > 1 and tensor in (1, "auto")


def keep_replicated(module: Module, device_mesh: Any) -> Module:
    """Fabric's ``parallelize_fn`` for a model with replicated parameters: the whole module on this rank's device
    (Fabric leaves placing the model to a model-parallel strategy's ``parallelize_fn``)."""
    return module.to(device_mesh.device_type)


def build_mesh(device_type: str, data: int, context: int, tensor: int) -> Any:
    """The ``(data_parallel, context_parallel, tensor_parallel)`` mesh, with the flattened :data:`DATA_CONTEXT` one."""
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh(device_type, (data, context, tensor), mesh_dim_names=(DATA, CONTEXT, TENSOR))
    setattr(mesh, GRADIENT_MESH_ATTRIBUTE, mesh[DATA, CONTEXT]._flatten(DATA_CONTEXT))
    return mesh


def gradient_mesh(device_mesh: Any) -> Any:
    """The mesh over which parameters are replicated: ``fully_shard`` over it (data x context parallel ranks)."""
    flattened = getattr(device_mesh, GRADIENT_MESH_ATTRIBUTE, None)
    return device_mesh[DATA] if flattened is None else flattened


def context_size(device_mesh: Any) -> int:
    """The number of context-parallel ranks of ``device_mesh`` (1 without a ``"context_parallel"`` dimension)."""
    return int(device_mesh[CONTEXT].size()) if CONTEXT in (device_mesh.mesh_dim_names or ()) else 1


def shard_sequence(batch: Any, device_mesh: Any) -> Any:
    """This rank's part of every sequence: dimension 1 of each tensor of 2 or more dimensions, cut in P equal pieces.

    Inputs, labels (shifted for next-token prediction *before* the split) and position ids are all cut the same
    way, rank ``r`` of the ``"context_parallel"`` group keeping tokens ``[r * S / P, (r + 1) * S / P)``.
    """
    size = context_size(device_mesh)
    if size == 1:
        return batch
    rank = device_mesh.get_local_rank(CONTEXT)

    def keep_part(tensor: Tensor) -> Tensor:
        if tensor.dim() <= SEQUENCE_DIM:
            return tensor
        length = tensor.shape[SEQUENCE_DIM]
        if length % size:
            raise HPUConfigurationError(
                f"context_parallel_size={size} must divide the sequence length (dimension 1 of every batch tensor),"
                f" but a batch has {length}; pad the sequences to a multiple of {size}."
            )
        part = length // size
        return tensor.narrow(SEQUENCE_DIM, rank * part, part).contiguous()

    return apply_to_collection(batch, Tensor, keep_part)


def connect_attention(module: Module, device_mesh: Any) -> int:
    """Connect every :class:`ContextParallelAttention` of ``module`` to the mesh's context-parallel group.

    With context parallelism a model without one would attend within each rank's piece only: it is refused. A model
    sharded with FSDP2 over only part of :func:`gradient_mesh` would not reduce gradients over all the replicas: it
    is refused too.
    """
    size = context_size(device_mesh)
    group = device_mesh[CONTEXT].get_group() if size > 1 else None
    attentions = [child for child in module.modules() if isinstance(child, ContextParallelAttention)]
    if size > 1 and not attentions:
        raise HPUConfigurationError(
            f"context_parallel_size={size} needs the model's attention to be a lightning_hpu.ContextParallelAttention"
            " (each rank holds part of every sequence); use it in the model, or set context_parallel_size=1."
        )
    for attention in attentions:
        if attention.num_heads is not None:
            check_heads(attention.num_heads, size)
        attention.connect(group)
    if size > 1:
        _check_fsdp_meshes(module, size, int(gradient_mesh(device_mesh).size()))
    return len(attentions)


def _check_fsdp_meshes(module: Module, context: int, replicas: int) -> None:
    from torch.distributed.fsdp import FSDPModule

    for child in module.modules():
        if isinstance(child, FSDPModule):
            mesh = child._get_fsdp_state()._fsdp_param_group
            size = mesh.mesh_info.mesh.size() if mesh is not None else replicas
            if size != replicas:
                raise HPUConfigurationError(
                    f"context_parallel_size={context} needs fully_shard over all {replicas} data x context parallel"
                    f" ranks, but a module is sharded over {size}; pass mesh=lightning_hpu.gradient_mesh(device_mesh)."
                )


def uses_fsdp(module: Module) -> bool:
    """Whether FSDP2 (``fully_shard``) reduces the gradients of ``module``."""
    from torch.distributed.fsdp import FSDPModule

    return any(isinstance(child, FSDPModule) for child in module.modules())


@torch.no_grad()
def all_reduce_gradients(module: Module, device_mesh: Any) -> None:
    """Average the gradients over the data x context parallel ranks (``SUM``, then divide: HCCL has no ``AVG``).

    Each rank's loss is the mean over its own tokens, so the mean of the ranks' gradients is the gradient of the
    mean over all tokens of the global batch (equal token counts per rank). Tensor-parallel shards stay local.
    """
    mesh = gradient_mesh(device_mesh)
    group, replicas = mesh.get_group(), mesh.size()
    for parameter in module.parameters():
        grad = parameter.grad
        if grad is None:
            continue
        local = grad._local_tensor if hasattr(grad, "_local_tensor") else grad
        dist.all_reduce(local, op=dist.ReduceOp.SUM, group=group)
        local.div_(replicas)


class ContextParallelHooks(StrategyMethods):
    """What both ``HPUModelParallelStrategy`` classes (Trainer and Fabric) add to Lightning's: the checks before
    launch, and ``context_parallel_size``. Mix it in before Lightning's ``ModelParallelStrategy``."""

    _context_parallel_size: int = 1
    _data_parallel_size: Any
    _tensor_parallel_size: Any
    _device_mesh: Any

    def __init__(self, *args: Any, context_parallel_size: int = 1, **lightning_kwargs: Any) -> None:
        """``context_parallel_size``, and Lightning's ``ModelParallelStrategy`` arguments passed on as given (each
        ``HPUModelParallelStrategy`` declares them all in its own signature)."""
        super().__init__(*args, **lightning_kwargs)
        self._context_parallel_size = context_parallel_size

    @override
    def _configure_launcher(self) -> None:
        # The connector calls this once the devices are known, before any process starts.
        check_before_launch(
            self.strategy_name, self.num_nodes, self.num_processes, tensor_parallel_size=self._tensor_parallel_size
        )
        check_context_parallel_size(
            self._context_parallel_size,
            self._data_parallel_size,
            self._tensor_parallel_size,
            self.num_nodes,
            self.num_processes,
        )
        super()._configure_launcher()

    @contextmanager
    def _lightning_mesh_sizes(self) -> Iterator[None]:
        """Around Lightning's ``setup_environment``: fill in ``"auto"`` sizes, then build the context-parallel mesh.

        Lightning builds a ``(data_parallel, tensor_parallel)`` mesh; it gets ``data x context`` as its data size
        (so its size check holds), and with ``context_parallel_size > 1`` the strategy then builds the 3-D mesh.
        """
        context = self._context_parallel_size
        data, tensor = resolve_sizes(
            self._data_parallel_size, context, self._tensor_parallel_size, self.num_nodes, self.num_processes
        )
        self._data_parallel_size, self._tensor_parallel_size = (data * context if context > 1 else data), tensor
        yield
        if context > 1:
            self._data_parallel_size = data
            self._device_mesh = build_mesh(self._device_mesh.device_type, data, context, tensor)

    def shard_sequence(self, batch: Any) -> Any:
        """This rank's part of every sequence of ``batch`` (the Trainer calls it on every batch; Fabric users do)."""
        if self._context_parallel_size == 1:
            return batch
        return shard_sequence(batch, self._device_mesh)

    def _reduce_context_parallel_gradients(self, module: Module | None) -> None:
        """After backward: average gradients over data x context parallel ranks unless FSDP2 does it."""
        if module is not None and self._context_parallel_size > 1 and not uses_fsdp(module):
            all_reduce_gradients(module, self._device_mesh)
