"""Ray's strategy objects, rebuilt as their HPU twins with the arguments the user gave them.

The Trainer's connector calls :func:`hpu_twin_of` for a Ray strategy object given with ``accelerator="hpu"``
(:data:`lightning_hpu.integration.strategy_names.HPU_STRATEGY_OBJECT_TWINS`), so a script written from Ray's
documentation runs on HPUs with only ``accelerator="hpu"`` and ``import lightning_hpu`` added.
"""

from __future__ import annotations

from lightning.pytorch.strategies import Strategy
from ray.train.lightning import RayDDPStrategy, RayDeepSpeedStrategy, RayFSDPStrategy

from lightning_hpu.integration.strategy_arguments import init_arguments
from lightning_hpu.pytorch.ray.strategies import HPURayDDPStrategy, HPURayDeepSpeedStrategy, HPURayFSDPStrategy
from lightning_hpu.runtime import HPUConfigurationError

#: Each Ray strategy class and its HPU twin.
HPU_TWINS: dict[type[Strategy], type[Strategy]] = {
    RayDDPStrategy: HPURayDDPStrategy,
    RayFSDPStrategy: HPURayFSDPStrategy,
    RayDeepSpeedStrategy: HPURayDeepSpeedStrategy,
}


def hpu_twin_of(strategy: Strategy) -> Strategy:
    """The HPU twin of Ray's ``strategy``, built with the same arguments (itself when it already is a twin).

    A subclass of a Ray strategy is refused, naming the twin to subclass: its overrides would be lost.
    """
    if isinstance(strategy, tuple(HPU_TWINS.values())):
        return strategy
    given = type(strategy)
    twin = HPU_TWINS.get(given)
    if twin is None:
        ray_base = next((base for base in given.__mro__ if base in HPU_TWINS), None)
        use = HPU_TWINS[ray_base].__name__ if ray_base is not None else "HPURayDDPStrategy"
        raise HPUConfigurationError(
            f"`Trainer(strategy={given.__name__}(...))` cannot drive an HPU (it is not one of Ray's strategies that"
            f" lightning-hpu rebuilds for HPUs); derive it from lightning_hpu.pytorch.ray.{use} instead."
        )
    arguments = init_arguments(strategy)
    if arguments is None:
        raise HPUConfigurationError(
            f"`{given.__name__}(...)` was built before `import lightning_hpu`, so its arguments are unknown: import"
            f" lightning_hpu first, or pass lightning_hpu.pytorch.ray.{twin.__name__}(...)."
        )
    args, kwargs = arguments
    return twin(*args, **kwargs)
