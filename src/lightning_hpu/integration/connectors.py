"""The patch of the Trainer's ``_AcceleratorConnector`` and Fabric's ``_Connector`` for HPU accelerators.

Each wrapped private method gets one named wrapper below, written once for both connectors: a
:class:`ConnectorSide` says which connector (and so which registries, strategy classes and attribute names) it is.
For an HPU accelerator:

* ``accelerator="auto"`` picks HPU when a Gaudi (or the explicitly chosen stand-in) is there;
* a missing HPU fails with one sentence naming ``LIGHTNING_HPU_BACKEND``, and bad ``devices`` with one naming it;
* the strategy is an HPU strategy (``hpu_single``, or ``hpu_parallel`` for several devices or nodes), every
  Lightning strategy name maps to its HPU twin with the name's preset settings or is refused naming the HPU strategy
  to use (:mod:`lightning_hpu.integration.strategy_names`), Lightning's own and Ray Train's strategy objects become
  their HPU twins with the same arguments (:mod:`lightning_hpu.integration.strategy_objects`,
  :mod:`lightning_hpu.pytorch.ray`), and other non-HPU strategy objects are refused;
* the precision plugin is the HPU one (with DeepSpeed, the HPU DeepSpeed precision, which adds fp8), chosen by one
  function for both connectors (:func:`hpu_precision_plugin`); the HPU's own precision names (``"fp8"``, ...) are read
  before Lightning's check, which never sees them (what every name means: :mod:`lightning_hpu.precision.names`).

What Lightning refuses too is refused after Lightning's own message (:mod:`lightning_hpu.support.lightning_text`), and
``accelerator="gpu"`` on a machine with HPUs gets Lightning's error with the HPU accelerator named after it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lightning.fabric.plugins import Precision
from lightning.fabric.strategies import DeepSpeedStrategy as FabricDeepSpeedStrategy
from lightning.fabric.strategies import ModelParallelStrategy as FabricModelParallelStrategy
from lightning.fabric.strategies import Strategy as FabricStrategy
from lightning.pytorch.strategies import DeepSpeedStrategy, ModelParallelStrategy, Strategy

from lightning_hpu.device.accelerator import HPUAccelerator
from lightning_hpu.device.selection import HPUSelection, read_devices
from lightning_hpu.fabric.strategies.base import FabricHPUStrategyHooks
from lightning_hpu.integration import strategy_names, strategy_objects
from lightning_hpu.integration.connector_rules import (
    check_model_parallel_precision,
    hpu_only_precision,
    hpus_present,
    is_hpu,
    multi_device,
    refuse_misspelt_names,
    strategy_registry,
    strategy_registry_names,
    with_gpu_hint,
)
from lightning_hpu.integration.namespaces import refuse_other_namespaces
from lightning_hpu.integration.wrapping import check_methods, wrap
from lightning_hpu.pytorch.strategies.base import HPUStrategyHooks
from lightning_hpu.runtime import hpu_available, require_backend

#: The connector methods wrapped, checked to exist before anything is patched.
PATCHED_METHODS = (
    "_choose_auto_accelerator",
    "_check_device_config_and_set_final_flags",
    "_set_parallel_devices_and_init_accelerator",
    "_choose_strategy",
    "_check_strategy_and_fallback",
    "_init_strategy",
    "_check_and_init_precision",
    "_check_config_and_set_final_flags",
    "_choose_gpu_accelerator_backend",
)

_Wrapped = Callable[..., Any]


@dataclass(frozen=True)
class ConnectorSide:
    """Which connector a wrapper serves: the Trainer's or Fabric's, and the classes that means."""

    fabric: bool

    @property
    def owner(self) -> str:
        """The object the user built, as messages name it."""
        return "Fabric" if self.fabric else "Trainer"

    @property
    def hooks_cls(self) -> type:
        """The base mixin every HPU strategy of this side has."""
        return FabricHPUStrategyHooks if self.fabric else HPUStrategyHooks

    @property
    def deepspeed_cls(self) -> type:
        return FabricDeepSpeedStrategy if self.fabric else DeepSpeedStrategy

    @property
    def strategy_base(self) -> type:
        return FabricStrategy if self.fabric else Strategy

    @property
    def model_parallel_cls(self) -> type:
        return FabricModelParallelStrategy if self.fabric else ModelParallelStrategy

    @property
    def precision_plugins(self) -> tuple[type, type]:
        """This side's HPU precision plugin, and its HPU DeepSpeed precision plugin."""
        if self.fabric:
            from lightning_hpu.fabric.plugins.deepspeed_precision import HPUDeepSpeedPrecision
            from lightning_hpu.fabric.plugins.precision import HPUPrecision

            return HPUPrecision, HPUDeepSpeedPrecision
        from lightning_hpu.pytorch.plugins.deepspeed_precision import HPUDeepSpeedPrecisionPlugin
        from lightning_hpu.pytorch.plugins.precision import HPUPrecisionPlugin

        return HPUPrecisionPlugin, HPUDeepSpeedPrecisionPlugin

    def precision_flags(self, connector: Any) -> tuple[Any, str]:
        """The precision plugin given to ``connector`` (``None`` if none) and the precision name Lightning read."""
        if self.fabric:
            return connector._precision_instance, connector._precision_input
        return connector._precision_plugin_flag, connector._precision_flag


