"""``litgpt serve`` through LitGPT's own console script, with a report of the HPU memory each inference worker holds:
``python litgpt_serve_scenario.py CONSOLE_SCRIPT serve CHECKPOINT ...`` with ``LITGPT_SERVE_SCENARIO_OUT=DIR``.

The console script's code runs as this process's program. LitServe starts its inference workers with ``spawn``, which
runs this file again (as ``__mp_main__``) in each: the handler set below then makes a worker stopped with SIGTERM (as
LitServe stops its workers) write the HPU memory it holds to ``DIR/worker-<pid>``. The server puts itself in a process
group of its own (when it does not lead one yet) and writes its pid to ``DIR/server-pid``: the test ends that group, as
the processes of a preloaded Python (``tests/helpers/preloaded_python.py``) are not in the group of the one it started.
"""

import contextlib
import multiprocessing
import os
import signal
import sys
from pathlib import Path

OUT = os.environ["LITGPT_SERVE_SCENARIO_OUT"]


def _report(*_: object) -> None:
    torch = sys.modules.get("torch")
    if torch is not None and multiprocessing.current_process().name == "inference-worker":
        Path(OUT, f"worker-{os.getpid()}").write_text(str(torch.hpu.memory_allocated()))
    os._exit(0)


signal.signal(signal.SIGTERM, _report)

if __name__ == "__main__":
    with contextlib.suppress(PermissionError):  # already a group's (and session's) leader
        os.setpgid(0, 0)
    Path(OUT, "server-pid").write_text(str(os.getpid()))
    console_script = sys.argv.pop(1)
    sys.argv[0] = console_script
    # this module stays __main__, so that LitServe's spawned workers run this file
    exec(compile(Path(console_script).read_text(), console_script, "exec"), {"__name__": "__main__"})
