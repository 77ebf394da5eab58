"""optimum-habana's training options that lightning-hpu now has: each does what its name says on the stand-in."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from lightning.fabric.plugins import TorchCheckpointIO
from lightning.pytorch import Callback, LightningModule
from lightning.pytorch.callbacks import ModelCheckpoint
from torch import nn
from torch.overrides import TorchFunctionMode

from lightning_hpu import FiniteMean, HPUCompile, HPULossLogger, HPUProfiler, HPUThroughputMonitor
from lightning_hpu.fabric.strategies import SingleHPUStrategy as FabricSingleHPUStrategy
from lightning_hpu.runtime import HPUConfigurationError
from tests.helpers.dynamo import reset_dynamo
from tests.helpers.models import BlockModel, RegressionModel, regression_data
from tests.helpers.standin import counters as standin_counters
from tests.helpers.trainer import MetricsSpy, quiet_trainer


# --- pipelining_fwd_bwd ------------------------------------------------------------------------------------------
def _fabric_mark_steps_per_step(pipeline: bool) -> list[int]:
    fabric = Fabric(accelerator="hpu", devices=1, strategy=FabricSingleHPUStrategy(pipeline_forward_backward=pipeline))
    model = nn.Linear(8, 1)
    model, optimizer = fabric.setup(model, torch.optim.SGD(model.parameters(), lr=0.1))
    data = regression_data()
    per_step = []
    for step in range(3):
        before = standin_counters().mark_steps
        x, y = (t.to(fabric.device) for t in data[step * 8 : (step + 1) * 8])
        fabric.backward(nn.functional.mse_loss(model(x), y))
        optimizer.step()
        optimizer.zero_grad()
        per_step.append(standin_counters().mark_steps - before)
    return per_step


def test_fabric_pipelining_marks_a_step_between_forward_and_backward(lazy_standin: Any) -> None:
    assert _fabric_mark_steps_per_step(pipeline=False) == [2, 2, 2]  # after backward, after the optimizer step
    assert _fabric_mark_steps_per_step(pipeline=True) == [3, 3, 3]  # and before backward


# --- non_blocking_data_copy --------------------------------------------------------------------------------------
class _CopyRecorder(TorchFunctionMode):
    """The ``non_blocking`` flag of every host-to-HPU ``Tensor.to`` copy."""

    def __init__(self) -> None:
        super().__init__()
        self.flags: list[bool] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        source = args[0] if args else None
        # Batches only: a module's ``.to`` moves its parameters with positional arguments of its own.
        if func is torch.Tensor.to and source.device.type == "cpu" and not isinstance(source, nn.Parameter):
            target = next((a for a in args[1:] if isinstance(a, (torch.device, str))), kwargs.get("device"))
            if target is not None and torch.device(target).type == "hpu":
                positional = [a for a in args[1:] if isinstance(a, bool)]
                self.flags.append(bool(kwargs.get("non_blocking", positional[0] if positional else False)))
        return func(*args, **kwargs)


def test_batches_go_to_the_hpu_with_non_blocking_copies(standin: Any, tmp_path: Path) -> None:
    recorder = _CopyRecorder()
    trainer = quiet_trainer(tmp_path, accelerator="hpu", max_steps=2, limit_val_batches=0)
    model = RegressionModel()
    with recorder:
        trainer.fit(model)
    assert len(recorder.flags) >= 4 and all(recorder.flags)  # 2 batches of (x, y)
    fabric = Fabric(accelerator="hpu", devices=1)
    loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(regression_data(), batch_size=8))
    recorder = _CopyRecorder()
    with recorder:
        next(iter(loader))
        fabric.to_device(torch.ones(2))
    assert recorder.flags == [True, True, True]


# --- profiling_warmup_steps / profiling_steps (and _eval), profiling_record_shapes, profiling_with_stack -----------
def _recorded_steps(dirpath: Path) -> dict[str, int]:
    recorded = {}
    for trace in dirpath.glob("*.pt.trace.json"):
        events = json.loads(trace.read_text())["traceEvents"]
        steps = {event["name"] for event in events if event.get("name", "").startswith("ProfilerStep#")}
        actions = {event["name"].rpartition(".")[2] for event in events if "SingleHPUStrategy." in event["name"]}
        # The training trace is saved at the next step, which may be the first validation step.
        kind = "training_step" if "training_step" in actions else "validation_step"
        assert kind not in recorded
        recorded[kind] = len(steps)
        shapes = any("Input Dims" in event.get("args", {}) for event in events)
        stacks = any(event.get("cat") == "python_function" for event in events)
        recorded[f"{kind} shapes"], recorded[f"{kind} stacks"] = shapes, stacks
    return recorded


@pytest.mark.parametrize(("training", "evaluation"), [((1, 2), (0, 1)), ((0, 3), (1, 2))])
def test_profiler_records_the_asked_training_and_evaluation_steps(
    standin: Any, tmp_path: Path, training: tuple[int, int], evaluation: tuple[int, int]
) -> None:
    shapes_and_stacks = training == (1, 2)
    profiler = HPUProfiler(
        dirpath=tmp_path, filename="p", training_steps=training, evaluation_steps=evaluation,
        record_shapes=shapes_and_stacks, with_stack=shapes_and_stacks,
    )  # fmt: skip
    trainer = quiet_trainer(
        tmp_path,
        accelerator="hpu",
        max_steps=6,
        limit_val_batches=4,
        val_check_interval=sum(training),
        num_sanity_val_steps=0,
        profiler=profiler,
        enable_checkpointing=False,
    )
    trainer.fit(RegressionModel())
    recorded = _recorded_steps(tmp_path)
    assert recorded["training_step"] == training[1]
    assert recorded["validation_step"] == evaluation[1]
    for kind in ("training_step", "validation_step"):
        assert recorded[f"{kind} shapes"] is shapes_and_stacks
        assert recorded[f"{kind} stacks"] is shapes_and_stacks


@pytest.mark.parametrize("steps", [(1,), (-1, 2), (1, 0), (1.5, 2), "3"])
def test_profiler_steps_are_checked(steps: Any) -> None:
    with pytest.raises(HPUConfigurationError, match=r"`training_steps` must be \(warmup, active\)"):
        HPUProfiler(training_steps=steps)


def test_profiler_steps_and_a_schedule_are_refused_together() -> None:
    with pytest.raises(ValueError, match="drop `schedule`"):
        HPUProfiler(evaluation_steps=(0, 1), schedule=torch.profiler.schedule(wait=0, warmup=0, active=1))


# --- compile_from_sec_iteration, use_compiled_autograd ------------------------------------------------------------
class _GraphsPerStep(Callback):
    def __init__(self) -> None:
        self.per_step: list[int] = []
        self.before = 0

    def on_train_batch_start(self, *args: Any) -> None:
        self.before = standin_counters().compiled_graphs

    def on_train_batch_end(self, *args: Any) -> None:
        self.per_step.append(standin_counters().compiled_graphs - self.before)


def _compiled_fit(tmp_path: Path, model: LightningModule, **options: Any) -> _GraphsPerStep:
    reset_dynamo()
    probe = _GraphsPerStep()
    trainer = quiet_trainer(
        tmp_path, accelerator="hpu", max_steps=3, enable_checkpointing=False, callbacks=[HPUCompile(**options), probe]
    )
    trainer.fit(model)
    return probe


def test_compile_from_the_second_step(standin: Any, tmp_path: Path) -> None:
    probe = _compiled_fit(tmp_path, BlockModel(log=False), compile_from_second_step=True)
    assert probe.per_step[0] == 0 and probe.per_step[1] > 0
    # The stance is back to default after the fit: a compiled function compiles at its first call.
    before = standin_counters().compiled_graphs
    torch.compile(lambda x: x * 2 + 1, backend="hpu_backend")(torch.ones(3, device="hpu"))
    assert standin_counters().compiled_graphs > before


def test_compiled_autograd_compiles_the_backward_through_hpu_backend(standin: Any, tmp_path: Path) -> None:
    from torch._dynamo.utils import counters

    plain_before = counters["compiled_autograd"]["captures"]
    _compiled_fit(tmp_path, BlockModel(log=False))
    assert counters["compiled_autograd"]["captures"] == plain_before
    _compiled_fit(tmp_path, BlockModel(log=False), compiled_autograd=True)
    assert counters["compiled_autograd"]["captures"] > plain_before
    assert torch._dynamo.config.compiled_autograd is False  # restored after the fit


# --- adjust_throughput ----------------------------------------------------------------------------------------------
class _FakeClock:
    """``time.perf_counter`` that advances 1 ms per read, plus whatever a slow logger or save adds."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


