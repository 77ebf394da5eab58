"""``habana_frameworks.torch.dynamo.compile_backend.recipe_compiler`` on the stand-in: recipes of compiled graphs.

``HabanaGraphModule`` launches a compiled graph as one recipe, and ``get_callable_recipe`` gives it, or the graph
itself when ``config.use_compiled_recipes`` is off (:mod:`gaudi_standin.compiler.recipes`).
"""

from __future__ import annotations

from gaudi_standin.compiler.recipes import HabanaGraphModule, get_callable_recipe

__all__ = ["HabanaGraphModule", "get_callable_recipe"]
