"""The emulated bridge's fused kernels: ``hpex.kernels`` (``FusedSDPA``, rotary embeddings), each against a
computation written out here, forward and backward, on ``hpu`` tensors; and the bridge's names of the kernel modules.

The emulation modules are imported directly (not through ``habana_frameworks``), as in ``hpu/test_metrics.py``.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import pytest
import torch
from torch import Tensor, nn

import gaudi_standin.startup.import_hook as hook
from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.bridge.habana_frameworks.torch.hpex import kernels, normalization
from gaudi_standin.bridge.habana_frameworks.torch.hpex.kernels import (
    FusedSDPA,
    RotaryPosEmbeddingHelperV1,
    RotaryPosEmbeddingHelperV2,
    RotaryPosEmbeddingHelperV3,
    RotaryPosEmbeddingMode,
    apply_rotary_pos_emb,
)
from gaudi_standin.bridge.habana_frameworks.torch.hpex.normalization import FusedRMSNorm
from gaudi_standin.bridge.habana_frameworks.torch.utils import library_loader
from tests.helpers.gradients import assert_grads_close, fresh_leaves


@pytest.fixture(autouse=True)
def _recompute_default() -> Any:
    hpu.enable_recompute_sdp(True)
    yield
    hpu.enable_recompute_sdp(True)


# --- the bridge's module names ----------------------------------------------------------------------------------
def test_the_bridge_module_names_are_served() -> None:
    served = {
        "habana_frameworks.torch.hpex.kernels": kernels,
        "habana_frameworks.torch.hpex.normalization": normalization,
        "habana_frameworks.torch.utils.library_loader": library_loader,
    }
    for name, module in served.items():
        assert importlib.import_module(hook.standin_module(name)) is module
    assert set(kernels.__all__) >= {
        "FusedSDPA",
        "RotaryPosEmbeddingHelperV1",
        "RotaryPosEmbeddingHelperV2",
        "RotaryPosEmbeddingHelperV3",
        "RotaryPosEmbeddingMode",
        "apply_rotary_pos_emb",
    }
    assert {"FusedClipNorm", "FusedRMSNorm", "RmsNormBwdMode"} <= set(normalization.__all__)
    assert issubclass(FusedSDPA, torch.autograd.Function) and issubclass(FusedRMSNorm, torch.autograd.Function)


# --- FusedSDPA ----------------------------------------------------------------------------------------------------
def _attention_by_hand(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    kept: Tensor | None = None,
    p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """softmax(q k^T * scale + mask) v, with key/value heads repeated for grouped queries, and dropout by ``kept``."""
    if q.dim() == 4 and k.shape[1] not in (1, q.shape[1]):
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if causal:
        allowed = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    probs = scores.softmax(-1)
    weights = probs if kept is None else probs * kept / (1 - p)
    return weights @ v, probs


def _qkv(q_heads: int = 4, kv_heads: int = 4, seq: int = 6, dim: int = 8) -> list[Tensor]:
    torch.manual_seed(0)
    shapes = [(2, q_heads, seq, dim), (2, kv_heads, seq, dim), (2, kv_heads, seq, dim)]
    return [torch.randn(shape, device="hpu", requires_grad=True) for shape in shapes]


@pytest.mark.parametrize("recompute", [True, False])
@pytest.mark.parametrize(
    "variant", ["causal", "bool_mask", "float_mask", "grouped_query", "multi_query", "scale", "fast_causal"]
)
def test_fused_sdpa_equals_attention_by_hand_forward_and_backward(standin: Any, variant: str, recompute: bool) -> None:
    kv_heads = {"grouped_query": 2, "multi_query": 1}.get(variant, 4)
    q, k, v = _qkv(kv_heads=kv_heads)
    mask: Tensor | None = None
    if variant == "bool_mask":
        mask = torch.rand(2, 1, 6, 6, device="hpu") > 0.3
        mask[..., 0] = True  # every query sees a key
    elif variant == "float_mask":
        mask = torch.randn(2, 4, 6, 6, device="hpu")
    causal = variant in ("causal", "grouped_query", "multi_query", "fast_causal")
    scale = 0.3 if variant == "scale" else None
    softmax_mode = "fast" if variant == "fast_causal" else "None"

    out = FusedSDPA.apply(q, k, v, mask, 0.0, causal, scale, softmax_mode, recompute)
    q2, k2, v2 = fresh_leaves(q, k, v)
    expected, _ = _attention_by_hand(q2, k2, v2, mask, causal, scale)
    assert out.device == q.device and out.shape == (2, 4, 6, 8)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)

    grad = torch.randn_like(out)
    out.backward(grad)
    expected.backward(grad)
    assert_grads_close([q, k, v], [q2, k2, v2], rtol=1e-4, atol=1e-5)


def test_fused_sdpa_dropout_uses_the_mask_it_returns_in_forward_and_backward(standin: Any) -> None:
    q, k, v = _qkv(kv_heads=2)
    with hpu.sdp_kernel(enable_recompute=False):
        out, kept = FusedSDPA.apply(q, k, v, None, 0.25, True, None, "None", None, None, "left", True)
    assert kept.dtype == torch.int8 and kept.shape == (2, 4, 6, 6) and kept.device == q.device
    assert 0 < kept.float().mean().item() < 1  # some dropped, some kept
    q2, k2, v2 = fresh_leaves(q, k, v)
    expected, _ = _attention_by_hand(q2, k2, v2, causal=True, kept=kept, p=0.25)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    expected.sum().backward()
    assert_grads_close([q, k, v], [q2, k2, v2], rtol=1e-4, atol=1e-5)


def test_fused_sdpa_returns_the_probabilities_in_inference(standin: Any) -> None:
    q, k, v = (t.detach() for t in _qkv())
    mask = torch.randn(2, 1, 6, 6, device="hpu")
    out, probs = FusedSDPA.apply(q, k, v, mask, 0.0, False, None, "None", None, None, "left", False, True)
    expected, expected_probs = _attention_by_hand(q, k, v, mask)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(probs, expected_probs, rtol=1e-5, atol=1e-6)
    no_mask = FusedSDPA.apply(q, k, v, None, 0.0, False, None, "None", False, None, "left", True)  # dropout 0
    assert no_mask[1].shape == (1,) and no_mask[1].dtype == torch.int8  # the bridge's placeholder mask


@pytest.mark.parametrize("padding", ["left", "right"])
def test_fused_sdpa_valid_lengths_hide_the_padded_keys(standin: Any, padding: str) -> None:
    q, k, v = (t.detach() for t in _qkv())
    lengths = torch.tensor([6, 4], device="hpu")
    out = FusedSDPA.apply(q, k, v, None, 0.0, True, None, "None", None, lengths, padding)
    full, _ = _attention_by_hand(q, k, v, causal=True)
    torch.testing.assert_close(out[0], full[0], rtol=1e-5, atol=1e-5)  # nothing padded
    keys = slice(2, 6) if padding == "left" else slice(0, 4)
    alone, _ = _attention_by_hand(q[1:, :, keys], k[1:, :, keys], v[1:, :, keys], causal=True)
    torch.testing.assert_close(out[1:, :, keys], alone, rtol=1e-5, atol=1e-5)  # the valid rows see valid keys only


def test_fused_sdpa_keeps_the_device_rules_and_the_bridge_refusals(standin: Any) -> None:
    q, k, v = _qkv()
    with pytest.raises(RuntimeError, match="same device"):
        FusedSDPA.apply(q, k.detach().cpu(), v)
    with pytest.raises(RuntimeError, match="same device"):
        FusedSDPA.apply(q, k, v, torch.ones(6, 6, dtype=torch.bool))
    with pytest.raises(AssertionError, match="recomputation"):  # recomputation is on by default, as in the bridge
        FusedSDPA.apply(q, k, v, None, 0.1, False, None, "None", None, None, "left", True)
    with pytest.raises(AssertionError, match="is_causal"):
        FusedSDPA.apply(q, k, v, None, 0.0, False, None, "fast")
    with pytest.raises(AssertionError, match="inference"):
        FusedSDPA.apply(q, k, v, None, 0.0, True, None, "None", None, torch.tensor([6, 6], device="hpu"))
    with pytest.raises(AssertionError, match="inference"):
        FusedSDPA.apply(q, k, v, None, 0.0, False, None, "None", None, None, "left", False, True)
    assert FusedSDPA.apply(q, k, v, None, 0.0, False, None, "fast", False).device == q.device  # without recompute


def test_sdp_kernel_switches_recomputation_inside_its_block() -> None:
    assert hpu.recompute_sdp_enabled() is True
    with hpu.sdp_kernel(enable_recompute=False) as state:
        assert state == {} and hpu.recompute_sdp_enabled() is False
    assert hpu.recompute_sdp_enabled() is True


# --- rotary position embedding -----------------------------------------------------------------------------------
def _rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


def _rotate_every_two(x: Tensor) -> Tensor:
    return torch.stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)


def _check_rope(apply: Any, p: Tensor, expected_of: Any) -> None:
    """``apply(p)`` equals ``expected_of(p)`` and so does the gradient it gives ``p``."""
    out = apply(p)
    p2 = fresh_leaves(p)[0]
    expected = expected_of(p2)
    assert out.device == p.device
    torch.testing.assert_close(out, expected)
    grad = torch.randn_like(out)
    out.backward(grad)
    expected.backward(grad)
    assert_grads_close([p], [p2])


@pytest.mark.parametrize("offset", [0, 3])
def test_rope_v1_rotates_halves_blockwise(standin: Any, offset: int) -> None:
    torch.manual_seed(0)
    p = torch.randn(2, 4, 6, 8, device="hpu", requires_grad=True)  # [batch, heads, seq, dim]
    angles = torch.rand(1, 1, 6, 4, device="hpu") * 6
    padding = torch.rand(1, 1, 6, offset, device="hpu")  # values the offset skips
    cos = torch.cat((padding, angles.cos(), angles.cos()), -1)
    sin = torch.cat((padding, angles.sin(), angles.sin()), -1)
    used_cos, used_sin = cos[..., offset:], sin[..., offset:]
    _check_rope(
        lambda p: RotaryPosEmbeddingHelperV1.apply(p, cos, sin, offset),
        p,
        lambda p: p * used_cos + _rotate_half(p) * used_sin,
    )
    # Each pair (i, i + 4) turns by its angle: the norm of every pair is kept.
    out = RotaryPosEmbeddingHelperV1.apply(p.detach(), cos, sin, offset)
    torch.testing.assert_close(out[..., :4] ** 2 + out[..., 4:] ** 2, p[..., :4] ** 2 + p[..., 4:] ** 2)


def test_rope_v2_takes_the_rows_of_the_positions(standin: Any) -> None:
    torch.manual_seed(0)
    p = torch.randn(2, 4, 5, 8, device="hpu", requires_grad=True)
    cos, sin = torch.randn(1, 1, 32, 8, device="hpu"), torch.randn(1, 1, 32, 8, device="hpu")
    position_ids = torch.tensor([[0, 1, 2, 3, 4], [7, 9, 11, 13, 31]], device="hpu")
    rows_cos, rows_sin = cos[0, 0][position_ids][:, None], sin[0, 0][position_ids][:, None]  # [batch, 1, seq, dim]
    _check_rope(
        lambda p: RotaryPosEmbeddingHelperV2.apply(p, cos, sin, position_ids),
        p,
        lambda p: p * rows_cos + _rotate_half(p) * rows_sin,
    )
    with pytest.raises(RuntimeError, match="same device"):
        RotaryPosEmbeddingHelperV2.apply(p, cos, sin, position_ids.cpu())


def test_rope_pairwise_rotates_neighbours(standin: Any) -> None:
    torch.manual_seed(0)
    p = torch.randn(2, 6, 3, 8, device="hpu", requires_grad=True)  # GPT-J: [batch, seq, heads, dim]
    cos = torch.rand(1, 6, 4, device="hpu").repeat_interleave(2, -1)[:, :, None]
    sin = torch.rand(1, 6, 4, device="hpu").repeat_interleave(2, -1)[:, :, None]
    pairwise = RotaryPosEmbeddingMode.PAIRWISE
    _check_rope(
        lambda p: apply_rotary_pos_emb(p, cos, sin, None, 0, pairwise),
        p,
        lambda p: p * cos + _rotate_every_two(p) * sin,
    )


def test_rope_v3_rotates_chatglm_pairs_and_passes_the_rest(standin: Any) -> None:
    torch.manual_seed(0)
    p = torch.randn(5, 2, 3, 12, device="hpu", requires_grad=True)  # [seq, batch, heads, dim]: 8 rotated, 4 passed
    angles = torch.rand(16, 4, device="hpu") * 6
    rope_cache = torch.stack((angles.cos(), angles.sin()), -1)  # [max_seq, rot_dim / 2, (cos, sin)]

    def by_hand(p: Tensor) -> Tensor:
        x = p[..., :8].reshape(5, 2, 3, 4, 2)
        c, s = rope_cache[:5, None, None, :, 0], rope_cache[:5, None, None, :, 1]
        turned = torch.stack((x[..., 0] * c - x[..., 1] * s, x[..., 1] * c + x[..., 0] * s), -1).flatten(3)
        return torch.cat((turned, p[..., 8:]), -1)

    _check_rope(lambda p: RotaryPosEmbeddingHelperV3.apply(p, rope_cache), p, by_hand)
    torch.testing.assert_close(apply_rotary_pos_emb(p.detach(), rope_cache), by_hand(p.detach()))


def test_rope_follows_the_bridge_dtype_rule(standin: Any) -> None:
    p = torch.randn(1, 2, 3, 4, device="hpu", dtype=torch.bfloat16)
    cos32, sin32 = torch.rand(1, 1, 3, 4, device="hpu"), torch.rand(1, 1, 3, 4, device="hpu")
    assert apply_rotary_pos_emb(p, cos32, sin32).dtype == torch.float32  # any fp32 operand: fp32
    assert apply_rotary_pos_emb(p, cos32.half(), sin32.half()).dtype == torch.bfloat16  # else the input's
    with pytest.raises(TypeError, match="RotaryPosEmbeddingMode"):
        apply_rotary_pos_emb(p, cos32, sin32, None, 0, 1)


# --- a Gaudi LLM script's block -----------------------------------------------------------------------------------
class _LlamaBlock(nn.Module):
    """Pre-norm attention and MLP as Gaudi Llama scripts write them: FusedRMSNorm, RoPE, FusedSDPA."""

    def __init__(self, vocab: int = 32, dim: int = 32, heads: int = 4, kv_heads: int = 2) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.embed = nn.Embedding(vocab, dim)
        self.norm1, self.norm2 = nn.Parameter(torch.ones(dim)), nn.Parameter(torch.ones(dim))
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.mlp = nn.Sequential(nn.Linear(dim, 64), nn.SiLU(), nn.Linear(64, dim))
        self.head = nn.Linear(dim, vocab)
        inv_freq = 1.0 / 10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim)
        freqs = torch.outer(torch.arange(64).float(), inv_freq)
        emb = torch.cat((freqs, freqs), -1)
        self.register_buffer("cos", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin", emb.sin()[None, None], persistent=False)

    def forward(self, tokens: Tensor) -> Tensor:
        batch, seq = tokens.shape
        x = self.embed(tokens)
        h = FusedRMSNorm.apply(x, self.norm1, 1e-6)
        q = self.q(h).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(h).view(batch, seq, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        cos, sin = self.cos[:, :, :seq], self.sin[:, :, :seq]
        q = RotaryPosEmbeddingHelperV1.apply(q, cos, sin, 0)
        k = RotaryPosEmbeddingHelperV1.apply(k, cos, sin, 0)
        attn = FusedSDPA.apply(q, k, v, None, 0.0, True, None, "fast", None)
        x = x + self.o(attn.transpose(1, 2).reshape(batch, seq, -1))
        x = x + self.mlp(FusedRMSNorm.apply(x, self.norm2, 1e-6))
        return self.head(x)


def test_a_llama_block_of_fused_kernels_trains_on_hpu(standin: Any) -> None:
    torch.manual_seed(0)
    model = _LlamaBlock().to("hpu")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    tokens = torch.randint(0, 32, (4, 12), device="hpu")
    losses = []
    for _ in range(8):
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 32), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(p.grad is not None and p.grad.device.type == "hpu" for p in model.parameters())
    assert losses[-1] < 0.7 * losses[0], losses
