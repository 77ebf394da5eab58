"""The sharded HPU strategies in one process: names, precision mapping, and bad input refused before work starts."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from lightning.pytorch import Trainer
from torch import nn

from lightning_hpu import (
    HPUFSDPPrecisionPlugin,
    HPUFSDPStrategy,
    HPUModelParallelPrecisionPlugin,
    HPUModelParallelStrategy,
    HPUPrecisionPlugin,
)
from lightning_hpu.fabric.plugins.fsdp_precision import HPUFSDPPrecision
from lightning_hpu.fabric.strategies import HPUFSDPStrategy as FabricHPUFSDPStrategy
from lightning_hpu.fabric.strategies import HPUModelParallelStrategy as FabricHPUModelParallelStrategy
from lightning_hpu.runtime import HPUConfigurationError, require_backend
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import quiet_trainer


def _trainer(**kwargs: Any) -> Trainer:
    kwargs.setdefault("accelerator", "hpu")
    kwargs.setdefault("devices", 2)
    return quiet_trainer(**kwargs)


@pytest.fixture
def two_devices(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    reset_backend()


# --- names ------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("two_devices")
@pytest.mark.parametrize(
    ("name", "expected", "cpu_offload"),
    [
        ("fsdp", HPUFSDPStrategy, False),
        ("hpu_fsdp", HPUFSDPStrategy, False),
        ("fsdp_cpu_offload", HPUFSDPStrategy, True),
        ("hpu_fsdp_cpu_offload", HPUFSDPStrategy, True),
        ("model_parallel", HPUModelParallelStrategy, None),
        ("hpu_model_parallel", HPUModelParallelStrategy, None),
    ],
)
def test_trainer_names_map_to_the_hpu_sharded_strategies(name: str, expected: type, cpu_offload: bool | None) -> None:
    trainer = _trainer(strategy=name, precision="bf16-mixed")
    assert type(trainer.strategy) is expected
    if cpu_offload is not None:
        assert trainer.strategy.cpu_offload.offload_params is cpu_offload
        assert isinstance(trainer.precision_plugin, HPUFSDPPrecisionPlugin)
    else:
        assert type(trainer.precision_plugin) is HPUModelParallelPrecisionPlugin


@pytest.mark.usefixtures("two_devices")
@pytest.mark.parametrize("name", ["fsdp", "hpu_fsdp", "fsdp_cpu_offload"])
def test_fabric_fsdp_names_map_to_the_hpu_strategy(name: str) -> None:
    fabric = Fabric(accelerator="hpu", devices=2, strategy=name, precision="bf16-mixed")
    assert type(fabric.strategy) is FabricHPUFSDPStrategy
    assert type(fabric.strategy.precision) is HPUFSDPPrecision


@pytest.mark.usefixtures("two_devices")
def test_fabric_model_parallel_takes_a_parallelize_fn() -> None:
    def parallelize(module: nn.Module, mesh: Any) -> nn.Module:
        return module

    fabric = Fabric(accelerator="hpu", devices=2, strategy=FabricHPUModelParallelStrategy(parallelize))
    assert fabric.strategy._parallelize_fn is parallelize


@pytest.mark.usefixtures("two_devices")
def test_fsdp_arguments_keep_their_meaning() -> None:
    strategy = HPUFSDPStrategy(
        auto_wrap_policy={nn.Linear},
        activation_checkpointing_policy={nn.Linear},
        sharding_strategy="SHARD_GRAD_OP",
        state_dict_type="sharded",
        limit_all_gathers=False,
        use_orig_params=True,
        cpu_offload=True,
    )
    trainer = _trainer(strategy=strategy)
    assert trainer.strategy is strategy
    assert strategy.sharding_strategy.name == "SHARD_GRAD_OP"
    assert strategy.kwargs["limit_all_gathers"] is False and "auto_wrap_policy" in strategy.kwargs
    assert strategy._activation_checkpointing_kwargs and strategy._state_dict_type == "sharded"
    assert strategy.cpu_offload.offload_params


# --- precision --------------------------------------------------------------------------------------


@pytest.mark.usefixtures("standin")
@pytest.mark.parametrize("plugin_cls", [HPUFSDPPrecisionPlugin, HPUFSDPPrecision])
@pytest.mark.parametrize(
    ("precision", "compute", "reduce", "autocast"),
    [
        ("32-true", torch.float32, torch.float32, False),
        ("bf16-mixed", torch.bfloat16, torch.bfloat16, True),
        ("bf16", torch.bfloat16, torch.bfloat16, True),
        ("bf16-true", torch.bfloat16, torch.bfloat16, False),
    ],
)
def test_hpu_precision_maps_onto_fsdp_mixed_precision(
    plugin_cls: type, precision: str, compute: torch.dtype, reduce: torch.dtype, autocast: bool
) -> None:
    plugin = plugin_cls(precision)
    config = plugin.mixed_precision_config
    assert (config.param_dtype, config.reduce_dtype) == (compute, reduce)
    device = require_backend().torch_device()
    layer, inputs = nn.Linear(2, 2).to(device), torch.ones(1, 2, device=device)
    with plugin.forward_context():
        # Autocast on the HPU, not on CUDA as Lightning's plugin does.
        out = layer(inputs)
    assert (out.dtype == torch.bfloat16) is autocast


def test_fp16_is_refused_on_first_generation_gaudi(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI")
    reset_backend()
    for plugin_cls in (HPUFSDPPrecisionPlugin, HPUFSDPPrecision):
        with pytest.raises(ValueError, match="fp16 precision needs Gaudi2"):
            plugin_cls("16-mixed")
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    reset_backend()
    with pytest.raises(ValueError, match="fp16 precision needs Gaudi2"):
        _trainer(strategy="fsdp", precision="16-true")


def test_fp8_is_refused_with_fsdp_even_on_gaudi3(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI3")
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    reset_backend()
    refusal = r"^precision='fp8' does not run with FSDP: .* use strategy='hpu_deepspeed'"
    for plugin_cls in (HPUFSDPPrecisionPlugin, HPUFSDPPrecision):
        with pytest.raises(HPUConfigurationError, match=refusal):
            plugin_cls("fp8")
    with pytest.raises(HPUConfigurationError, match=refusal):
        _trainer(strategy="fsdp", precision="fp8")
    with pytest.raises(HPUConfigurationError, match=refusal):
        Fabric(accelerator="hpu", devices=2, strategy="fsdp", precision="fp8")


@pytest.mark.usefixtures("two_devices")
def test_fsdp_strategy_refuses_a_non_fsdp_precision_plugin() -> None:
    with pytest.raises(TypeError, match="HPUFSDPPrecisionPlugin"):
        HPUFSDPStrategy(precision_plugin=HPUPrecisionPlugin("bf16-mixed"))


# --- bad input, refused when the Trainer or Fabric is built -------------------------------------------


@pytest.mark.usefixtures("two_devices")
@pytest.mark.parametrize(
    ("sharding_strategy", "same"), [("HYBRID_SHARD", "FULL_SHARD"), ("_HYBRID_SHARD_ZERO2", "SHARD_GRAD_OP")]
)
def test_multi_node_sharding_on_one_node_warns_that_it_only_shards(sharding_strategy: str, same: str) -> None:
    policy = {"auto_wrap_policy": {nn.Linear}}  # Lightning asks hybrid sharding for a policy or a mesh
    message = f"sharding_strategy='{sharding_strategy}' on one node .* runs as sharding_strategy='{same}'"
    with pytest.warns(UserWarning, match=message):
        trainer = _trainer(strategy=HPUFSDPStrategy(sharding_strategy=sharding_strategy, **policy))
    assert trainer.strategy.num_nodes == 1
    with pytest.warns(UserWarning, match=message):
        Fabric(
            accelerator="hpu", devices=2, strategy=FabricHPUFSDPStrategy(sharding_strategy=sharding_strategy, **policy)
        )
    # Two nodes replicate across them: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        trainer = _trainer(strategy=HPUFSDPStrategy(sharding_strategy=sharding_strategy, **policy), num_nodes=2)
    assert trainer.strategy.num_nodes == 2


@pytest.mark.usefixtures("two_devices")
def test_tensor_parallel_size_must_divide_the_devices() -> None:
    with pytest.raises(ValueError, match="tensor_parallel_size=3 must be a positive divisor of the 2 devices"):
        _trainer(strategy=HPUModelParallelStrategy(tensor_parallel_size=3))
    with pytest.raises(ValueError, match="tensor_parallel_size=3"):
        Fabric(
            accelerator="hpu",
            devices=2,
            strategy=FabricHPUModelParallelStrategy(lambda module, mesh: module, tensor_parallel_size=3),
        )
    assert _trainer(strategy=HPUModelParallelStrategy(tensor_parallel_size=2)).strategy._tensor_parallel_size == 2


@pytest.mark.usefixtures("two_devices")
@pytest.mark.parametrize("name", ["fsdp", "model_parallel"])
def test_lazy_mode_is_refused(name: str, lazy_mode: None) -> None:
    with pytest.raises(RuntimeError, match=f"strategy='hpu_{name}' needs eager mode"):
        _trainer(strategy=name)


@pytest.mark.usefixtures("two_devices")
def test_lazy_mode_is_refused_by_fabric_fsdp(lazy_mode: None) -> None:
    with pytest.raises(RuntimeError, match="needs eager mode"):
        Fabric(accelerator="hpu", devices=2, strategy="fsdp")


@pytest.mark.usefixtures("standin")
@pytest.mark.parametrize("plugin_cls", [HPUFSDPPrecisionPlugin, HPUFSDPPrecision])
def test_fp16_mixed_gets_a_sharded_scaler_on_gaudi2(plugin_cls: type) -> None:
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

    plugin = plugin_cls("16-mixed")
    assert isinstance(plugin.scaler, ShardedGradScaler)
    assert plugin.mixed_precision_config.param_dtype == torch.float16
    device = require_backend().torch_device()
    layer, inputs = nn.Linear(2, 2).to(device), torch.ones(1, 2, device=device)
    with plugin.forward_context():
        assert layer(inputs).dtype == torch.float16


def test_a_model_the_user_wrapped_keeps_its_wrapping_with_warnings(standin: Any) -> None:
    """As Lightning's FSDP strategies: an auto-wrap policy is ignored, with a warning, for a model the user wrapped,
    and parameters still on the meta device are pointed out."""
    from lightning.fabric import Fabric
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import always_wrap_policy, wrap

    from lightning_hpu.fabric.strategies import HPUFSDPStrategy as FabricFSDP

    fabric = Fabric(accelerator="hpu", devices=1, strategy=FabricFSDP(auto_wrap_policy=always_wrap_policy))
    fabric.launch()
    with fabric.init_module():
        model = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU(), wrap(torch.nn.Linear(1, 1)))
    with pytest.warns(UserWarning, match="already wrapped: the policy is ignored"):
        wrapped = fabric.setup(model)
    assert not isinstance(wrapped._forward_module, FullyShardedDataParallel)
    assert isinstance(wrapped._forward_module[2], FullyShardedDataParallel)

    with fabric.init_module(empty_init=True):
        model = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU(), wrap(torch.nn.Linear(1, 1)))
    assert model[0].weight.is_meta
    with pytest.warns(UserWarning, match="still parameters on the meta device"):
        fabric.setup(model)
