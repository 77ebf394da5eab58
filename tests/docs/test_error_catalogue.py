"""Troubleshooting's list of errors (docs/guide/_errors.md, from ``scripts/error_catalogue.py``) is searchable by the
words of the messages users actually get: for a sample of errors raised here, the list has an entry whose fixed
words, in order, are the message's (only the values the run fills in differ), and no Python placeholder is left."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from lightning.fabric import Fabric
from lightning.pytorch import Trainer

from lightning_hpu import HPUAccelerator, HPUPrecisionPlugin, SingleHPUStrategy
from lightning_hpu.runtime import settings
from tests.helpers.paths import ROOT


def _catalogue() -> ModuleType:
    spec = importlib.util.spec_from_file_location("error_catalogue", ROOT / "scripts" / "error_catalogue.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _raised(make: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as raised:
        make()
    return " ".join(str(raised.value).split())


ON_THE_STANDIN: dict[str, Callable[[], Any]] = {
    "too many devices": lambda: Trainer(accelerator="hpu", devices=4, logger=False),
    "devices not a count": lambda: HPUAccelerator.parse_devices("many"),
    "precision by its dtype": lambda: HPUPrecisionPlugin("bfloat16"),  # type: ignore[arg-type]
    "precision misspelt": lambda: Fabric(accelerator="hpu", precision="16-mixd"),  # type: ignore[arg-type]
    "strategy misspelt": lambda: Trainer(accelerator="hpu", strategy="hpu_paralel", logger=False),
    "profiler misspelt": lambda: Trainer(accelerator="hpu", profiler="hpuu", logger=False),
}


@pytest.mark.parametrize("case", list(ON_THE_STANDIN))
def test_a_message_raised_on_the_standin_is_in_the_list(standin: Any, case: str) -> None:
    _assert_listed(_raised(ON_THE_STANDIN[case]))


def test_no_hpu_is_in_the_list_with_its_reason(no_hpu: None) -> None:
    message = _raised(SingleHPUStrategy)
    assert "is not installed" in message
    _assert_listed(message)


def test_a_backend_variable_of_no_backend_is_in_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.BACKEND_ENV, "gpu")
    _assert_listed(_raised(settings.requested_backend))


def _assert_listed(message: str) -> None:
    errors = _catalogue().collect()
    assert any(re.fullmatch(error.pattern, message, re.DOTALL) for error in errors), (
        f"docs/guide/_errors.md has no entry with the fixed words of {message!r}"
    )
    page = (ROOT / "docs" / "guide" / "_errors.md").read_text()
    # The package's sentence: after Lightning's own message where one comes first (the page shows it as a value).
    ours = message.rsplit(". `", 1)[1] if ". `" in message else message
    # Its longest stretch without a value (a number with the verb agreeing with it, a quoted name, a list).
    fixed = max(re.split(r"\d+\w*(?: is| are)?|'[^']*'|\[[^\]]*\]", ours), key=len).strip()
    assert fixed in page.replace("\\<", "<").replace("\\>", ">"), f"searching the page for {fixed!r} finds nothing"


def test_the_list_shows_no_python_placeholder() -> None:
    page = (ROOT / "docs" / "guide" / "_errors.md").read_text()
    leftovers = re.findall(r"\{[A-Za-z_][\w.]*(?:\(.*?\))?(?:![rsa])?\}", page)
    assert not leftovers, f"docs/guide/_errors.md shows Python placeholders: {leftovers[:5]}"
    assert "LIGHTNING_HPU_CPU_DEVICES=N" in page, "the devices entry shows the fix the message gives"
