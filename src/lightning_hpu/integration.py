"""Teaching Lightning 2.6's connectors about HPU: the one place that touches Lightning internals.

Lightning 2.6 removed HPU support: its Trainer connector rejects ``accelerator="hpu"`` with the automatic strategy
and would pick CUDA mixed precision. :func:`install` wraps a few private methods of the Trainer's
``_AcceleratorConnector`` and Fabric's ``_Connector`` so that, for an HPU accelerator,

* ``accelerator="auto"`` picks HPU when a Gaudi (or the explicitly chosen stand-in) is there;
* a missing HPU fails with one sentence naming ``LIGHTNING_HPU_BACKEND``, and bad ``devices`` with one naming it;
* the strategy is an HPU strategy (``hpu_single``, or ``hpu_parallel`` for several devices or nodes), every
  Lightning strategy name maps to its HPU twin with the name's preset settings or is refused naming the HPU
  strategy to use (the tables are in :mod:`lightning_hpu.names`), Ray Train's strategy objects become their HPU
  twins (:mod:`lightning_hpu.ray`) with the arguments they were built with, and other non-HPU strategy objects
  are refused;
* the precision plugin is the HPU one (with DeepSpeed, the HPU DeepSpeed precision, which adds fp8);
* ``Trainer(profiler="hpu")`` builds an :class:`~lightning_hpu.HPUProfiler` (Lightning's profiler names still work);
* under the HPU parallel strategies (:class:`~lightning_hpu.strategies.sigterm.SigtermAgreement`), SIGTERM is
  agreed on over a host-side group instead of Lightning's per-batch device broadcast and ``.item()``, and the
  signal handler runs no collective.

The wrapped methods are checked to exist before anything is patched, so a Lightning release that moves them
fails at import with a message instead of misbehaving.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from typing import Any, get_args

import lightning
from lightning.fabric.accelerators import ACCELERATOR_REGISTRY as FABRIC_ACCELERATOR_REGISTRY
from lightning.fabric.connector import _PRECISION_INPUT_STR, _Connector
from lightning.fabric.strategies import STRATEGY_REGISTRY as FABRIC_STRATEGY_REGISTRY
from lightning.fabric.strategies import DeepSpeedStrategy as FabricDeepSpeedStrategy
from lightning.fabric.strategies import Strategy as FabricStrategy
from lightning.pytorch.accelerators import AcceleratorRegistry
from lightning.pytorch.loops.training_epoch_loop import _TrainingEpochLoop
from lightning.pytorch.profilers import Profiler
from lightning.pytorch.strategies import DeepSpeedStrategy, Strategy, StrategyRegistry
from lightning.pytorch.trainer import setup as trainer_setup
from lightning.pytorch.trainer.connectors.accelerator_connector import _AcceleratorConnector
from lightning.pytorch.trainer.connectors.callback_connector import _CallbackConnector
from lightning.pytorch.trainer.connectors.logger_connector.logger_connector import _LoggerConnector
from lightning.pytorch.trainer.connectors.signal_connector import _SignalConnector
from lightning.pytorch.trainer.states import TrainerFn
from lightning.pytorch.utilities.exceptions import SIGTERMException
from lightning_utilities.core import rank_zero as rank_zero_module
from typing_extensions import override

from lightning_hpu import names, strategy_arguments
from lightning_hpu.devices import check_devices_syntax
from lightning_hpu.fabric.accelerator import HPUAccelerator as FabricHPUAccelerator
from lightning_hpu.fabric.precision import PRECISION_ALIASES, HPUPrecisionInput
from lightning_hpu.runtime import HPUConfigurationError, hpu_available, require_backend
from lightning_hpu.strategies.lazy_mode import FabricHPUStrategyHooks, HPUStrategyHooks
from lightning_hpu.strategies.sigterm import SIGTERM_EXIT_CODE, SigtermAgreement
from lightning_hpu.suggestions import closest_name, hpu_names

#: Lightning releases whose connector internals this module was written and tested against.
TESTED_LIGHTNING = ("2.6",)

_PATCHED_METHODS = (
    "_choose_auto_accelerator",
    "_check_device_config_and_set_final_flags",
    "_set_parallel_devices_and_init_accelerator",
    "_choose_strategy",
    "_check_strategy_and_fallback",
    "_init_strategy",
    "_check_and_init_precision",
    "_check_config_and_set_final_flags",
)

#: Lightning's SIGTERM agreement: the loop's per-batch broadcast and the signal handler (class, method).
_SIGTERM_METHODS = (
    (_TrainingEpochLoop, "_broadcast_sigterm_tensor"),
    (_SignalConnector, "_sigterm_notifier_fn"),
)

_MARKER = "__lightning_hpu_wrapped__"

#: Precision names of the HPU plugins that Lightning's own precision check does not know (``"fp8"``, ...).
HPU_ONLY_PRECISIONS = tuple(name for name in get_args(HPUPrecisionInput) if name not in get_args(_PRECISION_INPUT_STR))


class LightningIntegrationError(RuntimeError):
    """Lightning's internals are not what this version of lightning-hpu expects."""


