"""The HPU graph examples run on the stand-in (in this process, with few steps) and learn or evaluate something."""

from __future__ import annotations

import runpy

import pytest

from tests.helpers.paths import EXAMPLES
from tests.helpers.standin import counters as standin_counters

EXAMPLES = EXAMPLES


@pytest.mark.parametrize(
    ("script", "argv", "metric"),
    [
        ("hpu_graphs_capture_replay.py", ["--max-epochs", "1", "--samples", "128"], "test_loss"),
        ("hpu_graphs_module_cacher.py", ["--way", "cacher", "--max-epochs", "1", "--samples", "100"], "val_loss"),
        ("hpu_graphs_module_cacher.py", ["--way", "switch", "--max-epochs", "1", "--samples", "100"], "val_loss"),
        ("hpu_graphs_inference.py", ["--batches", "3"], "test_acc"),
        ("hpu_graphs_dynamic.py", ["--max-epochs", "1", "--samples", "128"], "train_loss"),
    ],
)
def test_example_runs(lazy_standin, script: str, argv: list[str], metric: str) -> None:
    namespace = runpy.run_path(str(EXAMPLES / script))
    metrics = namespace["main"](argv)
    assert metric in metrics
    assert metrics[metric] == metrics[metric]  # not NaN
    assert standin_counters().graph_captures >= 1
    assert standin_counters().graph_replays >= 1
