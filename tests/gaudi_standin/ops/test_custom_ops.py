"""``torch.ops.hpu``: the bridge's custom ops on ``hpu`` tensors, each against a computation written out here.

Importing the emulated ``habana_frameworks.torch`` defines them (as loading the bridge does); the rotary embedding
also runs under autograd and under ``torch.compile(backend="hpu_backend")`` (through the ops' fake functions).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401 (defines torch.ops.hpu)
from tests.helpers.dynamo import reset_dynamo

HPU = torch.device("hpu")


def _h(t: Tensor) -> Tensor:
    return t.to(HPU)


def test_the_ops_have_the_bridges_schemas() -> None:
    schema = str(torch.ops.hpu.mixture_of_experts.default._schema)
    assert "Tensor[] w1, Tensor[] w2, Tensor[] w3, bool permuted_weights, str activation" in schema
    assert "int experts_min, int experts_max" in schema
    assert str(torch.ops.hpu.rotary_pos_embedding.default._schema).startswith(
        "hpu::rotary_pos_embedding(Tensor input, Tensor sin, Tensor cos, Tensor? position_ids, int offset, int mode)"
    )
    for name, overloads in {
        "cast_to_fp8_v2": {"default", "scalar", "scalar_list"},
        "fp8_gemm_v2": {"default", "scalar", "scalar_list"},
        "softmax_fp8": {"default", "Scalar_scales", "Scalar"},
        "mixture_of_experts": {"default", "fused_weights", "fp8_measurement", "fp8_measurement_fused_weights"},
    }.items():
        assert overloads <= set(getattr(torch.ops.hpu, name).overloads())


def _moe_reference(
    x: Tensor, routing: Tensor, weights: Tensor, w1: list[Tensor], w2: list[Tensor], w3: list[Tensor]
) -> Tensor:
    out = torch.zeros_like(x)
    for token in range(x.shape[0]):
        for slot in range(routing.shape[1]):
            e = int(routing[token, slot])
            h = F.silu(x[token] @ w1[e].t()) * (x[token] @ w2[e].t())
            out[token] += weights[token, slot] * (h @ w3[e].t())
    return out


def test_mixture_of_experts_routes_each_token_through_its_weighted_experts() -> None:
    torch.manual_seed(0)
    tokens, hidden, inner, experts = 5, 8, 6, 4
    x = torch.randn(tokens, hidden)
    routing = torch.tensor([[0, 1], [2, 3], [1, 3], [0, 2], [3, 0]])
    weights = torch.softmax(torch.randn(tokens, 2), dim=-1)
    w1 = [torch.randn(inner, hidden) for _ in range(experts)]  # nn.Linear layout [out, in]: permuted_weights=True
    w2 = [torch.randn(inner, hidden) for _ in range(experts)]
    w3 = [torch.randn(hidden, inner) for _ in range(experts)]
    out = torch.ops.hpu.mixture_of_experts(
        _h(x),
        _h(routing),
        _h(weights),
        [_h(w) for w in w1],
        [_h(w) for w in w2],
        [_h(w) for w in w3],
        True,
        "silu",
        0,
        experts - 1,
    )
    assert out.device.type == "hpu"
    expected = _moe_reference(x, routing, weights, w1, w2, w3)
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-4)
    fused = torch.ops.hpu.mixture_of_experts.fused_weights(
        _h(x),
        _h(routing),
        _h(weights),
        [_h(torch.cat((a, b))) for a, b in zip(w1, w2, strict=False)],
        [_h(w) for w in w3],
        True,
        "silu",
        0,
        experts - 1,
    )
    torch.testing.assert_close(fused.cpu(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("permuted", [False, True])
def test_mixture_of_experts_fp8_measurement_returns_each_experts_amax(fused: bool, permuted: bool) -> None:
    """The overloads fp8 calibration calls: the output, and per expert the largest ``gelu(x @ W1) * (x @ W2)`` over
    every token (the bridge's test's reference, ``calculate_experts_amax``), called through the packet as the bridge's
    test does (the schema picks the overload)."""
    torch.manual_seed(1)
    tokens, hidden, inner, experts = 6, 8, 10, 3
    x = torch.randn(tokens, hidden)
    weights, routing = torch.topk(torch.randn(tokens, experts), 2)
    w1 = [torch.randn(hidden, inner) for _ in range(experts)]  # [in, out]; permuted: nn.Linear's [out, in]
    w2 = [torch.randn(hidden, inner) for _ in range(experts)]
    w3 = [torch.randn(inner, hidden) for _ in range(experts)]
    amax = torch.stack([(F.gelu(x @ a) * (x @ b)).amax() for a, b in zip(w1, w2, strict=True)])
    layout = (lambda w: _h(w.t().contiguous())) if permuted else _h
    given = (
        [layout(torch.cat((a, b), dim=1)) for a, b in zip(w1, w2, strict=True)]
        if fused
        else [[layout(w) for w in w1], [layout(w) for w in w2]]
    )
    weight_lists = (given,) if fused else tuple(given)
    out, measured = torch.ops.hpu.mixture_of_experts(
        _h(x), _h(routing), _h(weights), *weight_lists, [layout(w) for w in w3], permuted, "gelu", 0, experts - 1, True
    )
    assert measured.dtype == torch.float32 and measured.shape == (experts,)
    torch.testing.assert_close(measured.cpu(), amax, rtol=1e-5, atol=1e-5)
    expected = torch.zeros(tokens, hidden)
    for e in range(experts):
        per_token = (weights * (routing == e)).sum(-1, keepdim=True)
        expected += ((F.gelu(x @ w1[e]) * (x @ w2[e])) @ w3[e]) * per_token
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-4)


def _rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def test_rotary_pos_embedding_forward_backward_and_compiled() -> None:
    torch.manual_seed(1)
    x = torch.randn(2, 3, 4, 8)
    angles = torch.randn(1, 1, 4, 8)
    cos, sin = angles.cos(), angles.sin()
    ours = _h(x).requires_grad_()
    out = torch.ops.hpu.rotary_pos_embedding(ours, _h(sin), _h(cos), None, 0, 0)
    ref_x = x.clone().requires_grad_()
    expected = ref_x * cos + _rotate_half(ref_x) * sin
    torch.testing.assert_close(out.cpu(), expected.detach())
    grad = torch.randn_like(x)
    out.backward(_h(grad))
    expected.backward(grad)
    assert ours.grad is not None and ref_x.grad is not None
    torch.testing.assert_close(ours.grad.cpu(), ref_x.grad)
    backward = torch.ops.hpu.rotary_pos_embedding_backward(_h(grad), _h(sin), _h(cos), None, 0, 0)
    torch.testing.assert_close(backward.cpu(), ref_x.grad)

    def rope(t: Tensor) -> Tensor:
        return torch.ops.hpu.rotary_pos_embedding(t, _h(sin), _h(cos), None, 0, 0) * 2

    compiled = torch.compile(rope, backend="hpu_backend", fullgraph=True)
    torch.testing.assert_close(compiled(_h(x)).cpu(), 2 * expected.detach())


def test_rotary_pos_embedding_pairwise() -> None:
    x, angles = torch.randn(2, 4, 6), torch.randn(4, 6)
    pairs = torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)
    out = torch.ops.hpu.rotary_pos_embedding(_h(x), _h(angles.sin()), _h(angles.cos()), None, 0, 1)
    torch.testing.assert_close(out.cpu(), x * angles.cos() + pairs * angles.sin())


def test_fp8_casts_and_gemm() -> None:
    x = torch.tensor([[1.0, -3.0, 1000.0], [0.5, 2.0, -0.25]])
    out, amax = torch.ops.hpu.cast_to_fp8_v2(_h(x), _h(torch.tensor(2.0)), False, True, torch.float8_e4m3fn)
    assert out.dtype == torch.float8_e4m3fn and amax.item() == 1000.0
    # 2000 saturates at e4m3's largest finite value (448) instead of becoming NaN.
    assert out.cpu().float().tolist() == [[2.0, -6.0, 448.0], [1.0, 4.0, -0.5]]
    none_amax = torch.ops.hpu.cast_to_fp8_v2.scalar(_h(x), 1.0, False, False, torch.float8_e5m2)[1]
    assert none_amax.shape == (0,)
    back = torch.ops.hpu.cast_from_fp8(out, _h(torch.tensor(0.5)), torch.bfloat16)
    assert back.dtype == torch.bfloat16 and back.cpu().float().tolist() == [[1.0, -3.0, 224.0], [0.5, 2.0, -0.25]]

    a, b = torch.randn(3, 4), torch.randn(5, 4)
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    bias, d = torch.randn(5), torch.randn(3, 5)
    got = torch.ops.hpu.fp8_gemm_v2(
        _h(a8), False, _h(b8), True, _h(d), torch.float32, _h(torch.tensor(0.5)), _h(torch.tensor(4.0)), _h(bias), True
    )
    expected = (a8.float() * 0.5) @ (b8.float() * 4.0).t() + bias + d
    torch.testing.assert_close(got.cpu(), expected)
    scalar = torch.ops.hpu.fp8_gemm_v2.scalar(_h(a8), False, _h(b8), True, None, torch.bfloat16, 0.5, 4.0)
    torch.testing.assert_close(scalar.cpu(), ((a8.float() * 0.5) @ (b8.float() * 4.0).t()).bfloat16())


def test_softmax_fp8() -> None:
    x, bias = torch.randn(2, 5), torch.randn(2, 5)
    out = torch.ops.hpu.softmax_fp8(_h(x), -1, None, None, _h(torch.tensor(0.25)), _h(bias))
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.cpu(), torch.softmax(x * 0.25 + bias, dim=-1).bfloat16())
    quantized = torch.ops.hpu.softmax_fp8.Scalar_scales(_h(x), -1, 1.0, 1.0 / 448.0)
    expected = (torch.softmax(x.to(torch.float8_e4m3fn).float(), dim=-1) * 448.0).to(torch.float8_e4m3fn)
    assert quantized.dtype == torch.float8_e4m3fn
    torch.testing.assert_close(quantized.cpu().float(), expected.float())


def test_convert_from_uint4_unpacks_low_nibbles_first() -> None:
    torch.manual_seed(2)
    rows, cols, groups = 4, 16, 2
    values, zeros = torch.randint(0, 16, (rows, cols)), torch.randint(0, 16, (groups, cols))
    scales = torch.rand(groups, cols)

    def pack(v: Tensor) -> Tensor:
        packed = torch.zeros(v.shape[0], v.shape[1] // 8, dtype=torch.int64)
        for j in range(v.shape[1]):
            packed[:, j // 8] |= v[:, j] << (4 * (j % 8))
        return torch.where(packed >= 2**31, packed - 2**32, packed).to(torch.int32)

    out = torch.ops.hpu.convert_from_uint4(_h(pack(values)), _h(scales), _h(pack(zeros)), torch.float32)
    expected = torch.empty(rows, cols)
    for r in range(rows):
        g = r // (rows // groups)
        expected[r] = (values[r] - zeros[g]).float() * scales[g]
    torch.testing.assert_close(out.cpu(), expected)


def test_lamb_phases_do_one_lamb_step() -> None:
    torch.manual_seed(3)
    w, g = torch.randn(6), torch.randn(6) * 10
    beta1, beta2, eps, wd, lr, max_norm = 0.9, 0.999, 1e-6, 0.01, 0.1, 1.0
    clip = torch.ops.hpu.optimizer_lamb_fused_norm([_h(g)], max_norm)
    assert clip.shape == (1,)
    torch.testing.assert_close(clip.cpu(), g.norm().reshape(1) / max_norm)
    weight, m, v = _h(w.clone()), _h(torch.zeros(6)), _h(torch.zeros(6))
    wn, an, step = _h(torch.empty(1)), _h(torch.empty(1)), _h(torch.empty(6))
    bc1, bc2 = _h(torch.tensor(1 - beta1)), _h(torch.tensor(1 - beta2))
    torch.ops.hpu.optimizer_lamb_phase1(
        [_h(g)], [weight], [m], [v], [wn], [an], [step], clip, 1, beta1, beta2, eps, bc1, bc2, wd
    )
    torch.ops.hpu.optimizer_lamb_phase2([weight], [an], [wn], [step], _h(torch.tensor(-lr)), wd, False)
    gc = g / (g.norm() / max_norm)
    m_ref, v_ref = (1 - beta1) * gc, (1 - beta2) * gc * gc
    u = (m_ref / (1 - beta1)) / ((v_ref / (1 - beta2)).sqrt() + eps) + wd * w
    torch.testing.assert_close(m.cpu(), m_ref)
    torch.testing.assert_close(weight.cpu(), w - lr * (w.norm() / u.norm()) * u)


def test_scaled_masked_triangular_softmax() -> None:
    torch.manual_seed(4)
    x = torch.randn(4, 5, 5)
    start_end = torch.tensor([[1, 4], [0, 3]])  # groups of two batch entries
    out = torch.ops.hpu.scaled_masked_triangular_softmax(_h(x), _h(start_end), 1.3, 2, True, 0, None)
    expected = torch.zeros_like(x)
    for b in range(4):
        start, end = start_end[b // 2].tolist()
        for i in range(5):
            keys = [s for s in range(5) if start <= s < end and s <= i]
            if keys:
                expected[b, i, keys] = torch.softmax(x[b, i, keys] * 1.3, dim=-1)
    torch.testing.assert_close(out.cpu(), expected)
    one_row = torch.ops.hpu.scaled_masked_triangular_softmax(_h(x[:, :1]), _h(start_end), 1.0, 2, True, 0, None)
    torch.testing.assert_close(one_row[0, 0, 1:4].cpu(), torch.softmax(x[0, 0, 1:4], dim=-1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_scaled_masked_softmax_adds_the_mask_to_the_scaled_scores(dtype: torch.dtype) -> None:
    torch.manual_seed(12345)
    x = ((torch.rand(32, 48) - 0.5) * 5).to(dtype)
    mask = torch.randint(0, 2, (32, 48)).to(dtype)
    out = torch.ops.hpu.scaled_masked_softmax(_h(x), _h(mask), 0.17)
    expected = torch.softmax(x.float() * 0.17 + mask.float(), dim=-1)  # the bridge's test: mul, add, softmax
    assert out.device.type == "hpu" and out.dtype == dtype
    torch.testing.assert_close(
        out.cpu().float(), expected, **({} if dtype == torch.float32 else {"atol": 1e-2, "rtol": 0})
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(4, 10, 10), (6, 8, 8)])
def test_scaled_triangular_softmax_masks_the_keys_after_each_query(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    torch.manual_seed(12345)
    x = torch.rand(shape, dtype=dtype)
    # The bridge's test: the lower triangle of x * inv_scale, the rest the dtype's minimum, then softmax.
    scaled = torch.tril(x.float() * 1.3)
    rows, cols = torch.triu_indices(shape[1], shape[2], 1)
    scaled[:, rows, cols] = torch.finfo(torch.float32).min
    expected = torch.softmax(scaled, dim=-1)
    out = torch.ops.hpu.scaled_triangular_softmax(_h(x), 1.3)
    assert out.dtype == dtype
    torch.testing.assert_close(
        out.cpu().float(), expected, **({} if dtype == torch.float32 else {"atol": 1e-2, "rtol": 0})
    )

    retained, exp_sum_recpr, row_max = torch.ops.hpu.scaled_triangular_softmax_retain(_h(x), 1.3)
    assert exp_sum_recpr.shape == row_max.shape == (shape[0], shape[1], 1)
    assert exp_sum_recpr.dtype == torch.float32 and row_max.dtype == dtype
    torch.testing.assert_close(row_max.cpu().float(), scaled.amax(-1, keepdim=True).to(dtype).float())
    # The retained statistics give the very same result (the bridge's test asserts torch.equal).
    assert torch.equal(retained.cpu(), out.cpu())
    assert torch.equal(torch.ops.hpu.scaled_triangular_softmax(_h(x), 1.3, exp_sum_recpr, row_max).cpu(), out.cpu())


def test_scaled_triangular_softmax_refuses_what_the_bridge_refuses() -> None:
    x = _h(torch.rand(2, 4, 4))
    stats = _h(torch.ones(2, 4, 1))
    with pytest.raises(RuntimeError, match="self must be 3D"):
        torch.ops.hpu.scaled_triangular_softmax(x[0], 1.0)
    with pytest.raises(RuntimeError, match="give exp_sum_recpr and max both, or neither"):
        torch.ops.hpu.scaled_triangular_softmax(x, 1.0, stats, None)
    with pytest.raises(RuntimeError, match=r"must have shape \[2, 4, 1\]"):
        torch.ops.hpu.scaled_triangular_softmax(x, 1.0, stats, _h(torch.ones(2, 4)))


def test_the_scaled_softmaxes_compile_with_hpu_backend() -> None:
    x, mask = _h(torch.rand(2, 4, 4)), _h(torch.zeros(2, 4, 4))

    def both(x: Tensor, mask: Tensor) -> tuple[Tensor, ...]:
        return (
            torch.ops.hpu.scaled_masked_softmax(x, mask, 0.5),
            *torch.ops.hpu.scaled_triangular_softmax_retain(x, 2.0),
        )

    reset_dynamo()
    compiled = torch.compile(both, backend="hpu_backend", fullgraph=True)(x, mask)
    for got, expected in zip(compiled, both(x, mask), strict=True):
        assert torch.equal(got.cpu(), expected.cpu())


@pytest.mark.parametrize("inplace", [True, False])
def test_kv_reorder_regathers_beams_in_the_window(inplace: bool) -> None:
    cache = torch.arange(2 * 4 * 6 * 3, dtype=torch.float32).reshape(2, 4, 6, 3)
    start, end = torch.tensor([1, 0], dtype=torch.int32), torch.tensor([4, 6], dtype=torch.int32)
    beams = torch.tensor([[3, 3, 0, 1], [2, 0, 1, 1]])
    packed = (beams * torch.tensor([64, 16, 4, 1])).sum(-1).to(torch.uint8)
    device_cache = _h(cache.clone())
    op = torch.ops.hpu.kv_reorder_ if inplace else torch.ops.hpu.kv_reorder
    out = op(device_cache, _h(start), _h(end), _h(packed))
    expected = cache.clone()
    for b in range(2):
        window = expected[b].narrow(-2, int(start[b]), int(end[b] - start[b]))
        window.copy_(window.index_select(0, beams[b]))
    torch.testing.assert_close(out.cpu(), expected)
    torch.testing.assert_close(device_cache.cpu(), expected if inplace else cache)


def test_ctc_loss_custom_matches_torch_ctc_loss() -> None:
    torch.manual_seed(5)
    log_probs = torch.randn(7, 2, 5).log_softmax(-1)
    targets, inputs, lengths = torch.randint(1, 5, (2, 3)), torch.tensor([7, 6]), torch.tensor([3, 2])
    loss, _ = torch.ops.hpu.ctc_loss_custom(_h(log_probs), _h(targets), _h(inputs), _h(lengths), 0, 1, False)
    torch.testing.assert_close(loss.cpu(), F.ctc_loss(log_probs, targets, inputs, lengths, reduction="mean"))
    assert math.isfinite(loss.item())