def is_hpu(accelerator_flag: Any) -> bool:
    """Whether a connector's accelerator flag means HPU (the name or an accelerator instance)."""
    return accelerator_flag == "hpu" or isinstance(accelerator_flag, FabricHPUAccelerator)


def _check_methods(owner: type, names: tuple[str, ...]) -> None:
    missing = [name for name in names if not callable(getattr(owner, name, None))]
    if missing:
        raise LightningIntegrationError(
            f"lightning-hpu cannot integrate with Lightning {lightning.__version__}: {owner.__name__} lacks"
            f" {', '.join(missing)} (tested with Lightning {', '.join(TESTED_LIGHTNING)}); install a tested"
            " Lightning release or a newer lightning-hpu."
        )


def _check_connector(connector_cls: type) -> None:
    _check_methods(connector_cls, _PATCHED_METHODS)


def _wrap(connector_cls: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    original = getattr(connector_cls, name)
    is_static = isinstance(connector_cls.__dict__.get(name), staticmethod)
    wrapper = functools.wraps(original)(make(original))
    setattr(wrapper, _MARKER, original)
    setattr(connector_cls, name, staticmethod(wrapper) if is_static else wrapper)


def _multi_device(connector: Any) -> bool:
    return connector._num_nodes_flag > 1 or len(connector._parallel_devices) > 1


def _strategy_registry(fabric: bool) -> Any:
    return FABRIC_STRATEGY_REGISTRY if fabric else StrategyRegistry


def _strategy_registry_names(fabric: bool) -> list[str]:
    return list(_strategy_registry(fabric).available_strategies())


def _accelerator_registry_names(fabric: bool) -> list[str]:
    registry = FABRIC_ACCELERATOR_REGISTRY if fabric else AcceleratorRegistry
    return list(registry.available_accelerators())


def _means_hpu(accelerator_flag: Any) -> bool:
    """Whether the connector will run on HPU: HPU named or given, or ``"auto"`` with an HPU there."""
    return is_hpu(accelerator_flag) or (accelerator_flag == "auto" and hpu_available())


def _refuse_misspelt_names(strategy: Any, accelerator: Any, owner: str, fabric: bool) -> None:
    """Refuse an unknown strategy or accelerator name that is close to an HPU name, saying which one was meant.

    Lightning's own errors list its names only; these name the ``hpu``/``hpu_*`` name the user probably meant.
    """
    accelerators = _accelerator_registry_names(fabric)
    if isinstance(accelerator, str) and accelerator not in (*accelerators, "auto", "gpu"):  # compared as Lightning does
        guess = closest_name(accelerator, [*accelerators, "auto", "gpu"])
        if guess is not None and guess in hpu_names(accelerators):
            raise HPUConfigurationError(
                f"`{owner}(accelerator={accelerator!r})` is not a registered accelerator: did you mean {guess!r}?"
            )
    strategies = _strategy_registry_names(fabric)
    if not isinstance(strategy, str) or strategy.lower() in (*strategies, "auto"):
        return
    if not (is_hpu(accelerator) or strategy.lower().startswith("hpu")):
        return  # not an HPU run: Lightning's own error
    guess = closest_name(strategy, hpu_names(strategies)) or closest_name(strategy, strategies)
    hint = f"did you mean {guess!r}?" if guess is not None else f"the HPU ones are {', '.join(hpu_names(strategies))}."
    raise HPUConfigurationError(f"`{owner}(strategy={strategy!r})` is not a registered strategy: {hint}")


def _hpu_precision_name(precision: Any, accelerator: Any, owner: str) -> str | None:
    """The HPU-only precision name (``"fp8"``, ...) that Lightning's check would refuse, else ``None``.

    Such a name with another accelerator, or a misspelt precision on HPU, is refused here with one sentence.
    """
    if not isinstance(precision, str) or precision in get_args(_PRECISION_INPUT_STR) or precision.isdigit():
        return None
    if precision in (*HPU_ONLY_PRECISIONS, *PRECISION_ALIASES):
        if precision not in HPU_ONLY_PRECISIONS:
            return None  # Lightning's own spelling
        if not _means_hpu(accelerator):
            raise HPUConfigurationError(
                f"`{owner}(precision={precision!r})` is an HPU precision: use it with accelerator='hpu'."
            )
        return precision
    if _means_hpu(accelerator):
        known = [*get_args(HPUPrecisionInput), *PRECISION_ALIASES]
        guess = closest_name(precision, known)
        hint = f"did you mean {guess!r}?" if guess is not None else f"use one of {', '.join(known)}."
        raise HPUConfigurationError(f"`{owner}(precision={precision!r})` is not a precision: {hint}")
    return None


def _install_on(connector_cls: type, fabric: bool) -> None:
    hooks_cls: type = FabricHPUStrategyHooks if fabric else HPUStrategyHooks
    deepspeed_cls: type = FabricDeepSpeedStrategy if fabric else DeepSpeedStrategy
    strategy_base: type = FabricStrategy if fabric else Strategy
    owner = "Fabric" if fabric else "Trainer"

    def check_config(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any, *, strategy: Any, accelerator: Any, precision: Any, **kwargs: Any) -> None:
            _refuse_misspelt_names(strategy, accelerator, owner, fabric)
            hpu_precision = _hpu_precision_name(precision, accelerator, owner)
            # Lightning's check knows only its own names: give it a placeholder that keeps its other checks (a
            # precision plugin given as well is still refused), then put the HPU name back for the HPU plugin.
            original(
                self,
                strategy=strategy,
                accelerator=accelerator,
                precision=precision if hpu_precision is None else "32-true",
                **kwargs,
            )
            if hpu_precision is not None:
                setattr(self, "_precision_input" if fabric else "_precision_flag", hpu_precision)

        return wrapper

    def choose_auto_accelerator(original: Callable[..., str]) -> Callable[..., str]:
        def wrapper(*args: Any, **kwargs: Any) -> str:
            return "hpu" if hpu_available() else original(*args, **kwargs)

        return wrapper

    def check_devices(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any, devices: Any, num_nodes: int) -> None:
            if is_hpu(self._accelerator_flag) and devices != "auto":
                check_devices_syntax(devices)
            named = getattr(self._strategy_flag, "_requested_devices", None)
            if devices == "auto" and named is not None:
                # As Lightning does for a strategy's ``parallel_devices``: they, not "auto", set the HPU count.
                devices = named
            original(self, devices, num_nodes)

        return wrapper

    def init_accelerator(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any) -> None:
            if is_hpu(self._accelerator_flag):
                require_backend()
            original(self)

        return wrapper

    def choose_strategy(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any) -> Any:
            if not is_hpu(self._accelerator_flag):
                return original(self)
            if _multi_device(self):
                if "hpu_parallel" not in _strategy_registry_names(fabric):
                    raise ValueError(
                        "Training on several HPUs needs the 'hpu_parallel' strategy, which this lightning-hpu"
                        " build does not provide; use devices=1 and num_nodes=1."
                    )
                return "hpu_parallel"
            return "hpu_single"

        return wrapper

    def strategy_fallback(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any) -> None:
            flag = self._strategy_flag
            if is_hpu(self._accelerator_flag) and isinstance(flag, strategy_base) and not isinstance(flag, hooks_cls):
                twin_object = names.hpu_twin_of_object(flag)  # Ray's strategies: their HPU twin, same arguments
                if twin_object is not None:
                    self._strategy_flag = twin_object
            if is_hpu(self._accelerator_flag) and isinstance(flag, str):
                registry = _strategy_registry(fabric)
                twin = names.hpu_strategy_for(flag, registry, lambda cls: issubclass(cls, hooks_cls), owner)
                if twin is not None:
                    twin_name, settings = twin
                    self._strategy_flag = names.build_strategy(registry, twin_name, settings) if settings else twin_name
            original(self)

        return wrapper

    def init_strategy(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any) -> None:
            original(self)
            strategy = self.strategy
            if is_hpu(self._accelerator_flag) and not isinstance(strategy, hooks_cls):
                raise names.refuse_strategy_instance(strategy, owner)
            if not is_hpu(self._accelerator_flag) and isinstance(strategy, (hooks_cls,)):
                raise ValueError(
                    f"`{owner}(strategy={type(strategy).__name__}(...))` needs accelerator='hpu', but the"
                    f" accelerator is {self._accelerator_flag!r}."
                )
            assert isinstance(strategy, strategy_base)

        return wrapper

    def init_precision(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any) -> Any:
            if not is_hpu(self._accelerator_flag):
                return original(self)
            if fabric:
                from lightning.fabric.plugins import Precision as FabricPrecision

                from lightning_hpu.fabric.deepspeed_precision import HPUDeepSpeedPrecision
                from lightning_hpu.fabric.precision import HPUPrecision

                if isinstance(self._precision_instance, FabricPrecision):
                    return self._precision_instance
                precision_cls = getattr(self.strategy, "hpu_precision", None)  # the sharded strategies name theirs
                if precision_cls is None:
                    precision_cls = HPUDeepSpeedPrecision if isinstance(self.strategy, deepspeed_cls) else HPUPrecision
                return precision_cls(self._precision_input)
            from lightning.pytorch.plugins.precision import Precision

            from lightning_hpu.plugins.deepspeed_precision import HPUDeepSpeedPrecisionPlugin
            from lightning_hpu.plugins.precision import HPUPrecisionPlugin

            self._validate_precision_choice()
            if isinstance(self._precision_plugin_flag, Precision):
                return self._precision_plugin_flag
            precision_plugin_cls = getattr(self.strategy, "hpu_precision", None)  # the sharded strategies name theirs
            if precision_plugin_cls is None:
                deepspeed = isinstance(self.strategy, deepspeed_cls)
                precision_plugin_cls = HPUDeepSpeedPrecisionPlugin if deepspeed else HPUPrecisionPlugin
            return precision_plugin_cls(self._precision_flag)

        return wrapper

    _wrap(connector_cls, "_check_config_and_set_final_flags", check_config)
    _wrap(connector_cls, "_choose_auto_accelerator", choose_auto_accelerator)
    _wrap(connector_cls, "_check_device_config_and_set_final_flags", check_devices)
    _wrap(connector_cls, "_set_parallel_devices_and_init_accelerator", init_accelerator)
    _wrap(connector_cls, "_choose_strategy", choose_strategy)
    _wrap(connector_cls, "_check_strategy_and_fallback", strategy_fallback)
    _wrap(connector_cls, "_init_strategy", init_strategy)
    _wrap(connector_cls, "_check_and_init_precision", init_precision)


def _install_profiler_names() -> None:
    """Let ``Trainer(profiler=...)`` take the names of :data:`lightning_hpu.names.HPU_PROFILERS` too."""
    original = trainer_setup._init_profiler

    def init_profiler(trainer: Any, profiler: Profiler | str | None) -> None:
        if isinstance(profiler, str) and profiler.lower() in names.HPU_PROFILERS:
            module_name, class_name = names.HPU_PROFILERS[profiler.lower()].split(":")
            profiler = getattr(importlib.import_module(module_name), class_name)()
        elif isinstance(profiler, str) and profiler.lower() not in names.LIGHTNING_PROFILERS:
            guess = closest_name(profiler, [*names.LIGHTNING_PROFILERS, *names.HPU_PROFILERS])
            if guess in names.HPU_PROFILERS:
                raise HPUConfigurationError(
                    f"`Trainer(profiler={profiler!r})` is not a profiler name: did you mean {guess!r}?"
                )
        original(trainer, profiler)

    setattr(init_profiler, _MARKER, original)
    trainer_setup._init_profiler = init_profiler


def _agreeing_strategy(trainer: Any) -> SigtermAgreement | None:
    """The trainer's strategy when it agrees on SIGTERM on the host and several processes run, else ``None``."""
    strategy = trainer.strategy
    if isinstance(strategy, SigtermAgreement) and strategy.world_size > 1:
        return strategy
    return None


def _install_sigterm_agreement() -> None:
    """Send Lightning's SIGTERM agreement to :class:`SigtermAgreement` for the strategies that mix it in.

    * ``_TrainingEpochLoop._broadcast_sigterm_tensor`` (a device broadcast and ``.item()`` per training batch)
      becomes a host-side vote; when the ranks agree, Lightning's ``received_sigterm`` is set on every rank and
      ``SIGTERMException`` is raised with a non-zero exit status.
    * ``_SignalConnector._sigterm_notifier_fn`` (the SIGTERM handler, which broadcasts) only records the signal.
      Outside ``fit`` there is no training batch to vote at, so the evaluation loops stop on the local flag.

    Other strategies keep Lightning's behaviour.
    """

    def vote_each_batch(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any) -> None:
            strategy = _agreeing_strategy(self.trainer)
            if strategy is None:
                original(self)
                return
            if strategy.any_rank_signalled():
                self.trainer._signal_connector.received_sigterm = True
                raise SIGTERMException(SIGTERM_EXIT_CODE)

        return wrapper

    def record_signal(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any, signum: Any, frame: Any) -> None:
            strategy = _agreeing_strategy(self.trainer)
            if strategy is None:
                original(self, signum, frame)
                return
            strategy.record_sigterm(signum)
            if self.trainer.state.fn != TrainerFn.FITTING:
                self.received_sigterm = True

        return wrapper

    _wrap(_TrainingEpochLoop, "_broadcast_sigterm_tensor", vote_each_batch)
    _wrap(_SignalConnector, "_sigterm_notifier_fn", record_signal)


# --- the "HPU available" start-up line (beside Lightning's GPU/TPU lines) -------------------------------------


def _install_device_info_line() -> None:
    """Make the Trainer's ``_log_device_info`` also log :func:`~lightning_hpu.device_info.hpu_device_line`."""
    from lightning.pytorch.trainer import setup as trainer_setup
    from lightning.pytorch.utilities.rank_zero import rank_zero_info

    from lightning_hpu.device_info import hpu_device_line

    original = getattr(trainer_setup, "_log_device_info", None)
    if not callable(original):
        raise LightningIntegrationError(
            f"lightning-hpu cannot integrate with Lightning {lightning.__version__}: lightning.pytorch.trainer.setup"
            f" lacks _log_device_info (tested with Lightning {', '.join(TESTED_LIGHTNING)}); install a tested"
            " Lightning release or a newer lightning-hpu."
        )
    if hasattr(original, _MARKER):
        return

    def log_device_info(trainer: Any) -> None:
        original(trainer)
        rank_zero_info(hpu_device_line(trainer))

    setattr(log_device_info, _MARKER, original)
    trainer_setup._log_device_info = log_device_info


# --- quiet HPU runs: no advertising tips ---------------------------------------------------------------------------

#: How Lightning 2.6 starts its advertising lines (LitLogger, litmodels), logged at INFO by ``rank_zero_info``.
LIGHTNING_TIP_PREFIX = "💡 Tip:"

#: Where Lightning prints its tips (class, method); Lightning has no switch for them.
_TIP_METHODS = (
    (_LoggerConnector, "configure_logger"),
    (_CallbackConnector, "_maybe_show_litmodels_tip"),
)


class _DropLightningTips(logging.Filter):
    """Drops the log records that are Lightning's tips."""

    @override
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(LIGHTNING_TIP_PREFIX)


def _runs_on_hpu(trainer: Any) -> bool:
    from lightning_hpu.accelerator import HPUAccelerator

    return isinstance(getattr(trainer, "accelerator", None), HPUAccelerator)


def _install_quiet_tips() -> None:
    """Leave Lightning's two "💡 Tip" lines out of Trainers that run on HPU (other Trainers keep them).

    They are advertisements printed by every Trainer; an HPU run prints its start-up lines, progress and results.
    Skipped silently if Lightning moved them: the lines are cosmetic.
    """
    if any(not callable(getattr(owner, name, None)) for owner, name in _TIP_METHODS):
        return
    tip_filter = _DropLightningTips()

    def quiet_logger_setup(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
            if not _runs_on_hpu(self.trainer):
                original(self, *args, **kwargs)
                return
            log = rank_zero_module.log  # the logger rank_zero_info writes to (Lightning sets it at import)
            log.addFilter(tip_filter)
            try:
                original(self, *args, **kwargs)
            finally:
                log.removeFilter(tip_filter)

        return wrapper

    def quiet_litmodels_tip(original: Callable[..., None]) -> Callable[..., None]:
        def wrapper(self: Any) -> None:
            if _runs_on_hpu(self.trainer):
                self._pending_litmodels_tip = False
                return
            original(self)

        return wrapper

    _wrap(_LoggerConnector, "configure_logger", quiet_logger_setup)
    _wrap(_CallbackConnector, "_maybe_show_litmodels_tip", quiet_litmodels_tip)


def is_installed() -> bool:
    """Whether the connectors already carry the HPU wrappers."""
    return hasattr(_AcceleratorConnector._choose_strategy, _MARKER)


def install() -> None:
    """Wrap the Trainer's and Fabric's connectors for HPU, and add the HPU start-up line (idempotent)."""
    _install_device_info_line()
    strategy_arguments.install()
    if is_installed():
        return
    _check_connector(_AcceleratorConnector)
    _check_connector(_Connector)
    if not callable(getattr(trainer_setup, "_init_profiler", None)):
        raise LightningIntegrationError(
            f"lightning-hpu cannot integrate with Lightning {lightning.__version__}: lightning.pytorch.trainer.setup"
            f" lacks _init_profiler (tested with Lightning {', '.join(TESTED_LIGHTNING)}); install a tested release."
        )
    for owner, name in _SIGTERM_METHODS:
        _check_methods(owner, (name,))
    _install_on(_AcceleratorConnector, fabric=False)
    _install_on(_Connector, fabric=True)
    _install_profiler_names()
    _install_sigterm_agreement()
    _install_quiet_tips()
