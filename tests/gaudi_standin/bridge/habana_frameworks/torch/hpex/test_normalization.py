"""The emulated bridge's ``hpex.normalization``: ``FusedRMSNorm`` against the formula written out here, forward and
backward, on ``hpu`` tensors (fp32 inside, as the bridge's kernel)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import Tensor

from gaudi_standin.bridge.habana_frameworks.torch.hpex import normalization
from gaudi_standin.bridge.habana_frameworks.torch.hpex.normalization import FusedRMSNorm
from tests.helpers.gradients import assert_grads_close, fresh_leaves


def _rms_by_hand(x: Tensor, w: Tensor, eps: float) -> Tensor:
    x32 = x.float()
    return x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) * w.float()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_rms_norm_equals_the_formula_forward_and_backward(standin: Any, dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    x = (torch.randn(3, 5, 16, device="hpu") * 3).to(dtype).requires_grad_()
    w = torch.randn(16, device="hpu").to(dtype).requires_grad_()
    out = FusedRMSNorm.apply(x, w, 1e-6)
    assert out.dtype == dtype and out.device == x.device
    x2, w2 = fresh_leaves(x, w)
    expected = _rms_by_hand(x2, w2, 1e-6)
    torch.testing.assert_close(out, expected.to(dtype), rtol=0, atol=0)  # fp32 inside, rounded once
    grad = torch.randn_like(out)
    out.backward(grad)
    expected.backward(grad.float())
    assert_grads_close([x, w], [x2, w2], rtol=1e-5, atol=1e-5)


def test_fused_rms_norm_answers_in_fp32_for_mixed_dtypes_and_keeps_devices_apart(standin: Any) -> None:
    x = (torch.randn(4, 8, device="hpu") * 0.3).to(torch.bfloat16)
    w = torch.rand(8, device="hpu")
    out = FusedRMSNorm.apply(x, w, 0.1, True, normalization.RmsNormBwdMode.DEFAULT.value, True)
    assert out.dtype == torch.float32  # as the bridge's kernel: input and weight dtypes differ
    torch.testing.assert_close(out, _rms_by_hand(x, w, 0.1))  # an eps that counts
    with pytest.raises(RuntimeError, match="same device"):
        FusedRMSNorm.apply(x, w.cpu(), 1e-5)
