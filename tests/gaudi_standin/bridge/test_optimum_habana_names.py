"""More of the bridge's Python API, as optimum-habana calls it: ``utils.experimental.hpu`` and
``detect_recompilation``, the graph helpers (``copy_to``, ``CachedParams``, ``TensorPacker``), ``hpex.kernels``'s
``CTCLoss``/``CustomSoftmax``/``Fp8Ops``, ``hpex.optimizers.distributed.FusedAdamW`` and the ``compile_backend``
configuration module; each against a computation written out here.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401 (the device and torch.ops.hpu)
from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.bridge.habana_frameworks.torch.dynamo.compile_backend import config as compile_config
from gaudi_standin.bridge.habana_frameworks.torch.hpex import kernels
from gaudi_standin.bridge.habana_frameworks.torch.hpex.kernels.Fp8Ops import cast_to_fp8_v2
from gaudi_standin.bridge.habana_frameworks.torch.hpex.optimizers.distributed import FusedAdamW
from gaudi_standin.bridge.habana_frameworks.torch.utils import experimental
from gaudi_standin.bridge.habana_frameworks.torch.utils.experimental import detect_recompilation as dynamicity
from gaudi_standin.graphs import helpers as graph_helpers
from gaudi_standin.graphs.helpers import CachedParams, TensorPacker, copy_to

HPU = torch.device("hpu")


def _config() -> Any:
    """The configuration module, with the methods torch's config modules gain at run time (``patch``)."""
    return compile_config


def test_utils_experimental_serves_hpu_and_detect_recompilation() -> None:
    assert experimental.hpu is hpu
    assert experimental.hpu.device_count() == hpu.device_count() >= 1
    assert experimental.detect_recompilation is dynamicity
    assert (
        experimental.detect_recompilation.detect_recompilation_auto_model
        is experimental.detect_recompilation_auto_model
    )


def test_copy_to_refreshes_static_inputs_in_place() -> None:
    static: dict[str, Any] = {
        "x": torch.zeros(2, device=HPU),
        "rest": [torch.zeros(1, device=HPU), 3],
        "t": (torch.zeros(1),),
    }
    kept = static["x"]
    copy_to(
        static, {"x": torch.ones(2, device=HPU), "rest": [torch.full((1,), 5.0, device=HPU), 4], "t": (torch.ones(1),)}
    )
    assert static["x"] is kept and kept.tolist() == [1.0, 1.0]
    assert static["rest"][0].item() == 5.0 and static["rest"][1] == 3  # a non-tensor value is not copied
    assert static["t"][0].item() == 1.0
    with pytest.raises(AssertionError, match="key 'y'"):
        copy_to({"x": torch.zeros(1)}, {"y": torch.zeros(1)})
    cached = CachedParams([kept], (kept * 2,), graph="g", asynchronous=True)
    assert (cached.graph_inputs[0], cached.graph, cached.out_tinfo_list, cached.asynchronous) == (kept, "g", None, True)


def test_tensor_packer_round_trips_nested_structures() -> None:
    a, b, c = torch.zeros(1), torch.ones(2), torch.full((3,), 2.0)
    nested = {"a": a, "pair": (b, 7), "more": [c, "text"], "none": None}
    tensors, metadata = TensorPacker().pack(nested)
    assert tensors == (a, b, c)
    assert repr(metadata["pair"][0]) == "#1"
    replaced = tuple(t + 1 for t in tensors)
    out = TensorPacker().unpack(replaced, metadata)
    assert out["a"] is replaced[0] and out["pair"][0] is replaced[1] and out["more"][0] is replaced[2]
    assert out["pair"][1] == 7 and out["more"][1] == "text" and out["none"] is None
    assert graph_helpers.__all__ == ["CachedParams", "TensorPacker", "copy_to"]


def test_ctc_loss_matches_torch_in_value_and_gradient() -> None:
    torch.manual_seed(0)
    logits = torch.randn(9, 3, 6)
    targets = torch.randint(1, 6, (3, 4))
    inputs, lengths = torch.tensor([9, 8, 7]), torch.tensor([4, 2, 3])
    for reduction in ("mean", "sum"):
        ours = logits.to(HPU).requires_grad_()
        loss = kernels.CTCLoss.apply(
            ours.log_softmax(-1), targets.to(HPU), inputs.to(HPU), lengths.to(HPU), 0, reduction, False
        )
        loss.backward()
        ref = logits.clone().requires_grad_()
        expected = F.ctc_loss(ref.log_softmax(-1), targets, inputs, lengths, blank=0, reduction=reduction)
        expected.backward()
        torch.testing.assert_close(loss.cpu(), expected.detach())
        assert ours.grad is not None and ref.grad is not None
        torch.testing.assert_close(ours.grad.cpu(), ref.grad)


def test_custom_softmax_is_a_softmax_with_its_gradient() -> None:
    x = torch.randn(3, 5, dtype=torch.bfloat16)
    ours = x.to(HPU).requires_grad_()
    out = kernels.CustomSoftmax.apply(ours, 0)
    ref = x.clone().requires_grad_()
    expected = torch.softmax(ref.float(), dim=-1).bfloat16()
    torch.testing.assert_close(out.cpu(), expected.detach())
    grad = torch.randn(3, 5, dtype=torch.bfloat16)
    out.backward(grad.to(HPU))
    expected.backward(grad)
    assert ours.grad is not None and ref.grad is not None
    torch.testing.assert_close(ours.grad.cpu(), ref.grad, rtol=2e-2, atol=2e-2)


