"""The base of the strategy mixins written once for the Trainer and Fabric (``ContextParallelHooks``, ...).

Lightning's Trainer and Fabric strategies are two class trees that declare the same methods. A mixin shared by both
derives, for the type checker, from :class:`StrategyMethods`, the methods and attributes both trees declare, so its
``@override`` and ``super()`` calls are checked against them; at run time it derives from ``object`` and is mixed
in before the Lightning strategy it extends. :func:`skipping_next` lets such a mixin leave out one Lightning
implementation of a method (its CUDA assumptions) while the chain before and after it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import torch
    from lightning.fabric.plugins import ClusterEnvironment
    from torch import Tensor

    _T = TypeVar("_T")

    class StrategyMethods:
        """What Lightning's ``Strategy`` and ``ParallelStrategy`` (Trainer and Fabric alike) declare."""

        strategy_name: str
        num_nodes: int

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

        world_size: int
        global_rank: int
        local_rank: int
        parallel_devices: list[torch.device] | None
        cluster_environment: ClusterEnvironment | None
        _timeout: Any

        @property
        def root_device(self) -> torch.device: ...
        @property
        def num_processes(self) -> int: ...
        def _configure_launcher(self) -> None: ...
        def _get_process_group_backend(self) -> str: ...
        def setup_environment(self) -> None: ...
        def barrier(self, name: str | None = None) -> None: ...
        def all_gather(self, tensor: Tensor, group: Any | None = None, sync_grads: bool = False) -> Tensor: ...
        def broadcast(self, obj: _T, src: int = 0) -> _T: ...
        def teardown(self) -> None: ...
        @classmethod
        def register_strategies(cls, strategy_registry: Any) -> None: ...

else:
    StrategyMethods = object


def skipping_next(strategy: object, mixin: type, method: str) -> Any:
    """``strategy``'s ``method`` as ``super()`` in ``mixin`` would give it, minus the next class that defines it.

    For a mixin placed right before a Lightning strategy whose own ``method`` assumes CUDA (``DeepSpeedStrategy``'s
    or ``FSDPStrategy``'s ``setup_environment``): the pieces mixed in before ``mixin`` have run their part on the way
    here through ``super()``, the Lightning class's own body is left out, and the chain goes on with the classes
    after it (Ray's strategy classes, which only sit between and define no ``method``, change nothing).
    """
    classes = type(strategy).__mro__
    following = classes[classes.index(mixin) + 1 :]
    skipped = next(cls for cls in following if method in vars(cls))
    return getattr(super(skipped, strategy), method)
