"""``torch.autocast(device_type="hpu")`` lowers precision on the stand-in, whose tensors live on the CPU.

torch keeps one autocast state per device type, and HPU's applies only to HPU tensors, so on the stand-in a Gaudi
script's ``with torch.autocast(device_type="hpu", dtype=torch.bfloat16):`` would silently compute in fp32. Once the
emulation is imported, entering an HPU autocast region also enters a CPU one with the same dtype and switch. Its
op lists are CPU autocast's, not the bridge's, and casts are not cached, as on a Gaudi (the bridge disables the
autocast cache). Code compiled with ``torch.compile`` gets the same lowering, without a graph break.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch.amp.autocast_mode import autocast

_PAIRED = "_lightning_hpu_cpu_autocast"


def _with_cpu_twin_enter(enter: Callable[[autocast], Any]) -> Callable[[autocast], Any]:
    @functools.wraps(enter)
    def __enter__(self: autocast) -> Any:
        result = enter(self)
        if self.device == "hpu" and not torch._jit_internal.is_scripting():
            twin = autocast("cpu", dtype=self.fast_dtype, enabled=self._enabled, cache_enabled=False)
            twin.__enter__()
            setattr(self, _PAIRED, twin)
        return result

    return __enter__


def _with_cpu_twin_exit(exit_: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(exit_)
    def __exit__(self: autocast, *exc: Any) -> Any:
        twin = self.__dict__.pop(_PAIRED, None)
        if twin is not None:
            twin.__exit__(*exc)
        return exit_(self, *exc)

    return __exit__


_installed = False


def pair_hpu_autocast_with_cpu() -> None:
    """Make HPU autocast regions lower the stand-in's CPU tensors too (once per process)."""
    global _installed
    if _installed:
        return
    autocast.__enter__ = _with_cpu_twin_enter(autocast.__enter__)  # type: ignore[method-assign]
    autocast.__exit__ = _with_cpu_twin_exit(autocast.__exit__)  # type: ignore[method-assign]
    _installed = True
