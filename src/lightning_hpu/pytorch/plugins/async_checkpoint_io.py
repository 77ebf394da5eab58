"""``HPUAsyncCheckpointIO``: checkpoints written in the background, so training stalls only for the host copy.

A save takes a host copy of every tensor at the save point (a device-to-host copy on an HPU; a real copy where a
tensor already lives on the host; into the previous save's host tensors once its write is done), so later steps
cannot change what is written, then writes it on one background
thread through the wrapped IO (:class:`~lightning_hpu.HPUCheckpointIO` by default: temporary file, fsync, atomic
rename, sweep of temporary files killed writers left). Lightning's ``AsyncCheckpointIO`` instead clones tensors on
the device (device memory for a second copy of the model) and removes old checkpoints at once, while the new one may
still be unwritten; here removals wait behind the writes, so a kill during a background write always leaves the
previous checkpoint in place.

An error of a background write is raised at the next save, at the next load or removal, or when the fit ends
(``teardown``), and only once.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch
from lightning.fabric.plugins import CheckpointIO, TorchCheckpointIO
from lightning.fabric.utilities.apply_func import apply_to_collection
from lightning.fabric.utilities.types import _PATH
from lightning.pytorch.plugins.io.wrapper import _WrappingCheckpointIO
from typing_extensions import override

from lightning_hpu.checkpoint.io import HPUCheckpointIO, refuse_storage_options


def host_snapshot(obj: Any, reuse: list[torch.Tensor] | None = None) -> tuple[Any, list[torch.Tensor]]:
    """A host copy of every tensor in ``obj``, taken now: later in-place updates of the originals do not reach it.

    ``reuse`` holds host tensors of an earlier snapshot that no write reads any more: a tensor of the same shape and
    dtype at the same position is copied into instead of allocating (fresh host memory costs a page fault per page,
    often more than the copy). Returns the snapshot and its host tensors, in order.
    """
    spare = reuse or []
    taken: list[torch.Tensor] = []

    def copy(tensor: torch.Tensor) -> torch.Tensor:
        source = tensor.detach()
        index = len(taken)
        if index < len(spare) and spare[index].shape == source.shape and spare[index].dtype == source.dtype:
            host = spare[index].copy_(source)
        else:
            host = source.to("cpu", copy=True)
        taken.append(host)
        return host

    return apply_to_collection(obj, torch.Tensor, copy), taken


class HPUAsyncCheckpointIO(_WrappingCheckpointIO):
    """Write checkpoints on a background thread: ``Trainer(plugins=[HPUAsyncCheckpointIO()])``.

    Args:
        checkpoint_io: the IO that writes (and loads and removes) files; :class:`~lightning_hpu.HPUCheckpointIO`
            by default.
        reuse_host_buffers: copy into the host tensors of the previous save when its write has finished, instead
            of allocating new ones (faster; keeps one host copy of the checkpoint's tensors between saves).
    """

    def __init__(self, checkpoint_io: CheckpointIO | None = None, reuse_host_buffers: bool = True) -> None:
        super().__init__(checkpoint_io if checkpoint_io is not None else HPUCheckpointIO())
        self.reuse_host_buffers = reuse_host_buffers
        self._host_buffers: list[torch.Tensor] = []
        self._executor: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []
        self._error: BaseException | None = None

    def _submit(self, work: Any, *args: Any) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hpu-checkpoint")
        self._pending = [future for future in self._pending if not future.done()]
        self._pending.append(self._executor.submit(self._run, work, *args))

    def _run(self, work: Any, *args: Any) -> None:
        if self._error is not None:
            return  # a write failed: later work waits until the error has been raised
        try:
            work(*args)
        except BaseException as error:  # raised on the training thread at the next call
            self._error = error

    def _raise_background_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def wait(self) -> None:
        """Block until every queued write and removal has finished; raise the error of one that failed."""
        for future in self._pending:
            future.result()
        self._pending = []
        self._raise_background_error()

    @override
    def save_checkpoint(self, checkpoint: dict[str, Any], path: _PATH, storage_options: Any | None = None) -> None:
        self._raise_background_error()
        assert self.checkpoint_io is not None
        if storage_options is not None and isinstance(self.checkpoint_io, TorchCheckpointIO):
            refuse_storage_options(self.checkpoint_io)  # now, in its words, rather than later from the background
        idle = all(future.done() for future in self._pending)
        reuse = self._host_buffers if self.reuse_host_buffers and idle else None
        snapshot, buffers = host_snapshot(checkpoint, reuse)
        self._host_buffers = buffers if self.reuse_host_buffers else []
        self._submit(self.checkpoint_io.save_checkpoint, snapshot, path, storage_options)

    @override
    def remove_checkpoint(self, path: _PATH) -> None:
        """Removed after the writes queued before it, so the newer checkpoint exists before the old one goes."""
        self._raise_background_error()
        assert self.checkpoint_io is not None
        self._submit(self.checkpoint_io.remove_checkpoint, path)

    @override
    def load_checkpoint(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.wait()
        assert self.checkpoint_io is not None
        return self.checkpoint_io.load_checkpoint(*args, **kwargs)

    @override
    def teardown(self) -> None:
        """At the end of a fit: wait for the writes, stop the thread, raise a background error."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        self._pending = []
        self._host_buffers = []
        super().teardown()
        self._raise_background_error()
