"""``hpex.kernels``'s ``CTCLoss``, ``CustomSoftmax`` and ``Fp8Ops`` as optimum-habana calls them, against torch."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401 (the device and torch.ops.hpu)
from gaudi_standin.bridge.habana_frameworks.torch.hpex import kernels
from gaudi_standin.bridge.habana_frameworks.torch.hpex.kernels.Fp8Ops import cast_to_fp8_v2

HPU = torch.device("hpu")


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
