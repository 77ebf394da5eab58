"""Export some paths of another project's git tree at one ref, for the scripts that run its tests against the stand-in
(``peer_suite.py``, ``bridge_suite.py``): nothing of that project enters this one."""

from __future__ import annotations

import os
import subprocess
import tarfile
import tempfile
from pathlib import Path


def export_paths(source: str, ref: str, paths: list[str], dest: Path) -> None:
    """``paths`` of the git repository ``source`` (a clone, a bare mirror, its ``.git``, or a URL, cloned bare on the
    way) at ``ref``, extracted under ``dest``."""
    with tempfile.TemporaryDirectory() as tmp:
        git_dir = source
        if not Path(source).exists():
            git_dir = os.path.join(tmp, "clone")
            subprocess.run(["git", "clone", "--quiet", "--bare", source, git_dir], check=True)
        if os.path.isdir(os.path.join(git_dir, ".git")):
            git_dir = os.path.join(git_dir, ".git")
        archive = os.path.join(tmp, "suite.tar")
        subprocess.run(["git", "--git-dir", git_dir, "archive", "-o", archive, ref, *paths], check=True)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
