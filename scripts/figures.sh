#!/usr/bin/env bash
# Regenerates the benchmarks' figures (docs/figures/*.png, each with its command, date and machine in a .json beside
# it) and the page that shows them (docs/guide/_figures.md, included by docs/guide/benchmarks.md). The benchmarks run
# on the CPU stand-in with small sizes (a few minutes on 2 cores); the figures say what ran. Needs the `figures` extra.
#   bash scripts/figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
"$python" -c "import matplotlib" 2>/dev/null || {
    echo "figures.sh: matplotlib is missing from $python; install it: $python -m pip install -e '.[figures]'" >&2
    exit 1
}
export BENCHMARK_FIGURES_DIR="$PWD/docs/figures" LIGHTNING_HPU_BACKEND=cpu
run() { echo "figures.sh: $*" >&2; env "$@"; }
run "$python" benchmarks/step_overhead.py --rounds 3 --steps 100
run LIGHTNING_HPU_CPU_DEVICES=2 "$python" benchmarks/fast_ddp.py --rounds 1 --steps 10
run "$python" benchmarks/bucketing.py --samples 256
run "$python" benchmarks/async_checkpoint.py --megabytes 64 --rounds 2
run "$python" benchmarks/compile.py --depths 1 2 4 --steps 3
run LIGHTNING_HPU_CPU_DEVICES=2 "$python" benchmarks/sharded_memory.py --width 256 --blocks 4
run "$python" benchmarks/startup_cost.py --runs 20
run "$python" benchmarks/serving.py --requests 64 --rounds 5
"$python" benchmarks/plots.py --figures docs/figures --page docs/guide/_figures.md
