"""The server side of the preloaded Python (``tests.helpers.preloaded_python``): run as a script, it imports torch and
Lightning once, waits on a Unix socket, and forks for each shim's request; the fork becomes the requested process
(its command line, environment, directory and descriptors) or, for what cannot be the same, sends the shim to the
real interpreter.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import struct
import sys
from dataclasses import dataclass, field
from typing import Any, NoReturn

#: Variables read while torch or Python start (or the libraries they load): a process that sets one differently
#: from the server's runs in the real interpreter. OMP_NUM_THREADS is the exception, applied after the fork.
_READ_AT_START = ("TORCH_", "TORCHDYNAMO_", "TORCHINDUCTOR_", "PYTORCH_", "OMP_", "KMP_", "MKL_", "GOMP_", "LD_")
_SAFE_AT_START = ("TORCH_EXTENSIONS_DIR", "TORCHELASTIC_", "TORCH_NCCL_", "OMP_NUM_THREADS")
_PYTHON_SAFE = {"PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONFAULTHANDLER"}
#: Options the fork can honour; any other sends the command to the real interpreter.
_OPTIONS = {"-u", "-B"}


@dataclass
class _Request:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    executable: str  # the shim, as it was called: the processes this one starts with sys.executable use it too
    fds: dict[int, int] = field(default_factory=dict)  # the shim's number -> the received descriptor


def _receive(connection: socket.socket) -> _Request:
    data, fds, _, _ = socket.recv_fds(connection, 1 << 16, maxfds=512)
    received = list(fds)
    while len(data) < 8 or len(data) < 8 + struct.unpack("!Q", data[:8])[0]:
        chunk, more, _, _ = socket.recv_fds(connection, 1 << 16, maxfds=512)
        if not chunk:
            raise EOFError("the shim went away before its request was complete")
        data += chunk
        received += more
    (length,) = struct.unpack("!Q", data[:8])
    message: dict[str, Any] = json.loads(data[8 : 8 + length])
    fds = dict(zip(message["fds"], received, strict=True))
    return _Request(message["argv"], message["env"], message["cwd"], message["executable"], fds)


def _why_not_forked(request: _Request) -> str | None:
    """Why this command must run in the real interpreter, or None."""
    argv = request.argv
    index = 0
    while index < len(argv) and argv[index].startswith("-") and argv[index] not in ("-m", "-c", "-"):
        if argv[index] not in _OPTIONS:
            return f"option {argv[index]}"
        index += 1
    if index == len(argv) or argv[index] == "-":
        return "reads its program from standard input"
    if argv[index] in ("-m", "-c") and index + 1 == len(argv):
        return f"{argv[index]} without an argument"
    if argv[index] not in ("-m", "-c") and not os.path.isfile(os.path.join(request.cwd, argv[index])):
        return "not a script file"
    for name in set(request.env) | set(_START_ENV):
        reads = name.startswith(_READ_AT_START) or (name.startswith("PYTHON") and name not in _PYTHON_SAFE)
        if name == "LD_LIBRARY_PATH":
            if not set(_directories(request.env.get(name))) <= set(_directories(_START_ENV.get(name))):
                return f"{name} names directories the server's does not"
        elif reads and not name.startswith(_SAFE_AT_START) and request.env.get(name) != _START_ENV.get(name):
            return f"{name} is read while Python and torch start"
    return None


def _directories(search_path: str | None) -> list[str]:
    """The directories of a search path such as ``LD_LIBRARY_PATH`` (empty entries left out)."""
    return [entry for entry in (search_path or "").split(os.pathsep) if entry]


def _serve(socket_path: str) -> tuple[socket.socket, _Request]:
    """Preloads, then forks a monitor per connection; returns only in a process that is to become the command."""
    import ctypes
    import warnings

    _START_ENV.update(os.environ)
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG: ends with the test session
    shown: list[tuple[Any, ...]] = []
    show = warnings.showwarning
    warnings.showwarning = lambda *args, **kwargs: shown.append((args, kwargs))
    # On a CUDA build of torch, the stand-in's device library must load before torch._C initialises, or CUDA stays
    # torch's accelerator in every fork (autograd then fails on hpu tensors); the package's start-up hook arranges it
    # in a stand-in process, which the server is not (a CPU build of torch is left alone).
    from gaudi_standin.startup import early_load

    early_load.install()
    import lightning
    import lightning.pytorch  # noqa: F401
    import torch  # noqa: F401

    warnings.showwarning = show
    gc.freeze()  # the preloaded objects stay out of the forks' collections, which would copy their pages (_exit)
    global _PRELOAD_WARNINGS
    _PRELOAD_WARNINGS = shown

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path + ".tmp")
    listener.listen(64)
    os.rename(socket_path + ".tmp", socket_path)  # the test side waits for the name: the server is ready
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the monitors are reaped by the kernel
    while True:
        connection, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            return connection, _monitor(connection)
        connection.close()


_PRELOAD_WARNINGS: list[tuple[Any, ...]] = []
#: The server's environment before its imports (they add a few variables, which each process keeps).
_START_ENV: dict[str, str] = {}


def _monitor(connection: socket.socket) -> _Request:
    """Forks the command's process, passes it the shim's signals, and reports how it ended; returns in that process."""
    try:
        request = _receive(connection)
    except (EOFError, OSError, ValueError):
        os._exit(0)
    reason = _why_not_forked(request)
    if reason is not None:
        print(f"real interpreter for {request.argv[:3]}: {reason}", flush=True)
        connection.sendall(json.dumps({"fallback": reason}).encode() + b"\n")
        os._exit(0)
    child = os.fork()
    if child == 0:
        return request
    for fd in request.fds.values():
        os.close(fd)
    import select

    process = os.pidfd_open(child)
    while True:
        ready, _, _ = select.select([connection, process], [], [])
        if process in ready:
            _, status = os.waitpid(child, 0)
            connection.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
            os._exit(0)
        try:
            received = connection.recv(64)
        except OSError:
            received = b""
        if not received:  # the shim was killed: so is its process
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            os._exit(0)
        for number in received:
            os.kill(child, number)


def _take_descriptors(fds: dict[int, int]) -> None:
    """Puts the shim's descriptors at the numbers they had there (via numbers above any in use)."""
    import fcntl

    moved = {}
    for target, fd in fds.items():
        moved[target] = fcntl.fcntl(fd, fcntl.F_DUPFD, 10_000)
        os.close(fd)
    for target, fd in moved.items():
        os.dup2(fd, target)
        os.close(fd)


