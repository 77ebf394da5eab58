"""``habana_frameworks.torch.distributed.hccl`` on the stand-in: ``initialize_distributed_hpu`` reads the launcher's
variables (Open MPI's too), fills in the rendezvous defaults and registers the ``"hccl"`` backend, as the bridge's."""

from __future__ import annotations

import os

import pytest
import torch.distributed as dist

from gaudi_standin.bridge.habana_frameworks.torch.distributed import hccl

#: What the function reads and writes; each test starts without them and ends as it started.
_VARIABLES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "ID")


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (*_VARIABLES, "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_open_mpi_variables_and_the_rendezvous_defaults(standin: object, clean_environment: pytest.MonkeyPatch) -> None:
    clean_environment.setenv("OMPI_COMM_WORLD_SIZE", "1")
    clean_environment.setenv("OMPI_COMM_WORLD_RANK", "0")
    clean_environment.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0")
    assert hccl.initialize_distributed_hpu() == (1, 0, 0)
    assert {name: os.environ[name] for name in _VARIABLES} == {
        "WORLD_SIZE": "1",
        "RANK": "0",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "localhost",
        "MASTER_PORT": "12345",
        "ID": "0",
    }
    assert "hccl" in dist.Backend.backend_list


def test_given_ranks_are_written_for_the_process(standin: object, clean_environment: pytest.MonkeyPatch) -> None:
    assert hccl.initialize_distributed_hpu(world_size=1, rank=0, local_rank=0) == (1, 0, 0)
    assert (os.environ["WORLD_SIZE"], os.environ["RANK"], os.environ["LOCAL_RANK"]) == ("1", "0", "0")
    assert "MASTER_PORT" not in os.environ  # the defaults are the launcher's business when the ranks are given
