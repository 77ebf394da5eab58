"""The support matrix: the tested ranges, the warning outside them, and that pyproject.toml and CI's legs agree."""

from __future__ import annotations

import re
import warnings

import pytest
import torch

from lightning_hpu.support import versions
from lightning_hpu.support.versions import TESTED, UntestedVersionWarning, VersionRange, release, untested_versions
from tests.helpers.fresh_start import fresh_start, in_fresh_start_group
from tests.helpers.paths import ROOT

RANGES = {r.name: r for r in TESTED}


def test_release_reads_the_numbers_of_habana_and_pypi_builds() -> None:
    assert release("2.9.0a0+git1234abc") == (2, 9, 0)  # Habana's fork of older releases
    assert release("2.9.0+hpu.synapse.v1.23.0") == (2, 9, 0)
    assert release("2.9.1+cu128") == (2, 9, 1)
    assert release("3.12") == (3, 12)
    with pytest.raises(ValueError, match=r"^version='nightly' is not a version number"):
        release("nightly")


@pytest.mark.parametrize(
    ("name", "version", "inside"),
    [
        ("torch", "2.7.1", False),  # Intel Gaudi 1.22: not tested
        ("torch", "2.8.0", False),
        ("torch", "2.9.0a0+git1234", True),  # a Habana build tagged as a pre-release
        ("torch", "2.10.0+hpu.synapse.v1.24.0", True),
        ("torch", "2.11.0+hpu.synapse.v1.24.1", True),
        ("torch", "2.14.1", True),
        ("torch", "2.15.0", True),
        ("torch", "2.16.0", False),
        ("lightning", "2.5.6", False),
        ("lightning", "2.6.0", True),
        ("lightning", "2.6.6", True),
        ("lightning", "2.7.0", False),
        ("python", "3.9.18", False),
        ("python", "3.10.13", True),
        ("python", "3.12.1", True),
        ("python", "3.13.0", False),
    ],
)
def test_tested_ranges(name: str, version: str, inside: bool) -> None:
    assert RANGES[name].contains(version) is inside


def test_this_environment_is_inside_the_tested_ranges() -> None:
    """Every CI leg runs inside the matrix it proves (a leg outside it would prove nothing)."""
    assert untested_versions() == []


def test_pyproject_states_the_same_ranges() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert f'requires-python = "{RANGES["python"].specifier}"' in text
    for name in ("torch", "lightning"):
        assert f'"{name}{RANGES[name].specifier}"' in text, f"pyproject.toml must require {RANGES[name]}"


def _test_legs() -> dict[str, tuple[str, str, str, str]]:
    """scripts/test.sh's legs: name -> (python, torch, lightning, transformers series); empty: the leg names none."""
    return {
        name: (python, torch_version, lightning, transformers)
        for name, python, torch_version, lightning, transformers in re.findall(
            r'^\s*"([\w.-]+):([\d.]*):([\d.]*):([\d.]*):([\d.]*)"$',
            (ROOT / "scripts/test.sh").read_text(),
            re.MULTILINE,
        )
    }


def test_ci_legs_are_the_ends_of_the_ranges() -> None:
    """scripts/test.sh's oldest leg runs the lowest Python, torch and Lightning of the matrix; its newest leg the
    highest Python and torch minor releases; its Gaudi legs the torch of Intel Gaudi 1.24.0 (2.10) and 1.24.1 (2.11);
    CI runs the first three (``--leg all``), not the leg of Lightning's development head (it needs a checkout)."""
    legs = _test_legs()
    assert set(legs) == {"pinned", "oldest", "newest", "gaudi-1.24", "gaudi-1.24.1", "lightning-head"}
    assert "    all) selected=(pinned oldest newest) ;;" in (ROOT / "scripts/test.sh").read_text()
    for leg, gaudi_torch in (("gaudi-1.24", (2, 10)), ("gaudi-1.24.1", (2, 11))):
        assert release(legs[leg][1])[:2] == gaudi_torch and RANGES["torch"].contains(legs[leg][1]), leg
    assert "scripts/test.sh --leg all" in (ROOT / ".ci/run").read_text()
    python, torch_version, lightning, _ = legs["oldest"]
    assert release(python) == release(RANGES["python"].lowest)
    assert release(torch_version)[:2] == release(RANGES["torch"].lowest)[:2]
    assert release(lightning) == release(RANGES["lightning"].lowest)
    python, torch_version, _, _ = legs["newest"]
    below_python, below_torch = release(RANGES["python"].below), release(RANGES["torch"].below)
    assert release(python) == (below_python[0], below_python[1] - 1)
    assert release(torch_version)[:2] == (below_torch[0], below_torch[1] - 1)


def test_ci_legs_run_the_transformers_extra_at_both_ends() -> None:
    """The transformers extra admits optimum-habana's 4.55 through 5.x, and CI's legs run both ends: a leg that names
    4.55, and a leg that names none (it takes the newest release the extra admits, a 5.x)."""
    project = (ROOT / "pyproject.toml").read_text()
    assert 'transformers = ["transformers>=4.55,<6"]' in project and '"transformers>=4.55,<6",' in project
    in_ci = [leg for name, leg in _test_legs().items() if name in ("pinned", "oldest", "newest")]
    assert {transformers for *_, transformers in in_ci} >= {"4.55", ""}


def test_warns_once_naming_the_tested_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "_warned", False)
    monkeypatch.setattr(torch, "__version__", "2.7.1+hpu.synapse.v1.22.0")
    with pytest.warns(UntestedVersionWarning) as record:
        versions.warn_if_untested()
    message = str(record[0].message)
    assert "tested with torch >=2.9.0a0,<2.16, lightning >=2.6.0,<2.7, python >=3.10,<3.13" in message
    assert "this environment has torch 2.7.1+hpu.synapse.v1.22.0" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        versions.warn_if_untested()  # once per process


def test_inside_the_ranges_nothing_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "_warned", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        versions.warn_if_untested({"torch": "2.9.0a0+git1", "lightning": "2.6.0", "python": "3.10.13"})


@in_fresh_start_group
def test_import_warns_once_with_a_faked_torch() -> None:
    """``import lightning_hpu`` itself warns, once, with torch 2.7 (Intel Gaudi 1.22) and an untested Lightning.

    In a fresh interpreter, where importing Lightning imported the package: the shared fresh start checks it."""
    messages = fresh_start().section("faked_versions")
    assert len(messages) == 1
    assert "this environment has torch 2.7.1, lightning 2.5.6, outside that range" in messages[0]


def test_version_range_specifier_and_bounds() -> None:
    versions = VersionRange("torch", "2.9", "2.15")
    assert str(versions) == "torch >=2.9,<2.15"
    assert versions.contains("2.9") and versions.contains("2.14.99") and not versions.contains("2.15")
