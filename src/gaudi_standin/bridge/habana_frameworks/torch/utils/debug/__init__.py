"""``habana_frameworks.torch.utils.debug`` on the stand-in: the bridge's debug hooks, as far as they mean anything here.

The bridge's functions reach into its C++ runtime (graph-pass switches, memory dumps, the JIT cache, the dynamic-shape
bucket checkpoint). On the stand-in:

- ``_get_fallback_op_count()`` is ``{}`` (no op falls back to the CPU: every op runs there);
- ``_get_jit_cache_size()`` is the number of graphs the stand-in compiled so far, its model of the cache;
- ``_set_dynamic_mode()`` switches dynamic shapes on, as ``torch.hpu.enable_dynamic_shape()`` does;
- ``_is_enabled_lazy_collectives()`` reads ``PT_HPU_ENABLE_LAZY_COLLECTIVES``, as the bridge does;
- ``get_tensor_info(tensor)`` is ``(data_ptr, nbytes)`` of a device tensor's storage (``None`` for others);
- ``_hb_print`` / ``_hg_print`` / ``_mem_log`` log at debug level;
- the graph-pass switches (``_enable_*``) are recorded in :data:`GRAPH_PASSES` and change nothing (there is no graph
  compiler); the memory and recipe dumps, and the checkpoint and cleanup calls, do nothing.

Who calls them: the bridge's own API-usage test scripts (HabanaAI/gaudi-pytorch-bridge ``tests``) call the graph-pass
switches, the memory and recipe dumps, ``_set_dynamic_mode``, ``_set_module_name``, ``_hb_print``/``_hg_print``,
``_mem_log`` and ``_is_enabled_lazy_collectives`` in sequence; DeepSpeed's and optimum-habana's memory logging call
``_memstat_livealloc``; the bridge's deprecated ``core.memstat_*`` names forward to the ``_memstat_*`` ones. A script of
that kind runs here unchanged (``test_debug.py`` of ``tests/gaudi_standin/bridge/habana_frameworks/torch/utils/debug/``
calls each of them).
"""

from __future__ import annotations

import logging
import os

import torch

from gaudi_standin.emulator import dynamic_shapes, machine

_log = logging.getLogger(__name__)

#: The graph-pass switches a script set (name without ``_enable_``, flag), for inspection only.
GRAPH_PASSES: dict[str, bool] = {}


def _get_fallback_op_count() -> dict[str, int]:
    return {}


def _get_shape_agnostic_unsupported_ops() -> set[str]:
    return set()


def _get_eager_compiler_unsupported_op_prefixes() -> set[str]:
    return set()


def _get_jit_cache_size() -> int:
    return machine.current().graph_compilation_count() or 0


def _clear_jit_cache() -> None:
    """The stand-in's cache model is only a counter: nothing to free."""


def _flush_disk_cache() -> None:
    """No recipes are written to disk on the stand-in."""


def _set_dynamic_mode() -> None:
    dynamic_shapes.set_enabled(True)


def _set_module_name(name: str = "") -> None:
    """The bridge tags recipes with the module name; the stand-in has no recipes."""


def _set_graph_pass(name: str, flag: bool) -> None:
    GRAPH_PASSES[name] = bool(flag)


def _enable_eliminate_common_subexpression(flag: bool) -> None:
    _set_graph_pass("eliminate_common_subexpression", flag)


def _enable_eliminate_dead_code(flag: bool) -> None:
    _set_graph_pass("eliminate_dead_code", flag)


def _enable_constant_pooling(flag: bool) -> None:
    _set_graph_pass("constant_pooling", flag)


def _enable_peephole_optimization(flag: bool) -> None:
    _set_graph_pass("peephole_optimization", flag)


def _enable_fuse_t_mm_optimization(flag: bool) -> None:
    _set_graph_pass("fuse_t_mm_optimization", flag)


def _enable_fuse_bn_relu_optimization(flag: bool) -> None:
    _set_graph_pass("fuse_bn_relu_optimization", flag)


def _enable_bn_param_recalculation(flag: bool) -> None:
    _set_graph_pass("bn_param_recalculation", flag)


def _enable_fuse_conv_bn_optimization(flag: bool) -> None:
    _set_graph_pass("fuse_conv_bn_optimization", flag)


def _enable_permute_pass(flag: bool) -> None:
    _set_graph_pass("permute_pass", flag)


def _enable_replace_inplace_ops(flag: bool) -> None:
    _set_graph_pass("replace_inplace_ops", flag)


def _enable_replace_views(flag: bool) -> None:
    _set_graph_pass("replace_views", flag)


def _is_enabled_weight_permute_pass() -> bool:
    return False


def _is_enabled_synapse_layout_handling() -> bool:
    return True


def _is_enabled_lazy_collectives() -> bool:
    return os.environ.get("PT_HPU_ENABLE_LAZY_COLLECTIVES", "").strip().lower() in ("1", "true")


def _memstat_livealloc(msg: str = "") -> None:
    """Device memory dumps: the stand-in's memory is the host's (see ``torch.hpu.memory_stats``)."""


def _memstat_devmem_start_collect(msg: str = "", show_cs: bool = True) -> None:
    """As :func:`_memstat_livealloc`."""


def _memstat_devmem_stop_collect(msg: str = "") -> None:
    """As :func:`_memstat_livealloc`."""


def _dump_refined_recipe_stat() -> None:
    """Recipe and bucket dumps: the stand-in compiles no recipes."""


def _disable_bucket_refinement() -> None:
    """As :func:`_dump_refined_recipe_stat`."""


def _dump_bucket_memory_stat() -> None:
    """As :func:`_dump_refined_recipe_stat`."""


def _dump_history_memory_stat() -> None:
    """As :func:`_dump_refined_recipe_stat`."""


def _dump_recipe_memory_stat() -> None:
    """As :func:`_dump_refined_recipe_stat`."""


def _dump_synapse_recipe_memory_stat() -> None:
    """As :func:`_dump_refined_recipe_stat`."""


def _dump_dynamic_shape_memory_stat() -> None:
    """As :func:`_dump_refined_recipe_stat`."""


def _dump_memory_reporter() -> None:
    """As :func:`_memstat_livealloc`."""


def load_ds_checkpoint(path: str) -> None:
    """The dynamic-shape bucket checkpoint: the stand-in keeps no buckets."""


def save_ds_checkpoint(path: str) -> None:
    """As :func:`load_ds_checkpoint`."""


def clear_dynamic_bucket_recipe_info() -> None:
    """As :func:`load_ds_checkpoint`."""


def _bridge_cleanup() -> None:
    """Release the bridge's device state: the stand-in holds none beyond Python objects."""


def _hb_print(msg: str) -> None:
    _log.debug("%s", msg)


def _hg_print(msg: str) -> None:
    _log.debug("%s", msg)


def _mem_log(msg: str) -> bool:
    _log.debug("%s", msg)
    return True


def _towl_configure(flag: bool, config: str = "") -> None:
    """The bridge's trace-of-weights logger: nothing to configure on the stand-in."""


def _towl_print(text: str) -> None:
    _log.debug("%s", text)


def get_tensor_info(tensor: torch.Tensor) -> tuple[int, int] | None:
    """``(data_ptr, nbytes)`` of a device tensor's storage, ``None`` for a tensor elsewhere (as the bridge)."""
    if tensor.device.type != machine.current().torch_device().type:
        return None
    storage = tensor.untyped_storage()
    return storage.data_ptr(), storage.nbytes()
