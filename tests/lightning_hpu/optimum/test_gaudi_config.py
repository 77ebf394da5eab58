"""optimum-habana's ``gaudi_config.json``: published files configure a Trainer and a Fabric run that trains; bad keys
are refused with one sentence naming the key."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from torch import nn

from lightning_hpu.device.autocast_ops import FP32_OPS_ENV, LOWER_PRECISION_OPS_ENV
from lightning_hpu.optimum import GaudiConfig
from lightning_hpu.runtime import HPUConfigurationError, require_backend
from lightning_hpu.runtime.bridge import BridgeBackend
from tests.helpers.models import RegressionModel, regression_data
from tests.helpers.paths import DATA
from tests.helpers.trainer import quiet_trainer

CONFIGS = DATA / "gaudi_configs"
PUBLISHED = [
    "Habana-bert-base-uncased.json",
    "Habana-gpt2.json",
    "Habana-falcon.json",
    "Habana-stable-diffusion-2.json",
]


@pytest.fixture(autouse=True)
def _bridge_not_yet_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    # As in a process where the bridge has not loaded yet (lazy mode on a Gaudi), so the op lists can still be set.
    monkeypatch.delitem(sys.modules, "habana_frameworks.torch", raising=False)


@pytest.fixture
def fused_clips(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The bounds of every fused clip the backend ran."""
    calls: list[float] = []
    original = BridgeBackend.clip_grad_norm

    def counting(self: BridgeBackend, parameters: Any, max_norm: float) -> torch.Tensor:
        calls.append(max_norm)
        return original(self, parameters, max_norm)

    monkeypatch.setattr(BridgeBackend, "clip_grad_norm", counting)
    return calls


class DtypeProbe(RegressionModel):
    """Records the dtype of the layer's output in each training step, and trains with torch's AdamW."""

    def __init__(self) -> None:
        super().__init__()
        self.dtypes: list[torch.dtype] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        out = self(x)
        self.dtypes.append(out.dtype)
        return nn.functional.mse_loss(out.float(), y)

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.AdamW(self.parameters(), lr=0.05, eps=1e-6, weight_decay=0.0)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def _expected(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / name).read_text())


def _check_op_lists(values: dict[str, Any]) -> None:
    if "autocast_bf16_ops" in values:
        assert Path(os.environ[LOWER_PRECISION_OPS_ENV]).read_text().split() == values["autocast_bf16_ops"]
        assert Path(os.environ[FP32_OPS_ENV]).read_text().split() == values["autocast_fp32_ops"]
    else:
        assert LOWER_PRECISION_OPS_ENV not in os.environ


@pytest.mark.parametrize("name", PUBLISHED)
def test_a_published_file_configures_a_trainer_that_trains(
    standin: Any, tmp_path: Path, fused_clips: list[float], name: str
) -> None:
    values = _expected(name)
    config = GaudiConfig.from_json(CONFIGS / name)
    model = DtypeProbe()
    trainer = quiet_trainer(
        tmp_path,
        accelerator="hpu",
        max_steps=4,
        limit_val_batches=0,
        gradient_clip_val=0.5,
        **config.trainer_arguments(),
    )
    before = [p.detach().clone() for p in model.parameters()]
    trainer.fit(model)
    assert trainer.precision == "bf16-mixed"
    assert model.dtypes == [torch.bfloat16] * 4  # the forward ran under bf16 autocast
    optimizer = trainer.optimizers[0]
    assert type(optimizer).__name__ == "FusedAdamW"
    assert trainer.lr_scheduler_configs[0].scheduler.optimizer is optimizer
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05 * 0.1**4)  # the scheduler drove the fused optimizer
    assert fused_clips == [0.5] * 4
    after = [p.detach().cpu() for p in model.parameters()]
    assert all(not torch.equal(a.cpu(), b) for a, b in zip(before, after, strict=True))
    _check_op_lists(values)


@pytest.mark.parametrize("name", PUBLISHED)
def test_a_published_file_configures_a_fabric_run_that_trains(
    standin: Any, fused_clips: list[float], name: str
) -> None:
    config = GaudiConfig.from_json(CONFIGS / name)
    fabric = Fabric(accelerator="hpu", devices=1, **config.fabric_arguments())
    config.apply()
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    dtypes: list[torch.dtype] = []
    model.register_forward_hook(lambda module, inputs, output: dtypes.append(output.dtype))
    optimizer = config.convert_optimizer(torch.optim.AdamW(model.parameters(), lr=0.05, eps=1e-6))
    assert type(optimizer).__name__ == "FusedAdamW"
    model, optimizer = fabric.setup(model, optimizer)
    data = regression_data()
    losses = []
    for step in range(6):
        x, y = (t.to(fabric.device) for t in data[step * 8 : (step + 1) * 8])
        loss = nn.functional.mse_loss(model(x), y)
        fabric.backward(loss)
        fabric.clip_gradients(model, optimizer, max_norm=0.5)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert dtypes == [torch.bfloat16] * 6  # the forward ran under bf16 autocast
    assert fused_clips == [0.5] * 6
    assert losses[-1] < losses[0]
    _check_op_lists(_expected(name))


