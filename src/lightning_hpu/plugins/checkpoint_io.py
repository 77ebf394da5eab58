"""Checkpoint IO for HPU: host copies of every tensor, written atomically."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.fabric.utilities.apply_func import apply_to_collection
from lightning.fabric.utilities.cloud_io import _atomic_save, _is_local_file_protocol, get_filesystem
from lightning.fabric.utilities.types import _PATH
from typing_extensions import override


def to_host(obj: Any) -> Any:
    """Copy every tensor in ``obj`` to a plain CPU tensor, so the checkpoint loads on a machine without HPU."""
    return apply_to_collection(obj, torch.Tensor, lambda tensor: tensor.detach().to("cpu"))


def write_atomically(obj: Any, path: _PATH) -> None:
    """``torch.save`` to a temporary file beside ``path``, flush it to disk, then rename it over ``path``.

    A crash mid-save leaves the previous file at ``path`` untouched and no partial file behind.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
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
    """Saves host (CPU) copies of device tensors atomically; loads onto the CPU by default."""

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
