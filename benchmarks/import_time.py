"""How much `import lightning_hpu` adds over `import lightning`, measured side by side in fresh interpreters.

python benchmarks/import_time.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

_PROBE = (
    "import time; t0 = time.perf_counter(); import lightning; t1 = time.perf_counter(); "
    "{extra}; t2 = time.perf_counter(); print(t1 - t0, t2 - t1)"
)


def measure(extra: str, runs: int) -> tuple[float, float]:
    lightning_times, extra_times = [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _PROBE.format(extra=extra)], capture_output=True, text=True, check=True
        ).stdout.split()
        lightning_times.append(float(out[0]))
        extra_times.append(float(out[1]))
    return statistics.median(lightning_times), statistics.median(extra_times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with_lightning, added = measure("import lightning_hpu", args.runs)
    print(f"import lightning:                 {with_lightning * 1000:8.1f} ms (median of {args.runs})")
    print(f"import lightning_hpu (after it): +{added * 1000:8.1f} ms  ({added / with_lightning:.1%} of lightning)")


if __name__ == "__main__":
    main()
