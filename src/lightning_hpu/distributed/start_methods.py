"""How the parallel strategies may start their processes on HPUs: Lightning's start methods, checked early."""

from __future__ import annotations

#: Each process starts from a fresh interpreter and opens its own HPU: ``popen`` re-runs the script (the default),
#: ``spawn`` starts Python processes that import the main module (the code must be guarded by
#: ``if __name__ == "__main__":`` and the module, data and callbacks must be picklable).
HPU_START_METHODS = ("popen", "spawn")

#: Copies of the launching process: they inherit its Habana runtime (the bridge is loaded at ``import torch`` in
#: eager mode, and may already have opened the device), which the runtime does not support in a forked child.
_FORKING_START_METHODS = ("fork", "forkserver")


def check_start_method(start_method: str, owner: str) -> str:
    """``start_method`` if HPU processes can be started that way, else a ``ValueError`` naming the argument."""
    if start_method in HPU_START_METHODS:
        return start_method
    if start_method in _FORKING_START_METHODS:
        why = (
            "forks the launching process, whose Habana runtime (loaded with the bridge, possibly holding an HPU)"
            " a child cannot use"
        )
    else:
        why = "is not one of Lightning's start methods"
    raise ValueError(
        f"{owner}(start_method={start_method!r}) {why}: use 'popen' (the default, re-runs the script per HPU) or"
        " 'spawn'."
    )
