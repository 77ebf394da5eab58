"""Runs ``examples/litgpt_cli.py`` with this process's arguments, then prints the HPU memory the process used.

The LitGPT tests start each command (and Lightning each further rank) through this file: the printed peak shows the
command ran on the HPU, which LitGPT's own output does not say.
"""

import atexit
import runpy
from pathlib import Path

import torch


def _report() -> None:
    print(f"HPU memory used: {torch.hpu.max_memory_allocated()} bytes", flush=True)


if __name__ == "__main__":
    atexit.register(_report)
    runpy.run_path(str(Path(__file__).resolve().parents[2] / "examples" / "litgpt_cli.py"), run_name="__main__")
