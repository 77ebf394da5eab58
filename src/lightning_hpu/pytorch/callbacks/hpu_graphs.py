"""One switch for Lightning: ``Trainer(callbacks=[HPUGraphs()])`` graphs the model without rewriting it.

Training calls of the chosen modules go through :class:`ModuleCacher` (forward and backward graphs per input
shape); validation, test and predict calls go through :func:`wrap_in_hpu_graph`. Evaluation outputs are returned as
copies, so outputs kept across steps (e.g. collected predictions) are not overwritten by the next replay. Dynamic
parts (data-dependent control flow or shapes) stay the user's: graph the static submodules by name (``modules``).

The modules are restored when the stage ends and also when it fails (Lightning skips ``teardown`` on an exception),
so after a failed fit the model runs eagerly and can be fitted again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from torch import Tensor
from torch.nn import Module
from torch.utils._pytree import tree_map
from typing_extensions import override

from lightning_hpu.hpu_graphs.rules import (
    HPUGraphsUnavailableError,
    check_graphable_for_training,
    check_not_compiled,
    check_not_graphed,
    graphs_backend,
)
from lightning_hpu.hpu_graphs.wrappers import ModuleCacher, wrap_in_hpu_graph

_UNSET = object()


class HPUGraphs(Callback):
    """Graph the LightningModule's forward (or its submodules named in ``modules``) on an HPU in lazy mode.

    Args:
        train: graph training forwards (and their backward) with :class:`ModuleCacher`.
        eval: graph validation/test/predict forwards with :func:`wrap_in_hpu_graph`.
        modules: dotted names of submodules to graph (``"encoder"``, ``"net.head"``); default: the LightningModule.
        max_graphs: graphs cached per module and mode; once full, new input shapes run uncached (nothing is evicted).
        use_lfu: training cache keeps the most frequent shapes (see ``ModuleCacher``).
        disable_tensor_cache: evaluation graphs keep their own input buffers (less memory held on a Gaudi).
        asynchronous: replay without waiting for the device.
    """

    def __init__(
        self,
        train: bool = True,
        eval: bool = True,
        modules: Sequence[str] | None = None,
        max_graphs: int = 10,
        use_lfu: bool = False,
        disable_tensor_cache: bool = False,
        asynchronous: bool = False,
    ) -> None:
        if not (train or eval):
            raise ValueError("HPUGraphs(train=False, eval=False) graphs nothing: enable `train`, `eval` or both.")
        if isinstance(modules, str):
            raise TypeError(f"`modules` must be a list of submodule names, e.g. [{modules!r}], not a string.")
        if isinstance(max_graphs, bool) or not isinstance(max_graphs, int) or max_graphs < 1:
            raise ValueError(f"`max_graphs` must be a positive integer, got {max_graphs!r}.")
        self.train = train
        self.eval = eval
        self.modules = list(modules) if modules is not None else None
        self.max_graphs = max_graphs
        self.use_lfu = use_lfu
        self.disable_tensor_cache = disable_tensor_cache
        self.asynchronous = asynchronous
        #: Each graphed module, with the instance attributes graphing set and their values before (absent if unset).
        self._originals: list[tuple[Module, set[str], dict[str, Any]]] = []
        self._accumulation = 1

    @override
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        from lightning_hpu.pytorch.accelerator import HPUAccelerator

        if not isinstance(trainer.accelerator, HPUAccelerator):
            raise HPUGraphsUnavailableError(
                f"HPUGraphs needs the HPU accelerator, but the Trainer uses {type(trainer.accelerator).__name__}:"
                " pass `accelerator='hpu'` (or remove the HPUGraphs callback)."
            )
        graphs_backend()
        if getattr(pl_module, "_compiler_ctx", None):
            raise HPUGraphsUnavailableError(
                "HPUGraphs cannot graph a torch.compile'd LightningModule: HPU graphs do not support torch.compile."
                " Pass the module uncompiled, or remove the HPUGraphs callback."
            )
        if self._originals:
            return
        for name, module in self._targets(pl_module):
            check_not_graphed(module, name)
            check_not_compiled(module, name)
            if self.train:
                check_graphable_for_training(module, name)
        # Accumulating gradients needs the bridge's grad-accumulation mode: the first micro-batch of each step gets
        # its own graph, whose gradients become ``.grad``; later micro-batches add theirs to it.
        self._accumulation = trainer.accumulate_grad_batches
        for _, module in self._targets(pl_module):
            self._wrap(module)

    @override
    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if self.train and self._accumulation > 1:
            for module, _, _ in self._originals:
                set_iteration_count = cast(Callable[[int], None], module.set_iteration_count)
                set_iteration_count(batch_idx % self._accumulation)

    @override
    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._restore()

    @override
    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        self._restore()

    def _restore(self) -> None:
        """Give each graphed module back its own ``forward`` and drop what graphing added (caches, helpers)."""
        for module, names, before in reversed(self._originals):
            for name in names:
                if name in before:
                    module.__dict__[name] = before[name]
                else:
                    module.__dict__.pop(name, None)
        self._originals.clear()

    def _targets(self, pl_module: pl.LightningModule) -> list[tuple[str, Module]]:
        if self.modules is None:
            return [("the LightningModule", pl_module)]
        targets = []
        for name in self.modules:
            try:
                targets.append((f"modules[{name!r}]", pl_module.get_submodule(name)))
            except AttributeError:
                raise ValueError(
                    f"HPUGraphs(modules=[{name!r}]): {type(pl_module).__name__} has no submodule {name!r};"
                    " use a dotted name from `model.named_modules()`."
                ) from None
        return targets

    def _wrap(self, module: Module) -> None:
        before = dict(module.__dict__)
        try:
            self._graph(module)
        finally:
            changed = {name for name, value in module.__dict__.items() if before.get(name, _UNSET) is not value}
            self._originals.append((module, changed, {name: before[name] for name in changed if name in before}))

    def _graph(self, module: Module) -> None:
        original = module.forward
        eval_forward: Callable[..., Any] | None = None
        train_forward: Callable[..., Any] = original
        if self.eval:
            wrap_in_hpu_graph(
                module,
                asynchronous=self.asynchronous,
                disable_tensor_cache=self.disable_tensor_cache,
                max_graphs=self.max_graphs,
            )
            eval_forward = module.forward
            module.forward = original
        if self.train:
            ModuleCacher(self.max_graphs)(
                module,
                use_lfu=self.use_lfu,
                asynchronous=self.asynchronous,
                have_grad_accumulation=self._accumulation > 1,
            )
            train_forward = module.forward

        def forward(*args: Any, **kwargs: Any) -> Any:
            if module.training and torch.is_grad_enabled():
                return train_forward(*args, **kwargs)
            if eval_forward is None:
                return original(*args, **kwargs)
            return tree_map(lambda x: x.clone() if isinstance(x, Tensor) else x, eval_forward(*args, **kwargs))

        module.forward = forward
