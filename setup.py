"""The one build step pyproject.toml cannot declare: the stand-in's start-up file, run at every Python start.

``lightning_hpu_emulation.pth`` goes into site-packages, with ``pip install .`` and ``pip install -e .``. Its one
line installs the CPU stand-in's Gaudi emulation only when ``LIGHTNING_HPU_BACKEND=cpu`` chose it
(``gaudi_standin.startup.install_if_requested``), so that a script importing ``habana_frameworks`` first, and the
processes Lightning starts for DDP, find it. It reads the environment before it imports anything, and is kept short
(Python compiles it at every start): ``benchmarks/startup_cost.py`` measures it. lightning-hpu's registration with
Lightning needs no start-up file: it is a ``torch.backends`` entry point (``lightning_hpu_autoload``).
"""

from __future__ import annotations

import os

from setuptools import Command, setup
from setuptools.command.build import build

#: The start-up file with its one line (a ``.pth`` line that starts with ``import`` is run by ``site``).
PTH_FILES = {
    "lightning_hpu_emulation.pth": (
        "import os;os.environ.get('LIGHTNING_HPU_BACKEND','').lower()=='cpu'"
        "and __import__('gaudi_standin.startup').startup.install_if_requested()\n"
    ),
}


class build_startup_files(Command):
    """Writes the ``.pth`` file where the wheel being built takes its site-packages files from."""

    description = "write the start-up file of the CPU stand-in"
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
