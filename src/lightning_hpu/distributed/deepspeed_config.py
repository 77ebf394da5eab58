"""DeepSpeed on HPU without Lightning's Trainer: configuration rules and setup shared by the Trainer and Fabric.

Lightning's DeepSpeed strategies (Trainer and Fabric) already drive ZeRO 1-3, offload, bf16, activation checkpointing
and DeepSpeed's checkpoint format. What stops them on a Gaudi is small and is here, once: DeepSpeed's accelerator
(``DS_ACCELERATOR``: ``hpu`` on a Gaudi, ``cpu`` on the stand-in), the device count, the checks of the configuration
against the device before any work (fp16 and tensor parallelism need Gaudi2, NVMe offload needs a directory, the
inference dtype must fit the precision), HCCL prepared before DeepSpeed creates its process group, and
``deepspeed.initialize`` on the process's HPU. The strategies are :mod:`lightning_hpu.pytorch.strategies.deepspeed` and
:mod:`lightning_hpu.fabric.strategies.deepspeed`.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout
from lightning.fabric.utilities.distributed import _distributed_is_initialized
from lightning.fabric.utilities.rank_zero import rank_zero_info, rank_zero_warn
from torch.nn import Module
from torch.optim import Optimizer

from lightning_hpu.device.generation_rules import check_fp16_supported
from lightning_hpu.device.selection import HPUSelection
from lightning_hpu.distributed import elastic
from lightning_hpu.distributed.collectives import initialize_hccl
from lightning_hpu.precision.names import lookup
from lightning_hpu.runtime import bridge_emulated, generation_rank, require_backend
from lightning_hpu.runtime.settings import variable_set

if TYPE_CHECKING:
    import deepspeed

#: The environment variable DeepSpeed reads, once, to choose its accelerator.
DS_ACCELERATOR_ENV = "DS_ACCELERATOR"

#: Inference settings of ``deepspeed.init_inference`` this strategy accepts as arguments or config keys.
INFERENCE_KEYS = (
    "tensor_parallel",
    "dtype",
    "replace_with_kernel_inject",
    "injection_policy",
    "enable_cuda_graph",
    "replace_method",
)


def _input_dtype(precision: str) -> torch.dtype | None:
    """The dtype Lightning's DeepSpeed precision casts the inputs to: the precision's compute dtype."""
    meaning = lookup(precision)
    return meaning.compute if meaning is not None else None


def mixed_inference_dtype(inference_config: Mapping[str, Any], precision: str) -> torch.dtype | None:
    """The autocast dtype that reconciles fp32 inference weights with a mixed precision, ``None`` if none is needed.

    ``deepspeed.init_inference(dtype=torch.float)`` keeps the weights in fp32 while a ``"-mixed"`` precision feeds
    bf16 (fp16) inputs; as lightning-habana did on a Gaudi, the predict steps then run under HPU autocast in the
    precision's dtype: fp32 weights, low-precision compute, which is what the mixed precision means. Any other
    weight dtype that differs from the inputs' cannot work together and is refused by :func:`check_inference_dtype`.
    """
    meaning = lookup(precision)
    if inference_config.get("dtype") == torch.float32 and meaning is not None and meaning.mixed:
        return meaning.compute
    return None


def check_inference_dtype(inference_config: Mapping[str, Any], precision: str) -> None:
    """Refuse an inference ``dtype`` that the precision's inputs cannot be multiplied with, naming the fix."""
    dtype = inference_config.get("dtype")
    inputs = _input_dtype(precision)
    if dtype is None or inputs is None or dtype == inputs or mixed_inference_dtype(inference_config, precision):
        return
    raise ValueError(
        f"DeepSpeed inference `dtype={dtype}` cannot run with precision={precision!r}, which feeds {inputs} inputs"
        f" to the {dtype} weights: pass dtype={inputs} (or leave dtype out), or the precision of {dtype}."
    )


