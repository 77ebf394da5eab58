"""The bridge's tools for finding dynamic shapes (``utils.experimental``), over the stand-in's compilation counts.

- ``data_dynamicity(dataloader)``: a histogram of the batches' shapes, printed with a verdict (no, a little, some, a
  lot of dynamicity), returned as ``{shape: count}``;
- ``const_shape_dataloader(dataloader, maxlen)``: a loader of up to ``maxlen`` batches of a single shape (the first
  shape to reach ``maxlen``, else the most frequent one), to warm up or measure without recompilations;
- ``detect_recompilation_auto_model(model, mdlname="Net", waittime=1, csv_out="out")``: wraps the forward of the
  model and of each submodule; each call is fenced by step markers and counts the graph compilations it caused
  (``metrics.metric_localcontext("graph_compilation")``), noting whether its input or output signature is new. The
  model gains ``raw_logs()`` and ``analyse_dynamicity()``, which prints and writes ``<csv_out>_1.csv`` (per step:
  the modules that recompiled and the likely cause) and ``<csv_out>_2.csv`` (``Module name``, ``Recompile count``).
  The bridge sleeps ``waittime`` seconds around each call until its compile counts settle; the stand-in's counts
  are exact when the step marker returns, so ``waittime`` is accepted and not waited.

Compilations are what the stand-in counts (``hpu.metrics``): in lazy mode, each graph between step markers that its
graph-cache model has not seen; in eager mode only ``torch.compile`` recipes, so a plain eager model shows none.
"""

from __future__ import annotations

import csv
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import MethodType
from typing import Any, cast

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from gaudi_standin.bridge.habana_frameworks.torch import core, hpu
from gaudi_standin.bridge.habana_frameworks.torch.hpu import metrics

__all__ = ["const_shape_dataloader", "data_dynamicity", "detect_recompilation_auto_model"]


def batch_shape(batch: Any) -> Any:
    """A batch's shape signature: tensor shapes, nested as the batch is; other values by their hash."""
    if isinstance(batch, torch.Tensor):
        return tuple(batch.shape)
    if isinstance(batch, (list, tuple)):
        return tuple(batch_shape(item) for item in batch)
    if isinstance(batch, dict):
        return tuple((batch_shape(key), batch_shape(value)) for key, value in batch.items())
    return hash(batch)


def _verdict(unique_shapes: int) -> str:
    if unique_shapes == 0:
        return "Dataset looks empty"
    amount = (
        "no"
        if unique_shapes == 1
        else "a little"
        if unique_shapes <= 5
        else "some"
        if unique_shapes <= 20
        else "a lot of"
    )
    return f"There is {amount} dynamicity in input data shapes"


def _assert_single_process(tool: str) -> None:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        raise RuntimeError(f"{tool} measures one process; run it without a process group (one device).")


def data_dynamicity(dataloader: Iterable[Any]) -> dict[Any, int]:
    """Count the batches of each shape in ``dataloader`` and print the histogram with a verdict."""
    _assert_single_process("data_dynamicity")
    histogram: dict[Any, int] = {}
    for batch in dataloader:
        key = batch_shape(batch)
        histogram[key] = histogram.get(key, 0) + 1
    rows = sorted(histogram.items(), key=lambda item: -item[1])
    print(_table(["Shape", "Count"], [[shape, count] for shape, count in rows]))
    print("Number of unique shapes: ", len(histogram))
    print(_verdict(len(histogram)))
    return histogram


def const_shape_dataloader(dataloader: Iterable[Any], maxlen: int) -> DataLoader:
    """A loader of at most ``maxlen`` of ``dataloader``'s batches, all of one shape."""
    by_shape: dict[Any, list[Any]] = {}
    for batch in dataloader:
        batches = by_shape.setdefault(batch_shape(batch), [])
        batches.append(batch)
        if len(batches) == maxlen:
            return _loader(batches)
    if not by_shape:
        raise ValueError("const_shape_dataloader() got an empty dataloader; pass one that yields batches.")
    return _loader(max(by_shape.values(), key=len))


def _loader(batches: list[Any]) -> DataLoader:
    """A loader yielding ``batches`` as they are (a list is a map-style dataset)."""
    return DataLoader(cast(Dataset, batches), batch_size=None)


@dataclass
class _Call:
    """One wrapped forward call: where and when, what was new, how many graphs it compiled."""

    module: str
    step: int
    new_input: bool
    new_output: bool
    graphs: int


