"""The preloaded interpreter the tests run scripts in (``preloaded_python.py``) behaves as the real one where the
tests look: the same facts from one probe script, the same exit status, the same death by a signal, the same
traceback, and a command that would start differently goes to the real interpreter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import MPI_LIBRARIES
from tests.helpers.processes import alive

PROBE = """
import json, os, sys, warnings
import torch
import lightning  # the server has it imported; a real interpreter registers lightning-hpu when it is (both must)
reference = torch.ones(2, requires_grad=True)
(reference * 2).sum().backward()  # torch settles its accelerator here: the device must have loaded with torch
x = torch.ones(2, device="hpu", requires_grad=True)
(x * 2).sum().backward()
import habana_frameworks.torch.core as htcore
facts = {
    "argv": sys.argv,
    "path0": sys.path[0],
    "pythonpath_first": sys.path[1],
    "cwd": os.getcwd(),
    "variable": os.environ.get("PROBE_VARIABLE"),
    "main_file": __file__,
    "name": __name__,
    "grad_device": str(x.grad.device),
    "accelerator": str(torch.accelerator.current_accelerator()),
    "htcore": htcore.__name__,
    "threads": torch.get_num_threads(),
    "lightning_hpu_imported": "lightning_hpu.pytorch.accelerator" in sys.modules,
    "extra_fd": os.read(int(sys.argv[1]), 5).decode() if len(sys.argv) > 1 else None,
}
print(json.dumps(facts))
"""


def _facts(python: str, directory: Path, extra_fd: int | None = None) -> dict[str, object]:
    env = {
        **os.environ,
        "LIGHTNING_HPU_BACKEND": "cpu",
        "PROBE_VARIABLE": "seen",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(directory / "lib"),
    }
    args = [str(extra_fd)] if extra_fd is not None else []
    done = subprocess.run(
        [python, "probe.py", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        pass_fds=(extra_fd,) if extra_fd is not None else (),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    facts: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return facts


def test_a_probe_sees_what_it_sees_in_the_real_interpreter(python_executable: str, tmp_path: Path) -> None:
    if python_executable == sys.executable:
        pytest.skip("the preloaded interpreter is turned off (LIGHTNING_HPU_TEST_PRELOADED_PYTHON=0)")
    """The real interpreter is the point (the reference); each is given one descriptor, at the same number."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "probe.py").write_text(PROBE)
    reader, writer = os.pipe()
    try:
        os.write(writer, b"hello")
        real = _facts(sys.executable, tmp_path, extra_fd=reader)
        os.write(writer, b"hello")
        preloaded = _facts(python_executable, tmp_path, extra_fd=reader)
    finally:
        os.close(reader)
        os.close(writer)
    assert preloaded == real
    assert real["grad_device"] == "hpu:0" and real["threads"] == 1
    # A descriptor the caller passed on is there, at its number.
    assert preloaded["extra_fd"] == "hello"


def test_exit_status_signals_tracebacks_and_the_fallback(python_executable: str, tmp_path: Path) -> None:
    if python_executable == sys.executable:
        pytest.skip("the preloaded interpreter is turned off (LIGHTNING_HPU_TEST_PRELOADED_PYTHON=0)")

    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        command = [python_executable, *args]
        return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)

    assert run("-c", "import sys; sys.exit(3)").returncode == 3
    assert run("-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)").returncode == -signal.SIGTERM
    failed = run("-c", "def f():\n    raise ValueError('boom')\nf()")
    assert failed.returncode == 1
    assert failed.stderr.splitlines() == [
        "Traceback (most recent call last):",
        '  File "<string>", line 3, in <module>',
        '  File "<string>", line 2, in f',
        "ValueError: boom",
    ]
    # The normal exit: the program's threads are waited for, then the atexit handlers run (the last registered
    # first), then what __main__ holds is finalized (a file left open is flushed), then stdout is flushed. The
    # preloaded objects stay frozen to the end: the fork does not tear them down (that would copy the server's memory).
    at_exit = (
        "import atexit, gc, threading, time, sys\n"
        "log = open(sys.argv[1], 'w')\n"
        "log.write('kept')\n"
        "threading.Thread(target=lambda: (time.sleep(0.5), print('thread'))).start()\n"
        "atexit.register(lambda: print(gc.get_freeze_count() > 0))\n"
        "atexit.register(print, 'bye')\n"
        "print('end', end=' ')"
    )
    left_open = tmp_path / "left_open.txt"
    assert run("-c", at_exit, str(left_open)).stdout == "end thread\nbye\nTrue\n"
    assert left_open.read_text() == "kept"
    exited = run("-c", "import sys; sys.exit('a message')")
    assert (exited.returncode, exited.stderr) == (1, "a message\n")
    # -m runs a module as __main__.
    assert run("-m", "json.tool", "--help").stdout.startswith("usage: python -m json.tool")
    # A variable torch reads while it starts sends the command to the real interpreter, which honours it.
    logged = run(
        "-c", "import torch._logging._internal as i; print(i.log_state.get_log_level_pairs())", TORCH_LOGS="+dynamo"
    )
    assert logged.returncode == 0 and "torch._dynamo" in logged.stdout, logged.stderr[-2000:]
    # A library directory the server was not started with does too; the server's own directories, repeated as
    # mpirun repeats its own, do not. (A fork has Lightning imported before its program runs.)
    preloaded = "import sys; print('lightning' in sys.modules)"
    assert run("-c", preloaded, LD_LIBRARY_PATH=str(tmp_path)).stdout == "False\n"
    server_directories = [str(MPI_LIBRARIES)] if MPI_LIBRARIES.is_dir() else []
    assert run("-c", preloaded, LD_LIBRARY_PATH=os.pathsep.join(server_directories * 3)).stdout == "True\n"
    # A process a fork starts (a rank, a worker) is forked too: the environment it inherits from the fork does not
    # send it to the real interpreter.
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {preloaded!r}])"
    assert run("-c", child).stdout == "True\n"


def test_a_killed_shim_takes_its_process_with_it(python_executable: str, tmp_path: Path) -> None:
    if python_executable == sys.executable:
        pytest.skip("the preloaded interpreter is turned off (LIGHTNING_HPU_TEST_PRELOADED_PYTHON=0)")
    pid_file = tmp_path / "pid"
    shim = subprocess.Popen(
        [
            python_executable,
            "-c",
            f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)",
        ]
    )
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and shim.poll() is None
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    assert pid != shim.pid  # the forked process, not the shim
    shim.kill()
    shim.wait()
    deadline = time.monotonic() + 10
    while alive(pid):
        assert time.monotonic() < deadline, "the process outlived its shim"
        time.sleep(0.05)
