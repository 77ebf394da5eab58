"""Per-call cost of an HPU-graph cache lookup: the old way against the way the stand-in's caches do it now.

Every call of a module under ``ModuleCacher`` or ``wrap_in_hpu_graph`` computes a key before it can replay. The old
lookup bound the call with ``inspect.Signature.bind``, built a key that walked every argument (shape, dtype, stride,
device, requires_grad), flattened the arguments a second time with torch's pytree to find the tensors, and
unflattened the outputs with it. The new one (``gaudi_standin.graphs.keys``) reads the signature
once, builds the key and collects the tensors in one walk, and hands a single-tensor output straight back.

Both are timed here, in the same run, on the same calls: a one-tensor call, and a call shaped like a Hugging Face
model's (tensors and flags by keyword, defaults left out, a dict of outputs). Only the lookup is timed, not the
replay; the last column puts the new lookup next to a whole cached call (lookup, input copy, replay) of a small
model on the stand-in.

    LIGHTNING_HPU_BACKEND=cpu PT_HPU_LAZY_MODE=1 python benchmarks/graph_cache_lookup.py
"""

from __future__ import annotations

import argparse
import inspect
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils._pytree import tree_flatten, tree_unflatten

from gaudi_standin.graphs.keys import ForwardSignature, call_key, rebuild, walk


