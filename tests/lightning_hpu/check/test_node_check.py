"""The node check's Lightning-free parts: the judgements its rows make, the row format, the table, the schema and
the faults (the command and its launches are tested in ``tests/lightning_hpu/pytorch/check/``)."""

from __future__ import annotations

import io
from typing import Any

import jsonschema
import pytest

from lightning_hpu.check import expectations as expect
from lightning_hpu.check.faults import FAULT_ENV, FAULTS, injected
from lightning_hpu.check.report import ROWS, modes_row
from lightning_hpu.check.rows import Row, emit, parse_row
from lightning_hpu.check.schema import schema, validate
from lightning_hpu.check.table import Table

#: Every row the command prints when every check runs.
ALL_ROWS = {name for names in ROWS.values() for name in names}


def test_every_row_has_a_fault() -> None:
    assert set(FAULTS) == ALL_ROWS


def test_an_unknown_fault_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "fit.eagre")
    with pytest.raises(ValueError, match="unknown row"):
        injected()


def test_loss_falls_and_relative_difference() -> None:
    assert expect.loss_falls([4.0, 3.9, 3.0, 2.0])
    assert not expect.loss_falls([4.0, 4.0, 4.0, 3.9])
    assert not expect.loss_falls([4.0, float("nan")])
    assert expect.relative_difference(1.0, 1.01) == pytest.approx(0.0099, abs=1e-4)
    assert expect.loss_difference(1.3, 1.2, scale=4.0) == pytest.approx(0.025)  # in the first loss, not the last
    assert expect.loss_difference(float("nan"), 1.2, scale=4.0) == float("inf")
    assert expect.generation("GAUDI2B").name == "GAUDI2" and expect.generation("GAUDI3").hbm_bytes == 128 * 2**30


def test_modes_row_compares_every_mode_with_eager() -> None:
    def fit(name: str, losses: list[float]) -> Row:
        return Row(name, "fit", "pass", extra={"losses": losses})

    same = {"fit.eager": fit("fit.eager", [3.0, 2.0]), "fit.compile": fit("fit.compile", [3.0, 2.001])}
    assert modes_row(same).result == "pass"
    off = {**same, "fit.lazy": fit("fit.lazy", [3.0, 2.5])}
    assert modes_row(off).result == "fail" and "lazy 20.00%" in modes_row(off).figure
    assert modes_row({"fit.eager": same["fit.eager"]}).result == "fail"  # nothing to compare with


def test_a_row_survives_the_trip_from_a_worker(capsys: pytest.CaptureFixture[str]) -> None:
    row = Row("memory", "peak", "pass", figure="1 MB", value=1e6, extra={"a": [1, 2]})
    emit(row)
    assert parse_row("noise before " + capsys.readouterr().out) == row
    assert parse_row("GPU available: False") is None


def test_the_table_marks_stand_in_figures_and_prints_why_a_row_failed() -> None:
    out = io.StringIO()
    table = Table(out, io.StringIO())
    table.header()
    table.row(Row("throughput", "t", "pass", figure="5 samples/s", standin=True))
    table.row(Row("memory", "m", "fail", figure="2 GB", detail="too much"))
    table.summary([Row("a", "", "pass"), Row("b", "", "fail")], 1.0)
    text = out.getvalue()
    assert "5 samples/s *" in text and "too much" in text and "measured on the CPU stand-in" in text
    assert "lightning-hpu check FAILED: 1 pass, 1 fail" in text


def test_the_schema_is_a_valid_json_schema_that_refuses_a_bad_row() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())
    row = Row("memory", "peak", "maybe").to_json()
    with pytest.raises(jsonschema.ValidationError):
        validate({**_document(), "rows": [row]})
    validate(_document())


def _document() -> dict[str, Any]:
    return {
        "schema_version": 1,
        "command": "lightning-hpu check",
        "versions": {},
        "backend": "none",
        "device": "",
        "devices": 0,
        "quick": True,
        "passed": True,
        "seconds": 0.0,
        "rows": [Row("devices", "d", "pass").to_json()],
    }
