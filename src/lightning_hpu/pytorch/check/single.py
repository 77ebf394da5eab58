"""The single-HPU checks, in the command's process: eager and compiled fits, precision, throughput, checkpoints, memory.

Fits are shared between checks where one serves several: the eager fp32 fit is the loss reference, the memory
figure and the straight run a resumed fit must match bit for bit; the bf16-mixed fit is the precision check and the
throughput figure.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from lightning_hpu.check import expectations as expect
from lightning_hpu.check.faults import fault
from lightning_hpu.check.rows import Row, verdict
from lightning_hpu.check.runner import run_row
from lightning_hpu.compile.peak_flops import GAUDI_PEAK_FLOPS, generation_row
from lightning_hpu.pytorch.callbacks import HPUCompile, HPURecompileMonitor
from lightning_hpu.pytorch.check.fits import Fit, fit
from lightning_hpu.pytorch.check.model import CheckTransformer, flat_parameters
from lightning_hpu.pytorch.plugins import HPUAsyncCheckpointIO, HPUPrecisionPlugin
from lightning_hpu.runtime import HPUFeatureUnavailableError, bridge_emulated, require_backend

#: Warm-up steps: compilations there are expected; after them a steady step compiles nothing.
WARMUP_STEPS = 2


def loss_row(name: str, what: str, run: Fit) -> Row:
    losses = run.losses
    row = Row(name, what, verdict(expect.loss_falls(losses)), expected=f"falls by {expect.LOSS_DROP:.0%} or more")
    row.figure = f"loss {losses[0]:.3f} -> {losses[-1]:.3f}" if losses else "no steps"
    row.value = losses[-1] if losses else None
    row.extra = {"losses": losses}
    return row


def compilations_row(name: str, what: str, monitor: HPURecompileMonitor) -> Row:
    warmup, steady = monitor.per_step[:WARMUP_STEPS], monitor.per_step[WARMUP_STEPS:]
    row = Row(name, what, verdict(bool(steady) and sum(steady) == 0), expected=f"0 after step {WARMUP_STEPS}")
    row.figure = f"{sum(warmup)} in warm-up, {sum(steady)} after"
    row.value = float(sum(steady))
    row.extra = {"per_step": monitor.per_step}
    reasons = [reason for reason in monitor.reasons[WARMUP_STEPS:] if reason]
    row.detail = f"first recompile: {reasons[0]}" if reasons else ""
    return row


def agreement_row(name: str, what: str, run: Fit, reference: Fit | None, tolerance: float, against: str) -> Row:
    """``run``'s final loss against ``reference``'s, the difference measured in ``reference``'s first loss."""
    if reference is None or not reference.losses:
        raise RuntimeError(f"the {against} fit failed: nothing to compare with")
    value, expected = run.losses[-1], reference.losses[-1]
    difference = expect.loss_difference(value, expected, reference.losses[0])
    row = Row(name, what, verdict(difference <= tolerance), value=value)
    row.expected = f"within {tolerance:.0%} of the first loss of {against}"
    row.figure = f"loss {value:.4f} vs {expected:.4f} ({difference:.1%})"
    return row


