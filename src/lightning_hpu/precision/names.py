"""Every precision name Lightning and the HPU take, and what each one means: the table everything else asks.

A name, or one of Lightning's short spellings (``"bf16"``, ``"16"``, ``32``, ...), resolves to one
:class:`PrecisionName`: the dtype the weights are created and kept in, the dtype the forward computes in, whether that
is autocast around fp32 weights (*mixed*) or the whole model in the dtype (*true*), whether the Transformer Engine's
layers run in fp8, and what DeepSpeed, FSDP and model parallelism make of it on the HPU. The precision plugins of both
trees (plain, DeepSpeed and FSDP), the Trainer's and Fabric's connectors, DeepSpeed's set-up and the MFU monitor read
it here; the table of docs/guide/precision.md and docs/architecture.md is :func:`markdown_table`'s (a docs test
compares them).

Lightning's names keep Lightning's meaning: ``"transformer-engine"`` and ``"transformer-engine-float16"`` create and
keep the weights in bf16 and fp16 with the engine's layers in fp8, as Lightning's ``TransformerEnginePrecision``
does. The HPU's own ``"fp8"`` and ``"fp8-float16"`` keep fp32 weights and run autocast around the fp8 layers.

Lightning-free (torch only), so that every layer may ask it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class PrecisionName:
    """What one precision name means."""

    #: The full name (``"bf16-mixed"``).
    name: str
    #: The dtype the weights are created (``configure_model``, ``init_module``) and kept in.
    weights: torch.dtype
    #: The dtype the forward computes in, outside the engine's fp8 layers.
    compute: torch.dtype
    #: Whether the forward runs under ``torch.autocast`` in :attr:`compute` (mixed: fp32 weights; fp8 names too).
    autocast: bool
    #: Whether the Transformer Engine's layers run in fp8.
    fp8: bool
    #: Whether Lightning's connector takes the name (else it is the HPU's own).
    lightning: bool
    #: Whether the HPU runs it (Gaudi2 or later for fp16 and fp8).
    hpu: bool
    #: The Lightning DeepSpeed precision DeepSpeed's engine is configured with (the fp8 layers come on top);
    #: ``None``: DeepSpeed does not run it.
    deepspeed: str | None
    #: Whether the HPU's FSDP runs it (``MixedPrecision`` with :attr:`compute` for parameters and reductions).
    fsdp: bool
    #: Whether a ``ModelParallelStrategy`` runs it (Lightning's list, the same on the HPU).
    model_parallel: bool

    @property
    def mixed(self) -> bool:
        """Autocast around fp32 weights (``"bf16-mixed"``, ``"16-mixed"``, ``"fp8"``, ``"fp8-float16"``)."""
        return self.autocast and self.weights == torch.float32

    @property
    def true_half(self) -> bool:
        """The whole model in a 16-bit dtype: weights, inputs and ops (``"bf16-true"``, the engine's names, ...)."""
        return self.weights in (torch.bfloat16, torch.float16)

    @property
    def fp16(self) -> bool:
        """Whether it computes or keeps weights in fp16 (Gaudi2 or later)."""
        return torch.float16 in (self.weights, self.compute)

    @property
    def matmul_precision(self) -> str:
        """What the matrix engine computes in: ``"fp8"``, ``"bf16"``, ``"fp16"``, ``"fp32"`` or ``"fp64"``."""
        return "fp8" if self.fp8 else DTYPE_NAMES[self.compute]


DTYPE_NAMES = {torch.float64: "fp64", torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}

_F64, _F32, _BF16, _F16 = torch.float64, torch.float32, torch.bfloat16, torch.float16


def _name(
    name: str,
    weights: torch.dtype,
    compute: torch.dtype,
    *,
    autocast: bool = False,
    fp8: bool = False,
    lightning: bool = True,
    hpu: bool = True,
    deepspeed: str | None = "",
) -> PrecisionName:
    """A row: DeepSpeed configures the name itself unless told otherwise; FSDP runs what has no fp8 layers."""
    model_parallel = name in ("32-true", "bf16-mixed", "bf16-true", "16-true")
    deepspeed = name if deepspeed == "" else deepspeed
    return PrecisionName(
        name, weights, compute, autocast, fp8, lightning, hpu, deepspeed, hpu and not fp8, model_parallel
    )


#: Every full name, in the order the docs list them.
PRECISIONS: dict[str, PrecisionName] = {
    spec.name: spec
    for spec in (
        _name("32-true", _F32, _F32),
        _name("bf16-mixed", _F32, _BF16, autocast=True),
        _name("16-mixed", _F32, _F16, autocast=True),
        _name("bf16-true", _BF16, _BF16),
        _name("16-true", _F16, _F16),
        _name("64-true", _F64, _F64, hpu=False, deepspeed=None),
        _name("transformer-engine", _BF16, _BF16, autocast=True, fp8=True, deepspeed="bf16-true"),
        _name("transformer-engine-float16", _F16, _F16, autocast=True, fp8=True, deepspeed="16-true"),
        _name("fp8", _F32, _BF16, autocast=True, fp8=True, lightning=False, deepspeed="bf16-mixed"),
        _name("fp8-float16", _F32, _F16, autocast=True, fp8=True, lightning=False, deepspeed="16-mixed"),
    )
}

#: Lightning's other spellings of its names (``Trainer(precision=16)`` included: numbers are read as strings).
ALIASES: dict[str, str] = {"64": "64-true", "32": "32-true", "16": "16-mixed", "bf16": "bf16-mixed"}


def lookup(precision: object) -> PrecisionName | None:
    """What ``precision`` (a full name, an alias or Lightning's number) means; ``None`` for a name of neither."""
    if isinstance(precision, bool) or not isinstance(precision, (str, int)):
        return None
    text = str(precision)
    return PRECISIONS.get(ALIASES.get(text, text))


def hpu_names() -> tuple[str, ...]:
    """The full names the HPU runs, in the docs' order."""
    return tuple(name for name, spec in PRECISIONS.items() if spec.hpu)


def hpu_only_names() -> tuple[str, ...]:
    """The HPU's own names, which Lightning's connector does not take (``"fp8"``, ``"fp8-float16"``)."""
    return tuple(name for name, spec in PRECISIONS.items() if not spec.lightning)


def markdown_table() -> str:
    """The table of docs/guide/precision.md and docs/architecture.md: each name (with its aliases) and its meaning."""
    rows = [
        "| precision | weights | compute | mixed or true | fp8 layers | DeepSpeed | FSDP | model parallel |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, spec in PRECISIONS.items():
        spellings = ", ".join(f'`"{alias}"`' for alias, full in ALIASES.items() if full == name)
        given = f'`"{name}"`' + (f" ({spellings})" if spellings else "") + ("" if spec.lightning else " (HPU only)")
        if not spec.hpu:
            rows.append(f"| {given} | {DTYPE_NAMES[spec.weights]} | refused on the HPU | | | | | |")
            continue
        kind = "mixed (autocast)" if spec.mixed else "true" + (" (autocast around fp8)" if spec.autocast else "")
        deepspeed = f'`"{spec.deepspeed}"`' + (" + fp8 layers" if spec.fp8 else "") if spec.deepspeed else "refused"
        scaler = ", sharded grad scaler" if spec.mixed and spec.compute == torch.float16 else ""
        fsdp = f"{DTYPE_NAMES[spec.compute]} params and reduce{scaler}" if spec.fsdp else "refused"
        dtypes = f"{DTYPE_NAMES[spec.weights]} | {DTYPE_NAMES[spec.compute]}"
        rows.append(
            f"| {given} | {dtypes} | {kind} | {'yes' if spec.fp8 else 'no'} | {deepspeed} | {fsdp}"
            f" | {'yes' if spec.model_parallel else 'refused'} |"
        )
    return "\n".join(rows)
