"""``lightning_hpu.fabric``: Fabric's HPU classes, and lightning-habana's names of ``lightning_habana.fabric`` (a name
that was not carried over fails its import with what to use instead)."""

from __future__ import annotations

import pytest

import lightning_hpu.fabric
from lightning_hpu.fabric.strategies import HPUParallelStrategy


def test_lightning_habanas_fabric_names_are_fabrics_hpu_classes() -> None:
    assert lightning_hpu.fabric.HPUDDPStrategy is HPUParallelStrategy
    assert lightning_hpu.fabric.HPUAccelerator is lightning_hpu.HPUAccelerator


def test_a_name_not_carried_over_says_what_to_use() -> None:
    with pytest.raises(ImportError, match=r"HPUDataModule is not carried over .*use a torch DataLoader"):
        from lightning_hpu.fabric import HPUDataModule  # noqa: F401
    with pytest.raises(AttributeError, match="has no attribute 'HPUNothing'"):
        lightning_hpu.fabric.HPUNothing  # noqa: B018
