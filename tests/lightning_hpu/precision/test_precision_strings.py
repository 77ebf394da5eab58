"""The Trainer on the stand-in with every precision string: dtypes, learning, resume, fp16 refusal, fused clipping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from lightning.pytorch import Trainer
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUConfigurationError, HPUPrecisionPlugin
from lightning_hpu.runtime import settings
from tests.helpers.models import TinyRegressor
from tests.helpers.trainer import quiet_trainer

# precision string -> (forward dtype inside the step, parameter dtype)
PRECISIONS = {
    "32-true": (torch.float32, torch.float32),
    "32": (torch.float32, torch.float32),
    "bf16-mixed": (torch.bfloat16, torch.float32),
    "bf16": (torch.bfloat16, torch.float32),
    "16-mixed": (torch.float16, torch.float32),
    "16": (torch.float16, torch.float32),
    "bf16-true": (torch.bfloat16, torch.bfloat16),
    "16-true": (torch.float16, torch.float16),
}


def _data(batch_size: int = 16) -> DataLoader:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=generator)
    y = x @ torch.randn(8, 1, generator=generator)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size)


def _trainer(tmp_path: Path, **kwargs: Any) -> Trainer:
    return quiet_trainer(tmp_path, **{"accelerator": "hpu", "devices": 1, "enable_checkpointing": False, **kwargs})


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_fit_dtypes_learning_and_resume(standin: Any, tmp_path: Path, precision: str) -> None:
    forward_dtype, param_dtype = PRECISIONS[precision]
    model = TinyRegressor()
    trainer = _trainer(tmp_path, precision=precision, max_epochs=3)
    assert isinstance(trainer.precision_plugin, HPUPrecisionPlugin)
    trainer.fit(model, _data())

    assert model.forward_dtypes == {forward_dtype}
    assert model.param_dtypes == {param_dtype}
    first_epoch, last_epoch = model.losses[:4], model.losses[-4:]
    assert sum(last_epoch) < 0.8 * sum(first_epoch)

    ckpt = tmp_path / "model.ckpt"
    trainer.save_checkpoint(ckpt)
    saved = {k: v.clone() for k, v in model.state_dict().items()}

    resumed = TinyRegressor()
    loaded: dict[str, torch.Tensor] = {}
    resumed.on_train_start = lambda: loaded.update(  # type: ignore[method-assign]
        {k: v.clone() for k, v in resumed.state_dict().items()}
    )
    trainer2 = _trainer(tmp_path, precision=precision, max_epochs=4)
    trainer2.fit(resumed, _data(), ckpt_path=ckpt)
    assert trainer2.global_step == trainer.global_step + 4
    for key, value in saved.items():
        assert torch.equal(loaded[key].cpu().to(value.dtype), value.cpu()), key
    assert resumed.param_dtypes == {param_dtype}


@pytest.mark.parametrize("precision", ["16-mixed", "16-true"])
def test_fp16_refused_on_first_generation_gaudi(monkeypatch: pytest.MonkeyPatch, precision: str) -> None:
    monkeypatch.setenv(settings.CPU_DEVICE_NAME_ENV, "GAUDI")
    with pytest.raises(ValueError, match=r"^fp16 precision needs Gaudi2 or later, but this device is GAUDI;"):
        Trainer(accelerator="hpu", devices=1, precision=precision, logger=False)
    # bf16 stays available on a first-generation Gaudi.
    trainer = Trainer(accelerator="hpu", devices=1, precision="bf16-mixed", logger=False)
    assert trainer.precision_plugin.precision == "bf16-mixed"


def _clip_spy(standin: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float, float]]:
    """Record (norm before, norm after, bound) for each call of the backend's clip."""
    calls: list[tuple[float, float, float]] = []
    real = standin.clip_grad_norm

    def spy(parameters: Any, max_norm: float) -> torch.Tensor:
        params = list(parameters)
        before = real(params, max_norm)
        after = torch.linalg.vector_norm(torch.stack([p.grad.float().norm() for p in params if p.grad is not None]))
        calls.append((float(before), float(after), max_norm))
        return before

    monkeypatch.setattr(standin, "clip_grad_norm", spy)
    return calls


