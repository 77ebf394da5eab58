#!/usr/bin/env bash
# Creates .venv (seeing the system's packages, so a Gaudi image's own torch is used) and installs lightning-hpu.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv --system-site-packages .venv
. .venv/bin/activate
# torch before anything that depends on it: on a Gaudi image it is already there (Habana's build) and is kept.
python -c "import torch" 2>/dev/null || python -m pip install -q torch==2.13.0
python -m pip install -q -e ".[test]"