def test_fp8_ops_module_calls_the_op() -> None:
    out, amax = cast_to_fp8_v2(torch.tensor([1.0, -2.0], device=HPU), None, False, True, torch.float8_e4m3fn)
    assert out.dtype == torch.float8_e4m3fn and out.cpu().float().tolist() == [1.0, -2.0] and amax.item() == 2.0


def _adamw_reference(
    w: Tensor, grads: list[Tensor], lr: float, betas: tuple[float, float], eps: float, wd: float
) -> Tensor:
    m, v = torch.zeros_like(w), torch.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        step = lr * math.sqrt(1 - betas[1] ** t) / (1 - betas[0] ** t)
        w = w * (1 - lr * wd) - step * m / (v.sqrt() + eps)
    return w


def test_distributed_fused_adamw_steps_with_handed_gradients() -> None:
    torch.manual_seed(1)
    start = [torch.randn(4), torch.randn(3)]
    grads = [[torch.randn(4), torch.randn(3)] for _ in range(3)]
    params = [p.to(HPU) for p in start]
    optimizer = FusedAdamW(params, lr=0.1, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.05)
    for step_grads in grads:
        optimizer.step([g.to(HPU) for g in step_grads])
    for i, param in enumerate(params):
        expected = _adamw_reference(start[i], [g[i] for g in grads], 0.1, (0.8, 0.9), 1e-6, 0.05)
        torch.testing.assert_close(param.cpu(), expected)
    with pytest.raises(ValueError, match="Gradients length: 1"):
        optimizer.step([None])
    with pytest.raises(ValueError, match="empty parameter list"):
        FusedAdamW([])


def test_compile_backend_configuration_flags() -> None:
    assert compile_config.configuration_flags["keep_input_mutations"] is compile_config.keep_input_mutations
    before = compile_config.inference
    try:
        compile_config.configuration_flags["inference"] = not before
        assert compile_config.inference is (not before)
    finally:
        compile_config.inference = before
    with _config().patch(use_graph_freezing=True):
        assert compile_config.configuration_flags["use_graph_freezing"] is True
    with pytest.raises(AttributeError):
        compile_config.configuration_flags["no_such_flag"] = 1
    served = importlib.import_module("habana_frameworks.torch.dynamo.compile_backend.config")
    assert served is compile_config


def test_keep_input_mutations_setting_reaches_hpu_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    from torch._dynamo.backends import common

    real = common.aot_autograd

    def spy(**kwargs: object) -> object:
        if "keep_inference_input_mutations" in kwargs:  # hpu_backend's call (torch calls it too)
            seen.append(bool(kwargs["keep_inference_input_mutations"]))
        return real(**kwargs)

    monkeypatch.setattr(common, "aot_autograd", spy)
    for keep in (False, True):
        torch._dynamo.reset()
        with _config().patch(keep_input_mutations=keep):
            torch.compile(lambda x: x.add_(1), backend="hpu_backend")(torch.zeros(2, device=HPU))
        assert seen[-1] is keep  # the last call: hpu_backend's, for this compilation


@pytest.mark.usefixtures("standin")
def test_the_memory_module_reports_the_emulated_hbm() -> None:
    """``habana_frameworks.torch.hpu.memory``, the bridge's module of the figures ``hpu`` exposes."""
    memory = importlib.import_module("habana_frameworks.torch.hpu.memory")
    assert hpu.memory is memory and memory.memory_allocated is hpu.memory_allocated
    before = memory.memory_allocated()
    tensor = torch.empty(1000, device=HPU)  # 4,000 bytes
    assert memory.memory_allocated() - before == 4000 and memory.max_memory_allocated() >= before + 4000
    limit = memory.memory_stats()["Limit"]
    assert memory.mem_get_info() == (limit - memory.memory_allocated(), limit)
    with pytest.warns(FutureWarning, match="renamed to torch.hpu.memory_reserved"):
        assert memory.memory_cached() == limit == memory.memory_reserved()
    with pytest.warns(FutureWarning, match="renamed to torch.hpu.max_memory_reserved"):
        assert memory.max_memory_cached() == limit
    del tensor
    assert memory.memory_allocated() == before


@pytest.mark.usefixtures("standin")
def test_the_optim_output_sif_switches_change_no_result() -> None:
    """``hpu.enable_optim_output_sif``/``disable_optim_output_sif``: the graph compiler's choice of output-shape
    inference for dynamic graphs; a compiled function gives the same values either way, for new sizes too."""

    def scaled_rows(x: Tensor) -> Tensor:
        return torch.softmax(x * 2.0, dim=-1).sum(dim=0)

    compiled = torch.compile(scaled_rows, backend="hpu_backend", dynamic=True)
    hpu.enable_optim_output_sif()
    try:
        for rows in (3, 5):
            x = torch.randn(rows, 4)
            assert torch.allclose(compiled(x.to(HPU)).cpu(), scaled_rows(x))
    finally:
        hpu.disable_optim_output_sif()
    x = torch.randn(7, 4)
    assert torch.allclose(compiled(x.to(HPU)).cpu(), scaled_rows(x))
