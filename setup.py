"""The one build step pyproject.toml cannot declare: the package's start-up files, run at every Python start.

Both go into site-packages, with ``pip install .`` and ``pip install -e .``, and each decides from the environment
before it imports anything, so that a Python process that uses neither pays next to nothing
(``benchmarks/startup_cost.py``):

* ``lightning_hpu.pth`` puts a watcher on ``sys.meta_path`` (unless ``LIGHTNING_HPU_AUTOLOAD=0``), so that Lightning
  learns ``accelerator="hpu"`` as soon as it is imported, in every process, without ``import lightning_hpu``
  (``lightning_hpu_autoload``);
* ``lightning_hpu_emulation.pth`` installs the CPU stand-in's Gaudi emulation only when ``LIGHTNING_HPU_BACKEND=cpu``
  chose it (``gaudi_standin.startup.install_if_requested``), so that a script importing ``habana_frameworks`` first,
  and the processes Lightning starts for DDP, find it.
"""

from __future__ import annotations

import os

from setuptools import Command, setup
from setuptools.command.build import build

#: Each start-up file with its one line (a ``.pth`` line that starts with ``import`` is run by ``site``).
PTH_FILES = {
    # The watcher is built here, not imported: a process that never imports Lightning imports nothing for it. It asks
    # lightning_hpu_autoload.find_spec only for Lightning's three top-level packages.
    "lightning_hpu.pth": (
        "import os, sys; os.environ.get('LIGHTNING_HPU_AUTOLOAD', '1').strip().lower() in ('0', 'false', 'no', 'off')"
        " or sys.meta_path.insert(0, type('LightningHPUWatcher', (), {'find_spec': staticmethod(lambda name, path=None,"
        " target=None: __import__('lightning_hpu_autoload').find_spec(name, path, target) if name in ('lightning',"
        " 'pytorch_lightning', 'lightning_fabric') else None)}))\n"
    ),
    "lightning_hpu_emulation.pth": (
        "import os; os.environ.get('LIGHTNING_HPU_BACKEND', '').strip().lower() == 'cpu'"
        " and __import__('gaudi_standin.startup').startup.install_if_requested()\n"
    ),
}


class build_startup_files(Command):
    """Writes the ``.pth`` files where the wheel being built takes its site-packages files from."""

    description = "write the start-up files of lightning-hpu"
    user_options: list[tuple[str, str | None, str]] = []

    def initialize_options(self) -> None:
        self.build_lib: str | None = None
        # Set by setuptools when it builds an editable wheel.
        self.editable_mode = False

    def finalize_options(self) -> None:
        self.set_undefined_options("build", ("build_lib", "build_lib"))

    def _target_dir(self) -> str:
        if self.editable_mode:
            # An editable wheel takes nothing from build_lib; what lands in site-packages is what is written to the
            # unpacked wheel, which setuptools gives the install command as its install_lib.
            return str(self.get_finalized_command("install").install_lib)
        assert self.build_lib is not None
        return self.build_lib

    def run(self) -> None:
        os.makedirs(self._target_dir(), exist_ok=True)
        for name, line in PTH_FILES.items():
            with open(os.path.join(self._target_dir(), name), "w") as pth:
                pth.write(line)

    def get_outputs(self) -> list[str]:
        return [] if self.editable_mode else [os.path.join(self._target_dir(), name) for name in PTH_FILES]


class build_with_startup_files(build):
    sub_commands = [*build.sub_commands, ("build_startup_files", None)]


setup(cmdclass={"build": build_with_startup_files, "build_startup_files": build_startup_files})
