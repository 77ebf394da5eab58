"""``torch._dynamo.reset()`` for a test that counts compilations from scratch."""

from __future__ import annotations

import torch


def reset_dynamo() -> None:
    """``torch._dynamo.reset()``, run a second time if the first stopped with "dictionary changed size during
    iteration": torch's reset walks its cache of compile backends while a dynamo context created meanwhile in the
    process can add to it (seen twice in CI, in ``test_buckets.py``). The second run finishes what the first left."""
    try:
        torch._dynamo.reset()
    except RuntimeError as error:
        if "changed size during iteration" not in str(error):
            raise
        torch._dynamo.reset()
