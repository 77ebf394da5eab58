"""HPU precision under model parallelism (FSDP2 + tensor parallel) for the Trainer: clipping across meshes."""

from __future__ import annotations

from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.pytorch.plugins.precision import HPUPrecisionPlugin


class HPUModelParallelPrecisionPlugin(HPUPrecisionPlugin):
    """:class:`HPUPrecisionPlugin` whose clipping by norm sees every shard (``HPUModelParallelStrategy``'s default).

    The gradients of a model parallelized in ``configure_model`` are DTensors on one or more meshes, often beside
    plain tensors; the device's fused clip takes neither, so the global norm is computed group by group.
    """

    @override
    def clip_grad_by_norm(self, optimizer: Optimizer, clip_val: int | float) -> None:
        from lightning_hpu.distributed.sharding import clip_grad_norm_across_meshes  # the strategies import plugins

        clip_grad_norm_across_meshes(list(self.main_params(optimizer)), float(clip_val))
