"""HPU precision for Lightning Fabric; the Trainer's :class:`~lightning_hpu.HPUPrecisionPlugin` extends it.

Mixed precision is ``torch.autocast`` on the backend's device type (``hpu`` on a Gaudi, ``cpu`` on the stand-in,
so bf16 really runs in bf16 in tests). True half precision converts the module and its inputs. fp16 needs
Gaudi2 or later.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Literal, get_args

import torch
from lightning.fabric.plugins.precision.precision import Precision
from lightning.fabric.plugins.precision.utils import _convert_fp_tensor, _DtypeContextManager
from lightning.fabric.utilities.apply_func import apply_to_collection
from torch import Tensor
from torch.nn import Module
from typing_extensions import override

from lightning_hpu.runtime import require_backend

HPUPrecisionInput = Literal["32-true", "bf16-mixed", "16-mixed", "bf16-true", "16-true"]

#: Lightning's short spellings, mapped to the full names.
PRECISION_ALIASES: dict[str, str] = {"32": "32-true", "bf16": "bf16-mixed", "16": "16-mixed"}

_DTYPES = {
    "32-true": torch.float32,
    "bf16-mixed": torch.bfloat16,
    "16-mixed": torch.float16,
    "bf16-true": torch.bfloat16,
    "16-true": torch.float16,
}


def normalize_precision(precision: Any) -> str:
    """The full precision name for ``precision`` (accepting Lightning's aliases), or a clear error."""
    name = PRECISION_ALIASES.get(str(precision), str(precision))
    if name not in _DTYPES:
        raise ValueError(
            f"`precision={precision!r}` is not supported on HPU: use one of {', '.join(get_args(HPUPrecisionInput))}."
        )
    return name


def check_device_supports(dtype: torch.dtype) -> None:
    """Refuse fp16 on a first-generation Gaudi, which has no fp16 support."""
    backend = require_backend()
    if dtype == torch.float16 and not backend.supports_fp16():
        raise ValueError(
            f"fp16 precision needs Gaudi2 or later, but this device is {backend.device_name()};"
            " use precision='bf16-mixed' instead."
        )


class HPUPrecision(Precision):
    """Precision plugin for HPU: ``"32-true"``, ``"bf16-mixed"``, ``"16-mixed"``, ``"bf16-true"``, ``"16-true"``."""

    def __init__(self, precision: HPUPrecisionInput | str = "32-true") -> None:
        name = normalize_precision(precision)
        self.precision = name  # type: ignore[assignment]
        self._dtype = _DTYPES[name]
        check_device_supports(self._dtype)

    @property
    def is_mixed(self) -> bool:
        return self.precision.endswith("-mixed")

    @property
    def is_true_half(self) -> bool:
        return self.precision in ("bf16-true", "16-true")

    def autocast_context_manager(self) -> torch.autocast:
        """Autocast on the HPU (the stand-in: the CPU) in this plugin's low-precision dtype."""
        return torch.autocast(device_type=require_backend().autocast_device_type, dtype=self._dtype)

    @override
    def convert_module(self, module: Module) -> Module:
        return module.to(dtype=self._dtype) if self.is_true_half else module

    @override
    def tensor_init_context(self) -> AbstractContextManager:
        return _DtypeContextManager(self._dtype) if self.is_true_half else nullcontext()

    @override
    def module_init_context(self) -> AbstractContextManager:
        return self.tensor_init_context()

    @override
    def forward_context(self) -> AbstractContextManager:
        if self.is_mixed:
            return self.autocast_context_manager()
        if self.is_true_half:
            return self._default_dtype_context()
        return nullcontext()

    @contextmanager
    def _default_dtype_context(self) -> Generator[None, None, None]:
        default_dtype = torch.get_default_dtype()
        torch.set_default_dtype(self._dtype)
        try:
            yield
        finally:
            torch.set_default_dtype(default_dtype)

    @override
    def convert_input(self, data: Any) -> Any:
        if not self.is_true_half:
            return data
        return apply_to_collection(data, function=_convert_fp_tensor, dtype=Tensor, dst_type=self._dtype)

    @override
    def convert_output(self, data: Any) -> Any:
        if self.precision == "32-true":
            return data
        return apply_to_collection(data, function=_convert_fp_tensor, dtype=Tensor, dst_type=torch.get_default_dtype())
