"""HPU precision for the Lightning Trainer: Fabric's :class:`HPUPrecision` under Lightning's Trainer ``Precision``.

Lightning's base runs each step (training, validation, test, predict) in ``forward_context()``, which is the HPU
plugin's; this class adds only the fused clip by norm.
"""

from __future__ import annotations

from lightning.pytorch.plugins.precision.precision import Precision
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.device.fused_optimizers import clip_grad_norm
from lightning_hpu.precision.hpu_precision import HPUPrecision


class HPUPrecisionPlugin(Precision, HPUPrecision):
    """Precision on HPU for the Trainer: ``Trainer(precision=...)`` maps here when the accelerator is HPU.

    ``Trainer(precision="transformer-engine")`` (Lightning's name for fp8 training) keeps Lightning's meaning, bf16
    weights with the engine's layers in fp8 (``"transformer-engine-float16"``: fp16); the HPU's own ``"fp8"`` keeps
    fp32 weights under bf16 autocast (:mod:`lightning_hpu.precision.names` has the table). Pass the plugin as
    ``plugins=[HPUPrecisionPlugin(...)]`` to give op lists or an fp8 recipe. Clipping by norm (``gradient_clip_val``
    with the default ``gradient_clip_algorithm="norm"``) uses the device's fused clip (``FusedClipNorm`` on a Gaudi).

    Args:
        precision: ``"32-true"``, ``"bf16-mixed"``, ``"16-mixed"``, ``"bf16-true"``, ``"16-true"``,
            ``"transformer-engine"``, ``"transformer-engine-float16"``, ``"fp8"`` or ``"fp8-float16"`` (also
            Lightning's aliases). fp16 and fp8 need Gaudi2 or later.
        autocast_lower_precision_ops: aten ops autocast runs in bf16/fp16, replacing the bridge's list.
        autocast_fp32_ops: aten ops autocast runs in fp32, replacing the bridge's list.
        fp8_recipe: fp8 only: a ``DelayedScaling`` recipe or a dict of its arguments.
        fp8_layer_filter: fp8 only: ``(qualified_name, layer) -> bool`` choosing the ``nn.Linear`` layers run in fp8.
        device: lightning-habana's argument, accepted as ``"hpu"`` only.
        fused_clip_norm: ``False`` clips with ``torch.nn.utils.clip_grad_norm_`` instead of the fused clip.
    """

    @override
    def clip_grad_by_norm(self, optimizer: Optimizer, clip_val: int | float) -> None:
        if not self.fused_clip_norm:
            super().clip_grad_by_norm(optimizer, clip_val)
            return
        clip_grad_norm(self.main_params(optimizer), float(clip_val))