class _SlowLogger(MetricsSpy):
    def __init__(self, clock: _FakeClock) -> None:
        super().__init__()
        self.clock = clock

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.clock.now += 100.0  # a logger that takes 100 s per call
        super().log_metrics(metrics, step)


class _SlowCheckpointIO(TorchCheckpointIO):
    def __init__(self, clock: _FakeClock) -> None:
        super().__init__()
        self.clock = clock

    def save_checkpoint(self, *args: Any, **kwargs: Any) -> None:
        self.clock.now += 1000.0  # a save that takes 1000 s
        super().save_checkpoint(*args, **kwargs)


def _train_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exclude: bool) -> tuple[float, float]:
    clock = _FakeClock()
    monkeypatch.setattr(time, "perf_counter", clock)
    logger = _SlowLogger(clock)
    monitor = HPUThroughputMonitor(batch_size_fn=len, warmup_steps=0, exclude_logging_and_saving=exclude)
    trainer = quiet_trainer(
        tmp_path,
        accelerator="hpu",
        max_steps=6,
        limit_val_batches=0,
        log_every_n_steps=1,
        logger=logger,
        plugins=[_SlowCheckpointIO(clock)],
        callbacks=[monitor, ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=2, save_top_k=-1)],
    )
    trainer.fit(RegressionModel())
    times = [m["train/time"] for m in logger.metrics if "train/time" in m]
    return times[-1], monitor.excluded_seconds