def select_deepspeed_accelerator() -> str:
    """Point DeepSpeed at the backend's accelerator (``DS_ACCELERATOR``) and check that DeepSpeed agrees.

    DeepSpeed reads ``DS_ACCELERATOR`` once, on the first ``get_accelerator()`` (which importing it may do), so the
    variable is set while DeepSpeed is imported and asked, and only then: each rank selects for itself, and processes
    the program starts later inherit nothing of it. (On the CPU stand-in, the stand-in
    gives DeepSpeed its own HPU accelerator, as the Gaudi software stack gives DeepSpeed its own on a Gaudi.)
    """
    if importlib.util.find_spec("deepspeed") is None:
        raise ImportError(
            "HPUDeepSpeedStrategy needs DeepSpeed: `pip install 'lightning-hpu[deepspeed]'` (on a Gaudi, install the"
            " DeepSpeed fork of your Intel Gaudi software release)."
        )
    backend = require_backend()
    wanted = backend.deepspeed_accelerator
    given = os.environ.get(DS_ACCELERATOR_ENV, wanted)
    if given != wanted:
        raise ValueError(
            f"{DS_ACCELERATOR_ENV}={given!r} cannot drive an HPU: unset it, or set {DS_ACCELERATOR_ENV}={wanted}."
        )
    with variable_set(DS_ACCELERATOR_ENV, wanted):  # read once, here: not left for the processes started later
        from deepspeed.accelerator import get_accelerator

        _forget_destroyed_deepspeed_groups()
        chosen = get_accelerator().device_name()
    if chosen != "hpu":
        raise RuntimeError(
            f"DeepSpeed already chose its {chosen!r} accelerator before lightning-hpu could select {wanted!r}:"
            f" set {DS_ACCELERATOR_ENV}={wanted} before DeepSpeed is imported."
        )
    return chosen


def _forget_destroyed_deepspeed_groups() -> None:
    """Drop DeepSpeed's cached process groups when the process group they belong to was destroyed.

    DeepSpeed keeps its groups (a clone of the world group, ...) in module globals across engines. A process that
    destroyed its default group and made a new one (a second ``fit`` in a notebook, a Fabric run that cleaned up)
    would otherwise hand DeepSpeed's next engine a group that no longer exists.
    """
    import torch.distributed as dist
    from deepspeed.utils import groups

    world = getattr(groups, "_WORLD_GROUP", None)
    release = getattr(groups, "_release_process_group_references", None)
    if world is None or release is None:
        return
    if not dist.is_initialized() or world not in dist.distributed_c10d._world.pg_map:
        release(None)


def partition_activations_for_cpu_checkpointing(config: dict[str, Any]) -> None:
    """Turn on ``partition_activations`` where ``cpu_checkpointing`` asks for it.

    DeepSpeed offloads only partitioned activations: upstream DeepSpeed fails in backward with CPU checkpointing
    alone, which the Lightning HPU docs' activation checkpointing example uses. With one model-parallel rank the
    partition is the whole activation, so this changes nothing but the copy to the host.
    """
    checkpointing = config.get("activation_checkpointing") or {}
    if checkpointing.get("cpu_checkpointing") and not checkpointing.get("partition_activations"):
        rank_zero_info("DeepSpeed CPU checkpointing offloads partitioned activations: `partition_activations=True`.")
        checkpointing["partition_activations"] = True


def _count_hpu_devices(parallel_devices: list[torch.device] | int | None) -> int | None:
    """The number of HPUs in ``parallel_devices``: a count, or a list of (unindexed) ``hpu`` devices."""
    if parallel_devices is None or isinstance(parallel_devices, int):
        return parallel_devices
    wrong = [str(device) for device in parallel_devices if torch.device(device).type != "hpu"]
    if wrong:
        raise ValueError(
            f"`parallel_devices` must be HPUs, got {', '.join(wrong)}: pass `[torch.device('hpu')] * n` or `n`."
        )
    return len(parallel_devices)


