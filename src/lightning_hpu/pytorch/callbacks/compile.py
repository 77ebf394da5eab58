"""``HPUCompile``: one switch that compiles a LightningModule, or its repeated blocks, with ``hpu_backend``.

Compiling is done in place (``module.compile(...)``), so the module keeps its class and its state-dict keys
(checkpoints load into an uncompiled model) and ``self.log`` in the step methods keeps working: only ``forward``
runs under TorchDynamo, never Lightning's hooks. Given module classes, every submodule of that class is compiled on
its own (regional compilation, as optimum-habana compiles transformer blocks): identical blocks share one compiled
graph, so compile time does not grow with depth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import Callback
from torch.nn import Module
from typing_extensions import override

from lightning_hpu.runtime import require_backend
from lightning_hpu.runtime.compile_backend import (
    BACKEND_NAME,
    CompileInLazyModeError,
    check_options,
    compiled_autograd,
    is_registered,
    lazy_mode_refusal,
)


class HPUCompileError(RuntimeError):
    """``HPUCompile`` was used where the HPU cannot compile."""


def _graphed(module: Module) -> bool:
    """Whether HPU graphs wrapped this module (``ModuleCacher`` or ``wrap_in_hpu_graph`` patch it in place)."""
    return any(name in module.__dict__ for name in ("graph_cacher", "clear_cache", "set_iteration_count"))


class HPUCompile(Callback):
    """Compile the LightningModule's ``forward``, named submodules, or every block of given classes, for HPU.

    Args:
        modules: ``None`` compiles the LightningModule's ``forward``; a list of dotted submodule names
            (``["encoder", "head"]``) compiles those; a list of module classes (``[TransformerBlock]``) compiles every
            submodule of those classes one by one (regional compilation).
        dynamic, fullgraph: as for ``torch.compile``.
        options: settings of the bridge's ``hpu_backend`` (e.g. ``{"keep_input_mutations": True}``).
        compile_from_second_step: run the first training step eagerly and compile from the second (optimum-habana's
            ``compile_from_sec_iteration``): the first step's one-off work (lazy initialisation, optimizer state)
            stays out of the compiled graphs.
        compiled_autograd: compile the backward pass with compiled autograd as well (TorchDynamo captures the whole
            autograd graph and hands it to ``hpu_backend``; optimum-habana's ``use_compiled_autograd``).

    Refused before training: the legacy lazy mode (compiling needs ``PT_HPU_LAZY_MODE=0``), HPU graphs on the same
    model, a LightningModule already given to the Trainer as ``torch.compile(model)``, a non-HPU accelerator.
    """

    def __init__(
        self,
        modules: Sequence[str | type[Module]] | None = None,
        dynamic: bool | None = None,
        fullgraph: bool = False,
        options: Mapping[str, Any] | None = None,
        compile_from_second_step: bool = False,
        compiled_autograd: bool = False,
    ) -> None:
        if isinstance(modules, (str, type)):
            raise TypeError(f"`modules` must be a list, e.g. modules=[{modules!r}], not a single name or class.")
        if modules is not None:
            for item in modules:
                if not isinstance(item, str) and not (isinstance(item, type) and issubclass(item, Module)):
                    raise TypeError(
                        f"`modules` holds {item!r}: give dotted submodule names (str) or torch.nn.Module subclasses."
                    )
            if not modules:
                raise ValueError("`modules=[]` compiles nothing: pass None to compile the whole forward.")
        self.modules = list(modules) if modules is not None else None
        self.dynamic = dynamic
        self.fullgraph = fullgraph
        self.options = check_options(options)
        self.compiled: list[Module] = []
        self.compile_from_second_step = compile_from_second_step
        self.compiled_autograd = compiled_autograd
        self._backward = ExitStack()

    @override
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._check_trainer(trainer, pl_module)
        if self.compiled:
            return
        targets = self._targets(pl_module)
        for _, module in targets:
            if _graphed(module):
                raise HPUCompileError(
                    f"HPUCompile cannot compile {type(module).__name__}: it is wrapped in HPU graphs, which do not"
                    " support torch.compile; use one or the other."
                )
        for _, module in targets:
            module.compile(
                backend=BACKEND_NAME,
                dynamic=self.dynamic,
                fullgraph=self.fullgraph,
                options=self.options or None,
            )
            self.compiled.append(module)

    @override
    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if self.compile_from_second_step and trainer.global_step == 0 and batch_idx == 0:
            torch.compiler.set_stance("force_eager")

    @override
    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.compile_from_second_step:
            torch.compiler.set_stance("default")

    @override
    def on_before_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule, loss: torch.Tensor) -> None:
        if self.compiled_autograd:
            self._backward.enter_context(compiled_autograd(self.dynamic))

    @override
    def on_after_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._backward.close()

    @override
    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        # Leave the user's modules as they came; a later stage compiles again (Dynamo's cache is kept).
        for module in self.compiled:
            module._compiled_call_impl = None
        self.compiled.clear()
        if self.compile_from_second_step:
            torch.compiler.set_stance("default")
        self._backward.close()

    def _check_trainer(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        from lightning_hpu.pytorch.accelerator import HPUAccelerator
        from lightning_hpu.pytorch.callbacks.hpu_graphs import HPUGraphs

        if not isinstance(trainer.accelerator, HPUAccelerator):
            raise HPUCompileError(
                f"HPUCompile compiles for HPU, but the Trainer uses {type(trainer.accelerator).__name__}: pass"
                " `accelerator='hpu'`, or use torch.compile yourself on other devices."
            )
        if any(isinstance(callback, HPUGraphs) for callback in getattr(trainer, "callbacks", [])):
            raise HPUCompileError(
                "HPUCompile and HPUGraphs cannot be used together: HPU graphs do not support torch.compile"
                " (and need lazy mode, where compiling is refused); remove one of the two callbacks."
            )
        if require_backend().is_lazy():
            raise CompileInLazyModeError(lazy_mode_refusal())
        if getattr(pl_module, "_compiler_ctx", None):
            raise HPUCompileError(
                "HPUCompile got a LightningModule that was already passed as torch.compile(model); pass the plain"
                " module to the Trainer and let HPUCompile compile it (or drop HPUCompile)."
            )
        if not is_registered():
            raise HPUCompileError(
                f"TorchDynamo has no backend named {BACKEND_NAME!r}: on a Gaudi it comes with the Intel Gaudi bridge"
                " (import habana_frameworks.torch.core first); without one, set LIGHTNING_HPU_BACKEND=cpu."
            )

    def _targets(self, pl_module: pl.LightningModule) -> list[tuple[str, Module]]:
        if self.modules is None:
            return [("", pl_module)]
        targets: dict[int, tuple[str, Module]] = {}
        for item in self.modules:
            found = self._resolve(pl_module, item)
            for name, module in found:
                targets.setdefault(id(module), (name, module))
        return list(targets.values())

    @staticmethod
    def _resolve(pl_module: pl.LightningModule, item: str | type[Module]) -> list[tuple[str, Module]]:
        if isinstance(item, str):
            try:
                return [(item, pl_module.get_submodule(item))]
            except AttributeError:
                raise ValueError(
                    f"HPUCompile(modules=[{item!r}]): {type(pl_module).__name__} has no submodule {item!r}; use a"
                    " dotted name from `model.named_modules()`."
                ) from None
        found: list[tuple[str, Module]] = []
        for name, module in pl_module.named_modules():
            # The outermost blocks only: a block inside a compiled block is compiled with it.
            if isinstance(module, item) and not any(name.startswith(f"{outer}.") for outer, _ in found):
                found.append((name, module))
        if not found:
            raise ValueError(
                f"HPUCompile(modules=[{item.__name__}]): {type(pl_module).__name__} has no submodule of that class;"
                " name a class that `model.named_modules()` contains."
            )
        return found
