"""Every parallel strategy of both trees, three runs each in one process on two stand-in HPUs: what a run starts
(the rank watchdog's thread, ``sys.excepthook``, signal handlers) it stops.

``python run_end_scenario.py OUT_DIR [SIDE or SIDE-STRATEGY ...]`` (every case by default; with
``LIGHTNING_HPU_CPU_DEVICES=2``): the first Trainer or Fabric starts rank 1 with Lightning's launcher, which re-runs
this command line; both ranks then run the same Trainers and Fabrics in the same order, on the process group of the
first. After each run (a Trainer's ``fit``; a Fabric's launch, set-up and one step, then the Fabric dropped, as a
program drops it) each rank writes what was left against what was there before the first, to ``OUT_DIR/rank<N>.json``.
"""

from __future__ import annotations

import gc
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import torch
from lightning.fabric import Fabric

import lightning_hpu.fabric.strategies as fabric_strategies
import lightning_hpu.pytorch.strategies as trainer_strategies
from tests.helpers.data_parallel import FEATURES, make_net
from tests.helpers.models import RegressionModel
from tests.helpers.trainer import quiet_trainer

RUNS = 3
NAMES = ("HPUParallelStrategy", "HPUDeepSpeedStrategy", "HPUFSDPStrategy", "HPUModelParallelStrategy")
WATCHDOG_THREAD = "lightning-hpu-rank-watchdog"


class ShardedRegressionModel(RegressionModel):
    """The regression model with a ``configure_model``, which Lightning's model-parallel strategy asks for."""

    def configure_model(self) -> None:
        pass


def snapshot() -> dict[str, Any]:
    """What a run may leave behind: the live threads, the exception hook, the handler of every signal."""
    handlers = {}
    for number in signal.valid_signals():
        try:
            handlers[signal.Signals(number).name] = signal.getsignal(number)
        except (ValueError, OSError):
            continue
    threads = sorted(thread.name for thread in threading.enumerate())
    return {"threads": threads, "excepthook": sys.excepthook, **handlers}


#: What the job itself keeps from its first run on, not the package: the thread of Lightning's launcher that watches
#: the ranks it started (on the launching rank), and torch's exception hook, set when the process group is made.
JOB_THREADS = {"child-process-observer"}
JOB_EXCEPTHOOK = "init_process_group.<locals>._distributed_excepthook"


def left_behind(before: dict[str, Any]) -> list[str]:
    """What differs from ``before`` apart from the job's own (:data:`JOB_THREADS`, :data:`JOB_EXCEPTHOOK`), one line
    each (threads: the ones that were not there)."""
    now = snapshot()
    lines = [f"thread {name}" for name in sorted(set(now["threads"]) - set(before["threads"]) - JOB_THREADS)]
    if getattr(now["excepthook"], "__qualname__", None) == JOB_EXCEPTHOOK:
        now["excepthook"] = before["excepthook"]
    changed = [key for key, value in now.items() if key != "threads" and value != before.get(key)]
    return lines + [f"{key}: {before.get(key)!r} -> {now[key]!r}" for key in changed]
    return lines


def trainer_run(name: str, root: Path) -> dict[str, Any]:
    strategy = getattr(trainer_strategies, name)()
    model = ShardedRegressionModel() if name == "HPUModelParallelStrategy" else RegressionModel()
    seen: dict[str, Any] = {}

    def on_train_batch_start(*args: Any) -> None:
        seen["watchdog"] = getattr(strategy, "_watchdog", None) is not None
        seen["thread"] = any(thread.name == WATCHDOG_THREAD for thread in threading.enumerate())

    model.on_train_batch_start = on_train_batch_start  # type: ignore[method-assign,assignment]
    trainer = quiet_trainer(
        root,
        accelerator="hpu",
        devices=2,
        strategy=strategy,
        max_steps=2,
        limit_val_batches=0,
        enable_checkpointing=False,
    )
    trainer.fit(model)
    return seen


def fabric_run(name: str) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    if name == "HPUModelParallelStrategy":
        arguments["parallelize_fn"] = lambda module, mesh: module.to(mesh.device_type)  # replicated, on the HPU
    fabric = Fabric(accelerator="hpu", devices=2, strategy=getattr(fabric_strategies, name)(**arguments))
    fabric.launch()
    net = make_net(seed=0)  # the same weights on both ranks (DeepSpeed does not broadcast them)
    if name == "HPUDeepSpeedStrategy":
        model, optimizer = fabric.setup(net, torch.optim.SGD(net.parameters(), lr=0.1))
    else:
        model = fabric.setup_module(net)
        optimizer = fabric.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.1))
    batch = fabric.to_device(torch.ones(4, FEATURES))
    fabric.backward(model(batch).pow(2).mean())
    optimizer.step()
    seen = {
        "watchdog": getattr(fabric.strategy, "_watchdog", None) is not None,
        "thread": any(thread.name == WATCHDOG_THREAD for thread in threading.enumerate()),
        "excepthook": type(sys.excepthook).__name__,
    }
    del fabric, model, optimizer, net  # the program is done with this Fabric
    return seen


def main(out: Path, only: list[str]) -> None:
    before = snapshot()
    report: dict[str, Any] = {}
    for side in ("Trainer", "Fabric"):
        for name in NAMES:
            if only and side not in only and f"{side}-{name}" not in only:
                continue
            runs = []
            for _ in range(RUNS):
                seen = trainer_run(name, out / "trainer") if side == "Trainer" else fabric_run(name)
                gc.collect()
                runs.append({**seen, "left": left_behind(before)})
            report[f"{side}-{name}"] = runs
    rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rank{rank}.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
