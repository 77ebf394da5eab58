"""The HPU strategies and profiler take Lightning's arguments as Lightning does, with their own.

Their constructors declare Lightning's parameters in Lightning's order beside their own (so that ``help()`` and
LightningCLI see them: tests/lightning_hpu/test_public_signatures.py), so these tests check what that must keep:
LightningCLI (jsonargparse) offers every Lightning parameter with ours, values reach Lightning by keyword and by
position, and fast DDP tells Lightning's own arguments from DDP's.
"""

from __future__ import annotations

import inspect
from datetime import timedelta

import pytest
import torch
from jsonargparse import ArgumentParser
from lightning.fabric import strategies as fabric_strategies
from lightning.pytorch import profilers as lightning_profilers
from lightning.pytorch import strategies as trainer_strategies

from lightning_hpu import HPUModelParallelStrategy, HPUParallelStrategy, HPUProfiler, SingleHPUStrategy
from lightning_hpu.fabric import strategies as hpu_fabric

CASES = [
    (HPUParallelStrategy, trainer_strategies.DDPStrategy, {"fast_ddp", "reduce_dtype", "last_batch"}),
    (hpu_fabric.HPUParallelStrategy, fabric_strategies.DDPStrategy, {"fast_ddp", "reduce_dtype"}),
    (SingleHPUStrategy, trainer_strategies.SingleDeviceStrategy, {"pipeline_forward_backward", "last_batch"}),
    (hpu_fabric.SingleHPUStrategy, fabric_strategies.SingleDeviceStrategy, {"pipeline_forward_backward"}),
    (HPUModelParallelStrategy, trainer_strategies.ModelParallelStrategy, {"context_parallel_size"}),
    (hpu_fabric.HPUModelParallelStrategy, fabric_strategies.ModelParallelStrategy, {"context_parallel_size"}),
    (HPUProfiler, lightning_profilers.PyTorchProfiler, {"training_steps", "evaluation_steps"}),
]


def _named_parameters(cls: type) -> set[str]:
    return {
        name
        for name, parameter in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    }


@pytest.mark.parametrize(("ours", "lightnings", "own"), CASES, ids=lambda value: getattr(value, "__module__", ""))
def test_the_cli_offers_lightnings_parameters_and_ours(ours: type, lightnings: type, own: set[str]) -> None:
    parser = ArgumentParser()
    parser.add_class_arguments(ours, "init")
    offered = {action.dest.split(".", 1)[1] for action in parser._actions if action.dest.startswith("init.")}
    offered = {name.removesuffix(".help") for name in offered}
    assert _named_parameters(lightnings) - {"emit_nvtx"} <= offered  # NVTX is CUDA's: HPUProfiler refuses it
    assert own <= offered


def test_lightnings_arguments_reach_lightning_by_keyword_and_by_position() -> None:
    timeout = timedelta(seconds=77)
    strategy = HPUParallelStrategy(None, process_group_backend="gloo", timeout=timeout, bucket_cap_mb=10)
    assert (strategy._process_group_backend, strategy._timeout) == ("gloo", timeout)
    assert strategy._ddp_kwargs == {"bucket_cap_mb": 10, "gradient_as_bucket_view": True}
    fabric_strategy = hpu_fabric.HPUParallelStrategy(timeout=timeout, static_graph=True)
    assert fabric_strategy._timeout == timeout and fabric_strategy._ddp_kwargs["static_graph"] is True
    assert SingleHPUStrategy("cpu", last_batch="drop").root_device.type == "cpu"
    assert HPUModelParallelStrategy(2, 1, context_parallel_size=2)._data_parallel_size == 2
    assert (
        hpu_fabric.HPUModelParallelStrategy(tensor_parallel_size=1, context_parallel_size=2)._context_parallel_size == 2
    )
    profiler = HPUProfiler("out", "report", row_limit=5, record_shapes=True)
    assert (profiler.dirpath, profiler.filename, profiler._row_limit) == ("out", "report", 5)
    assert profiler._profiler_kwargs["record_shapes"] is True


def test_fast_ddp_takes_lightnings_arguments_and_refuses_only_ddps() -> None:
    strategy = HPUParallelStrategy(fast_ddp=True, timeout=timedelta(seconds=5), process_group_backend="gloo")
    assert strategy.fast_ddp and strategy._ddp_kwargs == {} and strategy._process_group_backend == "gloo"
    with pytest.raises(ValueError, match=r"fast_ddp=True\) does not use DistributedDataParallel, so static_graph"):
        hpu_fabric.HPUParallelStrategy(fast_ddp=True, static_graph=True)
    with pytest.raises(ValueError, match=r"so model_averaging_period would have no effect"):
        HPUParallelStrategy(fast_ddp=True, model_averaging_period=4)


def test_ddp_keywords_are_checked_by_name_and_reduce_dtype_is_taken_by_name() -> None:
    strategy = HPUParallelStrategy(fast_ddp=True, bucket_cap_mb=None, reduce_dtype="bfloat16")
    assert strategy._ddp_kwargs == {} and strategy.reduce_dtype is torch.bfloat16
    assert HPUParallelStrategy(init_sync=False)._ddp_kwargs["init_sync"] is False  # any DDP keyword, as given
    with pytest.raises(TypeError, match=r"HPUParallelStrategy\(static_graphs=...\): 'static_graphs' is an argument"):
        hpu_fabric.HPUParallelStrategy(static_graphs=True)
    with pytest.raises(ValueError, match=r"reduce_dtype='bf16' is not a torch dtype"):
        HPUParallelStrategy(fast_ddp=True, reduce_dtype="bf16")  # type: ignore[arg-type]