def check_connector(connector_cls: type) -> None:
    """Refuse a Lightning whose connector lacks one of :data:`PATCHED_METHODS`."""
    check_methods(connector_cls, PATCHED_METHODS)


def check_config(side: ConnectorSide, original: _Wrapped) -> _Wrapped:
    """Objects of the other Lightning and misspelt names are refused naming the argument; the HPU's own precision
    names (``"fp8"``, ...) are read here, for :func:`init_precision`, and never given to Lightning's check; the
    strategy names no registry holds (``"model_parallel"``, ``"single_hpu"``: ``strategy_names.HPU_ONLY_NAMES``)
    pass Lightning's check where an HPU is asked for."""

    def wrapper(self: Any, *, strategy: Any, accelerator: Any, precision: Any, **kwargs: Any) -> None:
        refuse_other_namespaces(side.owner, strategy=strategy, accelerator=accelerator, plugins=kwargs.get("plugins"))
        if is_hpu(accelerator) or (accelerator == "auto" and hpus_present()):  # names kept out of the registries
            strategy = strategy_names.hpu_only_name(strategy, strategy_registry(side.fabric))
        lightning_check = functools.partial(
            original, self, strategy=strategy, accelerator=accelerator, precision=precision, **kwargs
        )
        refuse_misspelt_names(strategy, accelerator, side.owner, side.fabric, lightning_check)
        hpu_only = hpu_only_precision(precision, accelerator, side.owner, kwargs.get("plugins"))
        if hpu_only is not None:  # Lightning's check reads Lightning's names; this one is the HPU plugin's alone
            setattr(self, PRECISION_ATTRIBUTE, hpu_only)
            precision = None
        original(self, strategy=strategy, accelerator=accelerator, precision=precision, **kwargs)

    return wrapper


def choose_auto_accelerator(side: ConnectorSide, original: _Wrapped) -> _Wrapped:
    """``accelerator="auto"`` means HPU when one is there."""

    def wrapper(*args: Any, **kwargs: Any) -> str:
        return "hpu" if hpu_available() else original(*args, **kwargs)

    return wrapper


def check_devices(side: ConnectorSide, original: _Wrapped) -> _Wrapped:
    """``devices`` read for HPU, once (:func:`read_hpu_devices`), refusing what never names HPUs before anything
    starts; Lightning's connector goes on with the :class:`HPUSelection` in place of the value."""

    def wrapper(self: Any, devices: Any, num_nodes: int) -> None:
        if not is_hpu(self._accelerator_flag):
            original(self, devices, num_nodes)
            return
        selection = read_hpu_devices(self, devices)
        original(self, devices, num_nodes)  # Lightning's own checks of ``devices`` and ``num_nodes``
        self._devices_flag = selection

    return wrapper


