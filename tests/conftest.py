"""Test setup: every test runs on the CPU stand-in unless it says otherwise, with a fresh backend."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from tests.helpers.paths import ROOT

# Set before anything imports the package, and inherited by every process a test starts.
os.environ.setdefault("LIGHTNING_HPU_BACKEND", "cpu")

# lightning_hpu (and with it torch and Lightning, ~7 s) is imported where a fixture or hook first needs it: in the
# workers of `pytest -n`, not in the controller, which starts them only once this file is loaded.
from gaudi_standin.startup.device_cache import EXTENSIONS_DIR_ENV
from tests.helpers.namespaces import NAMESPACES
from tests.helpers.preloaded_python import PreloadedPython
from tests.helpers.processes import LAUNCH_VARIABLES
from tests.helpers.two_device_run import TwoDeviceRun, launch

#: What Lightning and DeepSpeed write into the environment of a process that sets up distributed training in
#: process (single-process DeepSpeed, Fabric), and what the package writes for the bridge (autocast op lists, the
#: recipe cache): left behind, a later test's subprocesses would inherit them.
_LAUNCH_VARIABLES = (
    *LAUNCH_VARIABLES,
    "PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST",
    "PT_HPU_AUTOCAST_FP32_OPS_LIST",
    "PT_HPU_RECIPE_CACHE_CONFIG",
    "LIGHTNING_HPU_LAUNCHER_PID",
)


#: What importing the bridge's ``distributed.hccl`` sets where unset (``MASTER_PORT=12345``, ...): a worker that
#: imported it must not hand those to the next test, or every in-process run of both workers would meet on 12345.
_BRIDGE_IMPORT_DEFAULTS = ("MASTER_ADDR", "MASTER_PORT")


def _bridge_present() -> bool:
    from lightning_hpu.runtime import bridge_installed, settings

    return bridge_installed() and os.environ.get(settings.BACKEND_ENV) == "hpu"


#: Test files whose tests start Python processes (each imports Lightning anew): the `slow` part of the suite.
_SLOW_FILES = frozenset(
    {
        "test_examples_and_cli.py",
        "test_gaudi_scripts.py",
        "test_launchers.py",
        "test_precision_example.py",
        "test_ray_train.py",
        "test_readme_commands.py",
        "test_recipe_cache_multiprocess.py",
        "test_sigterm.py",
        "test_user_errors.py",
    }
)


#: Tests elsewhere that start processes too (two ranks, a killed writer, a fresh Python).
_SLOW_TESTS = frozenset(
    {
        "test_two_process_zero2_seed_config_leaves_identical_replicated_weights",
        "test_two_processes_write_one_report_and_one_trace_per_global_rank",
        "test_compile_example_runs_on_the_standin",
        "test_a_kill_during_a_background_write_keeps_the_previous_checkpoint",
        "test_two_processes_over_hccl_standin",
        "test_a_process_exits_cleanly_after_backward_on_hpu",
        "test_a_cpu_backward_before_any_hpu_work_leaves_hpu_autograd_working",
        "test_the_complete_blocks_run_on_the_stand_in",
        "test_importing_the_package_does_not_import_ray",
        "test_the_next_save_removes_what_saves_killed_by_sigkill_left",
        "test_import_warns_once_with_a_faked_torch",
        "test_python_m_and_the_console_script_run_the_report_and_fail_on_errors",
        "test_import_is_cheap_and_opens_nothing",
        "test_fit_puts_parameters_and_batches_on_hpu_and_checkpoints_on_the_host",
    }
)


def _is_slow(item: pytest.Item) -> bool:
    name = getattr(item, "originalname", item.name)
    return (
        item.path.name in _SLOW_FILES
        or name in _SLOW_TESTS
        or "multiprocess" in item.keywords
        or "two_device_run" in getattr(item, "fixturenames", ())
        or "python_executable" in getattr(item, "fixturenames", ())
    )


#: Tests timed against a strategy timeout whose processes must all start within it: run after the Ray job (the
#: heaviest start-up of the suite), on its worker, rather than beside it.
_AFTER_RAY = {"test_a_stalled_or_killed_rank_leaves_no_process_behind"}


def _starts_ray(item: pytest.Item) -> bool:
    if item.path.name == "test_ray_train.py":
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "ray_train.py" in str(callspec.params)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects, and before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = [item for item in items if _is_slow(item)]
    for item in slow:
        item.add_marker(pytest.mark.slow)
    for item in items:
        if "two_device_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("two_device_run"))
        elif _starts_ray(item) or getattr(item, "originalname", item.name) in _AFTER_RAY:
            # One Ray job at a time: Ray's Lightning callback keeps checkpoints in /tmp folders named by job id, which
            # each new local cluster starts again from 01000000. The tests in _AFTER_RAY run after it, not beside it.
            item.add_marker(pytest.mark.xdist_group("ray"))
    # The slow tests first (in their files' order): with workers (`-n 2`), the long runs start while the short tests
    # are still queued to fill the gaps, instead of one long run finishing alone at the end.
    slow.sort(key=lambda item: not _starts_ray(item))  # the longest run (a Ray cluster and its job) starts first
    slow_ids = {id(item) for item in slow}
    items[:] = slow + [item for item in items if id(item) not in slow_ids]
    if _bridge_present():
        return
    skip = pytest.mark.skip(reason="needs a Gaudi: run with LIGHTNING_HPU_BACKEND=hpu on a Gaudi machine")
    for item in items:
        if "gaudi" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def _no_process_group_left() -> Iterator[None]:
    """Lightning leaves the process group of an in-process run (one rank of DDP, DeepSpeed, FSDP) initialized after
    fit, as it does on every device: the next test of the worker starts without it. Torn down after the test's
    monkeypatching is undone (``_fresh_backend`` asks for it before ``monkeypatch``), so a faked torch is gone."""
    yield
    distributed = sys.modules.get("torch.distributed")
    if distributed is not None and distributed.is_available() and distributed.is_initialized():
        distributed.destroy_process_group()


@pytest.fixture(autouse=True)
def _fresh_backend(_no_process_group_left: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts from the session's environment, and a backend and stand-in runtime created anew from it."""
    from gaudi_standin.emulator import machine as standin_runtime
    from lightning_hpu.runtime import reset_backend, settings

    backend_variables = (
        settings.BACKEND_ENV,
        settings.CPU_DEVICES_ENV,
        settings.CPU_DEVICE_NAME_ENV,
        settings.LAZY_MODE_ENV,
    )
    for name in backend_variables:
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
    for name in _LAUNCH_VARIABLES:
        if name in _BRIDGE_IMPORT_DEFAULTS:  # set by the bridge's import in this worker, not by the session
            os.environ.pop(name, None)
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:  # recorded as unset, so whatever the test writes is removed after it
            monkeypatch.setenv(name, "")
            monkeypatch.delenv(name)
    # The HPU binding (written by the stand-in like the bridge writes it).
    monkeypatch.delenv(settings.MODULE_ID_ENV, raising=False)
    monkeypatch.delenv(settings.VISIBLE_MODULES_ENV, raising=False)
    # The dynamic-shape switch of the emulated bridge is process state: back to the environment's default.
    monkeypatch.setattr("gaudi_standin.emulator.dynamic_shapes._override", None)
    reset_backend()
    standin_runtime.reset()
    yield
    reset_backend()
    standin_runtime.reset()


