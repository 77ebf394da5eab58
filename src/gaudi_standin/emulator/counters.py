"""What the stand-in counts as it runs (step markers, syncs, graphs, recipes): what only the stand-in knows.

Tests and benchmarks read it from :func:`gaudi_standin.emulator.machine.current`; the emulated ``hpu.metrics``
reports it the bridge's way.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class StandInCounters:
    """What the stand-in observed, so tests can check that the package drove the device as it should."""

    mark_steps: int = 0
    synchronizes: int = 0
    #: HPU graphs: captures ended, replays run, cached graphs reused, graphs added to a cache, and cached-module
    #: calls that ran uncached (a full cache, not training, or a key outside ``use_lfu``'s kept set). The caches
    #: never evict, as on the bridge, so there is no eviction counter.
    graph_captures: int = 0
    graph_replays: int = 0
    graph_cache_hits: int = 0
    graph_cache_inserts: int = 0
    graph_cache_uncached: int = 0
    #: torch.compile(backend="hpu_backend"): AOTAutograd graphs compiled (forward and backward), of them backward.
    compiled_graphs: int = 0
    compiled_backward_graphs: int = 0
    #: torch.compile: device recipes, one per forward graph and concrete input shapes (the graph compiler is static).
    compiled_recipes: int = 0
    #: Lazy mode, while a recompilation monitor watches: graph signatures compiled, and repeated ones (cache hits).
    lazy_graph_compilations: int = 0
    lazy_graph_cache_hits: int = 0

    def reset(self) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, 0)
