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

from lightning_hpu.integration.wrapping import wrap
from lightning_hpu.pytorch.accelerator import HPUAccelerator

#: How Lightning 2.6 starts its advertising lines (LitLogger, litmodels), logged at INFO by ``rank_zero_info``.
LIGHTNING_TIP_PREFIX = "💡 Tip:"


class _DropLightningTips(logging.Filter):
    """Drops the log records that are Lightning's tips."""

    @override
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(LIGHTNING_TIP_PREFIX)


def runs_on_hpu(trainer: Any) -> bool:
    """Whether ``trainer`` runs on the HPU accelerator."""
    return isinstance(getattr(trainer, "accelerator", None), HPUAccelerator)


def install() -> None:
    """Leave Lightning's "💡 Tip" lines out of Trainers that run on HPU (other Trainers keep them).

    They are advertisements printed by every Trainer; an HPU run prints its start-up lines, progress and results.
    Lightning 2.6.0 prints its litmodels tip while the Trainer is created (``_configure_checkpoint_callbacks``) and
    has no LitLogger tip; later 2.6 releases print it at ``fit`` (``_maybe_show_litmodels_tip``)
    (:mod:`lightning_hpu.support.versions`). Skipped silently where Lightning moved them: the lines are cosmetic.
    """
    tip_filter = _DropLightningTips()

    def without_tips(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not runs_on_hpu(self.trainer):
                return original(self, *args, **kwargs)
            log = rank_zero_module.log  # the logger rank_zero_info writes to (Lightning sets it at import)
            log.addFilter(tip_filter)
            try:
                return original(self, *args, **kwargs)
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

    if callable(getattr(_LoggerConnector, "configure_logger", None)):
        wrap(_LoggerConnector, "configure_logger", without_tips)
    if callable(getattr(_CallbackConnector, "_maybe_show_litmodels_tip", None)):
        wrap(_CallbackConnector, "_maybe_show_litmodels_tip", quiet_litmodels_tip)
    elif callable(getattr(_CallbackConnector, "_configure_checkpoint_callbacks", None)):  # Lightning 2.6.0
        wrap(_CallbackConnector, "_configure_checkpoint_callbacks", without_tips)
