"""The patch that leaves Lightning's two "💡 Tip" lines out of Trainers that run on HPU (other Trainers keep them).

They are advertisements printed by every Trainer; an HPU run prints its start-up lines, progress and results.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from lightning.pytorch.trainer.connectors.callback_connector import _CallbackConnector
from lightning.pytorch.trainer.connectors.logger_connector.logger_connector import _LoggerConnector
from lightning_utilities.core import rank_zero as rank_zero_module
from typing_extensions import override

from lightning_hpu.accelerator import HPUAccelerator
from lightning_hpu.integration.wrapping import wrap

#: How Lightning 2.6 starts its advertising lines (LitLogger, litmodels), logged at INFO by ``rank_zero_info``.
LIGHTNING_TIP_PREFIX = "💡 Tip:"

#: Where Lightning prints its tips (class, method); Lightning has no switch for them.
_TIP_METHODS = (
    (_LoggerConnector, "configure_logger"),
    (_CallbackConnector, "_maybe_show_litmodels_tip"),
)


class _DropLightningTips(logging.Filter):
    """Drops the log records that are Lightning's tips."""

    @override
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(LIGHTNING_TIP_PREFIX)


def runs_on_hpu(trainer: Any) -> bool:
    """Whether ``trainer`` runs on the HPU accelerator."""
    return isinstance(getattr(trainer, "accelerator", None), HPUAccelerator)


def install() -> None:
    """Leave Lightning's two "💡 Tip" lines out of Trainers that run on HPU (other Trainers keep them).

    They are advertisements printed by every Trainer; an HPU run prints its start-up lines, progress and results.
    Skipped silently if Lightning moved them: the lines are cosmetic.
    """
    if any(not callable(getattr(owner, name, None)) for owner, name in _TIP_METHODS):
        return
    tip_filter = _DropLightningTips()

    def quiet_logger_setup(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
            if not runs_on_hpu(self.trainer):
                original(self, *args, **kwargs)
                return
            log = rank_zero_module.log  # the logger rank_zero_info writes to (Lightning sets it at import)
            log.addFilter(tip_filter)
            try:
                original(self, *args, **kwargs)
            finally:
                log.removeFilter(tip_filter)

        return wrapper

    def quiet_litmodels_tip(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any) -> None:
            if runs_on_hpu(self.trainer):
                self._pending_litmodels_tip = False
                return
            original(self)

        return wrapper

    wrap(_LoggerConnector, "configure_logger", quiet_logger_setup)
    wrap(_CallbackConnector, "_maybe_show_litmodels_tip", quiet_litmodels_tip)
