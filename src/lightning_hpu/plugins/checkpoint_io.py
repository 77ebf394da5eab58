"""Checkpoint IO for HPU: host copies of every tensor, written atomically, no temporary files left behind."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.fabric.utilities.apply_func import apply_to_collection
from lightning.fabric.utilities.cloud_io import _atomic_save, _is_local_file_protocol, get_filesystem
from lightning.fabric.utilities.types import _PATH
from typing_extensions import override

from lightning_hpu.plugins.temp_files import remove_orphaned_temporary_files, temporary_path


def to_host(obj: Any) -> Any:
    """Copy every tensor in ``obj`` to a plain CPU tensor, so the checkpoint loads on a machine without HPU."""
    return apply_to_collection(obj, torch.Tensor, lambda tensor: tensor.detach().to("cpu"))


def write_atomically(obj: Any, path: _PATH) -> None:
    """``torch.save`` to a temporary file beside ``path``, flush it to disk, then rename it over ``path``.

    An exception mid-save removes the temporary file; a killed process cannot, so each save first removes the
    temporary files that writers on this host which no longer run left in the directory
    (:func:`~lightning_hpu.plugins.temp_files.remove_orphaned_temporary_files`). Either way the previous file at
    ``path`` stays intact until the new one is complete.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_orphaned_temporary_files(target.parent)
    temporary = temporary_path(target)
    try:
        with open(temporary, "wb") as file:
            torch.save(obj, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    with contextlib.suppress(OSError):
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


class HPUCheckpointIO(TorchCheckpointIO):
    """Saves host (CPU) copies of device tensors atomically; loads onto the CPU by default.

    Local saves go through :func:`write_atomically`: the last good checkpoint survives a crash or a kill mid-save,
    and the temporary file a killed save left is removed by the next save to that directory.
    """

    @override
    def save_checkpoint(self, checkpoint: dict[str, Any], path: _PATH, storage_options: Any | None = None) -> None:
        if storage_options is not None:
            raise TypeError(
                f"`storage_options` is not supported by {type(self).__name__}; drop the argument or pass a custom"
                " CheckpointIO plugin that understands it."
            )
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
