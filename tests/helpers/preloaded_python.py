"""A Python for the tests' subprocesses that starts in a fraction of a second: a fork server with torch and Lightning
already imported.

Importing torch and Lightning costs every new Python process 6-8 s of a core on the CI machine, and the suite starts
over a hundred of them; most of those tests check what a script does, not how an interpreter starts. The server
(``preloaded_server.py`` run as a script) imports torch and Lightning once and then waits on a Unix socket. A *shim*, an
executable file that takes an ordinary ``python`` command line, sends the server its command line, environment,
working directory and open file descriptors; the server forks, and the fork becomes that process: it takes over the
descriptors (so output goes where the caller sent it), the environment and the directory, builds ``sys.path`` as a
fresh interpreter would, runs the start-up hook the package's ``.pth`` file runs, and runs the script as
``__main__``. It exits as the interpreter's normal exit does where a program can see it (its non-daemon threads are
waited for, the atexit handlers run, what ``__main__`` holds is finalized, the output is flushed), but without
tearing down the preloaded modules, which would copy most of the server's memory into the fork (about 2 s of a core
each; a process that imported mpi4py, whose exit work is in that teardown, has the whole of it). The shim exits with
its status, or dies of the signal that ended it. Signals sent to the shim are passed on; a shim that is
killed takes its process with it. ``sys.executable`` (and multiprocessing's executable) is the shim, so the ranks a
launcher or ``spawn`` starts from the process are preloaded too (the descriptors they are given are passed on); a
rank's shim dies with its launcher, as a rank does (``rank_watchdog.follow_launcher``).

What cannot be the same is sent to the real interpreter instead (the shim ``exec``s it): options other than ``-m``,
``-c``, ``-u`` and ``-B``, and variables that torch or Python read while they start (``TORCH_LOGS``,
``PYTHONWARNINGS``, ``LD_PRELOAD``, ...) when they differ from the server's. ``LD_LIBRARY_PATH`` may name fewer
directories than the server's, in any order and repeated (mpirun gives its ranks its own library directory three
times): the server is started with the directories of the libraries its processes may load later (Open MPI's, for
mpi4py), which a process without them would not find. ``OMP_NUM_THREADS``, which torch's
OpenMP reads when it loads, is applied with ``torch.set_num_threads``; and torch's loading of device backends
(``torch.backends`` entry points, which load the stand-in's ``hpu`` device) runs again in each process. Nothing
of lightning_hpu is imported by the server (its environment has none of the package's variables but the folder of
the stand-in's built device library), so every process sets the stand-in up from its own; on a CUDA build of torch
the server loads that library before torch (``gaudi_standin.startup.early_load``), as a stand-in process does, so
CUDA is off in every fork.

Tests that are about processes themselves (start-up cost, clean exits, a rank that must die with the Lightning
launcher that started it) keep using the real interpreter. A process killed mid-way (a writer killed mid-save) can be
a fork: it dies of the signal as a real one does, when it is sent to the fork's own pid (which the script reports),
not to its shim's.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.preloaded_server import AUTOLOAD_ENV

#: The server, run as a script.
SERVER = Path(__file__).resolve().with_name("preloaded_server.py")

_FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)

SHIM = '''#!{python} -SE
"""Runs this Python command line in a fork of the tests' preloaded interpreter (tests/helpers/preloaded_python.py)."""
import json, os, signal, socket, struct, sys
REAL, SERVER = {python!r}, {socket!r}
def real():
    os.execv(REAL, [REAL, *sys.argv[1:]])
fds = []
for name in os.listdir("/proc/self/fd"):
    try:
        os.fstat(int(name))
        fds.append(int(name))
    except OSError:
        pass
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    connection.connect(SERVER)
except OSError:
    real()
if os.environ.get("LIGHTNING_HPU_LAUNCHER_PID") == str(os.getppid()):  # a rank follows its launcher, as the real one
    import ctypes
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG (rank_watchdog.follow_launcher)
executable = os.path.abspath(sys.argv[0])
request = {{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd(), "fds": fds, "executable": executable}}
request = json.dumps(request).encode()
socket.send_fds(connection, [struct.pack("!Q", len(request)) + request], fds)
for number in {signals!r}:
    signal.signal(number, lambda number, frame: connection.send(bytes([number])))
reply = b""
while not reply.endswith(b"\\n"):
    chunk = connection.recv(4096)
    if not chunk:
        sys.stderr.write("tests/helpers/preloaded_python.py: the server went away\\n")
        os._exit(1)
    reply += chunk
reply = json.loads(reply)
if "fallback" in reply:
    connection.close()
    real()
code = reply["exit"]
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
os._exit(code)
'''


# ----------------------------------------------------------------------------------------------------- the test side
@dataclass
class PreloadedPython:
    """A running server and the shim that uses it (``executable``)."""

    executable: str
    server: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(cls, directory: Path, env: dict[str, str], timeout: float = 180.0) -> PreloadedPython:
        """Starts the server in ``env`` and writes the shim into ``directory``; returns once the server is ready."""
        directory.mkdir(parents=True, exist_ok=True)
        socket_path = directory / "server.sock"
        log = directory / "server.log"
        socket_path.unlink(missing_ok=True)
        with log.open("wb") as output:
            server = subprocess.Popen(
                [sys.executable, str(SERVER), "serve", str(socket_path)],
                env={**env, AUTOLOAD_ENV: "0"},  # the server imports Lightning without lightning-hpu; each process
                # registers it as its own start would have (start_up_hook)
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while not socket_path.exists():
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(f"the preloaded Python did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        shim = directory / "python"
        signals = [int(number) for number in _FORWARDED_SIGNALS]
        shim.write_text(SHIM.format(python=sys.executable, socket=str(socket_path), signals=signals))
        shim.chmod(0o755)
        return cls(str(shim), server, log)

    def stop(self) -> None:
        self.server.terminate()
        try:
            self.server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.server.kill()
