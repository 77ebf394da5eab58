"""The stand-in's fused optimizers, clipping and EMA: the bridge's ``FusedAdamW``, ``FusedSGD``, ``FusedLamb``,
``FusedAdagrad``, ``FusedLars``, ``FusedClipNorm`` and ``FusedEMA``.

Same constructor arguments, the same update formulas and the same optimizer state as the bridge's
``hpex.optimizers``/``hpex.normalization`` classes, computed with plain torch ops on the CPU, so an optimizer state
saved on one means the same on the other:

* ``FusedAdamW`` counts steps per parameter group (``group["step"]``; each parameter's ``state["step"]`` is created
  as 0 and stays 0, as on the bridge), folds the bias corrections into the step size
  (``lr * sqrt(1 - beta2**t) / (1 - beta1**t)``), adds ``eps`` to the uncorrected ``sqrt(exp_avg_sq)``, and decays
  the weights by ``1 - lr * weight_decay`` before adding the update. With ``eps`` this differs from
  ``torch.optim.AdamW``, which adds ``eps`` after the bias correction.
* ``FusedSGD`` keeps a ``momentum_buffer`` per parameter, created as zeros: the first step's buffer is
  ``(1 - dampening) * grad`` (torch's SGD starts from ``grad``; they agree for ``dampening=0``).
* ``FusedLamb`` (BERT pre-training's optimizer) runs its math in closed device kernels on the bridge
  (``optimizer_lamb_fused_norm``, ``optimizer_lamb_phase1``/``phase2``); the stand-in computes what the reference
  functions of the bridge's own kernel tests compute: see :class:`FusedLamb`.
* ``FusedAdagrad``'s kernel is closed too; the bridge's test holds it to ``torch.optim.Adagrad``, whose formula the
  stand-in computes, with the bridge's state (``sum`` per parameter, the ``lr_t``/``step_t`` tensors per group).
* ``FusedLars`` wraps another optimizer: it scales the gradients layer-wise (the bridge's non-fused ``Lars``
  reference), then calls the wrapped optimizer's ``step`` with its weight decay switched off.
* ``FusedClipNorm`` scales the gradients in place to a total 2-norm of at most ``max_norm`` and returns the norm.
* ``FusedEMA`` keeps an exponential moving average of a model's floating state (a copy of the model).

In lazy mode each marks steps where the bridge's does (``FusedAdamW``: before each group and after the step;
``FusedSGD``: at construction and around each group; ``FusedLamb``: before each group's two phases and after each;
``FusedAdagrad``: at construction and before each group; ``FusedLars``: around each group's scaling;
``FusedClipNorm`` and ``FusedEMA``: before and after), through the active backend, so the stand-in counts them.

All of them run inside an HPU graph capture, as the bridge's device kernels do: a step computes with tensor ops
only (no host reads; clipping and trust ratios choose with ``torch.where``). As on the bridge, the hyperparameters
and the values the bridge computes on the host (``FusedAdamW``'s bias-corrected step size, ``FusedLamb``'s bias
corrections, ``FusedEMA``'s decay) are handed to the kernel as they were at the step, so a replay reuses the ones
of the captured step; ``FusedAdagrad`` counts its steps in a device tensor, so its learning-rate decay advances at
each replay, as on a Gaudi.
"""

from gaudi_standin.optimizers.adagrad import FusedAdagrad
from gaudi_standin.optimizers.adamw import FusedAdamW
from gaudi_standin.optimizers.clip_norm import FusedClipNorm
from gaudi_standin.optimizers.ema import FusedEMA
from gaudi_standin.optimizers.lamb import FusedLamb
from gaudi_standin.optimizers.lars import FusedLars
from gaudi_standin.optimizers.sgd import FusedSGD

__all__ = ["FusedAdagrad", "FusedAdamW", "FusedClipNorm", "FusedEMA", "FusedLamb", "FusedLars", "FusedSGD"]
