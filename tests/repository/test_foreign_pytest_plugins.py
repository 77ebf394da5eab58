"""The suite loads only the pytest plugins it declares (pyproject.toml's addopts), whatever else is installed.

``.venv`` sees the system's site-packages on purpose (a Gaudi image's torch lives there), so pytest plugins installed
system-wide would load into the suite by their ``pytest11`` entry points. Here a plugin distribution made in a temporary
directory on ``PYTHONPATH`` stands for such a plugin: pytest without the project's options loads it, pytest with them
does not, while pytest-xdist and pytest-timeout still load.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import ROOT

PLUGIN = """import os
from pathlib import Path


def pytest_configure(config):
    Path(os.environ["FOREIGN_PLUGIN_MARK"]).write_text("loaded")
"""
PROBE = """def test_probe(request):
    names = {name for name, _ in request.config.pluginmanager.list_name_plugin()}
    assert {"xdist", "timeout"} <= names, names
"""


def _foreign_plugin(site: Path) -> None:
    """A distribution ``foreign-plugin`` with a ``pytest11`` entry point, installed in ``site`` as pip would."""
    site.mkdir()
    (site / "foreign_plugin.py").write_text(PLUGIN)
    info = site / "foreign_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: foreign-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nforeign = foreign_plugin\n")


def _pytest(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")]),
        "FOREIGN_PLUGIN_MARK": str(tmp_path / "mark"),
    }
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    command = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path)]
    return subprocess.run(
        [*command, *options, "-q", "-p", "no:cacheprovider", str(tmp_path / "test_probe.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_plugin_installed_beside_the_suite_does_not_load_into_it(tmp_path: Path) -> None:
    _foreign_plugin(tmp_path / "site")
    (tmp_path / "test_probe.py").write_text(PROBE)

    # Without the project's options the plugin loads: it is a real one.
    unguarded = _pytest(tmp_path, "-o", "addopts=", "-p", "xdist", "-p", "timeout")
    assert unguarded.returncode == 0, unguarded.stdout + unguarded.stderr
    assert (tmp_path / "mark").read_text() == "loaded"
    (tmp_path / "mark").unlink()

    # With them (the suite's pytest command, in one process and with pytest-xdist's workers) it does not, and the
    # declared plugins do.
    for workers in ("0", "1"):
        guarded = _pytest(tmp_path, "-n", workers, "--timeout", "60")
        assert guarded.returncode == 0, guarded.stdout + guarded.stderr
        assert not (tmp_path / "mark").exists(), f"a foreign pytest plugin loaded into the suite (-n {workers})"
