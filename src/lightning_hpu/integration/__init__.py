"""Teaching Lightning 2.6 about HPU: the one place that touches Lightning internals, one module per patch.

Lightning 2.6 removed HPU support: its Trainer connector rejects ``accelerator="hpu"`` with the automatic strategy and
would pick CUDA mixed precision. :func:`install` applies these patches:

* :mod:`~lightning_hpu.integration.connectors`: the Trainer's and Fabric's connectors choose the HPU accelerator,
  strategies and precision plugins, and refuse what cannot run on HPU with one sentence;
* :mod:`~lightning_hpu.integration.compile_arguments`: Fabric and the Trainer compile with ``hpu_backend`` on HPU
  where the user left torch's default backend;
* :mod:`~lightning_hpu.integration.profiler_names`: ``Trainer(profiler="hpu")``;
* :mod:`~lightning_hpu.integration.sigterm`: under the HPU parallel strategies, SIGTERM is agreed on over a
  host-side group instead of Lightning's per-batch device broadcast and ``.item()``;
* :mod:`~lightning_hpu.integration.device_info_line`: the "HPU available" start-up line;
* :mod:`~lightning_hpu.integration.quiet_tips`: no advertising tips in HPU runs.

The wrapped methods are checked to exist before anything is patched, so a Lightning release that moves them fails at
import with a message instead of misbehaving.

Imports (the layering test checks this paragraph): of Lightning, ``lightning``, ``lightning.fabric``,
``lightning.pytorch`` and ``lightning_utilities``; of this package, ``compile``, ``device``, ``distributed``,
``fabric``, ``precision``, ``pytorch``, ``runtime`` and ``support``.
"""

from __future__ import annotations

from lightning.fabric.connector import _Connector
from lightning.pytorch.trainer.connectors.accelerator_connector import _AcceleratorConnector

from lightning_hpu.integration import (
    compile_arguments,
    connectors,
    device_info_line,
    profiler_names,
    quiet_tips,
    sigterm,
    strategy_arguments,
)
from lightning_hpu.integration.connector_rules import HPU_ONLY_PRECISIONS, is_hpu
from lightning_hpu.integration.quiet_tips import LIGHTNING_TIP_PREFIX
from lightning_hpu.integration.wrapping import MARKER, TESTED_LIGHTNING, LightningIntegrationError

__all__ = [
    "HPU_ONLY_PRECISIONS",
    "LIGHTNING_TIP_PREFIX",
    "TESTED_LIGHTNING",
    "LightningIntegrationError",
    "install",
    "is_hpu",
    "is_installed",
]


def is_installed() -> bool:
    """Whether the connectors already carry the HPU wrappers."""
    return hasattr(_AcceleratorConnector._choose_strategy, MARKER)


def install() -> None:
    """Wrap the Trainer's and Fabric's connectors for HPU, and add the HPU start-up line (idempotent)."""
    device_info_line.install()
    strategy_arguments.install()
    if is_installed():
        return
    connectors.check_connector(_AcceleratorConnector)
    connectors.check_connector(_Connector)
    profiler_names.check()
    sigterm.check()
    compile_arguments.check()
    connectors.install_on(_AcceleratorConnector, fabric=False)
    connectors.install_on(_Connector, fabric=True)
    profiler_names.install()
    sigterm.install()
    compile_arguments.install()
    quiet_tips.install()
