"""Running a test script against the standalone ``pytorch_lightning`` and ``lightning_fabric``, unchanged.

A scenario is written once against ``lightning`` and ``lightning_hpu``. With ``LIGHTNING_HPU_TEST_NAMESPACE=standalone``
(inherited by the ranks Lightning starts), :func:`import_scenario` loads it with its source renamed the way
lightning-hpu's own standalone build is (:func:`lightning_hpu.standalone.renaming.rename`): ``lightning.pytorch`` is
``pytorch_lightning``, ``lightning.fabric`` is ``lightning_fabric``, and lightning-hpu's names come from
``lightning_hpu.standalone``. The reports then name the classes they used, which the tests check.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
from pathlib import Path
from types import ModuleType

from tests.helpers.paths import SCENARIOS, TESTS

NAMESPACE_ENV = "LIGHTNING_HPU_TEST_NAMESPACE"
NAMESPACES = ("lightning", "standalone")


def current() -> str:
    """The namespace this process runs its scenarios in."""
    return os.environ.get(NAMESPACE_ENV, "lightning")


class RenamedTestModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Loads what a scenario imports from the tests with renamed source: the scenario modules of
    ``tests/scenarios/`` (``sharded_scenario``) and the helpers of ``tests/helpers/`` (``tests.helpers.standin``)."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith("tests.helpers"):
            base = TESTS.joinpath(*fullname.split(".")[1:])
        elif "." not in fullname:
            base = SCENARIOS / fullname
        else:
            return None
        if base.with_suffix(".py").is_file():
            return importlib.machinery.ModuleSpec(fullname, self, origin=str(base.with_suffix(".py")))
        if (base / "__init__.py").is_file():
            spec = importlib.machinery.ModuleSpec(fullname, self, origin=str(base / "__init__.py"), is_package=True)
            spec.submodule_search_locations = [str(base)]
            return spec
        return None

    def exec_module(self, module: ModuleType) -> None:
        from lightning_hpu.standalone.renaming import rename

        path = Path(module.__spec__.origin)  # type: ignore[union-attr, arg-type]
        module.__file__ = str(path)
        exec(compile(rename(path.read_text()), str(path), "exec", dont_inherit=True), module.__dict__)


def import_scenario(name: str) -> ModuleType:
    """Scenario module ``name`` (a file in ``tests/scenarios/``), built for :func:`current`'s namespace, with the test
    modules it
    imports."""
    if current() != "lightning" and not any(isinstance(f, RenamedTestModules) for f in sys.meta_path):
        sys.modules.pop(name, None)  # run as a script, it is __main__; its renamed twin is loaded afresh
        # The helpers the script imported as ``__main__`` are ``lightning``'s: their renamed twins are loaded afresh too
        # (all but this module and the paths, which import no Lightning).
        for loaded in [module for module in sys.modules if module.startswith("tests.helpers.")]:
            if loaded not in (__name__, "tests.helpers.paths"):
                del sys.modules[loaded]
        sys.meta_path.insert(0, RenamedTestModules())
    return importlib.import_module(name)