def read_hpu_devices(connector: Any, devices: Any) -> HPUSelection:
    """The one reading of ``devices`` for an HPU accelerator (:func:`read_devices`); a strategy's own device count
    stands in for ``devices="auto"``, as Lightning's ``parallel_devices`` do.

    The selection is what Lightning's connector then hands to ``HPUAccelerator.parse_devices`` (which checks it
    against the visible HPUs) and ``get_parallel_devices`` (one device per process), and what the accelerator keeps
    (:func:`init_accelerator`) for the strategies, the collectives and the binding of each process.
    """
    named = getattr(connector._strategy_flag, "_requested_devices", None)
    return read_devices(named if devices == "auto" and named is not None else devices)


def init_accelerator(side: ConnectorSide, original: _Wrapped) -> _Wrapped:
    """An HPU accelerator without an HPU fails here, with one sentence; the accelerator built keeps the selection that
    Lightning's connector checked (``HPUAccelerator.selection``): it belongs to this Trainer or Fabric."""

    def wrapper(self: Any) -> None:
        if not is_hpu(self._accelerator_flag):
            original(self)
            return
        require_backend()
        original(self)  # ``parse_devices`` checks the selection against the visible HPUs, and keeps it resolved
        if isinstance(self.accelerator, HPUAccelerator) and isinstance(self._devices_flag, HPUSelection):
            self.accelerator.selection = self._devices_flag

    return wrapper


def choose_strategy(side: ConnectorSide, original: _Wrapped) -> _Wrapped:
    """The automatic strategy on HPU: ``hpu_single``, or ``hpu_parallel`` for several devices or nodes."""

    def wrapper(self: Any) -> Any:
        if not is_hpu(self._accelerator_flag):
            return original(self)
        if multi_device(self):
            if "hpu_parallel" not in strategy_registry_names(side.fabric):
                raise ValueError(
                    "Training on several HPUs needs the 'hpu_parallel' strategy, which this lightning-hpu"
                    " build does not provide; use devices=1 and num_nodes=1."
                )
            return "hpu_parallel"
        return "hpu_single"

    return wrapper


def strategy_fallback(side: ConnectorSide, original: _Wrapped) -> _Wrapped:
    """A Lightning strategy name or object (Lightning's own, Ray's) becomes its HPU twin, or is refused."""

    def wrapper(self: Any) -> None:
        flag = self._strategy_flag
        hpu = is_hpu(self._accelerator_flag)
        if hpu and isinstance(flag, side.strategy_base) and not isinstance(flag, side.hooks_cls):
            twin_object = strategy_names.hpu_twin_of_object(flag)  # Ray's strategies: their HPU twin, same arguments
            if twin_object is None:
                twin_object = strategy_objects.hpu_twin_of(flag, side.owner)  # Lightning's own strategy classes
            if twin_object is not None:
                self._strategy_flag = twin_object
        if hpu and isinstance(flag, str):
            registry = strategy_registry(side.fabric)
            is_hpu_strategy = functools.partial(_is_subclass, base=side.hooks_cls)
            # Lightning's own check of the name (its "ddp_fork" where the platform cannot fork) speaks first.
            lightning_check = functools.partial(original, self)
            twin = strategy_names.hpu_strategy_for(flag, registry, is_hpu_strategy, side.owner, lightning_check)
            if twin is not None:
                name, settings = twin
                self._strategy_flag = strategy_names.build_strategy(registry, name, settings) if settings else name
        original(self)

    return wrapper


def _is_subclass(strategy_cls: type, base: type) -> bool:
    return issubclass(strategy_cls, base)


