"""Writing checkpoint files: host copies of the tensors, atomic writes, and temporary files removed once their
writer is gone.

:func:`write_atomically` is how every HPU checkpoint file is written (the checkpoint IO plugins, FSDP state).

A save writes ``.<name>.<host>.<pid>.<start>.<token>.tmp`` beside the checkpoint and renames it over the checkpoint
when complete. A process killed mid-save (SIGKILL, OOM killer, preemption) cannot remove its file; the next save to
the same directory does (and so does the setup of every HPU Trainer strategy, for its checkpoint directories),
provided the file was written on this host and its writer no longer runs. ``<host>`` is the host name plus a tag of
the kernel boot and pid namespace, so pids are compared only where they name the same processes (not across
machines that share a host name, containers, or reboots). ``<start>`` is the writer's start time (Linux ``/proc``),
so a new process that got the dead writer's pid does not keep its file alive. Files of other hosts (shared file
systems) and of live writers (other ranks, other jobs) are never touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import uuid
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.utilities.apply_func import apply_to_collection
from lightning.fabric.utilities.types import _PATH

_SUFFIX = ".tmp"
_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<host>[A-Za-z0-9-]+)\.(?P<pid>\d+)\.(?P<start>\d+)\.[0-9a-f]{8}\.tmp$")


def _pid_space() -> str:
    """A short tag for the space this process's pids live in: the running kernel (boot) and the pid namespace.

    Two containers may share a host name, or a host but not their pids; a pid names the same process only within
    one pid namespace of one boot. Empty where Linux's ``/proc`` does not tell.
    """
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return hashlib.sha1(f"{boot}/{namespace}".encode()).hexdigest()[:8]


def this_host() -> str:
    """The writer's host as temporary file names carry it: the host name (letters, digits, ``-``) and the pid space.

    Only files carrying this exact value are checked against this machine's processes.
    """
    name = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "unknown-host"
    space = _pid_space()
    return f"{name}-{space}" if space else name


def process_start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), or ``None`` if it does not exist or has exited (a zombie).

    Without ``/proc`` (not Linux) it is ``0`` for any process that exists: pid reuse cannot be told apart there.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return _exists_without_proc(pid)
    # The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ")".
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):  # killed but not yet reaped by its parent: it will never write again
        return None
    return int(fields[19])


def _exists_without_proc(pid: int) -> int | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return 0
    return 0


def temporary_path(target: Path) -> Path:
    """A temporary name beside ``target`` that says which process on which host writes it."""
    pid = os.getpid()
    start = process_start_time(pid) or 0
    return target.with_name(f".{target.name}.{this_host()}.{pid}.{start}.{uuid.uuid4().hex[:8]}{_SUFFIX}")


def _writer_is_gone(pid: int, start: int) -> bool:
    now = process_start_time(pid)
    if now is None:
        return True
    return bool(start and now and now != start)  # the pid now belongs to a process that started later


def remove_orphaned_temporary_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary checkpoint files in ``directory`` whose writer ran on this host and has exited.

    Returns the removed paths. Never raises for a missing directory or a file another process removed first.
    """
    host = this_host()
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or match["host"] != host or not entry.is_file(follow_symlinks=False):
            continue
        if _writer_is_gone(int(match["pid"]), int(match["start"])):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def to_host(obj: Any) -> Any:
    """Copy every tensor in ``obj`` to a plain CPU tensor, so the checkpoint loads on a machine without HPU."""
    return apply_to_collection(obj, torch.Tensor, lambda tensor: tensor.detach().to("cpu"))


def write_atomically(obj: Any, path: _PATH) -> None:
    """``torch.save`` to a temporary file beside ``path``, flush it to disk, then rename it over ``path``.

    An exception mid-save removes the temporary file; a killed process cannot, so each save first removes the
    temporary files that writers on this host which no longer run left in the directory
    (:func:`remove_orphaned_temporary_files`). Either way the previous file at
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
