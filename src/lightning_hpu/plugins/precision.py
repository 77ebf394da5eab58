"""HPU precision for the Lightning Trainer."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager

from lightning.pytorch.plugins.precision.precision import Precision
from typing_extensions import override

from lightning_hpu.fabric.precision import HPUPrecision, HPUPrecisionInput


class HPUPrecisionPlugin(Precision, HPUPrecision):
    """Precision on HPU for the Trainer: ``Trainer(precision=...)`` maps here when the accelerator is HPU.

    Args:
        precision: ``"32-true"``, ``"bf16-mixed"``, ``"16-mixed"``, ``"bf16-true"`` or ``"16-true"`` (also the
            aliases ``"32"``, ``"bf16"``, ``"16"``). fp16 needs Gaudi2 or later.
    """

    def __init__(self, precision: HPUPrecisionInput | str = "32-true") -> None:
        HPUPrecision.__init__(self, precision)

    @override
    @contextmanager
    def train_step_context(self) -> Generator[None, None, None]:
        with self.forward_context():
            yield

    @override
    @contextmanager
    def val_step_context(self) -> Generator[None, None, None]:
        with self.forward_context():
            yield

    @override
    @contextmanager
    def test_step_context(self) -> Generator[None, None, None]:
        with self.forward_context():
            yield

    @override
    @contextmanager
    def predict_step_context(self) -> Generator[None, None, None]:
        with self.forward_context():
            yield
