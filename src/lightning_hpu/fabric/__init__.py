"""lightning-hpu for Lightning Fabric: the accelerator, strategies, precision and checkpoint IO of its modules.

The package itself serves lightning-habana's ``lightning_habana.fabric`` names (``HPUAccelerator``,
``HPUDDPStrategy``, ``HPUPrecision``, ...), each imported when first read, so that importing one module of the
package imports nothing else.

Imports (the layering test checks this paragraph): of Lightning, ``lightning.fabric``; of this package,
``checkpoint``, ``device``, ``distributed``, ``precision``, ``runtime`` and ``support``.
"""

from typing import Any

__all__ = [
    "HPUAccelerator",
    "HPUCheckpointIO",
    "HPUDDPStrategy",
    "HPUFSDPPrecision",
    "HPUFSDPStrategy",
    "HPUParallelStrategy",
    "HPUPrecision",
    "SingleHPUStrategy",
]


def __getattr__(name: str) -> Any:
    from lightning_hpu.support import old_paths

    return old_paths.module_getattr(__name__, old_paths.HABANA_FABRIC_PACKAGE)(name)
