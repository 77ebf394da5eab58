"""LitServe's connector and server with the HPU (in this process: no worker starts): ``accelerator="hpu"`` and
``"auto"``, ``devices`` read as the Trainer reads it, and the Trainer's one-sentence errors."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("litserve", reason="needs LitServe: pip install 'lightning-hpu[serve]'")

import litserve as ls
from litserve import server
from litserve.connector import _Connector

from lightning_hpu.runtime import HPUConfigurationError, HPUNotAvailableError
from lightning_hpu.serving import litserve_worker, register
from tests.helpers.standin import reset_backend


class Echo(ls.LitAPI):
    def setup(self, device: str) -> None:
        self.device_given = device

    def predict(self, x: Any) -> Any:
        return x


@pytest.fixture
def two_hpus(standin: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    reset_backend()


@pytest.fixture(autouse=True)
def _registered() -> None:
    register("litserve")  # done by the import hook in a program; here once more, which changes nothing


@pytest.mark.parametrize(
    ("accelerator", "devices", "expected"),
    [("hpu", 2, [0, 1]), ("HPU", "auto", [0, 1]), ("auto", "auto", [0, 1]), ("hpu", [1], [1]), (None, 1, [0])],
)
def test_hpu_and_auto_choose_the_hpus_devices_names(
    two_hpus: None, accelerator: Any, devices: Any, expected: Any
) -> None:
    connector = _Connector(accelerator=accelerator, devices=devices)
    assert (connector.accelerator, connector.devices) == ("hpu", expected)


def test_the_server_lists_one_device_per_hpu_and_starts_workers_through_ours(two_hpus: None) -> None:
    assert ls.LitServer(Echo(), accelerator="hpu", devices=2, workers_per_device=2).devices == [["hpu:0"], ["hpu:1"]]
    assert ls.LitServer(Echo(), accelerator="hpu", devices=[1]).devices == [["hpu:1"]]
    assert server.inference_worker is litserve_worker.inference_worker
    assert ls.LitServer(Echo(), accelerator="cpu").devices == ["cpu"], "other accelerators stay LitServe's"


def test_devices_are_refused_in_the_trainers_words_before_any_worker(two_hpus: None) -> None:
    with pytest.raises(HPUConfigurationError, match=r"^`devices=3` asks for 3 HPUs but only 2 are visible: set"):
        ls.LitServer(Echo(), accelerator="hpu", devices=3)
    with pytest.raises(HPUConfigurationError, match=r"^`devices=0` is not valid for HPUAccelerator"):
        _Connector(accelerator="hpu", devices=0)
    with pytest.raises(HPUConfigurationError, match=r"^`devices=\[0, 0\]` is not valid .*repeats an index"):
        _Connector(accelerator="hpu", devices=[0, 0])


def test_without_an_hpu_auto_is_litserves_and_hpu_says_how_to_get_one(no_hpu: None) -> None:
    assert _Connector(accelerator="auto").accelerator == "cpu"  # on this machine: no GPU either
    with pytest.raises(HPUNotAvailableError, match="set LIGHTNING_HPU_BACKEND=cpu to use the CPU stand-in"):
        _Connector(accelerator="hpu")


def test_registering_twice_wraps_once() -> None:
    wrapped = _Connector.__init__
    register("litserve")
    assert _Connector.__init__ is wrapped
