"""``torch.compile(model, backend="hpu_backend")`` on the CPU stand-in.

On a Gaudi the bridge registers ``hpu_backend``: TorchDynamo captures graphs, AOTAutograd splits them into forward and
backward, and Habana's graph compiler builds a recipe for each. Here the same name runs TorchDynamo and AOTAutograd
for real (so graph breaks, guards and recompilations happen exactly as on the device) and then executes the
AOTAutograd graphs eagerly on the CPU, like torch's ``aot_eager`` backend. That keeps tests fast: no code generation
and no C++ compiler, while every step above the device compiler is the real one. Options take the bridge's keys
(``hpu_backend_config``), patched for one compilation; an unknown key is refused, as the bridge's config patch
refuses it.

:func:`register_with` registers it as TorchDynamo's registry loads (the stand-in's import hook), so
``torch.compile(backend="hpu_backend")`` works whether or not anything imported the bridge, as on a Gaudi, where
loading the bridge registers it; :func:`register_hpu_backend` registers it at once (idempotent). Its settings are the
emulated bridge's (``habana_frameworks.torch.dynamo.compile_backend.config``), read when something compiles. What it
did with each node is written to the bridge's compile logs (``compile_backend.passes.logger`` and
``compile_backend.shared_layer.logger``) when they are listening (:mod:`gaudi_standin.compiler.graph_log`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from gaudi_standin.compiler.inner import _counting_recipes  # noqa: F401  (kept importable here: how recipes are counted)
from gaudi_standin.emulator import machine
from gaudi_standin.emulator.environment import LAZY_MODE_ENV, lazy_mode_env_value

#: The name the bridge registers with TorchDynamo.
BACKEND_NAME = "hpu_backend"


class CompileInLazyModeError(RuntimeError):
    """``torch.compile(backend="hpu_backend")`` was called while the process runs the legacy lazy mode."""


_lock = threading.Lock()


def _compilers() -> ModuleType:
    """The graph compilers (the bridge's ``compile_backend.compilers``), their functions looked up at each
    compilation (as a program patching one expects)."""
    from gaudi_standin.compiler import compilers

    return compilers


def _training_forward(graph: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return _compilers().hpu_training_compiler_fw(graph, example_inputs)


def _training_backward(graph: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return _compilers().hpu_training_compiler_bw(graph, example_inputs)


def _inference(graph: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return _compilers().hpu_inference_compiler(graph, example_inputs)


def hpu_backend(graph: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Callable[..., Any]:
    """The stand-in's ``hpu_backend``: real TorchDynamo + AOTAutograd, graphs executed eagerly on the CPU."""
    if machine.current().is_lazy():
        raise CompileInLazyModeError(
            f"torch.compile(backend='{BACKEND_NAME}') needs eager mode, but this process runs the legacy lazy mode"
            f" ({LAZY_MODE_ENV}={lazy_mode_env_value()!r}); set {LAZY_MODE_ENV}=0 (or unset it) before starting Python."
        )
    # The backend's settings (the bridge's habana_frameworks.torch.dynamo.compile_backend.config), which ``options=``
    # patches for this compilation as the bridge's backend does (an unknown key is refused there). Imported when
    # something compiles, as the bridge reads its variables when it loads, not when TorchDynamo's registry does.
    from torch._dynamo.backends.common import aot_autograd

    from gaudi_standin.compiler import config

    backend_config: Any = config  # a torch config module: ``install_config_module`` gave it ``patch``
    with backend_config.patch(dict(kwargs.get("options") or {})):
        return aot_autograd(
            fw_compiler=_training_forward,
            bw_compiler=_training_backward,
            inference_compiler=_inference,
            keep_inference_input_mutations=bool(backend_config.keep_input_mutations),
        )(graph, example_inputs)


def register_with(registry: ModuleType) -> None:
    """Register ``hpu_backend`` in TorchDynamo's registry as it finishes loading (called by the import hook)."""
    if BACKEND_NAME not in registry._COMPILER_FNS:
        registry.register_backend(compiler_fn=hpu_backend, name=BACKEND_NAME)


def register_hpu_backend() -> None:
    """Register the stand-in's ``hpu_backend`` with TorchDynamo, unless a backend of that name exists (idempotent)."""
    from torch._dynamo.backends import registry

    with _lock:
        # Only the registered names are looked at: listing entry points would import every torch backend.
        if BACKEND_NAME in registry._COMPILER_FNS:
            return
        from torch._dynamo.backends.registry import register_backend

        register_backend(compiler_fn=hpu_backend, name=BACKEND_NAME)
