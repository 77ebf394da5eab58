"""optimum-habana's ``gaudi_config.json``, read as it is and turned into lightning-hpu's plugins and callbacks.

optimum-habana 1.21's ``GaudiConfig`` has six fields: ``use_torch_autocast`` (bf16 autocast), ``autocast_bf16_ops``
and ``autocast_fp32_ops`` (the bridge's op lists, written to files named by ``PT_HPU_AUTOCAST_*_OPS_LIST``; its
trainer writes them only when both are given), ``use_fused_adam`` (Habana's ``FusedAdamW`` for AdamW),
``use_fused_clip_norm`` (Habana's ``FusedClipNorm`` for clipping by norm) and ``use_dynamic_shapes`` (the graph
compiler's dynamic shapes). A file saved by ``GaudiConfig.save_pretrained`` may also carry the library versions that
wrote it, which mean nothing here. Any other key, a value of the wrong type, or a setting that contradicts another
is refused with one sentence naming the key, before anything is set up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lightning_hpu.runtime import HPUConfigurationError, require_backend

if TYPE_CHECKING:
    from lightning.pytorch.callbacks import Callback
    from torch.optim import Optimizer

    from lightning_hpu.fabric.plugins.precision import HPUPrecision
    from lightning_hpu.pytorch.plugins.precision import HPUPrecisionPlugin

#: Keys ``save_pretrained`` adds (the versions that wrote the file): accepted and ignored.
VERSION_KEYS = frozenset({"optimum_version", "transformers_version"})

#: Keys of GaudiConfig files from before optimum-habana 1.10 (Habana Mixed Precision, removed with HMP itself).
LEGACY_KEYS = {
    "use_habana_mixed_precision": "use_torch_autocast",
    "hmp_bf16_ops": "autocast_bf16_ops",
    "hmp_fp32_ops": "autocast_fp32_ops",
    "hmp_opt_level": None,
    "hmp_is_verbose": None,
    "log_device_mem_alloc": None,
}


@dataclass(frozen=True)
class GaudiConfig:
    """The settings of an optimum-habana ``gaudi_config.json`` (1.21 fields, same defaults).

    Read a file with :meth:`from_json`, then hand :meth:`trainer_arguments` to ``Trainer(...)`` or
    :meth:`fabric_arguments` to ``Fabric(...)``; with Fabric, pass your AdamW through :meth:`convert_optimizer`
    (the Trainer's callback does that itself).
    """

    use_torch_autocast: bool = False
    autocast_bf16_ops: tuple[str, ...] | None = None
    autocast_fp32_ops: tuple[str, ...] | None = None
    use_fused_adam: bool = False
    use_fused_clip_norm: bool = False
    use_dynamic_shapes: bool = False

    def __post_init__(self) -> None:
        for name in ("use_torch_autocast", "use_fused_adam", "use_fused_clip_norm", "use_dynamic_shapes"):
            if not isinstance(getattr(self, name), bool):
                raise HPUConfigurationError(
                    f"GaudiConfig key `{name}` must be true or false, not {getattr(self, name)!r}."
                )
        lists = {"autocast_bf16_ops": self.autocast_bf16_ops, "autocast_fp32_ops": self.autocast_fp32_ops}
        for name, ops in lists.items():
            if ops is not None:
                if isinstance(ops, (str, bytes)) or not isinstance(ops, Sequence):
                    raise HPUConfigurationError(f"GaudiConfig key `{name}` must be a list of op names, not {ops!r}.")
                object.__setattr__(self, name, tuple(ops))
                if not self.use_torch_autocast:
                    raise HPUConfigurationError(
                        f"GaudiConfig key `{name}` needs autocast: set `use_torch_autocast` to true or remove it."
                    )
        given = [name for name, ops in lists.items() if ops is not None]
        if len(given) == 1:
            missing = ({"autocast_bf16_ops", "autocast_fp32_ops"} - set(given)).pop()
            raise HPUConfigurationError(
                f"GaudiConfig key `{given[0]}` is given without `{missing}`: optimum-habana applies the op lists only"
                " as a pair, so give both or neither."
            )
        both = sorted(set(self.autocast_bf16_ops or ()) & set(self.autocast_fp32_ops or ()))
        if both:
            raise HPUConfigurationError(
                f"GaudiConfig keys `autocast_bf16_ops` and `autocast_fp32_ops` both name {both}; keep each op in one."
            )

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], source: str = "GaudiConfig") -> GaudiConfig:
        """Build from a ``gaudi_config.json``'s mapping; ``source`` names it in errors."""
        if not isinstance(values, Mapping):
            raise HPUConfigurationError(f"{source} must hold a JSON object of GaudiConfig keys, not {values!r}.")
        known = {field.name for field in fields(cls)}
        for key in values:
            if key in known or key in VERSION_KEYS:
                continue
            if key in LEGACY_KEYS:
                replacement = LEGACY_KEYS[key]
                instead = f"use `{replacement}` instead" if replacement else "remove it"
                raise HPUConfigurationError(
                    f"{source} key `{key}` is from Habana Mixed Precision, which optimum-habana removed; {instead}."
                )
            raise HPUConfigurationError(
                f"{source} key `{key}` is not a GaudiConfig field; the fields are {', '.join(sorted(known))}."
            )
        return cls(**{key: value for key, value in values.items() if key in known})

    @classmethod
    def from_json(cls, path: str | Path) -> GaudiConfig:
        """Read a ``gaudi_config.json`` (a file, or a directory holding one as ``save_pretrained`` writes it)."""
        file = Path(path)
        if file.is_dir():
            file = file / "gaudi_config.json"
        try:
            values = json.loads(file.read_text())
        except OSError as error:
            raise HPUConfigurationError(f"Cannot read the GaudiConfig file {str(file)!r}: {error.strerror}.") from None
        except json.JSONDecodeError as error:
            raise HPUConfigurationError(f"The GaudiConfig file {str(file)!r} is not valid JSON: {error}.") from None
        return cls.from_dict(values, source=f"GaudiConfig file {str(file)!r}")

    @property
    def precision(self) -> str:
        """The precision the file asks for: ``"bf16-mixed"`` with ``use_torch_autocast``, else ``"32-true"``."""
        return "bf16-mixed" if self.use_torch_autocast else "32-true"

    def _precision_arguments(self) -> dict[str, Any]:
        return {
            "autocast_lower_precision_ops": self.autocast_bf16_ops,
            "autocast_fp32_ops": self.autocast_fp32_ops,
            "fused_clip_norm": self.use_fused_clip_norm,
        }

    def precision_plugin(self) -> HPUPrecisionPlugin:
        """The Trainer's precision plugin: bf16 autocast with the op lists, fused or torch clipping."""
        from lightning_hpu.pytorch.plugins.precision import HPUPrecisionPlugin

        return HPUPrecisionPlugin(self.precision, **self._precision_arguments())

    def fabric_precision(self) -> HPUPrecision:
        """Fabric's precision plugin, with the same settings as :meth:`precision_plugin`."""
        from lightning_hpu.fabric.plugins.precision import HPUPrecision

        return HPUPrecision(self.precision, **self._precision_arguments())

    def callback(self) -> Callback:
        """The Trainer callback that sets dynamic shapes and swaps AdamW for the fused one (see :meth:`apply`)."""
        from lightning_hpu.pytorch.callbacks.gaudi_config import GaudiConfigCallback

        return GaudiConfigCallback(self)

    def trainer_arguments(self) -> dict[str, Any]:
        """``Trainer(accelerator="hpu", **config.trainer_arguments())``: the precision plugin and the callback."""
        return {"plugins": [self.precision_plugin()], "callbacks": [self.callback()]}

    def fabric_arguments(self) -> dict[str, Any]:
        """``Fabric(accelerator="hpu", **config.fabric_arguments())``: the precision plugin."""
        return {"plugins": [self.fabric_precision()]}

    def apply(self) -> None:
        """Switch the graph compiler's dynamic shapes as the file says (the Trainer's callback calls this at setup;
        call it once with Fabric)."""
        require_backend().set_dynamic_shapes(self.use_dynamic_shapes)

    def convert_optimizer(self, optimizer: Optimizer) -> Optimizer:
        """With ``use_fused_adam``, the fused AdamW in place of a ``torch.optim.AdamW``; otherwise ``optimizer``."""
        from lightning_hpu.device.fused_adam import to_fused_adamw

        return to_fused_adamw(optimizer) if self.use_fused_adam else optimizer
