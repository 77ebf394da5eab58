"""Facts about the bridge's ``hpu_backend`` for ``torch.compile`` that hold on a Gaudi and on the stand-in.

The name TorchDynamo knows it by, the option keys it takes, and the lazy-mode refusal. The bridge serves its keys in
``habana_frameworks.torch.dynamo.compile_backend.config``, which this package does not import (only ``runtime.bridge``
imports the bridge); the CPU stand-in's backend, registered under the same name, reads them there.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from lightning_hpu.runtime import settings

#: The name the bridge registers with TorchDynamo (its only non-legacy backend).
BACKEND_NAME = "hpu_backend"

#: Keys of the bridge's ``compile_backend/config.py`` that ``options=`` may set (bridge 1.19).
BRIDGE_OPTION_KEYS = frozenset(
    {
        "use_compiled_recipes",
        "decomposition_mode",
        "keep_input_mutations",
        "use_eager_fallback",
        "use_graph_freezing",
        "discard_frozen_params",
        "remove_unnecessary_clones",
        "use_inplace_allreduce",
        "use_inplace_index_copy",
        "inference",
        "enable_sfg",
        "use_cpp_partitioner",
        "enable_allreduce_graph_split",
        "force_static_compile",
        "reinplace_add",
        "reassign_full_copy",
        "reassign_copy_",
        "use_boxed_input",
    }
)


class CompileInLazyModeError(RuntimeError):
    """``torch.compile`` was asked for while the HPU runs in the legacy lazy mode."""


def lazy_mode_refusal() -> str:
    """The one sentence that says why compiling is refused in lazy mode."""
    return (
        f"torch.compile(backend='{BACKEND_NAME}') needs eager mode, but this process runs the legacy lazy mode"
        f" ({settings.LAZY_MODE_ENV}={settings.lazy_mode_env_value()!r}); set {settings.LAZY_MODE_ENV}=0 (or unset"
        " it) before starting Python."
    )


def check_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The compile options as a dict, refusing keys the bridge's backend does not know."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"`options` must be a dict of hpu_backend settings, got {type(options).__name__}.")
    unknown = sorted(set(options) - BRIDGE_OPTION_KEYS)
    if unknown:
        raise ValueError(
            f"`options` has keys {unknown} that hpu_backend does not know; use keys of the bridge's"
            f" hpu_backend_config: {', '.join(sorted(BRIDGE_OPTION_KEYS))}."
        )
    return dict(options)


def is_registered() -> bool:
    """Whether TorchDynamo knows a backend called ``hpu_backend``: registered, or offered by a package's entry point."""
    from torch._dynamo.backends import registry

    return BACKEND_NAME in registry._COMPILER_FNS or BACKEND_NAME in registry.list_backends(exclude_tags=())


def compiled_autograd(dynamic: bool | None = None) -> AbstractContextManager[None]:
    """Inside it, ``backward()`` runs compiled autograd: TorchDynamo captures the whole backward graph and compiles
    it with ``hpu_backend`` (what DeepSpeed's ``engine.compile(compiled_autograd_enabled=True)`` does for
    optimum-habana's ``use_compiled_autograd``). torch names the switch ``_enable`` since 2.6, ``enable`` before."""
    import torch
    from torch._dynamo import compiled_autograd as module

    enable = getattr(module, "_enable", None) or getattr(module, "enable")  # noqa: B009 (absent in torch >= 2.6)
    compiler = torch.compile(backend=BACKEND_NAME, dynamic=dynamic)
    context: AbstractContextManager[None] = enable(compiler)
    return context
