"""The CPU stand-in: the HPU seam implemented on the CPU, keeping the device's rules.

``device`` makes torch's ``hpu`` device real (tensors on ``hpu:N``, HPU autocast with the bridge's op lists);
``backend`` is the :class:`~lightning_hpu.runtime.base.HPUBackend` the package uses; ``process_group`` is the
``"hccl"`` process group over gloo; ``graphs``, ``graph_caches`` (keyed by ``graph_keys``) and ``graphed_callables``
capture and replay HPU graphs. Nothing here is imported unless ``LIGHTNING_HPU_BACKEND=cpu`` chose the stand-in.
"""

from lightning_hpu.runtime.standin.backend import CPUStandInBackend, StandInCounters

__all__ = ["CPUStandInBackend", "StandInCounters"]