@dataclass
class _Recorder:
    """The calls of a wrapped model, the registered modules and the model's step count."""

    top: str
    csv_out: str
    modules: dict[str, nn.Module] = field(default_factory=dict)
    calls: list[_Call] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    step: int = -1


def _wrap_forward(module: nn.Module, name: str, recorder: _Recorder) -> Callable[..., Any]:
    forward = module.forward
    seen_inputs: set[int] = set()
    seen_outputs: set[int] = set()

    def counted_forward(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        _assert_single_process("detect_recompilation_auto_model")
        if name == recorder.top:
            recorder.step += 1
        input_hash = hpu.input_hash((args, kwargs))
        core.mark_step()
        with metrics.metric_localcontext("graph_compilation") as local:
            output = forward(*args, **kwargs)
            core.mark_step()
        graphs = int(dict(local.stats())["TotalNumber"])
        output_hash = hpu.input_hash(output)
        call = _Call(name, recorder.step, input_hash not in seen_inputs, output_hash not in seen_outputs, graphs)
        seen_inputs.add(input_hash)
        seen_outputs.add(output_hash)
        recorder.calls.append(call)
        new = ("Found new input signature " if call.new_input else "") + (
            "Found new output signature " if call.new_output else ""
        )
        recompiled = " Recompilation!" if graphs else ""
        recorder.logs.append(f"[DETECT_RECOMPILE_AUTO][{name}]step:{call.step} {new}num_graphs:{graphs}{recompiled}")
        return output

    return counted_forward


def _comment(call: _Call, child_recompiled: bool) -> str:
    if call.new_input:
        return "Recompiled due to new input shape"
    comment = "Already processed input shape still recompiled"
    comment += " and has new output shape. Maybe dyn ops" if call.new_output else ". Maybe dyn ops"
    return comment + (". Could be due to dynamic child" if child_recompiled else "")


def _analyse(recorder: _Recorder) -> None:
    """Print and write the per-step and per-module tables of the recorded recompilations."""
    recompiled = [call for call in recorder.calls if call.graphs]
    steps_rows = []
    for call in recompiled:
        child_recompiled = any(
            other.step == call.step and other.module.startswith(call.module + "/") and not other.new_input
            for other in recompiled
        )
        module = recorder.modules[call.module]
        location = inspect.getsourcefile(type(module)) or type(module).__module__
        steps_rows.append(
            [
                call.step,
                call.module,
                call.new_input,
                call.new_output,
                type(module).__name__,
                location,
                _comment(call, child_recompiled),
            ]
        )
    counts: dict[str, int] = {}
    for call in recompiled:
        counts[call.module] = counts.get(call.module, 0) + 1
    tables = {
        "_1.csv": (["Step", "Recompiling modules", "New in", "New out", "Class", "Location", "Comment"], steps_rows),
        "_2.csv": (
            ["Module name", "Recompile count"],
            [[m, n] for m, n in sorted(counts.items(), key=lambda i: -i[1])],
        ),
    }
    for suffix, (header, rows) in tables.items():
        print(_table(header, rows))
        with open(recorder.csv_out + suffix, "w", newline="", encoding="utf-8") as file:
            csv.writer(file).writerows([header, *rows])


def _table(header: list[str], rows: list[list[Any]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        " | ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)) for row in [header, *rows]
    ]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def detect_recompilation_auto_model(
    model: nn.Module, mdlname: str = "Net", waittime: float = 1, csv_out: str = "out"
) -> nn.Module:
    """``model`` with every forward counting the graph compilations it causes; adds ``analyse_dynamicity()``."""
    for attribute in ("raw_logs", "analyse_dynamicity"):
        if hasattr(model, attribute):
            raise ValueError(f"detect_recompilation_auto_model(): the model already has {attribute!r}; pass it once.")
    recorder = _Recorder(top=mdlname, csv_out=str(csv_out))
    wrapped: set[int] = set()

    def wrap(module: nn.Module, name: str) -> None:
        if id(module) in wrapped:  # a submodule shared by several parents is counted once, under its first name
            return
        wrapped.add(id(module))
        recorder.modules[name] = module
        recorder.logs.append(f"[DETECT_RECOMPILE_AUTO] Registering hooks for {name} of type {type(module)}")
        module.forward = MethodType(_wrap_forward(module, name, recorder), module)
        for child_name, child in module.named_children():
            wrap(child, f"{name}/{child_name}")

    wrap(model, mdlname)
    model.raw_logs = MethodType(lambda self: recorder.logs, model)  # type: ignore[assignment]
    model.analyse_dynamicity = MethodType(lambda self: _analyse(recorder), model)  # type: ignore[assignment]
    return model
