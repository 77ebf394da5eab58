"""The one build step pyproject.toml cannot declare: the start-up file of the stand-in's Gaudi emulation.

``lightning_hpu_emulation.pth`` goes into site-packages, both with ``pip install .`` and ``pip install -e .``. Its one
line calls ``gaudi_standin.startup.install_if_requested()`` at every Python start, which does nothing unless
``LIGHTNING_HPU_BACKEND=cpu`` (see that module), so that a script importing ``habana_frameworks`` first, and the
processes Lightning starts for DDP, find the emulation.
"""

from __future__ import annotations

import os

from setuptools import Command, setup
from setuptools.command.build import build

PTH_NAME = "lightning_hpu_emulation.pth"
PTH_LINE = "import gaudi_standin.startup; gaudi_standin.startup.install_if_requested()\n"


class build_emulation_pth(Command):
    """Writes the ``.pth`` file where the wheel being built takes its site-packages files from."""

    description = "write the start-up file of the Gaudi emulation"
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
        target = os.path.join(self._target_dir(), PTH_NAME)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as pth:
            pth.write(PTH_LINE)

    def get_outputs(self) -> list[str]:
        return [] if self.editable_mode else [os.path.join(self._target_dir(), PTH_NAME)]


class build_with_emulation_pth(build):
    sub_commands = [*build.sub_commands, ("build_emulation_pth", None)]


setup(cmdclass={"build": build_with_emulation_pth, "build_emulation_pth": build_emulation_pth})
