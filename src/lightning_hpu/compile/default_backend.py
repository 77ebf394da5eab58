"""``torch.compile``'s default backend on HPU: ``hpu_backend`` takes Inductor's place where Lightning compiles.

Intel Gaudi runs ``torch.compile`` with the bridge's ``hpu_backend`` (or ``"eager"``); Inductor, torch's default, is
listed as unsupported in Intel Gaudi's PyTorch support matrix, and on an HPU it fails at the first forward. Lightning
records the arguments of every ``torch.compile`` call and compiles again with them: Fabric in ``setup`` and
``setup_module``, the Trainer when it runs a model given as ``torch.compile(model)``. On HPU those arguments go
through :func:`hpu_compile_kwargs` first (wired in by :mod:`lightning_hpu.integration.compile_arguments` and the HPU
Trainer strategies' ``setup``): no ``backend`` means ``hpu_backend``, said once per process; a backend the HPU cannot
run, or Inductor's own settings, are refused with one sentence naming ``hpu_backend``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lightning.fabric.utilities.rank_zero import rank_zero_info

from lightning_hpu.runtime import HPUConfigurationError
from lightning_hpu.runtime.compile_backend import BACKEND_NAME

#: torch's own backends that make code for other devices (Inductor's kernels, CUDA graphs, ONNX Runtime, TVM, XLA,
#: TensorRT). ``"eager"``, ``"aot_eager"``, ``hpu_backend``, a backend the user registered and a callable pass.
UNRUNNABLE_BACKENDS = frozenset(
    {"inductor", "aot_inductor", "cudagraphs", "onnxrt", "tvm", "openxla", "tensorrt", "torch_tensorrt"}
)

#: The key under which the Trainer keeps the compile arguments in a LightningModule's ``_compiler_ctx``.
COMPILE_KWARGS_KEY = "lightning_hpu_compile_kwargs"

_told = False


def _tell_once(owner: str) -> None:
    global _told
    if not _told:
        _told = True
        rank_zero_info(
            f"torch.compile's default backend (Inductor) does not run on HPUs: {owner} compiles with"
            f" backend={BACKEND_NAME!r} instead."
        )


def hpu_compile_kwargs(kwargs: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """The ``torch.compile`` arguments ``kwargs`` as an HPU runs them: ``backend="hpu_backend"`` where none was given.

    Raises ``HPUConfigurationError`` (one sentence naming ``hpu_backend``) for a backend the HPU cannot run, and for
    Inductor's ``mode`` or ``options`` given without a backend.
    """
    backend = kwargs.get("backend")
    if "backend" in kwargs:
        if isinstance(backend, str) and backend in UNRUNNABLE_BACKENDS:
            raise HPUConfigurationError(
                f"`torch.compile(backend={backend!r})` cannot run on an HPU: use backend={BACKEND_NAME!r} (or give no"
                " backend), the one Intel Gaudi supports."
            )
        return dict(kwargs)
    mode = kwargs.get("mode")
    if mode not in (None, "default"):
        raise HPUConfigurationError(
            f"`torch.compile(mode={mode!r})` is a mode of Inductor, which cannot run on an HPU: drop it, and the model"
            f" compiles with backend={BACKEND_NAME!r}."
        )
    options = kwargs.get("options")
    if options:  # Inductor's settings: torch.compile checked them against Inductor's config
        raise HPUConfigurationError(
            f"`torch.compile(options=...)` sets Inductor's {', '.join(sorted(options))}, and Inductor cannot run on an"
            f" HPU: drop them, or give backend={BACKEND_NAME!r} with its own settings (e.g. keep_input_mutations)."
        )
    _tell_once(owner)
    return {**kwargs, "backend": BACKEND_NAME}