def test_clip_by_norm_uses_fused_clip_under_accumulation(
    standin: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = _clip_spy(standin, monkeypatch)
    model = TinyRegressor()
    trainer = _trainer(
        tmp_path, precision="bf16-mixed", max_epochs=1, accumulate_grad_batches=2, gradient_clip_val=0.01
    )
    trainer.fit(model, _data())
    assert trainer.global_step == 2
    assert len(calls) == 2  # once per optimizer step, not per accumulated batch
    for before, after, bound in calls:
        assert bound == 0.01
        assert before > bound
        assert after <= bound * 1.01


class ManualRegression(TinyRegressor):
    def __init__(self, seed: int = 0) -> None:
        super().__init__(lr=0.2, seed=seed)
        self.automatic_optimization = False

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:  # type: ignore[override]
        opt = self.optimizers()
        opt.zero_grad()
        loss = super().training_step(batch, batch_idx)
        self.manual_backward(loss)
        self.clip_gradients(opt, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
        opt.step()
        return loss


def test_manual_optimization_with_bf16_and_fused_clip(
    standin: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = _clip_spy(standin, monkeypatch)
    model = ManualRegression()
    trainer = _trainer(tmp_path, precision="bf16-mixed", max_epochs=3)
    trainer.fit(model, _data())
    assert model.forward_dtypes == {torch.bfloat16}
    assert len(calls) == 12
    assert any(before > bound for before, _, bound in calls)
    assert all(after <= bound * 1.01 for _, after, bound in calls)
    assert sum(model.losses[-4:]) < 0.8 * sum(model.losses[:4])


def test_unsupported_precision_names_the_choices(standin: Any) -> None:
    with pytest.raises(
        ValueError, match=r"`precision='64-true'` is not supported on HPU: use one of 32-true, bf16-mixed"
    ):
        Trainer(accelerator="hpu", devices=1, precision="64-true", logger=False)


def test_a_misspelt_precision_given_to_the_plugin_says_what_was_meant(standin: Any) -> None:
    with pytest.raises(
        ValueError, match=r"^`precision='bf16_mixed'` is not supported on HPU: did you mean 'bf16-mixed'\?$"
    ):
        HPUPrecisionPlugin("bf16_mixed")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        # String distance alone suggested 'fp8-float16', 'bf16' and 'bf16-mixed' for the first three.
        ("bfloat16", "'bf16-mixed' or 'bf16-true'"),
        ("fp16", "'16-mixed'"),
        ("fp8-mixed", "'fp8'"),
        ("half", "'16-mixed'"),
        ("torch.bfloat16", "'bf16-mixed' or 'bf16-true'"),
        ("bf16_true", "'bf16-true'"),
        ("fp16-true", "'16-true'"),
        ("fp8_e4m3", "'fp8'"),
        ("fp8-fp16", "'fp8-float16'"),
        ("float32", "'32-true'"),
    ],
)
def test_a_precision_named_by_its_family_gets_that_family_suggested(standin: Any, given: str, meant: str) -> None:
    with pytest.raises(HPUConfigurationError, match=rf"^`precision={given!r}` is not supported on HPU: did you mean"):
        HPUPrecisionPlugin(given)  # type: ignore[arg-type]
    with pytest.raises(HPUConfigurationError) as refused:
        Trainer(accelerator="hpu", devices=1, precision=given, logger=False)  # type: ignore[arg-type]
    # After Lightning's own "Precision ... is invalid" (tests/lightning_hpu/integration/test_lightning_error_text.py).
    assert str(refused.value).endswith(
        f". `Trainer(precision={given!r})` is not supported on HPU: did you mean {meant}?"
    )
    with pytest.raises(HPUConfigurationError) as refused:
        Fabric(accelerator="hpu", devices=1, precision=given)  # type: ignore[arg-type]
    assert str(refused.value).endswith(
        f". `Fabric(precision={given!r})` is not supported on HPU: did you mean {meant}?"
    )


def test_a_name_of_no_family_still_gets_the_closest_spelling(standin: Any) -> None:
    sentence = r"^`precision='16-mixd'` is not supported on HPU: did you mean '16-mixed'\?$"
    with pytest.raises(HPUConfigurationError, match=sentence):
        HPUPrecisionPlugin("16-mixd")  # type: ignore[arg-type]
