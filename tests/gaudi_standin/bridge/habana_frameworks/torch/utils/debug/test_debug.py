"""The emulated bridge's ``utils.debug``: its hooks run as a Gaudi script calls them, over the stand-in's counters.

The emulation modules are imported directly (not through ``habana_frameworks``), as in ``hpu/test_metrics.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.bridge.habana_frameworks.torch.utils import debug
from gaudi_standin.emulator import dynamic_shapes


@pytest.fixture(autouse=True)
def _dynamic_shapes_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dynamic_shapes, "_override", None)
    monkeypatch.delenv(dynamic_shapes.REFINE_DYNAMIC_SHAPES_ENV, raising=False)


def test_utils_debug_on_the_stand_in(lazy_standin: Any) -> None:
    tensor = torch.ones(4, device=lazy_standin.torch_device())
    assert debug.get_tensor_info(tensor) == (tensor.untyped_storage().data_ptr(), 16)
    assert debug._get_fallback_op_count() == {}
    debug._enable_fuse_bn_relu_optimization(False)
    assert debug.GRAPH_PASSES["fuse_bn_relu_optimization"] is False
    debug._set_dynamic_mode()
    assert hpu.get_dynamic_shape_status()


#: Arguments for the debug hooks that take any, as the bridge's own API-usage scripts pass them.
_DEBUG_ARGUMENTS: dict[str, tuple[Any, ...]] = {
    "_set_module_name": ("a_module",),
    "_set_graph_pass": ("cse", False),
    "_memstat_livealloc": ("live allocations",),
    "_memstat_devmem_start_collect": ("start", False),
    "_memstat_devmem_stop_collect": ("stop",),
    "_hb_print": ("a print",),
    "_hg_print": ("a graph print",),
    "_mem_log": ("a memory log point",),
    "_towl_configure": (True, ""),
    "_towl_print": ("a trace",),
    "load_ds_checkpoint": ("buckets.ckpt",),
    "save_ds_checkpoint": ("buckets.ckpt",),
}


def test_every_debug_hook_of_the_bridge_runs_as_a_gaudi_script_calls_it(
    lazy_standin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import inspect

    monkeypatch.setattr(debug, "GRAPH_PASSES", {})
    hooks = {
        name: function
        for name, function in vars(debug).items()
        if inspect.isfunction(function) and function.__module__ == debug.__name__ and name != "get_tensor_info"
    }
    assert len(hooks) >= 40
    for name, function in sorted(hooks.items()):
        arguments = _DEBUG_ARGUMENTS.get(name)
        if arguments is None:
            parameters = inspect.signature(function).parameters
            arguments = (False,) if [p for p in parameters.values() if p.default is p.empty] else ()
        function(*arguments)
    assert debug.GRAPH_PASSES["replace_views"] is False  # a switch is recorded, and changes nothing else
    assert debug._mem_log("x") is True
    dynamic_shapes.set_enabled(False)