def gpu_backend_hint(side: ConnectorSide, original: _Wrapped) -> _Wrapped:
    """``accelerator="gpu"`` without a GPU: Lightning's error, and where the machine has HPUs, that they are
    ``accelerator="hpu"``."""

    def wrapper() -> str:
        try:
            return original()
        except Exception as error:
            if not hpus_present():
                raise
            raise with_gpu_hint(error) from None

    return wrapper


def init_strategy(side: ConnectorSide, original: _Wrapped) -> _Wrapped:
    """An HPU accelerator runs HPU strategies only, and an HPU strategy runs on an HPU accelerator only."""

    def wrapper(self: Any) -> None:
        original(self)
        strategy = self.strategy
        if is_hpu(self._accelerator_flag) and not isinstance(strategy, side.hooks_cls):
            raise strategy_names.refuse_strategy_instance(strategy, side.owner)
        if not is_hpu(self._accelerator_flag) and isinstance(strategy, side.hooks_cls):
            raise ValueError(
                f"`{side.owner}(strategy={type(strategy).__name__}(...))` needs accelerator='hpu', but the"
                f" accelerator is {self._accelerator_flag!r}."
            )
        assert isinstance(strategy, side.strategy_base)

    return wrapper


#: The connector's attribute for the HPU's own precision name, from :func:`check_config` to :func:`init_precision`.
PRECISION_ATTRIBUTE = "_hpu_precision"


def init_precision(side: ConnectorSide, original: _Wrapped) -> _Wrapped:
    """The HPU precision plugin (:func:`hpu_precision_plugin`) for an HPU accelerator."""

    def wrapper(self: Any) -> Any:
        hpu_only = vars(self).pop(PRECISION_ATTRIBUTE, None)
        if not is_hpu(self._accelerator_flag):
            return original(self)
        return hpu_precision_plugin(self, side, original, hpu_only)

    return wrapper


def hpu_precision_plugin(connector: Any, side: ConnectorSide, original: _Wrapped, hpu_only: str | None) -> Any:
    """The precision plugin of an HPU run, for the Trainer's and Fabric's connectors alike: the plugin given (checked
    by Lightning's own step, ``original``), else for the precision name (the HPU's own ``hpu_only``, or the one
    Lightning read) the strategy's own plugin (``hpu_precision``), DeepSpeed's, or the plain one."""
    given, lightning_name = side.precision_flags(connector)
    if isinstance(given, Precision):
        return original(connector)  # Lightning's checks of a plugin given; it returns that plugin
    if not side.fabric:
        connector._validate_precision_choice()  # the Trainer's checks, in Lightning's words
    name = hpu_only or lightning_name
    check_model_parallel_precision(connector.strategy, name, side.owner, side.model_parallel_cls)
    plugin_cls = getattr(connector.strategy, "hpu_precision", None)  # the sharded strategies name theirs
    if plugin_cls is None:
        plain, deepspeed = side.precision_plugins
        plugin_cls = deepspeed if isinstance(connector.strategy, side.deepspeed_cls) else plain
    return plugin_cls(name)


#: Each patched connector method and the wrapper it gets.
_WRAPPERS: tuple[tuple[str, Callable[[ConnectorSide, _Wrapped], _Wrapped]], ...] = (
    ("_check_config_and_set_final_flags", check_config),
    ("_choose_auto_accelerator", choose_auto_accelerator),
    ("_check_device_config_and_set_final_flags", check_devices),
    ("_set_parallel_devices_and_init_accelerator", init_accelerator),
    ("_choose_strategy", choose_strategy),
    ("_check_strategy_and_fallback", strategy_fallback),
    ("_init_strategy", init_strategy),
    ("_check_and_init_precision", init_precision),
    ("_choose_gpu_accelerator_backend", gpu_backend_hint),
)


def install_on(connector_cls: type, fabric: bool) -> None:
    """Wrap every method of :data:`PATCHED_METHODS` of ``connector_cls`` (the Trainer's or Fabric's connector)."""
    side = ConnectorSide(fabric)
    for name, make in _WRAPPERS:
        wrap(connector_cls, name, functools.partial(make, side))
