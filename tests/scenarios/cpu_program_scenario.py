"""A CPU program on a machine without HPUs (none of lightning-hpu's variables set but, for the switch,
``LIGHTNING_HPU_AUTOLOAD``): what importing Lightning prints and warns, then what Lightning's registries hold and
what its calls give.

``python cpu_program_scenario.py`` prints one JSON line: ``start``, what the program saw of the import (for
``tests/lightning_hpu/standalone/test_namespaces.py``), and ``registries``, ``registry_scenario.report()`` (for
``tests/lightning_hpu/integration/test_registration.py``). ``tests/helpers/fresh_start.py`` runs it once with the
switch on and once with it off, in the real interpreter: both tests ask the same start, whose first import of
Lightning is the point of the first.
"""

from __future__ import annotations

import io
import json
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import torch  # noqa: F401 - torch first, then Lightning (fresh_start_scenario.py imports Lightning first)


def start() -> dict[str, Any]:
    """What importing Lightning printed and warned, whether it imported lightning-hpu, what Trainer() and
    ``Trainer(accelerator="hpu")`` give."""
    warnings.simplefilter("always")
    captured = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, redirect_stdout(captured), redirect_stderr(captured):
        import lightning as L
        import pytorch_lightning as pl

        L.Trainer(logger=False, enable_checkpointing=False)
        pl.Trainer(logger=False, enable_checkpointing=False)
    seen = {
        "output": captured.getvalue().splitlines(),
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
        "imported": "lightning_hpu" in sys.modules,
        "auto": type(L.Trainer(logger=False).accelerator).__name__,
    }
    try:
        L.Trainer(accelerator="hpu")
    except Exception as error:
        seen["hpu"] = f"{type(error).__name__}: {error}"
    return seen


if __name__ == "__main__":
    seen = start()
    from tests.scenarios import registry_scenario  # it imports no Lightning; the start above is the first

    print(json.dumps({"start": seen, "registries": registry_scenario.report()}))