class SingleChecks:
    """The single-HPU rows of the checks asked for (``checks``), with ``steps`` training steps per fit."""

    def __init__(
        self, checks: set[str], steps: int, report: Callable[[Row], None], starting: Callable[[str], None]
    ) -> None:
        self.checks, self.steps, self.report, self.starting = checks, steps, report, starting
        self.standin = bridge_emulated()
        self.eager: Fit | None = None
        self.bf16: Fit | None = None
        self.memory_peak = 0
        # PT_HPU_LAZY_MODE=1 in the command's environment makes its own fits lazy: the row says so.
        self.eager_what = f"Trainer fit, {'lazy' if require_backend().is_lazy() else 'eager'} mode"

    def row(self, name: str, what: str, body: Callable[[], Row]) -> None:
        self.starting(name)
        row = run_row(name, what, body)
        if row.check in self.checks:  # the eager fit also serves checks that were asked for alone
            self.report(row)

    def run(self) -> None:
        needs_eager = self.checks & {"fit", "precision", "checkpoints", "memory"}
        if needs_eager:
            self.row("fit.eager", self.eager_what, self.eager_fit)
        if "fit" in self.checks:
            self.compiled_fit()
        if self.checks & {"precision", "throughput"}:
            self.row("precision.bf16", "bf16-mixed against fp32", self.bf16_fit)
        if "precision" in self.checks:
            self.row("precision.fp8", "fp8 against bf16-mixed", self.fp8_fit)
        if "throughput" in self.checks:
            self.row("throughput", "samples/s and MFU, bf16-mixed", self.throughput)
        if "checkpoints" in self.checks:
            self.checkpoints()
        if "memory" in self.checks:
            self.row("memory", "peak HPU memory of the fit", self.memory)

    def eager_fit(self) -> Row:
        backend = require_backend()
        backend.reset_peak_memory_stats()
        self.eager = fit(self.steps, lr=0.0 if fault("fit.eager") else 3e-3)
        self.memory_peak = backend.memory_stats().get("MaxInUse", 0)
        return loss_row("fit.eager", self.eager_what, self.eager)

    def compiled_fit(self) -> None:
        what = 'Trainer fit, torch.compile(backend="hpu_backend")'
        recompiles = "graph compilations per step, compiled"
        if require_backend().is_lazy():
            why = "this process runs in lazy mode (PT_HPU_LAZY_MODE=1), where torch.compile is refused: unset it"
            self.report(Row("fit.compile", what, "n/a", detail=why))
            self.report(Row("fit.recompiles", recompiles, "n/a", detail=why))
            return
        monitor = HPURecompileMonitor(warmup_steps=WARMUP_STEPS)

        def body() -> Row:
            torch._dynamo.reset()  # count this fit's compilations from scratch
            model = CheckTransformer(
                lr=0.0 if fault("fit.compile") else 3e-3,
                loss_scale=1.25 if fault("fit.modes") else 1.0,
                recompile_after=WARMUP_STEPS if fault("fit.recompiles") else None,
            )
            return loss_row("fit.compile", what, fit(self.steps, model=model, callbacks=[HPUCompile(), monitor]))

        self.row("fit.compile", what, body)
        self.row("fit.recompiles", recompiles, lambda: compilations_row("fit.recompiles", recompiles, monitor))

    def bf16_fit(self) -> Row:
        model = CheckTransformer(loss_scale=1.5 if fault("precision.bf16") else 1.0)
        self.bf16 = fit(self.steps, precision="bf16-mixed", model=model)
        return agreement_row(
            "precision.bf16", "bf16-mixed against fp32", self.bf16, self.eager, expect.BF16_TOL, "fp32"
        )

    def fp8_fit(self) -> Row:
        what = "fp8 against bf16-mixed"
        backend = require_backend()
        if not backend.supports_fp8():
            return Row("precision.fp8", what, "n/a", detail=f"{backend.device_name()} has no fp8 (Gaudi 2 and later)")
        try:
            backend.transformer_engine()
        except (HPUFeatureUnavailableError, ImportError) as error:
            return Row("precision.fp8", what, "n/a", detail=f"no fp8 engine: {error}")
        model = CheckTransformer(loss_scale=2.0 if fault("precision.fp8") else 1.0)
        run = fit(self.steps, plugins=[HPUPrecisionPlugin("fp8")], model=model)
        return agreement_row("precision.fp8", what, run, self.bf16, expect.FP8_TOL, "bf16-mixed")

    def throughput(self) -> Row:
        what = "samples/s and MFU, bf16-mixed"
        run = self.bf16 or fit(self.steps, precision="bf16-mixed")
        steady = run.step_seconds[WARMUP_STEPS:] or run.step_seconds
        size = run.model.size
        samples_per_second = size.batch / statistics.median(steady)
        flops = size.flops_per_sample(run.model.parameter_count()) * (1e12 if fault("throughput") else 1.0)
        device = require_backend().device_name()
        peak = GAUDI_PEAK_FLOPS.get(generation_row(device) or "", {}).get("bf16")
        row = Row("throughput", what, verdict(samples_per_second > 0), value=samples_per_second, standin=self.standin)
        row.figure = f"{samples_per_second:,.0f} samples/s"
        if peak is None:
            row.expected, row.detail = "> 0 samples/s", f"no published bf16 peak for {device}: no MFU"
            return row
        mfu = flops * samples_per_second / peak
        row.figure += f", MFU {mfu * 100:.2g}%"
        row.expected = f"0 < MFU <= 100% of {peak / 1e12:.0f} TFLOPS"
        row.result = verdict(samples_per_second > 0 and 0 < mfu <= 1)
        row.extra = {"mfu": mfu, "peak_flops": peak, "step_seconds": steady}
        return row

    def checkpoints(self) -> None:
        with tempfile.TemporaryDirectory(prefix="lightning-hpu-check-") as directory:
            path = Path(directory) / "half.ckpt"
            halves: dict[str, Fit] = {}
            self.row("checkpoints.async", "HPUAsyncCheckpointIO save, read back", lambda: self.async_save(path, halves))
            self.row("checkpoints.resume", "save and resume, bit-exact", lambda: self.resume(path))

    def async_save(self, path: Path, halves: dict[str, Fit]) -> Row:
        what = "HPUAsyncCheckpointIO save, read back"
        # Saved by ModelCheckpoint during the fit, at an epoch's end, as a run that is stopped and resumed saves.
        saver = ModelCheckpoint(path.parent, path.stem, every_n_train_steps=self.steps // 2, save_top_k=-1)
        half = fit(self.steps // 2, plugins=[HPUAsyncCheckpointIO()], callbacks=[saver])  # the fit's end waits
        if fault("checkpoints.async"):
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        saved = torch.load(path, map_location="cpu", weights_only=False)["state_dict"]
        live = half.model.state_dict()
        equal = saved.keys() == live.keys() and all(torch.equal(saved[k], live[k].cpu()) for k in live)
        size = path.stat().st_size
        return Row(
            "checkpoints.async",
            what,
            verdict(equal),
            figure=f"{size / 2**20:.1f} MiB, {len(saved)} tensors",
            expected="equal to the model",
        )

    def resume(self, path: Path) -> Row:
        what = "save and resume, bit-exact"
        if self.eager is None:
            raise RuntimeError("the eager fit failed: nothing to compare the resumed fit with")
        if fault("checkpoints.resume"):
            checkpoint = torch.load(path, map_location="cpu", weights_only=False)
            first = next(iter(checkpoint["state_dict"]))
            checkpoint["state_dict"][first].view(-1)[0] += 1.0
            torch.save(checkpoint, path)
        resumed = fit(self.steps, ckpt_path=str(path))
        difference = float((flat_parameters(resumed.model) - flat_parameters(self.eager.model)).abs().max())
        row = Row("checkpoints.resume", what, verdict(difference == 0.0), value=difference, expected="0 (bit-exact)")
        row.figure = f"max |difference| {difference:.3g} after {self.steps} steps"
        return row

    def memory(self) -> Row:
        stats = require_backend().memory_stats()
        total = stats.get("Limit", 0)
        peak = self.memory_peak
        if fault("memory"):
            total = peak // 2
        share = peak / total if total else float("inf")
        row = Row(
            "memory",
            "peak HPU memory of the fit",
            verdict(peak > 0 and share <= expect.MEMORY_FRACTION),
            value=float(peak),
            expected=f"<= {expect.MEMORY_FRACTION:.0%} of the device",
        )
        row.figure = f"{peak / 2**20:.1f} MiB of {total / 2**30:.1f} GiB ({share:.2g} of it)"
        return row
