"""What lightning-hpu costs a Python process at start-up, side by side in one run.

    python benchmarks/startup_cost.py [--runs 60] [--instructions]

Installed, lightning-hpu adds one start-up file to site-packages, ``lightning_hpu_emulation.pth`` (``setup.py``: the
CPU stand-in, acting only with ``LIGHTNING_HPU_BACKEND=cpu``), which Python runs at every start, on a Gaudi too; and
one ``torch.backends`` entry point, ``lightning_hpu_autoload.install``, which torch runs when it is imported (the
registration with Lightning; ``LIGHTNING_HPU_AUTOLOAD=0`` skips it). Two throwaway virtual environments of this
interpreter see the same packages; only one has the start-up file. Each command starts alternately in both,
``--runs`` times; the medians and their ratio are printed:

* ``python -c pass`` (a process that never imports Lightning or torch): the goal is a ratio of at most 1.02;
* ``python -c "import torch"`` without and with the registration's entry point (``LIGHTNING_HPU_AUTOLOAD=0`` and
  unset), in the environment with the start-up file;
* ``python -c pass`` with ``LIGHTNING_HPU_BACKEND=cpu``, where the stand-in is meant to load, for scale.

Wall times on a shared machine are noisy; ``--instructions`` also counts the instructions of one ``python -c pass``
in each environment under valgrind (``PYTHONHASHSEED=0``): the same count at every run, whatever else the machine
is doing.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import statistics
import subprocess
import sys
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


def running_site_packages() -> list[str]:
    """The site-packages folders of the running environment (its own and, where it sees them, the system's)."""
    import site

    return [path for path in site.getsitepackages() if Path(path).is_dir()]


def make_venv(directory: Path, with_startup_file: bool) -> Path:
    """A venv of the running interpreter whose ``sys.path`` has this checkout's ``src`` and the running environment's
    packages (torch, and lightning-hpu's entry points); with the start-up file when ``with_startup_file``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True)
    python = directory / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    site = Path(purelib)
    # site reads .pth files in name order: the paths first, as an install's own files come before them
    (site / "__paths.pth").write_text("\n".join([str(ROOT / "src"), *running_site_packages()]) + "\n")
    if with_startup_file:
        for name, line in pth_files().items():
            (site / name).write_text(line)
    return python


def start_times(runs: list[tuple[str, Path, list[str], dict[str, str]]], repeat: int) -> dict[str, float]:
    """The median wall time of each ``(label, python, arguments, environment)``, all started alternately."""
    times: dict[str, list[float]] = {label: [] for label, *_ in runs}
    for _ in range(repeat):
        for label, python, arguments, env in runs:
            start = time.perf_counter()
            subprocess.run([str(python), *arguments], env=env, check=True, stdout=subprocess.DEVNULL)
            times[label].append(time.perf_counter() - start)
    return {label: statistics.median(values) for label, values in times.items()}


def instructions(python: Path, env: dict[str, str]) -> int:
    """The instructions one ``python -c pass`` executes, counted by valgrind's callgrind."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(python), "-c", "pass"],
        env={**env, "PYTHONHASHSEED": "0"}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--instructions", action="store_true", help="also count instructions under valgrind")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTNING_HPU_", "PYTHON"))}
    stand_in = {**env, "LIGHTNING_HPU_BACKEND": "cpu"}
    with tempfile.TemporaryDirectory() as tmp:
        without = make_venv(Path(tmp) / "without", with_startup_file=False)
        with_file = make_venv(Path(tmp) / "with", with_startup_file=True)
        torch_import = ["-c", "import torch"]
        rows = {
            "python -c pass": ("without the start-up file", "with it"),
            "import torch": ("LIGHTNING_HPU_AUTOLOAD=0", "registration on"),
            "python -c pass, stand-in chosen": ("without the start-up file", "with it"),
        }
        medians = start_times(
            [
                ("pass/without", without, ["-c", "pass"], env),
                ("pass/with", with_file, ["-c", "pass"], env),
                ("torch/without", with_file, torch_import, {**env, "LIGHTNING_HPU_AUTOLOAD": "0"}),
                ("torch/with", with_file, torch_import, env),
                ("standin/without", without, ["-c", "pass"], stand_in),
                ("standin/with", with_file, ["-c", "pass"], stand_in),
            ],
            args.runs,
        )
        counts = (
            (instructions(without, env), instructions(with_file, env))
            if args.instructions and shutil.which("valgrind")
            else None
        )
    pairs = {
        "python -c pass": ("pass/without", "pass/with"),
        "import torch": ("torch/without", "torch/with"),
        "python -c pass, stand-in chosen": ("standin/without", "standin/with"),
    }
    print(f"median of {args.runs} starts each, alternating:")
    for label, (first, second) in pairs.items():
        a, b = medians[first], medians[second]
        names = rows[label]
        print(f"  {label:32s} {names[0]} {a * 1000:8.1f} ms, {names[1]} {b * 1000:8.1f} ms   ratio {b / a:.3f}")
    if counts is not None:
        print(
            f"instructions of python -c pass: {counts[0]:,} without the start-up file, {counts[1]:,} with it,"
            f" ratio {counts[1] / counts[0]:.4f}"
        )
    plots.bars(
        "startup_cost",
        "Start-up without and with lightning-hpu (median wall time)",
        "ms",
        list(pairs),
        {
            "without": [medians[first] * 1000 for first, _ in pairs.values()],
            "with": [medians[second] * 1000 for _, second in pairs.values()],
        },
    )


if __name__ == "__main__":
    main()
