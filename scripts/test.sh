#!/usr/bin/env bash
# The test command: sets up .venv if needed, then lint, type check and the test suite on the CPU stand-in.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export TORCH_EXTENSIONS_DIR="$PWD/build/torch_extensions"
ruff check src tests examples benchmarks
mypy
LIGHTNING_HPU_BACKEND="${LIGHTNING_HPU_BACKEND:-cpu}" python -m pytest -q "$@"