def _check_nvme_offload(zero: Mapping[str, Any]) -> None:
    """NVMe offload needs an existing directory; with ZeRO-3 the Intel Gaudi software has not verified it."""
    nvme = [
        section
        for section in ("offload_param", "offload_optimizer")
        if (zero.get(section) or {}).get("device") == "nvme"
    ]
    for section in nvme:
        nvme_path = zero[section].get("nvme_path")
        if not nvme_path or not os.path.isdir(nvme_path):
            raise ValueError(
                f"DeepSpeed NVMe offload ({section}) needs an existing directory, but `nvme_path={nvme_path!r}`"
                " does not exist: pass `nvme_path=` a directory on a local NVMe drive."
            )
    if nvme and zero.get("stage") == 3:
        rank_zero_warn(
            "NVMe offload with DeepSpeed ZeRO stage 3 is not verified on HPU by the Intel Gaudi software;"
            " offload to the host instead (`offload_params_device='cpu'`) if it misbehaves."
        )


#: Lightning's DeepSpeed preset names (as suffixes of the HPU strategy's name) and their settings.
DEEPSPEED_PRESETS: dict[str, dict[str, Any]] = {
    "": {},
    "_stage_1": {"stage": 1},
    "_stage_1_offload": {"stage": 1, "offload_optimizer": True},
    "_stage_2": {"stage": 2},
    "_stage_2_offload": {"stage": 2, "offload_optimizer": True},
    "_stage_3": {"stage": 3},
    "_stage_3_offload": {"stage": 3, "offload_optimizer": True, "offload_parameters": True},
    "_stage_3_offload_nvme": {
        "stage": 3,
        "offload_optimizer": True,
        "offload_parameters": True,
        "remote_device": "nvme",
        "offload_params_device": "nvme",
        "offload_optimizer_device": "nvme",
    },
}


def register_deepspeed_presets(strategy_cls: type, strategy_registry: Any) -> None:
    """Register ``strategy_cls`` as ``hpu_deepspeed`` and under each preset name (Trainer or Fabric registry)."""
    name = strategy_cls.strategy_name  # type: ignore[attr-defined]
    for suffix, preset in DEEPSPEED_PRESETS.items():
        strategy_registry.register(
            name + suffix, strategy_cls, description=f"{strategy_cls.__name__}: DeepSpeed on HPU {preset}", **preset
        )


def hpu_deepspeed_devices(parallel_devices: list[torch.device] | int | None) -> tuple[int | None, list[Any] | None]:
    """Set up DeepSpeed for the backend, and return the HPU count asked for and the devices to give Lightning.

    Lightning's connector assigns each process its HPU from ``devices=`` (the accelerator knows which module each
    local rank drives); the count asked for here is checked against it in :func:`check_deepspeed_for_device`.
    """
    select_deepspeed_accelerator()
    return _count_hpu_devices(parallel_devices), None


def check_deepspeed_for_device(
    config: Mapping[str, Any],
    precision: str,
    requested_devices: int | None,
    used_devices: int,
    inference_config: Mapping[str, Any],
    owner: str,
) -> None:
    """Refuse what the HPU cannot run, and warn where the Intel Gaudi software lists a limitation.

    ``owner`` (``"Trainer"`` or ``"Fabric"``) names the object whose ``devices=`` the messages point to.
    """
    if requested_devices is not None and requested_devices != used_devices:
        raise ValueError(
            f"`HPUDeepSpeedStrategy(parallel_devices=...)` names {requested_devices} HPUs but the {owner} uses"
            f" {used_devices}: pass `{owner}(devices={requested_devices})`."
        )
    generation = generation_rank(require_backend().device_name())
    fp16_config = (config.get("fp16") or {}).get("enabled", False)
    meaning = lookup(precision)
    if (meaning is not None and meaning.fp16) or fp16_config:
        check_fp16_supported()
    if inference_config.get("dtype") == torch.float16:
        check_fp16_supported()
    check_inference_dtype(inference_config, precision)
    tp_size = (inference_config.get("tensor_parallel") or {}).get("tp_size", 1)
    if tp_size > 1 and generation < 2:
        raise ValueError(
            f"DeepSpeed tensor parallelism (`tensor_parallel={{'tp_size': {tp_size}}}`) needs Gaudi2 or later;"
            " on this first-generation Gaudi use `tp_size=1`."
        )
    zero = config.get("zero_optimization") or {}
    if zero.get("stage") == 3 and generation == 2:
        rank_zero_warn(_zero3_on_gaudi2_caveat(standin=bridge_emulated()))
    _check_nvme_offload(zero)


