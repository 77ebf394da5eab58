"""What a program that never asks for an HPU sees of Lightning: its registries and its errors, in ``lightning``,
``pytorch_lightning`` and ``lightning_fabric``.

``python registry_scenario.py`` (without ``LIGHTNING_HPU_BACKEND``, once with ``LIGHTNING_HPU_AUTOLOAD=0`` and once
without) prints one JSON line: per namespace, each registry's entries (``{name: {field: text}}``) and, per call of
:data:`CALLS`, what the call gave (the strategy's class name, or the error's class names and message).
``tests/lightning_hpu/integration/test_registration.py`` compares the two runs; its tests take :func:`report` from
``cpu_program_scenario.py``, which runs it after its own checks of the same start.
"""

from __future__ import annotations

import importlib
import json
import warnings
from typing import Any

#: Each namespace's registries: (module, attribute).
REGISTRIES = {
    "lightning": {
        "trainer strategies": ("lightning.pytorch.strategies", "StrategyRegistry"),
        "trainer accelerators": ("lightning.pytorch.accelerators", "AcceleratorRegistry"),
        "fabric strategies": ("lightning.fabric.strategies", "STRATEGY_REGISTRY"),
        "fabric accelerators": ("lightning.fabric.accelerators", "ACCELERATOR_REGISTRY"),
    },
    "pytorch_lightning": {
        "trainer strategies": ("pytorch_lightning.strategies", "StrategyRegistry"),
        "trainer accelerators": ("pytorch_lightning.accelerators", "AcceleratorRegistry"),
    },
    "lightning_fabric": {
        "fabric strategies": ("lightning_fabric.strategies", "STRATEGY_REGISTRY"),
        "fabric accelerators": ("lightning_fabric.accelerators", "ACCELERATOR_REGISTRY"),
    },
}
#: Each namespace's entry points: (module, class).
OWNERS = {
    "lightning": [("lightning.pytorch", "Trainer"), ("lightning.fabric", "Fabric")],
    "pytorch_lightning": [("pytorch_lightning", "Trainer")],
    "lightning_fabric": [("lightning_fabric", "Fabric")],
}
#: The calls of a CPU program, Trainer and Fabric alike: names of ours that registries no longer hold, names nobody
#: knows, and Lightning's names for other devices. ``profiler`` is the Trainer's only.
CALLS: list[dict[str, Any]] = [
    {"strategy": "model_parallel", "accelerator": "cpu"},
    {"strategy": "model_parallel"},
    {"strategy": "single_hpu", "accelerator": "cpu"},
    {"strategy": "single_hpu"},
    {"strategy": "no_such_strategy", "accelerator": "cpu"},
    {"strategy": "xla", "accelerator": "cpu"},
    {"strategy": "ddp", "accelerator": "cpu", "devices": 2},
    {"accelerator": "no_such_accelerator"},
    {"accelerator": "gpu"},
    {"precision": "no-such-precision", "accelerator": "cpu"},
    {"profiler": "no_such_profiler", "accelerator": "cpu"},
    # HPU names misspelt, or HPU names with another accelerator: Lightning's error first, the HPU sentence after it.
    {"strategy": "hpu_singel", "accelerator": "cpu"},
    {"strategy": "hpu_single", "accelerator": "cpu"},
    {"accelerator": "hpuu"},
    {"precision": "fp8", "accelerator": "cpu"},
    {"profiler": "hpuu", "accelerator": "cpu"},
]
QUIET = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False, "enable_model_summary": False}


def _text(value: Any) -> str:
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, dict):
        return json.dumps({key: _text(item) for key, item in sorted(value.items())})
    return repr(value)


def registries(namespace: str) -> dict[str, dict[str, dict[str, str]]]:
    """Each registry of ``namespace``: its entries, every field as text."""
    found = {}
    for label, (module, attribute) in REGISTRIES[namespace].items():
        registry = getattr(importlib.import_module(module), attribute)
        found[label] = {name: {key: _text(value) for key, value in entry.items()} for name, entry in registry.items()}
    return found


def outcome(owner: type, arguments: dict[str, Any]) -> list[Any]:
    """``[strategy class name]`` when ``owner(**arguments)`` is built, else ``[error's MRO class names, message]``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            built = owner(**arguments, **(QUIET if owner.__name__ == "Trainer" else {}))
    except Exception as error:
        return [[cls.__name__ for cls in type(error).__mro__], str(error)]
    return [type(built.strategy).__name__]


def report() -> dict[str, Any]:
    """Per namespace, its registries' entries and what each call of :data:`CALLS` gave."""
    found: dict[str, Any] = {}
    for namespace in REGISTRIES:
        calls = {}
        for module, name in OWNERS[namespace]:
            owner = getattr(importlib.import_module(module), name)
            for arguments in CALLS:
                if "profiler" in arguments and name != "Trainer":
                    continue
                key = f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
                calls[key] = outcome(owner, arguments)
        found[namespace] = {"registries": registries(namespace), "calls": calls}
    return found


def main() -> None:
    print(json.dumps(report()))


if __name__ == "__main__":
    main()
