"""The lazy-mode fit with HPU graphs, in a process of its own (``PT_HPU_LAZY_MODE`` is read when the bridge loads)."""

from __future__ import annotations

from lightning_hpu.check.expectations import LOSS_DROP
from lightning_hpu.check.faults import fault
from lightning_hpu.check.rows import Row, emit, verdict
from lightning_hpu.check.runner import run_row
from lightning_hpu.pytorch.callbacks import HPUGraphs, HPURecompileMonitor
from lightning_hpu.pytorch.check.fits import fit
from lightning_hpu.pytorch.check.single import WARMUP_STEPS, loss_row
from lightning_hpu.runtime import require_backend

WHAT = "Trainer fit, lazy mode with HPU graphs"


def lazy_fit(steps: int) -> Row:
    """Loss falls and a steady step compiles no new graph; ``n/a`` where the bridge has no lazy mode."""
    if not require_backend().is_lazy():
        return Row("fit.lazy", WHAT, "n/a", detail="this bridge has no lazy mode (PT_HPU_LAZY_MODE=1 was ignored)")
    monitor = HPURecompileMonitor(warmup_steps=WARMUP_STEPS)
    run = fit(steps, lr=0.0 if fault("fit.lazy") else 3e-3, callbacks=[HPUGraphs(), monitor])
    row = loss_row("fit.lazy", WHAT, run)
    steady = sum(monitor.per_step[WARMUP_STEPS:])
    row.figure += f", {sum(monitor.per_step[:WARMUP_STEPS])} graphs then {steady}"
    row.expected = f"falls {LOSS_DROP:.0%}+; 0 graphs after step {WARMUP_STEPS}"
    row.result = verdict(row.result == "pass" and steady == 0)
    row.extra["per_step"] = monitor.per_step
    return row


def run(steps: int) -> None:
    emit(run_row("fit.lazy", WHAT, lambda: lazy_fit(steps)))
