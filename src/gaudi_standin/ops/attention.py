"""Attention helpers of the bridge: the scaled softmaxes (``scaled_masked_softmax``, ``scaled_triangular_softmax``
and its ``_retain`` form, ``scaled_masked_triangular_softmax``), ``kv_reorder(_)``, ``custom_softmax`` and the CTC
loss kernels (``ctc_loss_custom`` and its backward), as the bridge's kernel tests' references compute them.

- ``scaled_masked_softmax(input, mask, scale)``: ``softmax(input * scale + mask)`` over the last dimension (the mask
  is additive, as BERT's precomputed attention mask).
- ``scaled_triangular_softmax(self [B, L, S], inv_scale_attn, exp_sum_recpr=None, max=None)``: softmax of
  ``self * inv_scale_attn`` over the last dimension with the keys after each query (``s > l``) masked out (the
  bridge's reference fills them with the dtype's minimum, so they come out 0). Given the row statistics that
  ``scaled_triangular_softmax_retain`` also returns (``max`` [B, L, 1] in the input's dtype, ``exp_sum_recpr``
  [B, L, 1] in fp32, the reciprocal of the row's sum of exponentials), it reuses them: ``exp(x - max) *
  exp_sum_recpr``, which gives exactly the ``_retain`` result.

- ``scaled_masked_triangular_softmax(x [B, L, S], start_end, inv_scale_attn, grouped_batch_size, ...)``: softmax of
  ``x * inv_scale_attn`` over the last dimension, keeping for each group of ``grouped_batch_size`` batch entries the
  keys ``start <= s < end`` (``start_end``: one ``[start, end]`` pair per group) and the causal triangle aligned at
  the bottom right (a single query row sees every key); fully masked rows are zeros. ``use_max`` and ``mode`` choose
  the device's algorithm, not the result.
- ``kv_reorder(self, start, end, beam_idx)``: per batch entry ``b``, the slice ``start[b]:end[b]`` of dimension -2
  of ``self[b]`` is re-gathered over its first dimension (4 beams) by ``beam_idx[b]``, a ``uint8`` holding the four
  2-bit source beams, the first in the highest bits.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn._reduction import get_enum

from gaudi_standin.ops.registry import define

__all__ = [
    "custom_softmax",
    "kv_reorder",
    "kv_reorder_",
    "scaled_masked_softmax",
    "scaled_masked_triangular_softmax",
    "scaled_triangular_softmax",
    "scaled_triangular_softmax_retain",
]


def scaled_masked_softmax(input: Tensor, mask: Tensor, scale: float) -> Tensor:
    scores = input.float() * scale + mask.to(input.device).float()
    return torch.softmax(scores, dim=-1).to(input.dtype)


def _causal_scores(self: Tensor, inv_scale_attn: float) -> tuple[Tensor, Tensor]:
    """``self * inv_scale_attn`` in fp32 and the causal mask (``True`` where a key comes after its query)."""
    if self.dim() != 3:
        raise RuntimeError(f"scaled_triangular_softmax: self must be 3D ([B, L, S]), not of shape {list(self.shape)}.")
    _, target, source = self.shape
    after = torch.ones(target, source, dtype=torch.bool, device=self.device).triu(1)
    return self.float() * inv_scale_attn, after


def _from_row_statistics(
    scores: Tensor, after: Tensor, exp_sum_recpr: Tensor, max: Tensor, dtype: torch.dtype
) -> Tensor:
    return ((scores - max.float()).exp() * exp_sum_recpr.float()).masked_fill(after, 0.0).to(dtype)


def scaled_triangular_softmax_retain(self: Tensor, inv_scale_attn: float) -> tuple[Tensor, Tensor, Tensor]:
    scores, after = _causal_scores(self, inv_scale_attn)
    row_max = scores.masked_fill(after, -torch.inf).amax(dim=-1, keepdim=True).to(self.dtype)
    exps = (scores - row_max.float()).exp().masked_fill(after, 0.0)
    exp_sum_recpr = exps.sum(dim=-1, keepdim=True).reciprocal()
    return _from_row_statistics(scores, after, exp_sum_recpr, row_max, self.dtype), exp_sum_recpr, row_max


def scaled_triangular_softmax(
    self: Tensor, inv_scale_attn: float, exp_sum_recpr: Tensor | None = None, max: Tensor | None = None
) -> Tensor:
    if (exp_sum_recpr is None) != (max is None):
        raise RuntimeError("scaled_triangular_softmax: give exp_sum_recpr and max both, or neither.")
    if exp_sum_recpr is None or max is None:
        return scaled_triangular_softmax_retain(self, inv_scale_attn)[0]
    expected = [*self.shape[:-1], 1]
    if list(exp_sum_recpr.shape) != expected or list(max.shape) != expected:
        raise RuntimeError(
            f"scaled_triangular_softmax: exp_sum_recpr and max must have shape {expected} (self's with a last"
            f" dimension of 1), not {list(exp_sum_recpr.shape)} and {list(max.shape)}."
        )
    scores, after = _causal_scores(self, inv_scale_attn)
    return _from_row_statistics(scores, after, exp_sum_recpr, max, self.dtype)


def _fake_retain(self: Tensor, inv_scale_attn: float) -> tuple[Tensor, Tensor, Tensor]:
    rows = [*self.shape[:-1], 1]
    return self.new_empty(self.shape), self.new_empty(rows, dtype=torch.float32), self.new_empty(rows)


def scaled_masked_triangular_softmax(
    self: Tensor,
    start_end: Tensor,
    inv_scale_attn: float,
    grouped_batch_size: int,
    use_max: bool,
    mode: int,
    out_dtype: torch.dtype | None = None,
) -> Tensor:
    batch, target, source = self.shape
    bounds = start_end.reshape(-1, 2).to(self.device).repeat_interleave(grouped_batch_size, dim=0)[:batch]
    cols = torch.arange(source, device=self.device)
    rows = torch.arange(target, device=self.device)[:, None]
    keep = (cols >= bounds[:, :1, None]) & (cols < bounds[:, 1:, None])  # [B, 1, S]
    keep = keep & (cols[None, :] <= rows + (source - target))[None]  # [B, L, S]
    scores = (self.float() * inv_scale_attn).masked_fill(~keep, -torch.inf)
    empty = ~keep.any(dim=-1, keepdim=True)
    probs = torch.softmax(scores.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)
    return probs.to(out_dtype or self.dtype)


def _fake_triangular(
    self: Tensor,
    start_end: Tensor,
    inv: float,
    group: int,
    use_max: bool,
    mode: int,
    out_dtype: torch.dtype | None = None,
) -> Tensor:
    return self.new_empty(self.shape, dtype=out_dtype or self.dtype)


def _beams(beam_idx: Tensor) -> Tensor:
    """``[B]`` packed ``uint8`` -> ``[B, 4]`` source beams (the first beam in the two highest bits)."""
    shifts = torch.tensor([6, 4, 2, 0], dtype=torch.int32, device=beam_idx.device)
    return torch.bitwise_and(torch.bitwise_right_shift(beam_idx.to(torch.int32).reshape(-1, 1), shifts), 3)


def kv_reorder_(self: Tensor, start: Tensor, end: Tensor, beam_idx: Tensor) -> Tensor:
    beams = _beams(beam_idx).long()
    positions = torch.arange(self.shape[-2], device=self.device)
    for b in range(self.shape[0]):
        window = (positions >= start[b]) & (positions < end[b])
        shape = [1] * (self[b].dim() - 2) + [-1, 1]
        reordered = self[b].index_select(0, beams[b])
        self[b].copy_(torch.where(window.reshape(shape), reordered, self[b]))
    return self


def kv_reorder(self: Tensor, start: Tensor, end: Tensor, beam_idx: Tensor) -> Tensor:
    return kv_reorder_(self.clone(), start, end, beam_idx)


def custom_softmax(input: Tensor, flavor: int) -> Tensor:
    """Softmax over the last dimension (``flavor`` picks the device's exponent approximation, not the result)."""
    return torch.softmax(input.float(), dim=-1).to(input.dtype)


def _reduce(per_sample: Tensor, target_lengths: Tensor, reduction: int) -> Tensor:
    if reduction == get_enum("mean"):
        return (per_sample / target_lengths.clamp(min=1).to(per_sample.dtype)).mean()
    return per_sample.sum() if reduction == get_enum("sum") else per_sample


def _batched(
    log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """An unbatched call (``log_probs`` of ``(T, C)``, as the bridge's kernel accepts) as a batch of one."""
    if log_probs.dim() != 2:
        return log_probs, targets, input_lengths, target_lengths
    return log_probs.unsqueeze(1), targets.reshape(1, -1), input_lengths.reshape(1), target_lengths.reshape(1)


def ctc_loss_custom(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor,
    target_lengths: Tensor,
    blank: int,
    reduction: int,
    zero_infinity: bool,
) -> tuple[Tensor, Tensor]:
    log_probs, targets, input_lengths, target_lengths = _batched(log_probs, targets, input_lengths, target_lengths)
    nll, alpha = torch.ops.aten._ctc_loss.Tensor(
        log_probs, targets, input_lengths.long(), target_lengths.long(), blank, zero_infinity
    )
    return _reduce(nll, target_lengths, reduction), alpha


def ctc_loss_custom_backward(
    grad: Tensor,
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor,
    target_lengths: Tensor,
    neg_log_likelihood: Tensor,
    log_alpha: Tensor,
    blank: int,
    reduction: int,
    zero_infinity: bool,
) -> Tensor:
    unbatched = log_probs.dim() == 2
    log_probs, targets, input_lengths, target_lengths = _batched(log_probs, targets, input_lengths, target_lengths)
    inputs, lengths = input_lengths.long(), target_lengths.long()
    nll, alpha = torch.ops.aten._ctc_loss.Tensor(log_probs, targets, inputs, lengths, blank, zero_infinity)
    batch = nll.shape[0]
    per_sample = grad.expand(batch) if grad.dim() == 0 else grad.reshape(-1).expand(batch)
    if reduction == get_enum("mean"):
        per_sample = per_sample / lengths.clamp(min=1).to(grad.dtype) / batch
    grad_log_probs = torch.ops.aten._ctc_loss_backward.Tensor(
        per_sample.contiguous(), log_probs, targets, inputs, lengths, nll, alpha, blank, zero_infinity
    )
    return grad_log_probs.squeeze(1) if unbatched else grad_log_probs


define(
    "scaled_masked_triangular_softmax(Tensor self, Tensor start_end, float inv_scale_attn, int grouped_batch_size,"
    " bool use_max, int mode, ScalarType? out_dtype=None) -> Tensor",
    scaled_masked_triangular_softmax,
    _fake_triangular,
)
define("scaled_masked_softmax(Tensor input, Tensor mask, float scale) -> Tensor", scaled_masked_softmax)
define(
    "scaled_triangular_softmax(Tensor self, float inv_scale_attn, Tensor? exp_sum_recpr=None, Tensor? max=None)"
    " -> Tensor",
    scaled_triangular_softmax,
    lambda self, inv_scale_attn, exp_sum_recpr=None, max=None: self.new_empty(self.shape),
)
define(
    "scaled_triangular_softmax_retain(Tensor self, float inv_scale_attn) -> (Tensor, Tensor, Tensor)",
    scaled_triangular_softmax_retain,
    _fake_retain,
)
define(
    "kv_reorder(Tensor self, Tensor start, Tensor end, Tensor beam_idx) -> Tensor",
    kv_reorder,
    lambda self, start, end, beam_idx: self.new_empty(self.shape),
)
define(
    "kv_reorder_(Tensor(a!) self, Tensor start, Tensor end, Tensor beam_idx) -> (Tensor(a!))",
    kv_reorder_,
    lambda self, start, end, beam_idx: self,
)
define("custom_softmax(Tensor input, int flavor) -> Tensor", custom_softmax)
define(
    "ctc_loss_custom(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, int blank,"
    " int reduction, bool zero_infinity) -> (Tensor, Tensor)",
    ctc_loss_custom,
)
define(
    "ctc_loss_custom_backward(Tensor grad, Tensor log_probs, Tensor targets, Tensor input_lengths,"
    " Tensor target_lengths, Tensor neg_log_likelihood, Tensor log_alpha, int blank, int reduction,"
    " bool zero_infinity) -> Tensor",
    ctc_loss_custom_backward,
    lambda grad, log_probs, *rest: log_probs.new_empty(log_probs.shape),
)
