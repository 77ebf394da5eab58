# habana_frameworks.torch.hpex.normalization (reference section 8)
from typing import Iterable

import torch

class FusedClipNorm:
    def __init__(self, parameters: Iterable[torch.Tensor], max_norm: float) -> None: ...
    def clip_norm(self, parameters: Iterable[torch.Tensor] | torch.Tensor) -> torch.Tensor: ...
