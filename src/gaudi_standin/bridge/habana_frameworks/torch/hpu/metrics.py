"""``habana_frameworks.torch.hpu.metrics`` on the stand-in: the bridge's metric API over the stand-in's counters.

``metric_global(name)`` and ``metric_localcontext(name)`` return metrics with the bridge's names and stats tags, so
a script that asserts "no recompilation after warm-up" works here:

- ``graph_compilation``: ``TotalNumber`` counts the stand-in's graph compilations (lazy mode: graphs between step
  markers not seen before, by the model of the graph compiler's cache; eager mode: ``torch.compile`` recipes).
  ``TotalTime`` and ``AvgTime`` are 0: the stand-in runs the graph's ops and compiles nothing.
- ``cpu_fallback`` and ``memory_defragmentation``: always 0 (every op runs, on the CPU, and nothing is defragmented).
- ``recipe_cache`` (only with ``PT_HPU_ENABLE_CACHE_METRICS=1``, as on the bridge): ``TotalHit``/``TotalMiss`` from the
  lazy-mode graph cache model.

The global metrics count from the moment this module is first imported (in lazy mode the stand-in records ops to
model the graph cache only while someone watches, as it costs a Python call per op).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from enum import Enum
from typing import Any

from gaudi_standin.emulator import machine
from gaudi_standin.emulator.machine import StandInRuntime

__all__ = [
    "InvalidMetricDumpFileFormat",
    "Metric",
    "MetricDumpFormat",
    "MetricNotFound",
    "metric_global",
    "metric_localcontext",
    "metrics_dump",
]

CACHE_METRICS_ENV = "PT_HPU_ENABLE_CACHE_METRICS"


class MetricNotFound(Exception):
    """No metric of that name is registered."""


class InvalidMetricDumpFileFormat(Exception):
    """``metrics_dump`` was asked for a format other than json or text."""


class MetricDumpFormat(str, Enum):
    json = "json"
    text = "text"


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("y", "yes", "t", "true", "on", "1")


class Metric:
    """A counter over the emulated runtime, counting between ``start()`` and ``stop()`` (it starts when made)."""

    _name = ""

    def __init__(self) -> None:
        self._backend: StandInRuntime | None = None
        self._base: dict[str, int] = {}
        self._kept: dict[str, int] = {}
        self.start()

    def name(self) -> str:
        return self._name

    def _read(self, backend: StandInRuntime) -> dict[str, int]:
        """The backend's running totals this metric reports (differences of them)."""
        return {}

    def _watch(self, backend: StandInRuntime, enabled: bool) -> None:
        """Ask the backend to observe what this metric counts (only graph compilation needs it)."""

    def _follow_backend(self) -> None:
        """If the runtime was reset since (tests do), keep the counts so far and count on the new one."""
        if self._backend is not None and self._backend is not machine.current():
            self.stop()
            self.start()

    def _counts(self) -> dict[str, int]:
        self._follow_backend()
        counts = dict(self._kept)
        backend = self._backend
        if backend is not None:
            now = self._read(backend)
            for key, value in now.items():
                counts[key] = counts.get(key, 0) + value - self._base.get(key, 0)
        return counts

    def start(self) -> None:
        """Count from now on (on top of what was counted before a ``stop()``)."""
        if self._backend is not None:
            return
        backend = machine.current()
        if backend is None:
            return
        self._watch(backend, True)
        self._backend, self._base = backend, self._read(backend)

    def stop(self) -> None:
        """Stop counting; the counts so far are kept."""
        backend = self._backend
        if backend is None:
            return
        for key, value in self._read(backend).items():
            self._kept[key] = self._kept.get(key, 0) + value - self._base.get(key, 0)
        self._watch(backend, False)
        self._backend = None

    def reset(self) -> None:
        """Start the counts again from 0."""
        self._follow_backend()
        self._kept = {}
        if self._backend is not None:
            self._base = self._read(self._backend)

    def stats(self) -> list[tuple[str, Any]]:
        """``[(tag, value), ...]`` in the bridge's tags."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.stats()})"


class GraphCompilationMetric(Metric):
    """``graph_compilation``: how many graphs the stand-in compiled (its time tags are 0, see the module docstring)."""

    _name = "graph_compilation"

    def _read(self, backend: StandInRuntime) -> dict[str, int]:
        return {"compilations": backend.graph_compilation_count() or 0}

    def _watch(self, backend: StandInRuntime, enabled: bool) -> None:
        backend.watch_graph_compilations(enabled)

    def stats(self) -> list[tuple[str, Any]]:
        return [("TotalNumber", self._counts().get("compilations", 0)), ("TotalTime", 0), ("AvgTime", 0)]


class CpuFallbackMetric(Metric):
    """``cpu_fallback``: always 0 on the stand-in, where every op runs."""

    _name = "cpu_fallback"

    def stats(self) -> list[tuple[str, Any]]:
        return [("TotalNumber", 0), ("FallbackOps", {})]


class MemoryDefragmentationMetric(Metric):
    """``memory_defragmentation``: always 0 on the stand-in, whose memory is the host's."""

    _name = "memory_defragmentation"

    def stats(self) -> list[tuple[str, Any]]:
        return [("TotalNumber", 0), ("TotalSuccessful", 0), ("AvgTime", 0), ("MaxTime", 0)]