def test_fused_keys_off_keep_torch_adamw_and_torch_clipping(
    standin: Any, tmp_path: Path, fused_clips: list[float]
) -> None:
    config = GaudiConfig.from_dict({"use_torch_autocast": False, "use_fused_adam": False, "use_fused_clip_norm": False})
    model = DtypeProbe()
    trainer = quiet_trainer(
        tmp_path,
        accelerator="hpu",
        max_steps=2,
        limit_val_batches=0,
        gradient_clip_val=0.5,
        **config.trainer_arguments(),
    )
    trainer.fit(model)
    assert type(trainer.optimizers[0]) is torch.optim.AdamW
    assert model.dtypes == [torch.float32] * 2
    assert fused_clips == []


@pytest.mark.parametrize("flag", [True, False])
def test_use_dynamic_shapes_switches_the_graph_compiler(standin: Any, tmp_path: Path, flag: bool) -> None:
    require_backend().set_dynamic_shapes(not flag)
    config = GaudiConfig.from_dict({"use_dynamic_shapes": flag})
    trainer = quiet_trainer(tmp_path, accelerator="hpu", max_steps=1, **config.trainer_arguments())
    trainer.fit(RegressionModel())
    assert require_backend().dynamic_shapes() is flag


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"use_torch_autocast": True, "use_fused_adamw": True}, "use_fused_adamw"),
        ({"use_habana_mixed_precision": False}, "use_habana_mixed_precision"),
        ({"hmp_bf16_ops": ["linear"]}, "hmp_bf16_ops"),
        ({"use_fused_adam": "yes"}, "use_fused_adam"),
        ({"autocast_bf16_ops": ["linear"], "autocast_fp32_ops": ["softmax"]}, "autocast_bf16_ops"),
        ({"use_torch_autocast": True, "autocast_fp32_ops": ["softmax"]}, "autocast_fp32_ops"),
        ({"use_torch_autocast": True, "autocast_bf16_ops": "linear", "autocast_fp32_ops": []}, "autocast_bf16_ops"),
        (
            {"use_torch_autocast": True, "autocast_bf16_ops": ["mm", "add"], "autocast_fp32_ops": ["mm"]},
            "autocast_bf16_ops",
        ),
    ],
)
def test_unknown_and_contradictory_keys_are_refused_naming_the_key(
    standin: Any, tmp_path: Path, values: dict[str, Any], key: str
) -> None:
    path = tmp_path / "gaudi_config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(HPUConfigurationError, match=f"`{key}`") as error:
        GaudiConfig.from_json(tmp_path)  # a directory holding gaudi_config.json, as save_pretrained writes it
    assert str(error.value).count(".") >= 1 and "\n" not in str(error.value)
    assert LOWER_PRECISION_OPS_ENV not in os.environ  # refused before anything was set up


def test_the_published_hmp_file_is_refused_with_its_replacement(standin: Any) -> None:
    with pytest.raises(HPUConfigurationError, match=r"`use_habana_mixed_precision`.*use `use_torch_autocast`"):
        GaudiConfig.from_json(CONFIGS / "Habana-gpt2-refs-pr-1.json")


def test_saved_version_keys_are_accepted(standin: Any) -> None:
    saved = {"use_fused_adam": True, "optimum_version": "1.21.2", "transformers_version": "4.55.4"}
    config = GaudiConfig.from_dict(saved)
    assert config.use_fused_adam and config.precision == "32-true"


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda params: torch.optim.AdamW(params, amsgrad=True), "amsgrad"),
        (lambda params: torch.optim.AdamW(params, maximize=True), "maximize"),
    ],
)
def test_adamw_options_the_fused_kernel_lacks_are_refused(
    standin: Any, make: Callable[[Any], torch.optim.Optimizer], match: str
) -> None:
    config = GaudiConfig(use_fused_adam=True)
    with pytest.raises(HPUConfigurationError, match=f"`use_fused_adam`.*{match}"):
        config.convert_optimizer(make(nn.Linear(2, 1).parameters()))


def test_other_optimizers_are_left_alone(standin: Any) -> None:
    sgd = torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
    assert GaudiConfig(use_fused_adam=True).convert_optimizer(sgd) is sgd