def _become(connection: socket.socket, request: _Request) -> Any:
    """Turns this fork into the requested process and runs its program; returns the exit status (or raises
    SystemExit), so the interpreter's normal exit follows."""
    import runpy
    import types
    import warnings

    connection.close()
    _take_descriptors(request.fds)
    os.chdir(request.cwd)
    server_pythonpath = _pythonpath()
    added_by_imports = {name: value for name, value in os.environ.items() if name not in _START_ENV}
    os.environ.clear()
    os.environ.update({**added_by_imports, **request.env})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.executable = request.executable
    import multiprocessing

    multiprocessing.set_executable(request.executable)  # what its import would have read from sys.executable

    argv = list(request.argv)
    while argv[0] in _OPTIONS:
        option = argv.pop(0)
        if option == "-B":
            sys.dont_write_bytecode = True
        if option == "-u":
            for stream in (sys.stdout, sys.stderr):
                stream.reconfigure(write_through=True)  # type: ignore[union-attr]
    threads = os.environ.get("OMP_NUM_THREADS")
    if threads and threads.isdigit() and int(threads) > 0:
        import torch

        torch.set_num_threads(int(threads))

    base_path = [entry for entry in sys.path[1:] if entry not in server_pythonpath]
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main

    def start_up_hook() -> None:
        """What this process's start would have done in its environment: the package's ``.pth`` hook at start-up,
        then torch's loading of out-of-tree device backends while ``import torch`` runs: the stand-in's device, and
        lightning-hpu's registration with Lightning (``lightning_hpu_autoload``), which registers at once with the
        Lightning the server imported (a fork registers even if its script never imports Lightning: the one
        difference from a real start, which costs the fork the import of lightning_hpu)."""
        try:
            import gaudi_standin.startup.import_hook
        except ImportError:
            pass
        else:
            gaudi_standin.startup.import_hook.install_if_requested()
        import torch

        if torch._is_device_backend_autoload_enabled():
            torch._import_device_backends()

    for args, kwargs in _PRELOAD_WARNINGS:  # what the imports printed, now to this process's stderr
        warnings.showwarning(*args, **kwargs)

    # sys.argv and the first entry of sys.path, as the interpreter sets them for -c, -m and a script
    if argv[0] == "-c":
        sys.argv, first = ["-c", *argv[2:]], ""
    elif argv[0] == "-m":
        sys.argv, first = [argv[1], *argv[2:]], os.getcwd()
    else:
        sys.argv, first = argv, os.path.dirname(os.path.realpath(argv[0]))
    sys.path[:] = [first, *_pythonpath(), *base_path]
    start_up_hook()
    if argv[0] == "-c":
        exec(compile(argv[1], "<string>", "exec"), main.__dict__)
    elif argv[0] == "-m":
        runpy._run_module_as_main(argv[1], alter_argv=True)  # type: ignore[attr-defined]
    else:
        script = os.path.abspath(argv[0])  # as Python 3.9+ has it in __main__.__file__ and in tracebacks
        with open(script, "rb") as source:
            code = compile(source.read(), script, "exec")
        main.__dict__.update(__file__=script, __cached__=None, __spec__=None, __loader__=None, __package__=None)
        exec(code, main.__dict__)
    return 0


