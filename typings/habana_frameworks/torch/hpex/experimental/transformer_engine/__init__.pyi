# habana_frameworks.torch.hpex.experimental.transformer_engine (reference section 7)
from typing import Any, ContextManager, Optional

import torch

from . import fp8 as fp8
from . import recipe as recipe

class Linear(torch.nn.Module):
    weight: torch.nn.Parameter
    bias: Optional[torch.nn.Parameter]
    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = ...,
        params_dtype: Optional[torch.dtype] = ...,
        device: Any = ...,
        **kwargs: Any,
    ) -> None: ...

def fp8_autocast(
    enabled: bool = ...,
    force_measurement: Optional[bool] = ...,
    fp8_recipe: Optional[recipe.DelayedScaling] = ...,
    fp8_group: Any = ...,
) -> ContextManager[None]: ...
