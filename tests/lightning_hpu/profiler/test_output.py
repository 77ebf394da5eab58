"""Where HPUProfiler writes: a ``dirpath`` that can never hold its files is refused when the profiler is built."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightning_hpu import HPUProfiler


def test_a_dirpath_that_cannot_hold_files_is_refused_at_construction(tmp_path: Path) -> None:
    a_file = tmp_path / "report.txt"
    a_file.write_text("")
    with pytest.raises(ValueError, match=r"HPUProfiler\(dirpath='.*report.txt'\): the path is a file"):
        HPUProfiler(dirpath=a_file)
    with pytest.raises(ValueError, match=r"dirpath='.*report.txt/traces'\): the path lies under the file"):
        HPUProfiler(dirpath=str(a_file / "traces"))
    HPUProfiler(dirpath=tmp_path / "new" / "dir")  # created when the first file is written
    assert not (tmp_path / "new").exists()
