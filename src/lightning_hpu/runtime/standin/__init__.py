"""The CPU stand-in: the HPU seam implemented on the CPU, keeping the device's rules.

``backend`` is the :class:`~lightning_hpu.runtime.base.HPUBackend` the package uses; ``process_group`` is the
``"hccl"`` process group over gloo; ``graphs``, ``graph_caches`` (keyed by ``graph_keys``) and ``graphed_callables``
capture and replay HPU graphs; ``autocast_norms`` gives the CPU autocast the bridge's rule for norm ops (installed
here, with the stand-in). Nothing here is imported unless ``LIGHTNING_HPU_BACKEND=cpu`` chose the stand-in.
"""

from lightning_hpu.runtime.standin import autocast_norms
from lightning_hpu.runtime.standin.backend import CPUStandInBackend, StandInCounters

autocast_norms.install()

__all__ = ["CPUStandInBackend", "StandInCounters"]
