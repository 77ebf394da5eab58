"""Fixtures shared by the tests of several ``lightning_hpu`` packages."""

from __future__ import annotations

import types

import pytest

from tests.helpers.fp8_recorders import install_fake_inc


@pytest.fixture
def inc(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """Intel Neural Compressor's fp8 flow, recording each call (``.calls``)."""
    return install_fake_inc(monkeypatch)
