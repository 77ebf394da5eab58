"""One-HPU scenarios written against ``lightning``, run unchanged against ``pytorch_lightning`` too (``namespaces.py``).

``python namespace_scenario.py OUT_DIR eager|lazy`` (with ``LIGHTNING_HPU_BACKEND=cpu``) runs the scenarios of that
mode through :func:`namespaces.import_scenario`, so under ``LIGHTNING_HPU_TEST_NAMESPACE=standalone`` every
``lightning.pytorch`` below is ``pytorch_lightning`` and every lightning-hpu name comes from
``lightning_hpu.standalone``. Each scenario writes what it saw into ``OUT_DIR/report.json``: the classes the Trainer
chose (their modules tell the namespace), and the figures the test compares.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningCLI
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import GaudiConfig, HPUCompile, HPUGraphs, HPUProfiler, get_backend
from tests.helpers.trainer import quiet_trainer

FEATURES = 8


class Regressor(LightningModule):
    def __init__(self, lr: float = 0.05) -> None:
        super().__init__()
        self.lr = lr
        self.layer = nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("loss", loss)
        return loss

    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(64, FEATURES, generator=generator)
        return DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def _trainer(root: Path, **kwargs: Any) -> Trainer:
    return quiet_trainer(
        root, **{"accelerator": "hpu", "devices": 1, "max_steps": 6, "enable_checkpointing": False, **kwargs}
    )


def _classes(trainer: Trainer) -> dict[str, str]:
    return {
        part: f"{type(obj).__module__}.{type(obj).__name__}"
        for part, obj in (
            ("trainer", trainer),
            ("accelerator", trainer.accelerator),
            ("strategy", trainer.strategy),
            ("precision", trainer.precision_plugin),
        )
    }


def _weights(model: nn.Module) -> list[float]:
    return [float(value) for value in torch.cat([p.detach().cpu().flatten() for p in model.parameters()])]


def fit_and_resume(root: Path) -> dict[str, Any]:
    """Two epochs at once against one, a checkpoint, and one more resumed from it: the same weights."""
    torch.manual_seed(0)
    straight = Regressor()
    trainer = _trainer(root / "straight", max_steps=-1, max_epochs=2)
    trainer.fit(straight)
    torch.manual_seed(0)
    first = Regressor()
    checkpoint = ModelCheckpoint(dirpath=str(root / "checkpoints"), save_last=True)
    _trainer(root / "first", max_steps=-1, max_epochs=1, enable_checkpointing=True, callbacks=[checkpoint]).fit(first)
    resumed = Regressor()
    _trainer(root / "resumed", max_steps=-1, max_epochs=2).fit(
        resumed, ckpt_path=str(root / "checkpoints" / "last.ckpt")
    )
    return {
        "classes": _classes(trainer),
        "loss": float(trainer.callback_metrics["loss"]),
        "resume_max_diff": max(abs(a - b) for a, b in zip(_weights(straight), _weights(resumed), strict=True)),
    }


def precisions(root: Path) -> dict[str, Any]:
    """bf16-mixed and fp8 (the stand-in is a Gaudi 2): the HPU precision plugins, and a finite loss."""
    seen = {}
    for precision in ("bf16-mixed", "fp8"):
        trainer = _trainer(root / precision, precision=precision)
        trainer.fit(Regressor())
        seen[precision] = {
            "plugin": _classes(trainer)["precision"],
            "loss": float(trainer.callback_metrics["loss"]),
        }
    return seen


def profiler(root: Path) -> dict[str, Any]:
    """``profiler="hpu"`` by name and by object, with a trace written."""
    by_name = _trainer(root / "by_name", profiler="hpu", max_steps=3)
    by_name.fit(Regressor())
    by_object = _trainer(root / "by_object", profiler=HPUProfiler(dirpath=str(root / "traces")), max_steps=3)
    by_object.fit(Regressor())
    return {
        "by_name": f"{type(by_name.profiler).__module__}.{type(by_name.profiler).__name__}",
        "traces": sorted(path.name for path in (root / "traces").rglob("*.json")),
    }


def compiled(root: Path) -> dict[str, Any]:
    """``HPUCompile`` in eager mode: the model compiled with ``hpu_backend``, the loss as in eager mode."""
    torch.manual_seed(0)
    eager = _trainer(root / "eager")
    eager.fit(Regressor())
    torch.manual_seed(0)
    trainer = _trainer(root / "compiled", callbacks=[HPUCompile()])
    trainer.fit(Regressor())
    return {
        "loss": float(trainer.callback_metrics["loss"]),
        "eager_loss": float(eager.callback_metrics["loss"]),
        "callback": type(trainer.callbacks[0]).__module__,
    }


def cli(root: Path) -> dict[str, Any]:
    """LightningCLI with the HPU named on its command line only."""
    result = LightningCLI(
        Regressor,
        run=False,
        args=[
            "--trainer.accelerator=hpu",
            "--trainer.devices=1",
            "--trainer.max_steps=2",
            "--trainer.logger=false",
            f"--trainer.default_root_dir={root}",
            "--model.lr=0.01",
        ],
    )
    result.trainer.fit(result.model)
    return {"classes": _classes(result.trainer), "lr": result.model.lr}


def gaudi_config(root: Path) -> dict[str, Any]:
    """optimum-habana's ``gaudi_config.json`` turned into Trainer arguments."""
    config = GaudiConfig.from_dict({"use_torch_autocast": True, "use_fused_adam": True, "use_fused_clip_norm": True})
    trainer = _trainer(root, **config.trainer_arguments())
    trainer.fit(Regressor())
    return {"classes": _classes(trainer)}


def hpu_graphs(root: Path) -> dict[str, Any]:
    """Lazy mode: ``HPUGraphs`` captures the training step and replays it."""
    trainer = _trainer(root, callbacks=[HPUGraphs(train=True)])
    trainer.fit(Regressor())
    return {
        "lazy": get_backend().is_lazy(),  # type: ignore[union-attr]
        "callback": type(trainer.callbacks[0]).__module__,
        "loss": float(trainer.callback_metrics["loss"]),
        "classes": _classes(trainer),
    }


SCENARIOS = {
    "eager": (fit_and_resume, precisions, profiler, compiled, cli, gaudi_config),
    "lazy": (hpu_graphs,),
}


def main(out: Path, mode: str) -> None:
    report = {scenario.__name__: scenario(out / scenario.__name__) for scenario in SCENARIOS[mode]}
    (out / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    from tests.helpers.namespaces import import_scenario

    import_scenario("namespace_scenario").main(Path(sys.argv[1]), sys.argv[2])
