"""The stand-in's model of the bridge's on-disk recipe cache (``PT_HPU_RECIPE_CACHE_CONFIG``).

With the variable set, each recipe the stand-in would compile (a compiled graph at concrete input shapes, or a lazy
graph signature) is looked up in the cache directory by a key of the graph and its shapes: found, it is loaded and
nothing is compiled (``counters.compiled_recipes`` / ``lazy_graph_compilations`` do not move, ``hits`` counts it);
missing, it is compiled and stored. A changed model is a different graph or different shapes, hence a different
key, hence compiled again. Files are written to a temporary name and renamed, so several ranks can share the
directory; beyond ``size MB`` the oldest recipes are evicted. The delete-at-start flag empties the directory when the
cache is first used in a process, as the bridge does.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
import uuid
from pathlib import Path

#: The bridge's recipe cache setting: ``<directory>,<delete at start: True/False>,<size in MB>``.
RECIPE_CACHE_CONFIG_ENV = "PT_HPU_RECIPE_CACHE_CONFIG"

_SUFFIX = ".recipe"


class RecipeStore:
    """A directory of recipe keys, bounded to ``size_mb``."""

    def __init__(self, directory: Path, size_mb: int) -> None:
        self.directory = directory
        self.size_bytes = size_mb * 2**20
        self.hits = 0
        self.stores = 0
        directory.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def key(*parts: object) -> str:
        """A stable key of a graph and its shapes (the same across processes and runs)."""
        return hashlib.sha256(repr(parts).encode()).hexdigest()

    def load(self, key: str) -> bool:
        """Whether the recipe ``key`` is cached (then it is used, not compiled)."""
        found = (self.directory / f"{key}{_SUFFIX}").is_file()
        self.hits += found
        return found

    def store(self, key: str, description: str) -> None:
        """Keep the recipe ``key`` (written atomically, so ranks sharing the directory never read half a file)."""
        target = self.directory / f"{key}{_SUFFIX}"
        temporary = self.directory / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        temporary.write_text(description)
        os.replace(temporary, target)
        self.stores += 1
        self._evict()

    def _evict(self) -> None:
        files = [entry for entry in os.scandir(self.directory) if entry.name.endswith(_SUFFIX)]
        total = sum(entry.stat().st_size for entry in files)
        for entry in sorted(files, key=lambda e: e.stat().st_mtime):
            if total <= self.size_bytes:
                break
            with contextlib.suppress(FileNotFoundError):
                size = entry.stat().st_size
                os.unlink(entry.path)
                total -= size


_lock = threading.Lock()
_active: tuple[str, RecipeStore | None] | None = None


def _parse(value: str) -> RecipeStore | None:
    fields = [field.strip() for field in value.split(",")]
    if len(fields) < 3 or not fields[0]:
        raise ValueError(
            f"{RECIPE_CACHE_CONFIG_ENV}={value!r} is not <path>,<delete at start>,<size MB>[,<nfs>];"
            f" e.g. {RECIPE_CACHE_CONFIG_ENV}=/tmp/recipe_cache,false,1024."
        )
    directory, delete, size = Path(fields[0]), fields[1].lower() in ("1", "true"), fields[2]
    if not size.isdigit() or int(size) < 1:
        raise ValueError(f"{RECIPE_CACHE_CONFIG_ENV}={value!r}: the size must be a positive number of MB.")
    if delete and directory.is_dir():
        shutil.rmtree(directory, ignore_errors=True)
    return RecipeStore(directory, int(size))


def active_store() -> RecipeStore | None:
    """The recipe cache of this process, from ``PT_HPU_RECIPE_CACHE_CONFIG`` (``None`` when it is unset)."""
    global _active
    value = os.environ.get(RECIPE_CACHE_CONFIG_ENV, "").strip()
    with _lock:
        if _active is None or _active[0] != value:
            _active = (value, _parse(value) if value else None)
        return _active[1]