#: ``0`` runs every subprocess of the suite in the real interpreter instead of the preloaded one (to compare).
PRELOADED_PYTHON_ENV = "LIGHTNING_HPU_TEST_PRELOADED_PYTHON"
#: Where scripts/setup.sh installs Open MPI (and mpi4py) for the mpirun tests.
MPI_PREFIX = ROOT / "build" / "mpi"
MPI_LIBRARIES = MPI_PREFIX / "lib"
#: What the preloaded server's environment leaves out: the stand-in's and the bridge's settings, launch variables.
_NOT_PRELOADED = ("LIGHTNING_HPU_", "PT_HPU_", "HABANA_", "HLS_", "DS_ACCELERATOR", "PYTEST_", *_LAUNCH_VARIABLES)


@pytest.fixture(scope="session")
def python_executable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Python for subprocesses that run a script (``tests/helpers/preloaded_python.py``): a fork of an interpreter
    that
    has torch and Lightning imported, which starts in under a second instead of 6-8 s. Tests about processes
    themselves (start-up, clean exits, a rank following its launcher) use ``sys.executable``; a writer killed
    mid-save is killed by its fork's own pid."""
    if os.environ.get(PRELOADED_PYTHON_ENV) == "0":
        yield sys.executable
        return
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(_NOT_PRELOADED) or key == EXTENSIONS_DIR_ENV  # where the server finds the device
    }
    if MPI_LIBRARIES.is_dir():  # mpirun's ranks (test_launchers.py) load Open MPI's libraries from there
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(MPI_LIBRARIES), env.get("LD_LIBRARY_PATH")]))
    preloaded = PreloadedPython.start(tmp_path_factory.mktemp("preloaded_python"), env)
    yield preloaded.executable
    preloaded.stop()


@pytest.fixture(scope="session", params=NAMESPACES)
def two_device_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, python_executable: str
) -> TwoDeviceRun:
    """The two-rank scenarios of several test files, run in one launch for the session (``two_device_run.py``), once
    against ``lightning`` and once against the standalone ``pytorch_lightning``/``lightning_fabric``
    (``namespaces.py``): every test that reads their reports checks both."""
    return launch(tmp_path_factory.mktemp(f"two_device_run_{request.param}"), python_executable, request.param)


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The package's backend on a freshly created CPU stand-in (eager mode, the default of current Gaudi software;
    one GAUDI2). What only the stand-in knows (its counters) is ``tests.helpers.standin.counters()``."""
    from gaudi_standin.emulator import machine as standin_runtime
    from lightning_hpu.runtime import get_backend, reset_backend, settings

    monkeypatch.setenv(settings.BACKEND_ENV, "cpu")
    monkeypatch.delenv(settings.CPU_DEVICES_ENV, raising=False)
    monkeypatch.delenv(settings.CPU_DEVICE_NAME_ENV, raising=False)
    monkeypatch.delenv(settings.LAZY_MODE_ENV, raising=False)
    reset_backend()
    standin_runtime.reset()
    standin_runtime.current()  # the device's memory limit and binding, as the first use of the device sets them
    return get_backend()


@pytest.fixture
def no_hpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without Gaudi and without the stand-in variable."""
    from lightning_hpu.runtime import reset_backend, settings

    monkeypatch.delenv(settings.BACKEND_ENV, raising=False)
    monkeypatch.setattr("lightning_hpu.runtime.bridge_installed", lambda: False)
    reset_backend()


@pytest.fixture
def lazy_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The legacy lazy mode (``PT_HPU_LAZY_MODE=1``), for this test and the processes it starts."""
    from gaudi_standin.emulator import machine as standin_runtime
    from lightning_hpu.runtime import reset_backend, settings

    monkeypatch.setenv(settings.LAZY_MODE_ENV, "1")
    reset_backend()
    standin_runtime.reset()


@pytest.fixture
def lazy_standin(standin: object, lazy_mode: None):  # type: ignore[no-untyped-def]
    """The package's backend on the CPU stand-in in the legacy lazy mode (``PT_HPU_LAZY_MODE=1``)."""
    from lightning_hpu.runtime import get_backend

    return get_backend()
