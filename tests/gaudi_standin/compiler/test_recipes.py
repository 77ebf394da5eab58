"""``hpu_backend`` compiles each AOTAutograd graph through the bridge's ``compilers.hpu_compiler_inner`` and launches
it as a ``recipe_compiler.HabanaGraphModule`` recipe, unless ``use_compiled_recipes`` is off (then op by op, and no
recipe is counted), as on the bridge."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import pytest
import torch

from gaudi_standin.bridge.habana_frameworks.torch.dynamo.compile_backend import compilers, recipe_compiler
from tests.helpers.dynamo import reset_dynamo
from tests.helpers.standin import counters


@pytest.fixture(autouse=True)
def _fresh_dynamo(standin: object) -> Any:
    reset_dynamo()
    yield
    reset_dynamo()


def _double(x: torch.Tensor) -> torch.Tensor:
    return x + x


@pytest.mark.parametrize(
    ("requires_grad", "expected"), [(False, [(False, False)]), (True, [(True, False), (True, True)])]
)
def test_each_graph_goes_through_hpu_compiler_inner_with_its_kind(requires_grad: bool, expected: list[Any]) -> None:
    calls: list[tuple[bool, bool]] = []
    inner = compilers.hpu_compiler_inner

    def spy(graph: Any, inputs: Any, is_training: bool, is_backward: bool) -> Any:
        calls.append((is_training, is_backward))
        return inner(graph, inputs, is_training, is_backward)

    x = torch.tensor([2.0, 3.0], device="hpu", requires_grad=requires_grad)
    with patch.object(compilers, "hpu_compiler_inner", spy):
        out = torch.compile(_double, backend="hpu_backend")(x)
        if requires_grad:
            out.sum().backward()
    assert calls == expected
    torch.testing.assert_close(out.detach().cpu(), torch.tensor([4.0, 6.0]))
    if requires_grad:
        torch.testing.assert_close(x.grad.cpu(), torch.tensor([2.0, 2.0]))


@pytest.mark.parametrize("use_compiled_recipes", [True, False])
def test_a_recipe_is_launched_and_counted_only_with_compiled_recipes(use_compiled_recipes: bool) -> None:
    launch = recipe_compiler.HabanaGraphModule.__call__
    launches: list[int] = []

    def spy(self: Any, *args: Any) -> Any:
        launches.append(len(args))
        return launch(self, *args)

    before = counters().compiled_recipes
    with patch.object(recipe_compiler.HabanaGraphModule, "__call__", spy):
        compiled = torch.compile(_double, backend="hpu_backend", options={"use_compiled_recipes": use_compiled_recipes})
        out = compiled(torch.tensor([1.0, 2.0], device="hpu"))
    torch.testing.assert_close(out.cpu(), torch.tensor([2.0, 4.0]))
    assert bool(launches) is use_compiled_recipes
    assert counters().compiled_recipes - before == int(use_compiled_recipes)
