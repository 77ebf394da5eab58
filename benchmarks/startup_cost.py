"""What lightning-hpu's start-up files cost a Python process that never imports Lightning, side by side in one run.

    python benchmarks/startup_cost.py [--runs 60]

Installed, lightning-hpu puts two ``.pth`` files into site-packages (``setup.py``): ``lightning_hpu.pth`` (Lightning
learns ``accelerator="hpu"`` when it is imported) and ``lightning_hpu_emulation.pth`` (the CPU stand-in, only with
``LIGHTNING_HPU_BACKEND=cpu``); Python runs both at every start, on a Gaudi too. Two throwaway virtual environments
of this interpreter see the same source folders; only one has the start-up files. ``python -c pass`` starts in each,
alternately, ``--runs`` times; the medians and their ratio are printed (target: at most 1.02), then the same with
``LIGHTNING_HPU_BACKEND=cpu``, where the stand-in is meant to load, for scale.
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import plots

ROOT = Path(__file__).resolve().parents[1]


def pth_files() -> dict[str, str]:
    """The start-up files exactly as ``setup.py`` writes them (its ``PTH_FILES``, read without running it)."""
    for node in ast.parse((ROOT / "setup.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PTH_FILES" for t in node.targets):
            return dict(ast.literal_eval(node.value))
    raise SystemExit("setup.py defines no PTH_FILES")


def make_venv(directory: Path, with_hooks: bool) -> Path:
    """A venv of the running interpreter whose ``sys.path`` has this checkout's ``src`` (and the running
    environment's packages); with the start-up files when ``with_hooks``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True)
    python = directory / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    site = Path(purelib)
    # site reads .pth files in name order: the paths first, as an install's own files come before them
    (site / "__paths.pth").write_text(f"{ROOT / 'src'}\n{sysconfig.get_paths()['purelib']}\n")
    if with_hooks:
        for name, line in pth_files().items():
            (site / name).write_text(line)
    return python


def start_times(pythons: dict[str, Path], runs: int, env: dict[str, str]) -> dict[str, float]:
    """The median wall time of ``python -c pass`` for each interpreter, started alternately."""
    times: dict[str, list[float]] = {name: [] for name in pythons}
    for _ in range(runs):
        for name, python in pythons.items():
            start = time.perf_counter()
            subprocess.run([str(python), "-c", "pass"], env=env, check=True)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTNING_HPU_", "PYTHON"))}
    with tempfile.TemporaryDirectory() as tmp:
        pythons = {
            "without": make_venv(Path(tmp) / "without", with_hooks=False),
            "with": make_venv(Path(tmp) / "with", with_hooks=True),
        }
        rows = {
            "no Lightning, no stand-in": start_times(pythons, args.runs, base_env),
            "LIGHTNING_HPU_BACKEND=cpu": start_times(pythons, args.runs, {**base_env, "LIGHTNING_HPU_BACKEND": "cpu"}),
        }
    print(f"python -c pass, median of {args.runs} starts each, alternating (without / with the start-up files):")
    for label, medians in rows.items():
        ratio = medians["with"] / medians["without"]
        print(
            f"  {label:28s} {medians['without'] * 1000:7.1f} ms / {medians['with'] * 1000:7.1f} ms   ratio {ratio:.3f}"
        )
    plots.bars(
        "startup_cost",
        "Python start-up without and with lightning-hpu's start-up files",
        "ms (median)",
        list(rows),
        {
            "without": [medians["without"] * 1000 for medians in rows.values()],
            "with": [medians["with"] * 1000 for medians in rows.values()],
        },
    )


if __name__ == "__main__":
    main()
