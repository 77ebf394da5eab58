"""The bridge's on-disk recipe cache, kept across runs: ``PT_HPU_RECIPE_CACHE_CONFIG``.

On a Gaudi every new graph is compiled into a recipe (seconds to minutes). With ``PT_HPU_RECIPE_CACHE_CONFIG`` set
before the bridge initialises the device, the bridge stores recipes in a directory and a later run that meets the
same graph loads the recipe instead of compiling it. The value is ``<path>,<delete at start>,<size in MB>``, with a
fourth field ``true`` when the directory is on a network file system (NFS and the like), where the bridge must not
rely on local file locking.

:class:`RecipeCache` builds that value. Several ranks of a node share one directory (the bridge writes each recipe
under a name of its own); the directory is emptied at start, when asked, by the node's local rank 0 only (the bridge
is always told not to delete, so ranks starting later cannot wipe recipes another rank just wrote). The environment
route is ``LIGHTNING_HPU_RECIPE_CACHE=<path>`` (read at ``import lightning_hpu``), or exporting
``PT_HPU_RECIPE_CACHE_CONFIG`` yourself.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from lightning_hpu.runtime.base import HPUConfigurationError

RECIPE_CACHE_CONFIG_ENV = "PT_HPU_RECIPE_CACHE_CONFIG"
#: The package's environment route: a directory for the recipe cache (size and deletion take their defaults).
RECIPE_CACHE_PATH_ENV = "LIGHTNING_HPU_RECIPE_CACHE"

#: File system types on which the bridge must be told the cache is shared over the network.
_NETWORK_FILE_SYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "glusterfs", "ceph", "fuse.sshfs"}
)


def filesystem_type(path: str | os.PathLike[str]) -> str | None:
    """The type of the file system holding ``path`` (the longest mount point above it in ``/proc/mounts``)."""
    target = os.path.realpath(path)
    best: tuple[int, str] | None = None
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mount = fields[1].replace("\\040", " ")
                if (target == mount or target.startswith(mount.rstrip("/") + "/")) and (
                    best is None or len(mount) > best[0]
                ):
                    best = (len(mount), fields[2])
    except OSError:
        return None
    return best[1] if best else None


def on_network_filesystem(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` lies on a network file system (NFS, Lustre, ...)."""
    kind = filesystem_type(path)
    return kind is not None and kind.lower() in _NETWORK_FILE_SYSTEMS


def _local_rank() -> int:
    raw = os.environ.get("LOCAL_RANK", "0").strip() or "0"
    return int(raw) if raw.isdigit() else 0


@dataclass(frozen=True)
class RecipeCache:
    """A recipe cache directory shared by the runs (and the ranks of a node) that point to it.

    Args:
        path: the directory; created if missing. Give each node a directory on its local disk when you can.
        delete_at_start: empty the directory when the run starts (local rank 0 only), e.g. after changing the Intel
            Gaudi software, whose recipes an old cache would hold.
        size_mb: the most disk space the bridge may use; it evicts the oldest recipes beyond it.
    """

    path: str | os.PathLike[str]
    delete_at_start: bool = False
    size_mb: int = 1024

    def __post_init__(self) -> None:
        if isinstance(self.size_mb, bool) or not isinstance(self.size_mb, int) or self.size_mb < 1:
            raise ValueError(f"`size_mb` must be a positive number of megabytes, e.g. 1024, not {self.size_mb!r}.")
        if not str(self.path).strip():
            raise ValueError("`path` must name a directory for the recipe cache, e.g. '/tmp/recipe_cache'.")
        if "," in str(self.path):
            raise ValueError(
                f"`path` {str(self.path)!r} holds a comma, which {RECIPE_CACHE_CONFIG_ENV} uses as its separator;"
                " choose a directory without one."
            )
        if Path(self.path).exists() and not Path(self.path).is_dir():
            raise ValueError(f"`path` {str(self.path)!r} is a file; the recipe cache needs a directory.")

    def config_value(self) -> str:
        """The value of ``PT_HPU_RECIPE_CACHE_CONFIG`` for this cache (the bridge never deletes: see the module)."""
        path = os.path.abspath(self.path)
        value = f"{path},false,{self.size_mb}"
        return f"{value},true" if on_network_filesystem(path) else value

    def apply(self) -> None:
        """Create the directory, empty it on local rank 0 if asked, and export ``PT_HPU_RECIPE_CACHE_CONFIG``.

        Call it before anything initialises the HPU: the bridge reads the variable once, when it opens the device.
        """
        directory = Path(self.path)
        if self.delete_at_start and _local_rank() == 0 and directory.is_dir():
            shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True, exist_ok=True)
        os.environ[RECIPE_CACHE_CONFIG_ENV] = self.config_value()


def apply_recipe_cache_from_env() -> None:
    """``LIGHTNING_HPU_RECIPE_CACHE=<path>``: set up that cache, unless ``PT_HPU_RECIPE_CACHE_CONFIG`` is set.

    Raises:
        HPUConfigurationError: the path cannot hold the cache (a file, say); the message names the variable.
    """
    path = os.environ.get(RECIPE_CACHE_PATH_ENV, "").strip()
    if path and RECIPE_CACHE_CONFIG_ENV not in os.environ:
        try:
            RecipeCache(path).apply()
        except (ValueError, OSError) as error:
            raise HPUConfigurationError(
                f"{RECIPE_CACHE_PATH_ENV}={path!r} cannot hold the bridge's recipe cache ({error}): set it to a"
                " directory lightning-hpu may create and write, or unset it."
            ) from None
