"""The HPU strategies for Ray Train workers: each is the package's HPU strategy and Ray's strategy at once.

Being subclasses of Ray's ``RayDDPStrategy``/``RayFSDPStrategy``/``RayDeepSpeedStrategy``, Ray's
``prepare_trainer`` accepts them; being the package's HPU strategies first in the method order, their HCCL process
group and collectives, device binding, precision plugins and :class:`~lightning_hpu.HPUCheckpointIO` apply.
:class:`RayWorkerHooks` adds what Ray's strategies add to Lightning's, for HPUs: the device is the HPU Ray assigned
to the worker, and the world (sampler ranks, nodes, processes per node) is Ray's.
"""

from __future__ import annotations

from typing import Any

import torch
from lightning.pytorch.strategies import ParallelStrategy
from ray.train.lightning import RayDDPStrategy, RayDeepSpeedStrategy, RayFSDPStrategy
from typing_extensions import override

from lightning_hpu.pytorch.ray import worker
from lightning_hpu.pytorch.strategies import HPUDeepSpeedStrategy, HPUFSDPStrategy, HPUParallelStrategy
from lightning_hpu.runtime import require_backend


class RayWorkerHooks(ParallelStrategy):
    """Strategy mixin for a Ray Train worker: its HPU is the one Ray assigned, its world is Ray's job."""

    _worker_device: torch.device | None = None

    @property
    @override
    def root_device(self) -> torch.device:
        """This worker's HPU (``hpu:<module>`` on the stand-in), bound to the module Ray assigned on first use."""
        if self._worker_device is None:
            worker.bind_to_assigned_hpu()
            self._worker_device = require_backend().torch_device()
        return self._worker_device

    @property
    @override
    def distributed_sampler_kwargs(self) -> dict[str, Any]:
        return {"num_replicas": self.world_size, "rank": self.global_rank}

    @property
    def num_processes(self) -> int:
        """Workers per node: Lightning sees one device per worker, Ray knows how many share the node."""
        return worker.world_shape()[1]

    @property
    def num_nodes(self) -> int:
        return worker.world_shape()[0]

    @num_nodes.setter
    def num_nodes(self, num_nodes: int) -> None:
        pass  # Ray decides: the Trainer's ``num_nodes`` is not needed

    @override
    def setup_environment(self) -> None:
        worker.check_process_group()
        worker.bind_to_assigned_hpu()  # before the bridge would bind the process by its local rank
        super().setup_environment()


class HPURayDDPStrategy(RayWorkerHooks, HPUParallelStrategy, RayDDPStrategy):
    """``RayDDPStrategy`` on HPUs: :class:`~lightning_hpu.HPUParallelStrategy` in a Ray Train worker.

    Takes the arguments of both (``fast_ddp``, DDP keyword arguments, ...). The process group is the one Ray's
    ``TorchTrainer`` makes: pass it ``torch_config=TorchConfig(backend="hccl")``.
    """

    strategy_name = "hpu_ray_ddp"


class HPURayFSDPStrategy(RayWorkerHooks, HPUFSDPStrategy, RayFSDPStrategy):
    """``RayFSDPStrategy`` on HPUs: :class:`~lightning_hpu.HPUFSDPStrategy` in a Ray Train worker."""

    strategy_name = "hpu_ray_fsdp"


class HPURayDeepSpeedStrategy(RayWorkerHooks, HPUDeepSpeedStrategy, RayDeepSpeedStrategy):
    """``RayDeepSpeedStrategy`` on HPUs: :class:`~lightning_hpu.HPUDeepSpeedStrategy` in a Ray Train worker."""

    strategy_name = "hpu_ray_deepspeed"