def test_throughput_can_leave_out_logging_and_checkpoint_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_everything, nothing_left_out = _train_time(tmp_path / "a", monkeypatch, exclude=False)
    assert nothing_left_out == 0.0
    assert with_everything > 5 * 100 + 2 * 1000  # five loggings and two saves before the last measurement
    adjusted, left_out = _train_time(tmp_path / "b", monkeypatch, exclude=True)
    assert adjusted < 1.0  # only the fake clock's millisecond ticks remain
    assert left_out > 5 * 100 + 2 * 1000


# --- logging_nan_inf_filter -----------------------------------------------------------------------------------------
class _SometimesNaN(RegressionModel):
    """Returns a NaN loss at steps 1 and 2 (with zero gradients, so training goes on)."""

    losses: list[float]

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.losses.append(loss.item())
        if batch_idx in (1, 2):
            nan = torch.tensor(float("nan"), device=loss.device)
            return torch.where(torch.tensor(False, device=loss.device), loss, nan)
        return loss


@pytest.mark.parametrize("nan_inf_filter", [True, False])
def test_loss_logger_keeps_non_finite_losses_out_of_the_mean(
    standin: Any, tmp_path: Path, nan_inf_filter: bool
) -> None:
    model = _SometimesNaN()
    model.losses = []
    logger = MetricsSpy()
    trainer = quiet_trainer(
        tmp_path,
        accelerator="hpu",
        max_steps=4,
        limit_val_batches=0,
        log_every_n_steps=4,
        logger=logger,
        callbacks=[HPULossLogger(nan_inf_filter=nan_inf_filter)],
        enable_checkpointing=False,
    )
    trainer.fit(model)
    (logged,) = [m["loss"] for m in logger.metrics if "loss" in m]
    if nan_inf_filter:
        assert logged == pytest.approx((model.losses[0] + model.losses[3]) / 2, rel=1e-6)
    else:
        assert math.isnan(logged)


def test_finite_mean_for_fabric_loops() -> None:
    mean = FiniteMean()
    for value in (1.0, float("inf"), 3.0, float("nan")):
        mean.update(torch.tensor(value))
    assert mean.compute().item() == 2.0
    mean.reset()
    with pytest.raises(RuntimeError, match="at least one update"):
        mean.compute()


# --- sdp_on_bf16 ---------------------------------------------------------------------------------------------------
def test_torchs_reduced_precision_sdpa_switch_is_honoured_on_hpu_tensors(standin: Any) -> None:
    """optimum-habana's ``sdp_on_bf16`` is torch's switch (the guide maps it there): off, the math SDPA computes bf16
    inputs in fp32; on, in bf16."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(2, 4, 256, 64, generator=torch.Generator().manual_seed(0)).bfloat16().to("hpu")
    attend = nn.functional.scaled_dot_product_attention
    before = torch._C._get_math_sdp_allow_fp16_bf16_reduction()
    try:
        with sdpa_kernel(SDPBackend.MATH):
            torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(False)
            full = attend(q, q, q)
            torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)
            reduced = attend(q, q, q)
    finally:
        torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(before)
    reference = attend(q.float(), q.float(), q.float()).bfloat16()
    torch.testing.assert_close(full, reference, atol=1e-2, rtol=1e-2)
    assert not torch.equal(full, reduced)
    assert (reduced.float() - reference.float()).abs().max() > (full.float() - reference.float()).abs().max()