class RecipeCacheMetric(GraphCompilationMetric):
    """``recipe_cache``: hits and misses of the lazy-mode graph cache model (per-recipe dicts stay empty)."""

    _name = "recipe_cache"

    def _read(self, backend: StandInRuntime) -> dict[str, int]:
        counters = backend.counters
        return {"hits": counters.lazy_graph_cache_hits, "misses": counters.lazy_graph_compilations}

    def stats(self) -> list[tuple[str, Any]]:
        counts = self._counts()
        return [
            ("TotalHit", counts.get("hits", 0)),
            ("RecipeHit", {}),
            ("TotalMiss", counts.get("misses", 0)),
            ("RecipeMiss", {}),
        ]


def _registered() -> dict[str, type[Metric]]:
    metrics: dict[str, type[Metric]] = {
        cls._name: cls for cls in (GraphCompilationMetric, CpuFallbackMetric, MemoryDefragmentationMetric)
    }
    if _flag(CACHE_METRICS_ENV):
        metrics[RecipeCacheMetric._name] = RecipeCacheMetric
    return metrics


_global_metrics: dict[str, Metric] = {name: cls() for name, cls in _registered().items()}


def metric_global(name: str) -> Metric | None:
    """The process-wide metric called ``name`` (counting since this module was imported), or ``None``."""
    return _global_metrics.get(name)


@contextmanager
def metric_localcontext(name: str) -> Iterator[Metric]:
    """A fresh metric that counts inside the ``with`` block; ``MetricNotFound`` for an unknown name."""
    cls = _registered().get(name)
    if cls is None:
        raise MetricNotFound(f"Metric with given name ({name}) doesn't exist.")
    metric = cls()
    try:
        yield metric
    finally:
        metric.stop()


def metrics_dump(file_name: str, format: MetricDumpFormat | str = MetricDumpFormat.json) -> None:
    """Write the global metrics to ``file_name``: a JSON array of the bridge's records, or the bridge's text form."""
    try:
        kind = MetricDumpFormat(format)
    except ValueError:
        raise InvalidMetricDumpFileFormat(f"`format={format!r}` must be 'json' or 'text'.") from None
    stamp = datetime.now().isoformat()
    stats = {name: metric.stats() for name, metric in _global_metrics.items()}
    with open(file_name, "w") as out:
        if kind is MetricDumpFormat.json:
            records = [
                {"metric_name": name, "triggered_by": "user", "generated_on": stamp, "statistics": dict(pairs)}
                for name, pairs in stats.items()
            ]
            json.dump(records, out)
            return
        for name, pairs in stats.items():
            out.write(f"Metric name: {name}\nTriggered by: user\nGenerated on: {stamp}\nStatistics:\n")
            out.writelines(f"\t{tag}: {value}\n" for tag, value in pairs)
            out.write("\n")
