"""LightningCLI entry point for the example classifier.

LIGHTNING_HPU_BACKEND=cpu .venv/bin/python examples/cli.py fit --config examples/cli_config.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path

from lightning.pytorch.cli import LightningCLI

import lightning_hpu  # noqa: F401  (registers HPU with Lightning)
from lightning_hpu import run_script

sys.path.insert(0, str(Path(__file__).parent))
from train_single_hpu import Classifier


def main() -> None:
    LightningCLI(Classifier, save_config_kwargs={"overwrite": True})


if __name__ == "__main__":
    run_script(main)
