"""``habana_frameworks.torch._hpex_C`` on the stand-in: the bridge's fused-kernel extension, as far as it is emulated.

Only ``fused_norm(grad, max_norm, norm_type)`` is served, the kernel of ``FusedClipNorm`` in lazy mode
(:func:`gaudi_standin.optimizers.clip_norm.fused_norm`); the extension's other kernels (sparse optimizers, embedding
bags, ROI align, ...) are not.
"""

from __future__ import annotations

from gaudi_standin.optimizers.clip_norm import fused_norm

__all__ = ["fused_norm"]
