"""``hpu_backend`` writes the bridge's two compile logs, in the bridge's line formats, only when asked.

The graph logger (``compile_backend.passes.logger``) holds each HPU graph's TorchScript IR after the bridge's
header line, random ops named by the bridge's seeded wrappers; the fallback logger
(``compile_backend.shared_layer.logger``) holds ``[PT_COMPILE] Node: <name> requires fallback: <True|False>`` per
op. The fallback rule is the bridge's list-based one, and a fallback is refused when ``use_eager_fallback`` is off.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from gaudi_standin.bridge.habana_frameworks.torch.dynamo.compile_backend import config, passes, shared_layer
from gaudi_standin.bridge.habana_frameworks.torch.utils.debug.logger import Logger
from tests.helpers.dynamo import reset_dynamo

FALLBACK_LINE = re.compile(r"\[PT_COMPILE\] Node: (\w+) requires fallback: (\w+)")
IR_HEADER = "[PT_COMPILE] ####PyTorch-generated JIT IR graph for this HPU graph:####\n"


@pytest.fixture
def logs(standin: object) -> Iterator[tuple[Logger, Logger]]:
    """The two loggers, storing (as the bridge's tests' ``clear_t_compile_logs`` asks), and TorchDynamo reset."""
    reset_dynamo()
    passes.logger.set_store_data(True)
    shared_layer.logger.set_store_data(True)
    yield passes.logger, shared_layer.logger
    passes.logger.set_store_data(False)
    shared_layer.logger.set_store_data(False)
    reset_dynamo()


def _fallbacks(logger: Logger) -> dict[str, str]:
    return dict(match.groups() for line in logger.data if (match := FALLBACK_LINE.fullmatch(line)))


def _ir_ops(logger: Logger) -> set[str]:
    irs = [line for line in logger.data if line.startswith(IR_HEADER)]
    return {op for ir in irs for op in re.findall(r"::(\w+)\(", ir)}


def _compiled(fn: Any) -> Any:
    return torch.compile(fn, backend="hpu_backend")


def test_each_op_is_logged_with_its_fallback_answer_and_the_graph_ir(logs: tuple[Logger, Logger]) -> None:
    graph_logger, fallback_logger = logs
    x = torch.rand(3, 4, device="hpu")
    out = _compiled(lambda a, b: torch.relu(a * b) + a)(x, x)
    torch.testing.assert_close(out.cpu(), (torch.relu(x * x) + x).cpu())
    assert _fallbacks(fallback_logger) == {"mul": "False", "relu": "False", "add": "False"}
    assert {"mul", "relu", "add"} <= _ir_ops(graph_logger)
    ir = next(line for line in graph_logger.data if line.startswith(IR_HEADER))
    assert re.search(r"^  %mul : Tensor = aten::mul\(%arg\d+_1, %arg\d+_1\)$", ir, re.MULTILINE), ir


def test_random_ops_are_named_by_the_bridges_seeded_wrappers(logs: tuple[Logger, Logger]) -> None:
    graph_logger, _ = logs
    x = torch.rand(3, 4, device="hpu")
    _compiled(lambda a: torch.bernoulli(a) * torch.rand_like(a) + torch.randn(3, 4, device="hpu"))(x)
    ops = _ir_ops(graph_logger)
    assert {"habana_bernoulli", "habana_rand", "habana_randn", "habana_seed_generator"} <= ops
    assert not {"bernoulli", "rand_like", "randn"} & ops


def test_an_op_the_bridge_runs_on_the_host_is_logged_as_a_fallback_and_left_out_of_the_ir(
    logs: tuple[Logger, Logger],
) -> None:
    graph_logger, fallback_logger = logs
    x = torch.arange(12.0, device="hpu").reshape(3, 4)
    index = torch.tensor([0, 2], device="hpu")
    out = _compiled(lambda a, i: a[i] * 2)(x, index)
    torch.testing.assert_close(out.cpu(), x.cpu()[[0, 2]] * 2)
    assert _fallbacks(fallback_logger)["index"] == "True"
    assert "index" not in _ir_ops(graph_logger) and "mul" in _ir_ops(graph_logger)


def test_a_fallback_is_refused_when_eager_fallback_is_off(standin: object) -> None:
    reset_dynamo()
    x, index = torch.ones(3, 4, device="hpu"), torch.tensor([0, 2], device="hpu")
    with config.patch(use_eager_fallback=False), pytest.raises(Exception, match=r"Node: index requires fallback: True"):
        _compiled(lambda a, i: a[i] * 2)(x, index)
    reset_dynamo()


def test_nothing_is_kept_unless_asked_and_asking_again_clears(standin: object) -> None:
    reset_dynamo()
    passes.logger.set_store_data(False)
    shared_layer.logger.set_store_data(False)
    _compiled(lambda a: a * 3)(torch.ones(2, device="hpu"))
    assert passes.logger.data == [] and shared_layer.logger.data == []
    shared_layer.logger.set_store_data(True)
    reset_dynamo()
    _compiled(lambda a: a * 3)(torch.ones(2, device="hpu"))
    assert _fallbacks(shared_layer.logger) == {"mul": "False"}
    shared_layer.logger.set_store_data(True)
    assert shared_layer.logger.data == []
    shared_layer.logger.set_store_data(False)
    reset_dynamo()


def test_the_loggers_format_lines_as_the_bridges() -> None:
    logger = Logger("PT_COMPILE")
    logger.set_store_data(True)
    logger.debug("Node: %s requires fallback: %s", "mul", False)
    logger.info("Node placement. Node: {} op: {}", "mul", "call_function")
    logger.warn("plain", 1)
    assert logger.data == [
        "[PT_COMPILE] Node: mul requires fallback: False",
        "[PT_COMPILE] Node placement. Node: mul op: call_function",
        "[PT_COMPILE] plain, 1",
    ]
