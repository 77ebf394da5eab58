"""The emulated bridge's ``hpu.metrics``, dynamic-shape and autocast switches, over the stand-in's counters.

The emulation modules are imported directly (not through ``habana_frameworks``, which would switch this test
process to the emulated ``"hpu"`` device); ``gaudi_script_lazy_scenario.py`` imports them by the bridge's names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.bridge.habana_frameworks.torch.hpu import metrics
from gaudi_standin.emulator import dynamic_shapes
from tests.helpers.standin import counters as standin_counters


@pytest.fixture(autouse=True)
def _dynamic_shapes_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dynamic_shapes, "_override", None)
    monkeypatch.delenv(dynamic_shapes.REFINE_DYNAMIC_SHAPES_ENV, raising=False)


def _run(model: nn.Module, backend: Any, rows: list[int]) -> None:
    """One lazy-mode graph per batch size: a forward on the HPU, then a step marker."""
    device = backend.torch_device()
    for n in rows:
        model(torch.ones(n, 3, device=device))
        backend.mark_step()


def _linear(backend: Any) -> nn.Module:
    """A layer moved to the HPU, the move marked as a graph of its own (outside what a test counts)."""
    with metrics.metric_localcontext("graph_compilation"):
        layer = nn.Linear(3, 2).to(backend.torch_device())
        backend.mark_step()
    return layer


def _compilations(metric: metrics.Metric) -> int:
    stats = dict(metric.stats())
    assert stats["TotalTime"] == 0 and stats["AvgTime"] == 0  # the stand-in compiles nothing, in no time
    return int(stats["TotalNumber"])


def test_graph_compilation_counts_new_graphs_not_repeated_ones(lazy_standin: Any) -> None:
    model = _linear(lazy_standin)
    with metrics.metric_localcontext("graph_compilation") as outer:
        _run(model, lazy_standin, [4])  # warm-up: one graph compiled
        with metrics.metric_localcontext("graph_compilation") as local:
            _run(model, lazy_standin, [4, 4, 4])
            assert _compilations(local) == 0  # "no recompilation after warm-up"
            _run(model, lazy_standin, [5, 6, 5])
            assert _compilations(local) == 2
        _run(model, lazy_standin, [7])
    assert _compilations(local) == 2  # stopped when its block ended
    assert _compilations(outer) == 4
    assert local.name() == "graph_compilation"


def test_the_global_metric_counts_across_backends_and_resets(lazy_standin: Any) -> None:
    metric = metrics.metric_global("graph_compilation")
    assert metric is not None
    model = _linear(lazy_standin)
    metric.reset()
    _run(model, lazy_standin, [2, 3])
    assert _compilations(metric) == 2
    metric.reset()
    assert _compilations(metric) == 0


def test_dynamic_shapes_let_new_sizes_reuse_a_graph(lazy_standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _linear(lazy_standin)
    assert not hpu.get_dynamic_shape_status()
    hpu.enable_dynamic_shape()
    with metrics.metric_localcontext("graph_compilation") as dynamic:
        _run(model, lazy_standin, [5, 6, 7])  # one graph, whatever its batch size
    hpu.disable_dynamic_shape()
    with metrics.metric_localcontext("graph_compilation") as static:
        _run(model, lazy_standin, [8, 9])
    assert _compilations(dynamic) == 1 and _compilations(static) == 2
    # The environment variable is what the switch falls back to.
    dynamic_shapes.set_enabled(None)
    monkeypatch.setenv(dynamic_shapes.REFINE_DYNAMIC_SHAPES_ENV, "1")
    assert hpu.get_dynamic_shape_status()


def test_unknown_metrics_and_the_other_registered_ones(lazy_standin: Any, tmp_path: Path) -> None:
    with pytest.raises(metrics.MetricNotFound, match="no_such"), metrics.metric_localcontext("no_such"):
        pass
    assert metrics.metric_global("no_such") is None
    fallback = metrics.metric_global("cpu_fallback")
    assert fallback is not None and fallback.stats() == [("TotalNumber", 0), ("FallbackOps", {})]

    metrics.metrics_dump(str(tmp_path / "m.json"))
    records = json.loads((tmp_path / "m.json").read_text())
    by_name = {record["metric_name"]: record for record in records}
    assert set(by_name) == {"graph_compilation", "cpu_fallback", "memory_defragmentation"}
    assert set(by_name["graph_compilation"]["statistics"]) == {"TotalNumber", "TotalTime", "AvgTime"}
    metrics.metrics_dump(str(tmp_path / "m.txt"), format="text")
    assert "Metric name: graph_compilation" in (tmp_path / "m.txt").read_text()
    with pytest.raises(metrics.InvalidMetricDumpFileFormat, match="format"):
        metrics.metrics_dump(str(tmp_path / "m.csv"), format="csv")


def test_the_recipe_cache_metric_needs_its_variable(lazy_standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(metrics.CACHE_METRICS_ENV, "1")
    model = _linear(lazy_standin)
    with metrics.metric_localcontext("recipe_cache") as cache:
        _run(model, lazy_standin, [2, 2, 3])
    stats = dict(cache.stats())
    assert stats["TotalMiss"] == 2 and stats["TotalHit"] == 1
    monkeypatch.delenv(metrics.CACHE_METRICS_ENV)
    with pytest.raises(metrics.MetricNotFound), metrics.metric_localcontext("recipe_cache"):
        pass


def test_autocast_state_is_the_devices_autocast(standin: Any) -> None:
    """The package's precision plugins enter the stand-in's autocast device type: that is HPU autocast here."""
    from lightning_hpu import HPUPrecision

    assert not hpu.is_autocast_hpu_enabled()
    with HPUPrecision("bf16-mixed").forward_context():
        assert hpu.is_autocast_hpu_enabled() and hpu.get_autocast_hpu_dtype() == torch.bfloat16
        with torch.autocast(standin.autocast_device_type, enabled=False):
            assert not hpu.is_autocast_hpu_enabled()
    assert not hpu.is_autocast_hpu_enabled()


def test_dynamic_shapes_also_key_torch_compile_recipes(standin: Any) -> None:
    from gaudi_standin.compiler.hpu_backend import _counting_recipes

    def run(args: list[Any]) -> None:
        return None

    counting = _counting_recipes(run, standin_counters(), "graph")
    for rows in (2, 3, 2):
        counting([torch.ones(rows, 4)])
    assert standin_counters().compiled_recipes == 2  # static shapes: one recipe per size
    hpu.enable_dynamic_shape()
    counting = _counting_recipes(run, standin_counters(), "graph")
    for rows in (5, 6, 7):
        counting([torch.ones(rows, 4)])
    assert standin_counters().compiled_recipes == 3  # one recipe for every size
