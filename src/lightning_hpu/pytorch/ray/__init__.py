"""Ray Train on HPUs: the HPU twins of Ray's Lightning strategies.

``ray.train.lightning``'s ``RayDDPStrategy``, ``RayFSDPStrategy`` and ``RayDeepSpeedStrategy`` given to a
``Trainer(accelerator="hpu")`` are rebuilt, with the arguments they were given, as :class:`HPURayDDPStrategy`,
:class:`HPURayFSDPStrategy` and :class:`HPURayDeepSpeedStrategy`: the package's HPU strategies (HCCL rules, device
binding, precision, :class:`~lightning_hpu.HPUCheckpointIO`) that are also Ray's classes, so ``prepare_trainer``
accepts them. Each Ray worker drives the HPU that Ray assigned to it (``resources_per_worker={"HPU": 1}``).
They can also be passed directly. Importing this package imports Ray; ``import lightning_hpu`` does not.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("ray") is None:
    raise ImportError("lightning_hpu.pytorch.ray needs Ray Train: `pip install 'lightning-hpu[ray]'`.")

from lightning_hpu.pytorch.ray.strategies import HPURayDDPStrategy, HPURayDeepSpeedStrategy, HPURayFSDPStrategy

__all__ = ["HPURayDDPStrategy", "HPURayDeepSpeedStrategy", "HPURayFSDPStrategy"]