AUTOLOAD_ENV = "LIGHTNING_HPU_AUTOLOAD"


def _pythonpath() -> list[str]:
    """The entries of this process's ``PYTHONPATH``."""
    return _directories(os.environ.get("PYTHONPATH"))


def _run(connection: socket.socket, request: _Request) -> int:
    """Runs the program; returns its exit status as the interpreter computes it (an uncaught ``SystemExit`` included:
    its message, if it is not a number, goes to stderr)."""
    try:
        return int(_become(connection, request) or 0)
    except SystemExit as system_exit:
        if system_exit.code is None or isinstance(system_exit.code, int):
            return int(system_exit.code or 0)
        print(system_exit.code, file=sys.stderr)
        return 1
    except BaseException as error:  # as the interpreter does with an uncaught exception: this file's frames left out
        trace = error.__traceback__
        while trace is not None and trace.tb_frame.f_code.co_filename == __file__:
            trace = trace.tb_next
        sys.excepthook(type(error), error.with_traceback(trace), trace)
        return 1


#: Modules whose exit work is registered with the interpreter's teardown itself (C ``Py_AtExit``), which ``_exit``
#: skips: mpi4py finalizes MPI there, and mpirun fails a rank that exits without it. A fork that imported one exits
#: through the whole teardown (about 2 s of a core more).
_TORN_DOWN_ONLY = ("mpi4py.MPI",)


def _exit(status: int) -> NoReturn:
    """Ends the process the way the interpreter's exit does, as far as a program can see it: it waits for the
    program's non-daemon threads, runs the atexit handlers (the last registered first), finalizes what the program
    holds (``__main__`` is cleared as the interpreter clears a module, and the garbage is collected: a file the
    script left open is flushed and closed), and flushes stdout and stderr. What it skips is the teardown of the
    modules: it would touch every object the server preloaded, so the fork would copy most of the server's memory
    (about 2 s of a core per process, and the suite starts hundreds); those objects stay frozen (``_serve``), out of
    these collections."""
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter's exit calls first
    import atexit

    atexit._run_exitfuncs()
    main = sys.modules.get("__main__")
    if main is not None:
        _clear_module(vars(main))
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream: the interpreter then exits with 120
            status = status or 120
    os._exit(status)


def _clear_module(namespace: dict[str, Any]) -> None:
    """Sets a module's names to None as the interpreter does at exit: those with one leading underscore first."""
    for first in (True, False):
        for name in list(namespace):
            single_underscore = name.startswith("_") and not name.startswith("__")
            if single_underscore == first and name != "__builtins__":
                namespace[name] = None


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve"] or len(sys.argv) != 3:
        sys.exit("usage: python tests/helpers/preloaded_server.py serve SOCKET")
    status = _run(*_serve(sys.argv[2]))
    if any(name in sys.modules for name in _TORN_DOWN_ONLY):
        gc.unfreeze()  # the interpreter's own exit, whole: the preloaded objects are collectable again by then
        sys.exit(status)
    _exit(status)
