"""Values of the bridge's custom ops as its kernels compute them: ``optimizer_lamb_fused_norm`` rounds each step to
the gradients' dtype, and ``ctc_loss_custom`` takes an unbatched ``(T, C)`` input as the kernel does."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401  (defines torch.ops.hpu)
from gaudi_standin.bridge.habana_frameworks.torch.hpex.kernels import CTCLoss


def _bf16_grads() -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(2)  # a draw where one fp32 norm rounded once differs by one bf16 ulp
    return [torch.randn(3, 4, generator=gen).bfloat16(), torch.randn(5, 6, generator=gen).bfloat16()]


def test_lamb_fused_norm_rounds_each_step_to_the_gradients_dtype(standin: object) -> None:
    grads = _bf16_grads()
    total = torch.zeros(1, dtype=torch.bfloat16)
    for grad in grads:  # the kernel's steps (and its test's reference), each in bf16
        total.add_(grad.pow(2).sum())
    norm = total.sqrt()
    once = torch.linalg.vector_norm(torch.cat([g.float().flatten() for g in grads])).bfloat16()
    assert norm.item() != once.item()  # the draw tells the two apart
    for max_norm in (1.0, 4.0):
        result = torch.ops.hpu.optimizer_lamb_fused_norm([g.to("hpu") for g in grads], max_norm)
        assert result.dtype == torch.bfloat16 and result.cpu().tolist() == (norm / max_norm).tolist()
    assert torch.ops.hpu.optimizer_lamb_fused_norm([g.to("hpu") for g in grads], 8.0).cpu().tolist() == [1.0]


def test_ctc_loss_takes_an_unbatched_input(standin: object) -> None:
    torch.manual_seed(12345)
    log_probs = torch.randn(10, 5).log_softmax(1).requires_grad_()
    targets = torch.randint(1, 5, (3,))
    lengths = (torch.tensor(10), torch.tensor(3))
    expected = F.ctc_loss(log_probs, targets, *lengths, reduction="sum")
    expected.backward()
    device = log_probs.detach().to("hpu").requires_grad_()
    loss = CTCLoss.apply(device, targets.to("hpu"), lengths[0].to("hpu"), lengths[1].to("hpu"), 0, "sum")
    loss.backward()
    torch.testing.assert_close(loss.cpu(), expected.detach())
    assert device.grad is not None and device.grad.shape == (10, 5)
    torch.testing.assert_close(device.grad.cpu(), log_probs.grad)
