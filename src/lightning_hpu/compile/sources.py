"""Where graph compilations are counted: TorchDynamo in eager mode, the device's graph compiler in lazy mode.

Both sources give a running count and the reasons for the compilations since a mark. Neither trusts Dynamo's state
to persist: ``torch._dynamo.reset()`` drops registered compile callbacks and clears the guard-failure log (and
other torch versions clear its counters), so the Dynamo source re-registers its callback at every mark and takes
the larger of two independent counts.
"""

from __future__ import annotations

from typing import Any, Protocol

from lightning_hpu.runtime import HPUBackend


class CompilationSource(Protocol):
    """A running count of graph compilations, with reasons for the latest ones where known."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def mark(self) -> None:
        """Remember the state now; :meth:`since_mark` reports what happened after it."""

    def since_mark(self) -> tuple[int, str | None]:
        """Compilations since the last :meth:`mark`, and the reason of the first of them when known."""


class DynamoCompilations:
    """Counts graphs compiled in eager mode + ``torch.compile``: TorchDynamo's, and the device's recipes per shape.

    TorchDynamo compiles a graph once per guard set; with ``dynamic=None`` it makes a changing size symbolic after
    the first change and stops recompiling. The device's graph compiler still builds a recipe for every concrete
    shape, so where the backend counts those (:meth:`HPUBackend.graph_compilation_count`), a step's count is the
    larger of the two (each first compilation shows up in both, so they are not added).
    """

    def __init__(self, backend: HPUBackend | None = None) -> None:
        self._backend = backend
        self._recipes_at_mark = 0
        self._events = 0
        self._events_at_mark = 0
        self._graphs_at_mark = 0
        self._reasons_at_mark: dict[Any, int] = {}

    def _on_compile_end(self, args: Any) -> None:
        from torch._dynamo.callback import CallbackTrigger

        # Backward graphs compiled lazily belong to a forward already counted.
        if args.callback_trigger == CallbackTrigger.DYNAMO:
            self._events += 1

    def _listen(self) -> None:
        from torch._dynamo.callback import callback_handler

        if self._on_compile_end not in callback_handler.end_callbacks:
            callback_handler.register_end_callback(self._on_compile_end)

    def start(self) -> None:
        self._listen()
        self.mark()

    def stop(self) -> None:
        from torch._dynamo.callback import callback_handler

        if self._on_compile_end in callback_handler.end_callbacks:
            callback_handler.remove_end_callback(self._on_compile_end)

    @staticmethod
    def _unique_graphs() -> int:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])

    @staticmethod
    def _guard_failures() -> dict[Any, list[str]]:
        from torch._dynamo import utils

        return dict(getattr(utils, "guard_failures", {}))

    def _recipes(self) -> int:
        count = self._backend.graph_compilation_count() if self._backend is not None else None
        return count or 0

    def mark(self) -> None:
        self._listen()
        self._recipes_at_mark = self._recipes()
        self._events_at_mark = self._events
        self._graphs_at_mark = self._unique_graphs()
        self._reasons_at_mark = {code: len(reasons) for code, reasons in self._guard_failures().items()}

    def since_mark(self) -> tuple[int, str | None]:
        events = self._events - self._events_at_mark
        graphs = self._unique_graphs() - self._graphs_at_mark
        recipes = max(0, self._recipes() - self._recipes_at_mark)
        count = max(events, graphs if graphs >= 0 else 0, recipes)
        reason = None
        if recipes > max(events, graphs):
            reason = "a new input shape for a compiled graph (the graph compiler builds one recipe per shape)"
        for code, reasons in self._guard_failures().items():
            new = reasons[self._reasons_at_mark.get(code, 0) :]
            if new:
                name = getattr(code, "co_name", "a compiled function")
                reason = f"a guard of {name}() failed: {str(new[0]).strip()}"
                break
        return count, reason


#: Why a lazy-mode graph is compiled after warm-up: the graph compiler caches by the ops and shapes between markers.
LAZY_RECOMPILATION_REASON = (
    "a new graph between step markers: a new input shape or dtype, or Python control flow that changed the ops"
)


class DeviceCompilations:
    """Counts the device's graph compilations in lazy mode (the bridge's metric, or the stand-in's cache model).

    The backend watches from :meth:`mark` to :meth:`since_mark`, i.e. inside each training step: on the stand-in,
    whose device is the CPU, that keeps host-side work between steps (data loading, the sampler's seed) out of
    the modelled graphs, as it is on a Gaudi.
    """

    def __init__(self, backend: HPUBackend) -> None:
        self._backend = backend
        self._at_mark = 0
        self._watching = False

    def _count(self) -> int:
        return self._backend.graph_compilation_count() or 0

    def _watch(self, enabled: bool) -> None:
        if enabled != self._watching:
            self._backend.watch_graph_compilations(enabled)
            self._watching = enabled

    def start(self) -> None:
        self._at_mark = self._count()

    def stop(self) -> None:
        self._watch(False)

    def mark(self) -> None:
        self._watch(True)
        self._at_mark = self._count()

    def since_mark(self) -> tuple[int, str | None]:
        count = max(0, self._count() - self._at_mark)
        self._watch(False)
        return count, LAZY_RECOMPILATION_REASON if count else None


def compilation_source(backend: HPUBackend) -> CompilationSource:
    """The source that sees this process's compilations: the device's in lazy mode, Dynamo's in eager mode."""
    return DeviceCompilations(backend) if backend.is_lazy() else DynamoCompilations(backend)
