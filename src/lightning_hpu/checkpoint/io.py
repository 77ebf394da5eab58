"""Checkpoint IO for HPU: host copies of every tensor, written atomically, no temporary files left behind."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NoReturn

from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.fabric.utilities.cloud_io import _atomic_save, _is_local_file_protocol, get_filesystem
from lightning.fabric.utilities.types import _PATH
from typing_extensions import override

from lightning_hpu.checkpoint.files import to_host, write_atomically


class HPUCheckpointIO(TorchCheckpointIO):
    """Saves host (CPU) copies of device tensors atomically; loads onto the CPU by default.

    Local saves go through :func:`write_atomically`: the last good checkpoint survives a crash or a kill mid-save,
    and the temporary file a killed save left is removed by the next save to that directory.
    """

    @override
    def save_checkpoint(self, checkpoint: dict[str, Any], path: _PATH, storage_options: Any | None = None) -> None:
        if storage_options is not None:
            refuse_storage_options(self)
        host_checkpoint = to_host(checkpoint)
        if _is_local_file_protocol(path):
            write_atomically(host_checkpoint, path)
        else:
            fs = get_filesystem(path)
            fs.makedirs(os.path.dirname(str(path)), exist_ok=True)
            _atomic_save(host_checkpoint, path)

    @override
    def load_checkpoint(
        self,
        path: _PATH,
        map_location: Callable | None = lambda storage, loc: storage.cpu(),
        weights_only: bool | None = None,
    ) -> dict[str, Any]:
        """Load onto the CPU unless told otherwise: the strategy moves the states onto the HPU itself."""
        return super().load_checkpoint(path, map_location=map_location, weights_only=weights_only)


def refuse_storage_options(io: TorchCheckpointIO) -> NoReturn:
    """Refuse ``save_checkpoint(..., storage_options=...)`` for ``io`` as Lightning's ``TorchCheckpointIO`` does, in
    its words (asked of it: its check comes before anything is written, and ``os.devnull`` would take a write), with
    the HPU sentence after them."""
    try:
        TorchCheckpointIO.save_checkpoint(io, {}, os.devnull, storage_options=True)
        lightning_message = ""
    except TypeError as error:
        lightning_message = " ".join(str(error).split()) + " "
    raise TypeError(
        f"{lightning_message}{type(io).__name__} writes host copies atomically and takes no storage options: drop"
        " `storage_options`, or pass plugins=[YourCheckpointIO()] that uses them."
    )