# --------------------------------------------------------------------------------------------- the old lookup
def _old_input_key(obj: Any) -> Any:
    if isinstance(obj, Tensor):
        return ("T", tuple(obj.shape), obj.dtype, obj.stride(), obj.device, obj.requires_grad)
    if isinstance(obj, dict):
        return ("D", tuple((k, _old_input_key(v)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        return (type(obj).__name__, tuple(_old_input_key(v) for v in obj))
    if is_dataclass(obj) and not isinstance(obj, type):
        return ("C", type(obj).__name__, tuple((f.name, _old_input_key(getattr(obj, f.name))) for f in fields(obj)))
    hash(obj)
    return obj


def _old_call_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return (_old_input_key(args), _old_input_key(kwargs), torch.is_autocast_enabled("cpu"))


_TENSOR = object()


def old_module_cacher_lookup(forward: Callable[..., Any], outputs: Any) -> Callable[..., Any]:
    """ModuleCacher's per-call work before: bind, key, flatten the inputs again, unflatten the outputs."""
    signature = inspect.signature(forward)
    out_leaves, out_spec = tree_flatten(outputs)
    out_constants = [_TENSOR if isinstance(o, Tensor) else o for o in out_leaves]
    out_tensors = tuple(o for o in out_leaves if isinstance(o, Tensor))
    cache: dict[Any, Any] = {}

    def lookup(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        key = _old_call_key(bound.args, bound.kwargs)
        cache.get(key)
        tensors = tuple(leaf for leaf in tree_flatten((bound.args, bound.kwargs))[0] if isinstance(leaf, Tensor))
        del tensors  # handed to the graphed forward, which returns out_tensors
        it = iter(out_tensors)
        return tree_unflatten([next(it) if c is _TENSOR else c for c in out_constants], out_spec)

    return lookup


def old_wrap_lookup() -> Callable[..., Any]:
    """wrap_in_hpu_graph's per-call work before: a key, then a second flatten to find the tensors to copy."""
    cache: dict[Any, Any] = {}

    def lookup(*args: Any, **kwargs: Any) -> Any:
        key = _old_call_key(args, kwargs)
        cache.get(key)
        return [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, Tensor)]

    return lookup


# --------------------------------------------------------------------------------------------- the new lookup
def new_module_cacher_lookup(forward: Callable[..., Any], outputs: Any) -> Callable[..., Any]:
    """What ``StandInModuleCacher``'s forward does around the replay: bind, one walk, dtype check, outputs."""
    signature = ForwardSignature(forward, "Model")
    out_tensors: list[Tensor] = []
    walk((outputs,), out_tensors)
    single = isinstance(outputs, Tensor)
    cache: dict[Any, Any] = {}
    captured: tuple[torch.dtype, ...] = ()

    def lookup(*args: Any, **kwargs: Any) -> Any:
        values = signature.bind(args, kwargs)
        tensors: list[Tensor] = []
        key = (walk(values, tensors), torch.is_autocast_enabled("cpu"))
        cache.get(key)
        for dtype, tensor in zip(captured, tensors, strict=False):
            if tensor.dtype != dtype:
                break
        return out_tensors[0] if single else rebuild(outputs, out_tensors)

    return lookup


def new_wrap_lookup() -> Callable[..., Any]:
    """What ``standin_wrap_in_hpu_graph``'s forward does before copying and replaying: one walk, one lookup."""
    cache: dict[Any, Any] = {}

    def lookup(*args: Any, **kwargs: Any) -> Any:
        tensors: list[Tensor] = []
        cache.get(call_key(args, kwargs, tensors))
        return tensors

    return lookup


# --------------------------------------------------------------------------------------------- the calls
class OneTensor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(64, 64)

    def forward(self, x: Tensor) -> Tensor:
        return self.lin(x)


class HFLike(nn.Module):
    """A forward with a Hugging Face model's shape of signature."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(100, 64)
        self.head = nn.Linear(64, 100)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
        labels: Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        return_dict: bool = True,
    ) -> dict[str, Tensor]:
        assert attention_mask is not None and labels is not None
        hidden = self.emb(input_ids) * attention_mask.unsqueeze(-1)
        logits = self.head(hidden)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return {"loss": loss, "logits": logits}


def _per_call_us(fn: Callable[[], Any], calls: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def _cached_call_us(model: nn.Module, cache: str, call: Callable[[nn.Module], Any], calls: int) -> float:
    """A whole cached call (hit: lookup, input copy, replay) through the package's real cache."""
    from lightning_hpu.hpu_graphs import ModuleCacher, wrap_in_hpu_graph

    if cache == "ModuleCacher":
        graphed = ModuleCacher(max_graphs=2)(model)
        graphed.train()
    else:
        graphed = wrap_in_hpu_graph(model.eval())
    context = torch.enable_grad() if cache == "ModuleCacher" else torch.no_grad()
    with context:
        call(graphed)  # capture
        return _per_call_us(lambda: call(graphed), max(calls // 20, 50), 3)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20000, help="lookups per timing")
    parser.add_argument("--repeats", type=int, default=5, help="timings per row (the best is shown)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    lazy = os.environ.get("PT_HPU_LAZY_MODE") == "1" and os.environ.get("LIGHTNING_HPU_BACKEND") == "cpu"

    x = torch.randn(8, 64)
    ids = torch.randint(0, 100, (8, 16))
    mask = torch.ones(8, 16)
    labels = torch.randint(0, 100, (8, 16))
    one, hf = OneTensor(), HFLike()
    one_out = one(x)
    hf_out = hf(ids, attention_mask=mask, labels=labels)

    def call_one(m: nn.Module) -> Any:
        return m(x)

    def call_hf(m: nn.Module) -> Any:
        return m(ids, attention_mask=mask, labels=labels)

    rows: list[tuple[str, Callable[..., Any], Callable[..., Any], Callable[[nn.Module], Any], nn.Module, str]] = [
        ("ModuleCacher, forward(x)", old_module_cacher_lookup(one.forward, one_out),
         new_module_cacher_lookup(one.forward, one_out), call_one, OneTensor(), "ModuleCacher"),
        ("ModuleCacher, HF-style call", old_module_cacher_lookup(hf.forward, hf_out),
         new_module_cacher_lookup(hf.forward, hf_out), call_hf, HFLike(), "ModuleCacher"),
        ("wrap_in_hpu_graph, forward(x)", old_wrap_lookup(), new_wrap_lookup(), call_one, OneTensor(),
         "wrap_in_hpu_graph"),
        ("wrap_in_hpu_graph, HF-style call", old_wrap_lookup(), new_wrap_lookup(), call_hf, HFLike(),
         "wrap_in_hpu_graph"),
    ]  # fmt: skip
    print(f"torch {torch.__version__}, 1 thread; best of {args.repeats} x {args.calls} lookups")
    header = f"{'call':<34} {'old us':>8} {'new us':>8} {'new/old':>8} {'cached call us':>15} {'lookup share':>13}"
    print(header)
    for name, old, new, call, model, cache in rows:
        old_us = _per_call_us(lambda old=old, call=call: call(old), args.calls, args.repeats)
        new_us = _per_call_us(lambda new=new, call=call: call(new), args.calls, args.repeats)
        if lazy:
            whole = _cached_call_us(model, cache, call, args.calls)
            extra = f"{whole:>15.1f} {new_us / whole:>12.0%}"
        else:
            extra = f"{'(needs lazy)':>15} {'':>13}"
        print(f"{name:<34} {old_us:>8.2f} {new_us:>8.2f} {new_us / old_us:>8.2f} {extra}")


if __name__ == "__main__":
    main()
