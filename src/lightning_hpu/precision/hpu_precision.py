"""HPU precision for Lightning Fabric; the Trainer's :class:`~lightning_hpu.HPUPrecisionPlugin` extends it.

What each name means is :mod:`lightning_hpu.precision.names`'s table. Mixed precision is ``torch.autocast`` on the
backend's device type (``hpu`` on a Gaudi, ``cpu`` on the stand-in, so bf16 really runs in bf16 in tests). True half
precision creates (``configure_model``) and converts the module in its dtype, and its inputs. The fp8 names swap
``nn.Linear`` layers for the Transformer Engine's and run the forward under autocast and the engine's fp8 autocast:
``"fp8"`` around fp32 weights, Lightning's ``"transformer-engine"`` around bf16 weights. fp16 and fp8 need Gaudi2 or
later.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from types import ModuleType
from typing import Any, Literal

import torch
from lightning.fabric.connector import _convert_precision_to_unified_args
from lightning.fabric.plugins.precision.precision import Precision
from lightning.fabric.plugins.precision.utils import _convert_fp_tensor, _DtypeContextManager
from lightning.fabric.utilities.apply_func import apply_to_collection
from lightning.fabric.utilities.rank_zero import rank_zero_warn
from torch import Tensor
from torch.nn import Module
from typing_extensions import override

from lightning_hpu.device.autocast_ops import set_autocast_op_lists
from lightning_hpu.device.generation_rules import check_fp8_supported, check_fp16_supported
from lightning_hpu.fp8.engine import LayerFilter, make_recipe, replace_linear_layers
from lightning_hpu.precision import lightning_habana_arguments
from lightning_hpu.precision.lightning_habana_arguments import HPU_DEVICE, ConvertModulesHelpers, check_device
from lightning_hpu.precision.names import ALIASES, DTYPE_NAMES, PRECISIONS, PrecisionName, hpu_names, lookup
from lightning_hpu.runtime import HPUConfigurationError, require_backend
from lightning_hpu.support.lightning_text import lightning_refusal
from lightning_hpu.support.precision_hints import precision_family_guess
from lightning_hpu.support.suggestions import closest_name

HPUPrecisionInput = Literal[
    "32-true",
    "bf16-mixed",
    "16-mixed",
    "bf16-true",
    "16-true",
    "transformer-engine",
    "transformer-engine-float16",
    "fp8",
    "fp8-float16",
]


_FP8_NAMES = ", ".join(repr(name) for name, meaning in PRECISIONS.items() if meaning.fp8 and name != "fp8")


def hpu_precision(precision: Any, lightning_check: Callable[[], object] | None = None) -> PrecisionName:
    """What ``precision`` (a full name or one of Lightning's spellings) means on the HPU, or a clear error (after the
    message of ``lightning_check``, the check of the Lightning plugin a subclass extends, where that refuses it too)."""
    spec = lookup(precision)
    if spec is None or not spec.hpu:
        raise unsupported_precision(precision, lightning_check=lightning_check)
    return spec


def unsupported_precision(
    precision: Any, owner: str | None = None, lightning_check: Callable[[], object] | None = None
) -> HPUConfigurationError:
    """The one error for a precision the HPU does not run, given to a plugin or to ``Trainer``/``Fabric`` (``owner``).

    A name that is not Lightning's gets what it most likely means: the precision family its words name (``"bfloat16"``
    -> ``'bf16-mixed' or 'bf16-true'``, ``"fp16"`` -> ``'16-mixed'``), else the closest HPU name by spelling. A name
    Lightning knows (such as ``"64-true"``) is no misspelling, and gets the list of HPU precisions. Lightning's own
    message comes first where Lightning refuses the name too: ``lightning_check``'s, or given to ``Trainer``/``Fabric``
    a name Lightning does not know, its connector's.
    """
    given = f"`{owner}(precision={precision!r})`" if owner else f"`precision={precision!r}`"
    misspelt = lookup(precision) is None
    guesses: tuple[str, ...] = ()
    if misspelt:
        spelt_alike = closest_name(str(precision), [*hpu_names(), *ALIASES])
        guesses = precision_family_guess(str(precision)) or ((spelt_alike,) if spelt_alike else ())
        if owner and lightning_check is None:
            lightning_check = lambda: _convert_precision_to_unified_args(precision)  # noqa: E731
    lightning_message = lightning_refusal(lightning_check, ValueError) if lightning_check else ""
    if guesses:
        meant = " or ".join(repr(guess) for guess in guesses)
        return HPUConfigurationError(f"{lightning_message}{given} is not supported on HPU: did you mean {meant}?")
    return HPUConfigurationError(
        f"{lightning_message}{given} is not supported on HPU: use one of {', '.join(hpu_names())}."
    )


class HPUPrecision(Precision, ConvertModulesHelpers):
    """Precision on HPU: ``"32-true"``, ``"bf16-mixed"``, ``"16-mixed"``, ``"bf16-true"``, ``"16-true"``,
    ``"transformer-engine"``, ``"transformer-engine-float16"``, ``"fp8"``, ``"fp8-float16"``.

    Args:
        precision: the precision name (also Lightning's aliases ``"32"``, ``"bf16"``, ``"16"``); what each means is
            the table of :mod:`lightning_hpu.precision.names`. ``"transformer-engine"`` (``"-float16"``) keeps the
            weights in bf16 (fp16), as in Lightning; ``"fp8"`` (``"fp8-float16"``) keeps them in fp32 under bf16 (fp16)
            autocast. fp16 and fp8 need Gaudi2 or later; fp8 needs the Intel Gaudi Transformer Engine.
        autocast_lower_precision_ops: aten ops autocast runs in bf16/fp16, replacing the bridge's list (mixed
            precisions and fp8 only; must be set before the bridge is imported).
        autocast_fp32_ops: aten ops autocast runs in fp32, replacing the bridge's list (same rules).
        fp8_recipe: fp8 only: the engine's ``DelayedScaling`` recipe, or a dict of its arguments
            (``{"margin": 0, "interval": 1, "fp8_format": "HYBRID"}``); the engine's default when ``None``.
        fp8_layer_filter: fp8 only: ``(qualified_name, layer) -> bool`` choosing which ``nn.Linear`` layers run in
            fp8; all of them when ``None``.
        device: lightning-habana's argument, accepted as ``"hpu"`` only (the plugin always runs on the HPU).
        fused_clip_norm: clip by the 2-norm with the device's fused clip (``FusedClipNorm`` on a Gaudi; the default)
            instead of ``torch.nn.utils.clip_grad_norm_`` (optimum-habana's ``use_fused_clip_norm``).
    """

    def __init__(
        self,
        precision: HPUPrecisionInput | str = "32-true",
        device: str = HPU_DEVICE,
        *,
        autocast_lower_precision_ops: Sequence[str] | None = None,
        autocast_fp32_ops: Sequence[str] | None = None,
        fp8_recipe: Any | Mapping[str, Any] | None = None,
        fp8_layer_filter: LayerFilter | None = None,
        fused_clip_norm: bool = True,
    ) -> None:
        self.device = check_device(device)
        #: Whether clipping by the 2-norm uses the device's fused clip (``FusedClipNorm``) instead of torch's.
        self.fused_clip_norm = bool(fused_clip_norm)
        meaning = hpu_precision(precision)
        name = meaning.name
        self.precision = name  # type: ignore[assignment]
        if not meaning.fp8:
            for argument, value in (("fp8_recipe", fp8_recipe), ("fp8_layer_filter", fp8_layer_filter)):
                if value is not None:
                    raise HPUConfigurationError(
                        f"`{argument}` applies to precision='fp8' only (and the other fp8 names: {_FP8_NAMES}),"
                        f" but precision={name!r}."
                    )
        if not self.uses_autocast:
            for argument, ops in (
                ("autocast_lower_precision_ops", autocast_lower_precision_ops),
                ("autocast_fp32_ops", autocast_fp32_ops),
            ):
                if ops is not None:
                    raise HPUConfigurationError(
                        f"`{argument}` needs autocast, but precision={name!r} does not use it;"
                        " use 'bf16-mixed', '16-mixed' or 'fp8'."
                    )
        if fp8_layer_filter is not None and not callable(fp8_layer_filter):
            raise TypeError("`fp8_layer_filter` must be a function `(name, layer) -> bool`.")
        if meaning.fp16:
            check_fp16_supported()
        self.fp8_recipe: Any = None
        self._fp8_layer_filter = fp8_layer_filter
        #: Whether converting the module swaps its ``nn.Linear`` layers (lightning-habana's
        #: ``convert_modules(replace_layers=False)`` turns it off: only the engine's own layers then run in fp8).
        self.fp8_replace_layers = True
        #: Qualified names of the layers that run in fp8, filled by :meth:`convert_module`.
        self.fp8_layers: list[str] = []
        if meaning.fp8:
            check_fp8_supported()
            self.fp8_recipe = make_recipe(self._engine(), fp8_recipe)
        #: The op-list files written for the bridge, by environment variable.
        self.autocast_op_list_files = set_autocast_op_lists(autocast_lower_precision_ops, autocast_fp32_ops)

    @staticmethod
    def _engine() -> ModuleType:
        """The Transformer Engine, asked of the backend each time so the plugin stays picklable."""
        return require_backend().transformer_engine()

    @property
    def meaning(self) -> PrecisionName:
        """What this plugin's precision name means (:mod:`lightning_hpu.precision.names`)."""
        return PRECISIONS[self.precision]

    @property
    def is_mixed(self) -> bool:
        """A ``"-mixed"`` precision: autocast around fp32 weights, without fp8 layers."""
        return self.meaning.mixed and not self.meaning.fp8

    @property
    def uses_autocast(self) -> bool:
        """Whether the forward runs under ``torch.autocast`` (mixed precisions and fp8)."""
        return self.meaning.autocast

    @property
    def is_fp8(self) -> bool:
        """Whether the engine's layers run in fp8 (``"fp8"``: bf16 elsewhere, ``"fp8-float16"``: fp16)."""
        return self.meaning.fp8

    @property
    def fp8_training_available(self) -> bool:
        """lightning-habana's flag: fp8 training runs (an fp8 precision, whose device was checked at construction)."""
        return self.is_fp8

    @property
    def fp8_inference_available(self) -> bool:
        """lightning-habana's flag: fp8 inference runs (an fp8 precision, and Intel Neural Compressor imports)."""
        return self.is_fp8 and lightning_habana_arguments.inc_available()

    @property
    def is_true_half(self) -> bool:
        """Whether the weights are created and kept in a 16-bit dtype (``"bf16-true"``, ``"transformer-engine"``...)."""
        return self.meaning.true_half

    def autocast_context_manager(self) -> torch.autocast:
        """Autocast on the HPU (the stand-in: the CPU) in this plugin's low-precision dtype."""
        return torch.autocast(device_type=require_backend().autocast_device_type, dtype=self.meaning.compute)

    @override
    def convert_module(self, module: Module) -> Module:
        if self.is_fp8:
            module = self._convert_to_fp8(module)
        return module.to(dtype=self.meaning.weights) if self.is_true_half else module

    def _convert_to_fp8(self, module: Module) -> Module:
        """Swap the selected ``nn.Linear`` layers in place for the engine's, keeping their parameters."""
        engine = self._engine()
        device = require_backend().torch_device()
        if self.fp8_replace_layers:
            module, _ = replace_linear_layers(module, engine, device, self._fp8_layer_filter)
        self.fp8_layers = [name for name, layer in module.named_modules() if isinstance(layer, engine.Linear)]
        if not self.fp8_layers:
            rank_zero_warn(
                f"precision={self.precision!r} found no nn.Linear layer to run in fp8 in {type(module).__name__}"
                f" (check `fp8_layer_filter`); the model runs in {DTYPE_NAMES[self.meaning.compute]} autocast only."
            )
        return module

    @override
    def _fp8_side(self) -> HPUPrecision | None:
        return self if self.is_fp8 else None

    @override
    def tensor_init_context(self) -> AbstractContextManager:
        return _DtypeContextManager(self.meaning.weights) if self.is_true_half else nullcontext()

    @override
    def module_init_context(self) -> AbstractContextManager:
        return self.tensor_init_context()

    @override
    def forward_context(self) -> AbstractContextManager:
        if self.is_fp8:
            return self._fp8_context()
        if self.is_mixed:
            return self.autocast_context_manager()
        if self.is_true_half:
            return self._default_dtype_context()
        return nullcontext()

    def fp8_autocast(self) -> AbstractContextManager:
        """The engine's ``fp8_autocast`` with this plugin's recipe: the engine's layers run in fp8 inside it."""
        context: AbstractContextManager = self._engine().fp8_autocast(enabled=True, fp8_recipe=self.fp8_recipe)
        return context

    @contextmanager
    def _fp8_context(self) -> Generator[None, None, None]:
        with ExitStack() as stack:
            if self.is_true_half:  # "transformer-engine": the weights' dtype is the default, as in Lightning
                stack.enter_context(self._default_dtype_context())
            stack.enter_context(self.autocast_context_manager())
            stack.enter_context(self.fp8_autocast())
            yield

    @contextmanager
    def _default_dtype_context(self) -> Generator[None, None, None]:
        default_dtype = torch.get_default_dtype()
        torch.set_default_dtype(self.meaning.weights)
        try:
            yield
        finally:
            torch.set_default_dtype(default_dtype)

    @override
    def convert_input(self, data: Any) -> Any:
        if not self.is_true_half:
            return data
        return apply_to_collection(data, function=_convert_fp_tensor, dtype=Tensor, dst_type=self.meaning.weights)

    @override
    def convert_output(self, data: Any) -> Any:
        if self.precision == "32-true":
            return data
        return apply_to_collection(data, function=_convert_fp_tensor, dtype=Tensor, dst_type=torch.get_default_dtype())
