"""The ``hpu_backend`` settings: the bridge's ``habana_frameworks.torch.dynamo.compile_backend.config`` on the stand-in
(that bridge module is this module object, so a setting made under either name is the one the backend reads).

The bridge's keys, each read from its environment variable at import (``PT_HPU_...``; ``1/0``, ``on/off``,
``true/false``...), in a torch config module (``config.patch(...)``, ``config.save_config()``), and
``configuration_flags``, the dict-like view users set options through (``configuration_flags["inference"] =
False``). ``torch.compile(..., options={...})`` overrides them for one compilation. On the stand-in
``keep_input_mutations`` decides whether the compiled graph keeps a forward's in-place updates of its inputs; the
other keys steer the bridge's graph compiler, which the stand-in does not have: they are accepted and stored.
"""

import os
import sys

from torch.utils._config_module import install_config_module

_THIS = sys.modules[__name__]
#: The bridge's name for this module, which torch's config module shows in its refusals (``<name>.<key> does not
#: exist``): a program reads the bridge's words.
__name__ = "habana_frameworks.torch.dynamo.compile_backend.config"

__all__ = ["configuration_flags"]

_TRUE, _FALSE = ("on", "1", "yes", "true", "y", "t"), ("off", "0", "no", "false", "n", "f")


def _flag(env: str, default: str) -> bool:
    value = os.getenv(env, default).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{env}={value!r} is not a boolean: use one of {', '.join(_TRUE + _FALSE)}.")


def _decomposition_mode(env: str, default: str) -> str:
    value = os.getenv(env, default).strip().lower()
    if value not in ("habana", "core_aten", "none"):
        raise ValueError(f"{env}={value!r} is not a decomposition mode: use 'habana', 'core_aten' or 'none'.")
    return value


use_compiled_recipes = _flag("PT_HPU_COMPILE_USE_RECIPES", "1")
decomposition_mode = _decomposition_mode("PT_HPU_COMPILE_DECOMPOSITION_MODE", "habana")
keep_input_mutations = _flag("PT_HPU_KEEP_INPUT_MUTATIONS", "1")
use_eager_fallback = _flag("PT_HPU_USE_EAGER_FALLBACK", "1")
use_graph_freezing = _flag("PT_HPU_COMPILE_GRAPH_FREEZE", "0")
discard_frozen_params = _flag("PT_HPU_COMPILE_DISCARD_FROZEN_PARAMS", "0")
remove_unnecessary_clones = _flag("PT_HPU_COMPILE_REMOVE_UNNECESSARY_CLONES", "1")
use_inplace_allreduce = _flag("PT_HPU_USE_INPLACE_COLLECTIVE", "1")
use_inplace_index_copy = _flag("PT_HPU_USE_INPLACE_INDEX_COPY", "1")
inference = _flag("PT_HPU_USE_INFERENCE_COMPILER", "1")
enable_sfg = _flag("PT_HPU_ENABLE_SFG", "0")
use_cpp_partitioner = _flag("PT_HPU_USE_CPP_PARTITIONER", "1")
enable_allreduce_graph_split = _flag("PT_HPU_ENABLE_ALLREDUCE_GRAPH_SPLIT", "1")
force_static_compile = _flag("PT_HPU_FORCE_STATIC_COMPILE", "0")
reinplace_add = _flag("PT_HPU_REINPLACE_ADD", "1")
reassign_full_copy = _flag("PT_HPU_REASSIGN_FULL_COPY", "1")
reassign_copy_ = _flag("PT_HPU_REASSIGN_COPY_", "1")
use_boxed_input = _flag("PT_HPU_USE_BOXED_INPUT", "1")


install_config_module(_THIS)


class _Flags:
    """``configuration_flags[key]`` reads and writes the module's setting ``key`` (an unknown key is refused)."""

    def __getitem__(self, key: str) -> object:
        return getattr(_THIS, key)

    def __setitem__(self, key: str, value: object) -> None:
        setattr(_THIS, key, value)


configuration_flags = _Flags()
