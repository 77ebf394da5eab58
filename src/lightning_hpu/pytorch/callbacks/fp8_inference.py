"""fp8 inference from the Trainer: Intel Neural Compressor's measure-then-quantize flow as a callback.

``HPUFp8Inference("measure")`` prepares the model when ``trainer.test``/``trainer.predict`` starts and writes the
statistics when it ends; a later run with ``HPUFp8Inference("quantize")`` converts the model to fp8 with them before
its first batch. The default configs are INC's maxabs ones, shipped with the package (``fp8/configs``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lightning.pytorch import Callback, LightningModule, Trainer
from typing_extensions import override

from lightning_hpu.device.generation_rules import check_fp8_supported
from lightning_hpu.fp8.inference import (
    DEFAULT_CONFIGS,
    Fp8InferenceMode,
    default_config,
    fp8_finish_measurement,
    fp8_measure,
    fp8_quantize,
    quantization_api,
)

#: Where the statistics go under the run's log root (INC adds its own suffixes to this prefix).
DEFAULT_STATS_PREFIX = Path("fp8_stats") / "measure"

#: The log root of a Trainer without a logger: where Lightning's default loggers would write.
_DEFAULT_LOG_ROOT = "lightning_logs"


def log_root(trainer: Trainer) -> Path:
    """The run's unversioned log directory: the logger's ``root_dir``, else ``<default_root_dir>/lightning_logs``."""
    root = getattr(trainer.logger, "root_dir", None)
    return Path(root) if root else Path(trainer.default_root_dir) / _DEFAULT_LOG_ROOT


class HPUFp8Inference(Callback):
    """Run ``trainer.test``/``trainer.predict`` through INC's fp8 flow: ``"measure"`` once, then ``"quantize"``.

    The model is changed in place (also under DeepSpeed inference, whose engine wraps the same module), so add
    this callback to a Trainer used only for testing or predicting. Needs Gaudi2 or later and Intel Neural
    Compressor.

    Args:
        mode: ``"measure"``: prepare the model at the start and write the statistics at the end (no call to
            ``fp8_finish_measurement`` needed); ``"quantize"``: convert the model to fp8 with the statistics of an
            earlier measure run before the first batch.
        config: an INC JSON config (its ``mode`` must match); the packaged maxabs config by default.
        dump_stats_path: where the statistics are written and read (INC's ``dump_stats_path`` prefix); by default
            ``fp8_stats/measure`` under the logger's root directory (``<default_root_dir>/lightning_logs`` for
            Lightning's default loggers, or without a logger), the same for both runs (the versioned ``log_dir``
            is not), never the working directory itself.
    """

    def __init__(
        self, mode: Fp8InferenceMode, config: str | Path | None = None, dump_stats_path: str | Path | None = None
    ) -> None:
        if mode not in DEFAULT_CONFIGS:
            raise ValueError(f"`mode={mode!r}` is not an fp8 inference step: use 'measure', then 'quantize'.")
        config_path = Path(config) if config is not None else default_config(mode)
        if not config_path.is_file():
            raise FileNotFoundError(f"`config={str(config)!r}` is not a file; pass the path of an INC fp8 JSON config.")
        self.mode = mode
        self.config = config_path
        self.dump_stats_path = Path(dump_stats_path) if dump_stats_path is not None else None
        #: The config given to INC, with ``dump_stats_path`` filled in (written when the run starts).
        self.resolved_config: Path | None = None

    def stats_prefix(self, trainer: Trainer) -> Path:
        """The ``dump_stats_path`` this run uses."""
        if self.dump_stats_path is not None:
            return self.dump_stats_path
        return log_root(trainer) / DEFAULT_STATS_PREFIX

    @override
    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        # Refuse a first-generation Gaudi before the run starts.
        check_fp8_supported()

    def _start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        quantization_api()  # INC missing: fail before anything is written
        prefix = self.stats_prefix(trainer)
        prefix.parent.mkdir(parents=True, exist_ok=True)
        settings: dict[str, Any] = json.loads(self.config.read_text())
        settings["dump_stats_path"] = str(prefix)
        self.resolved_config = prefix.parent / f"{self.mode}_config_rank{trainer.global_rank}.json"
        self.resolved_config.write_text(json.dumps(settings, indent=1))
        if self.mode == "measure":
            fp8_measure(pl_module, self.resolved_config)
        else:
            fp8_quantize(pl_module, self.resolved_config)

    def _end(self, pl_module: LightningModule) -> None:
        if self.mode == "measure":
            fp8_finish_measurement(pl_module)

    @override
    def on_test_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._start(trainer, pl_module)

    @override
    def on_test_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._end(pl_module)

    @override
    def on_predict_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._start(trainer, pl_module)

    @override
    def on_predict_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._end(pl_module)
