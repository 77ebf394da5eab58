"""How the stand-in's graph caches key a call: the bridge's key, built in one pass over the arguments.

The bridge (``hpu/graphs.py``, ``input_hash``) keys a cached graph on each tensor's shape and view layout, the
autocast state, and every other argument by value; nothing else. Not the dtype: the same shapes in a new dtype find
the graph captured for the old one, and replay casts the inputs into its buffers. Not ``requires_grad``, not the
device.

A cache lookup runs on every call of a cached module, so it must cost little next to the replay: one walk over the
arguments builds the key and collects the tensors (in order, for copying into the graph's buffers), and
:class:`ForwardSignature` reads a forward's parameters once instead of calling ``inspect.Signature.bind`` per call.
Containers are lists, tuples and dicts (any subclass); every other value is a key part as it is, so it must be
hashable.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor

#: Marks a ``torch.Size`` argument in a key, so that it cannot be mistaken for a tensor's shape.
_VALUE = object()
_EMPTY = inspect.Parameter.empty


def walk(values: Iterable[Any], tensors: list[Tensor]) -> tuple[Any, ...]:
    """The key of ``values`` (tensor shapes and view layouts, other values as they are); appends their tensors."""
    parts: list[Any] = []
    for value in values:
        if isinstance(value, Tensor):
            tensors.append(value)
            # A tensor that is not a view has a plain layout on the device (its view hash is 0 on the bridge).
            parts.append((value.shape, value.stride(), value.storage_offset()) if value._is_view() else value.shape)
        elif isinstance(value, tuple):
            # A torch.Size argument is a value; it is tagged so that it cannot pass for a tensor's shape.
            parts.append((_VALUE, value) if isinstance(value, torch.Size) else (type(value), walk(value, tensors)))
        elif isinstance(value, list):
            parts.append((list, walk(value, tensors)))
        elif isinstance(value, dict):
            parts.append((type(value), tuple(value), walk(value.values(), tensors)))
        else:
            parts.append(value)  # not a tuple, so never equal to a shape or to a container's part
    return tuple(parts)


def call_key(args: tuple[Any, ...], kwargs: dict[str, Any], tensors: list[Tensor]) -> tuple[Any, ...]:
    """The cache key of a call as it was made (``wrap_in_hpu_graph``): positional and keyword arguments."""
    autocast = torch.is_autocast_enabled("cpu")
    if kwargs:
        return walk(args, tensors), tuple(kwargs), walk(kwargs.values(), tensors), autocast
    return walk(args, tensors), autocast


def unhashable_argument(error: TypeError) -> TypeError:
    """The error for an argument that cannot be part of a key (raised where a lookup met it)."""
    return TypeError(
        f"An HPU graph cache keys a call on its non-tensor arguments by value, but one of them cannot be hashed"
        f" ({error}): pass tensors, numbers, strings, None, or lists/tuples/dicts of them."
    )


def rebuild(template: Any, tensors: Iterable[Tensor]) -> Any:
    """``template`` with its tensors replaced, in :func:`walk`'s order, by ``tensors``."""
    return _rebuild(template, iter(tensors))


def _rebuild(template: Any, tensors: Any) -> Any:
    if isinstance(template, Tensor):
        return next(tensors)
    if isinstance(template, (list, tuple)) and not isinstance(template, torch.Size):
        items = [_rebuild(item, tensors) for item in template]
        if isinstance(template, list):
            return items
        if hasattr(template, "_fields"):  # a namedtuple
            return type(template)(*items)
        return type(template)(items)
    if type(template) is dict:
        return {key: _rebuild(value, tensors) for key, value in template.items()}
    if isinstance(template, dict):
        rebuilt = copy.copy(template)
        for key, value in template.items():
            rebuilt[key] = _rebuild(value, tensors)
        return rebuilt
    return template


class ForwardSignature:
    """A forward's parameters, read once; :meth:`bind` gives a call's full argument list, defaults filled in.

    This is the bridge's ``ModuleCacher`` binding (``GraphModel.get_full_args``): ``forward(x)``,
    ``forward(x=x)`` and ``forward(x, flag=<its default>)`` are the same call, so they share a key. Extra keyword
    arguments (for a ``**kwargs`` parameter) come last, as one dict. Calls that do not fit the signature raise
    Python's own ``TypeError``.
    """

    def __init__(self, forward: Callable[..., Any], owner: str) -> None:
        self._signature = inspect.signature(forward)
        names: list[str] = []
        defaults: list[Any] = []
        self._positional = 0
        self._var_keyword = False
        for name, parameter in self._signature.parameters.items():
            if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL):
                raise ValueError(
                    f"ModuleCacher binds forward arguments by name, but {owner}.forward takes {name!r} as"
                    f" {parameter.kind.description}: make it a regular parameter."
                )
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                self._var_keyword = True
                continue
            if parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
                self._positional += 1
            names.append(name)
            defaults.append(parameter.default)
        self.names = tuple(names)
        self._names_set = frozenset(names)
        self._defaults = tuple(defaults)
        # For each count of positional arguments: the parameters after them, and whether they all have defaults.
        self._tails = [(self.names[n:], self._defaults[n:]) for n in range(len(names) + 1)]
        self._tail_has_defaults = [
            all(default is not _EMPTY for default in self._defaults[n:]) for n in range(len(names) + 1)
        ]

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """The value of every parameter, in order (then the extra keyword arguments, if any)."""
        given = len(args)
        if given > self._positional:
            self._raise_type_error(args, kwargs)
        if not kwargs:
            if given == len(self.names):
                return args
            if not self._tail_has_defaults[given]:
                self._raise_type_error(args, kwargs)
            return args + self._defaults[given:]
        names, defaults = self._tails[given]
        tail = tuple(map(kwargs.get, names, defaults))
        if not self._tail_has_defaults[given] and any(value is _EMPTY for value in tail):
            self._raise_type_error(args, kwargs)  # a required argument is missing
        if given and not kwargs.keys().isdisjoint(self.names[:given]):
            self._raise_type_error(args, kwargs)  # an argument given twice
        if self._names_set.issuperset(kwargs):
            return args + tail
        if not self._var_keyword:
            self._raise_type_error(args, kwargs)  # an unknown keyword
        return (*args, *tail, {key: value for key, value in kwargs.items() if key not in self._names_set})

    def call(self, forward: Callable[..., Any], values: tuple[Any, ...]) -> Any:
        """Call ``forward`` with bound ``values``, every argument by name (as the bridge's graphs do)."""
        named = dict(zip(self.names, values, strict=False))
        if len(values) > len(self.names):
            named.update(values[-1])
        return forward(**named)

    def _raise_type_error(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._signature.bind(*args, **kwargs)  # raises Python's own message for a call that does not fit
        raise TypeError(f"These arguments do not fit forward{self._signature}.")  # pragma: no cover
