"""``habana_frameworks.torch.dynamo.debug_utils.logger``: each call makes a new ``PT_COMPILE`` logger of its own, as the
bridge's does, whose lines are kept in ``data`` once asked to."""

from __future__ import annotations

import importlib


def test_each_call_makes_a_compile_logger_of_its_own(standin: object) -> None:
    logger_module = importlib.import_module("habana_frameworks.torch.dynamo.debug_utils.logger")
    first, second = logger_module.get_compile_backend_logger(), logger_module.get_compile_backend_logger()
    assert first is not second and first.type == second.type == "PT_COMPILE"
    first.set_store_data(True)
    first.info("Node: {} requires fallback: {}", "add", False)
    assert first.data == ["[PT_COMPILE] Node: add requires fallback: False"] and second.data == []
