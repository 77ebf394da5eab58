# habana_frameworks.torch.hpex.optimizers (reference section 8)
from typing import Any, Iterable, Optional

import torch

class FusedAdamW(torch.optim.Optimizer):
    def __init__(
        self,
        params: Iterable[Any],
        lr: float = ...,
        betas: tuple[float, float] = ...,
        eps: float = ...,
        weight_decay: float = ...,
        bias_correction: bool = ...,
        moments_dtype: Optional[torch.dtype | tuple[torch.dtype, torch.dtype]] = ...,
    ) -> None: ...

class FusedSGD(torch.optim.Optimizer):
    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        momentum: float = ...,
        weight_decay: float = ...,
        dampening: float = ...,
        nesterov: bool = ...,
    ) -> None: ...
