from enum import Enum
from typing import Any, Optional

class Format(Enum):
    E4M3 = ...
    E5M2 = ...
    HYBRID = ...

class DelayedScaling:
    margin: int
    interval: int
    fp8_format: Format
    amax_history_len: int
    amax_compute_algo: str
    def __init__(
        self,
        margin: int = ...,
        interval: int = ...,
        fp8_format: Format = ...,
        amax_history_len: int = ...,
        amax_compute_algo: str = ...,
        override_linear_precision: tuple[bool, bool, bool] = ...,
        scaling_factor_compute_algo: Optional[Any] = ...,
        reduce_amax: bool = ...,
    ) -> None: ...