def _zero3_on_gaudi2_caveat(standin: bool) -> str:
    """The Gaudi2 software caveat for ZeRO-3; on the stand-in it says it is about the real Gaudi2, not this run."""
    caveat = (
        "DeepSpeed ZeRO stage 3 on Gaudi2 needs an Intel Gaudi software release that supports it (older releases"
        " do not); if DeepSpeed fails, use stage 2 or update the Gaudi software and DeepSpeed fork."
    )
    if standin:
        return f"The CPU stand-in emulates a Gaudi2 and runs ZeRO stage 3, but on a real Gaudi2: {caveat}"
    return caveat


def prepare_hccl_for_deepspeed(
    world_size: int,
    global_rank: int,
    local_rank: int,
    timeout: timedelta | None = None,
    selection: HPUSelection | None = None,
) -> None:
    """Prepare HCCL before DeepSpeed creates its process group (unless a group exists already), binding this process
    to the HPU its local rank has in ``selection`` (the strategy's accelerator's ``devices``).

    Under ``torchrun``, the group is made here, on this attempt's keys of the agent's store
    (:mod:`lightning_hpu.distributed.elastic`); DeepSpeed then adopts it.
    """
    if _distributed_is_initialized():
        return
    backend = initialize_hccl(world_size, global_rank, local_rank, selection)
    store = elastic.attempt_store(timeout)
    if store is not None:
        dist.init_process_group(
            backend, store=store, rank=global_rank, world_size=world_size, timeout=timeout or default_pg_timeout
        )


def initialize_engine(
    model: Module,
    config: Mapping[str, Any],
    local_rank: int,
    root_device: torch.device | None,
    optimizer: Optimizer | None = None,
    lr_scheduler: Any = None,
) -> tuple[deepspeed.DeepSpeedEngine, Any, Any]:
    """``deepspeed.initialize`` on this process's HPU: DeepSpeed binds its accelerator to ``device_rank``.

    Returns the engine, DeepSpeed's optimizer and its scheduler. Without ZeRO-3 (whose parameters are partitioned
    placeholders that DeepSpeed places), the model is moved to ``root_device`` first.
    """
    import deepspeed

    if root_device is not None:
        model.to(root_device)
    engine, deepspeed_optimizer, _, scheduler = deepspeed.initialize(
        args=argparse.Namespace(device_rank=local_rank),
        config=dict(config),
        model=model,
        model_parameters=[p for p in model.parameters() if p.requires_grad],
        optimizer=optimizer,
        lr_scheduler=lr_scheduler,
        dist_init_required=False,
    )
    return engine, deepspeed_optimizer, scheduler


def inference_dtype(precision: str) -> torch.dtype:
    """The weight dtype of ``deepspeed.init_inference`` when none is given: the precision's compute dtype (fp32 for a
    name it does not know)."""
    return _input_dtype(precision) or torch.float32


def split_inference_config(config: dict[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """Take the settings of ``deepspeed.init_inference`` out of the training ``config``; the arguments ``given``
    (``None`` meaning not given) win. Inference settings do not belong to the training engine (``dtype`` is not even
    JSON)."""
    inference = {key: config.pop(key) for key in INFERENCE_KEYS if key in config}
    inference.update({key: value for key, value in given.items() if value is not None})
    return inference
