"""The patch that makes Lightning compile for HPU with ``hpu_backend`` where the user left torch's default.

Lightning records the arguments of each ``torch.compile`` call on the compiled module (``_compile_kwargs``) and
compiles again with them (:mod:`lightning_hpu.compile.default_backend` says why and what changes on HPU):

* Fabric's ``setup`` and ``setup_module`` re-apply them: on an HPU the recorded arguments are made the HPU's first;
* the Trainer's ``from_compiled`` (run by ``fit``/``validate``/... for ``torch.compile(model)``) keeps only the
  compiled context: it now also keeps the arguments in the module's ``_compiler_ctx``, so that the HPU strategies'
  ``setup`` can compile again with the HPU's
  (:func:`~lightning_hpu.pytorch.strategies.base.recompile_for_hpu`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lightning.fabric import Fabric
from lightning.pytorch.utilities import compile as compile_utils

from lightning_hpu.compile.default_backend import COMPILE_KWARGS_KEY, hpu_compile_kwargs
from lightning_hpu.fabric.accelerator import HPUAccelerator
from lightning_hpu.integration.wrapping import check_methods, integration_error, wrap

#: The Fabric methods that re-apply ``torch.compile``.
FABRIC_METHODS = ("setup", "setup_module")


def check() -> None:
    """Refuse a Lightning whose Fabric or compile utilities lack what is wrapped here."""
    check_methods(Fabric, FABRIC_METHODS)
    if not callable(getattr(compile_utils, "from_compiled", None)):
        raise integration_error("lightning.pytorch.utilities.compile lacks from_compiled")


def _fabric_setup(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: Fabric, module: Any, *args: Any, **kwargs: Any) -> Any:
        recorded = getattr(module, "_compile_kwargs", None)
        if recorded is not None and isinstance(self.accelerator, HPUAccelerator):
            module._compile_kwargs = hpu_compile_kwargs(recorded, "Fabric")  # what Fabric re-applies
        return original(self, module, *args, **kwargs)

    return wrapper


def _keep_compile_kwargs(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(model: Any) -> Any:
        module = original(model)
        module._compiler_ctx[COMPILE_KWARGS_KEY] = getattr(model, "_compile_kwargs", None)
        return module

    return wrapper


def install() -> None:
    """Wrap Fabric's :data:`FABRIC_METHODS` and the Trainer's ``from_compiled`` (call :func:`check` first)."""
    for name in FABRIC_METHODS:
        wrap(Fabric, name, _fabric_setup)
    wrap(compile_utils, "from_compiled", _keep_compile_kwargs)  # type: ignore[arg-type]  # a module, not a class
