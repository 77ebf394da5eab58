"""Two nodes of two HPUs on one machine, started by each launcher Gaudi clusters use; and no rank left behind.

Every job runs ``launcher_scenario.py``. The launches of a test run side by side (they are separate jobs, on
separate ports), so the test costs about as much as its longest job.

* Lightning's own launcher (``NODE_RANK``/``MASTER_ADDR`` on each node), ``torchrun`` (static rendezvous, one agent
  per node), SLURM (the variables ``srun`` sets for each task) and ``mpirun`` (Open MPI; Lightning's
  ``MPIEnvironment``): DDP, FSDP and FSDP2 weights equal one process on the concatenated batches, and each rank
  drives the HPU its local rank names.
* A rank that stalls: every process of the job exits non-zero within the strategy's timeout + 30 s, a child that
  Lightning's launcher started included, and the first rank that gave up names the stalled one.
* ``torchrun --max-restarts 1``: a rank killed mid-epoch, the restart resumes from ``last.ckpt`` and ends with the
  weights of an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import MPI_PREFIX
from tests.helpers.paths import SCENARIOS
from tests.helpers.processes import alive, free_port, scenario_environment

LAUNCHER_SCENARIOS = SCENARIOS / "launcher_scenario.py"
STALL_TIMEOUT_S = 30  # also bounds the process group's start: the real-interpreter rank importing must make it
DEVICES, NODES = 2, 2


def _env(**extra: str) -> dict[str, str]:
    return scenario_environment(
        leave_out=("SLURM_", "TORCHELASTIC_", "OMPI_", "PMIX_"),
        LIGHTNING_HPU_BACKEND="cpu",
        LIGHTNING_HPU_CPU_DEVICES=str(DEVICES),
        **extra,
    )


def _mpi() -> tuple[str, str] | None:
    """``(mpirun, PYTHONPATH entry for mpi4py)``: setup.sh's copy in build/mpi, else a system Open MPI."""
    # mpi4py is built for one Python: the leg's own (scripts/test.sh installs it for each leg's Python).
    site_packages = sorted(MPI_PREFIX.glob(f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"))
    if (MPI_PREFIX / "bin" / "mpirun").exists() and site_packages:
        return str(MPI_PREFIX / "bin" / "mpirun"), str(site_packages[0])
    system = shutil.which("mpirun")
    if system is not None:
        try:
            __import__("mpi4py")
        except ImportError:
            return None
        return system, ""
    return None


_NO_MPI = "mpirun or mpi4py is absent: run scripts/setup.sh (installs both into build/mpi), or install openmpi-bin"


class Job:
    """The processes a launcher starts for one job (one per node, or one for the whole job), and their output."""

    def __init__(self, name: str, out: Path) -> None:
        self.name = name
        self.out = out
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        self.ended_at: list[float] = []

    def start(self, command: list[str], env: dict[str, str]) -> None:
        log = self.out.parent / f"{self.name}-{len(self.processes)}.log"
        self.logs.append(log)
        with log.open("wb") as output:
            self.processes.append(subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT))

    def wait(self, timeout: float) -> list[int]:
        deadline = time.monotonic() + timeout
        codes: list[int] = []
        for process in self.processes:
            try:
                codes.append(process.wait(timeout=max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                codes.append(-999)
        return codes

    def kill(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()

    def output(self) -> str:
        """Everything the job's processes printed."""
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')}" for log in self.logs)

    def tail(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-4000:]}" for log in self.logs)

    def reports(self) -> dict[int, dict]:
        return {int(path.stem[4:]): json.loads(path.read_text()) for path in self.out.glob("rank*.json")}


def _scenario(mode: str, out: Path, nodes: int, *extra: object) -> list[str]:
    return [str(LAUNCHER_SCENARIOS), mode, str(out), str(DEVICES), str(nodes), *map(str, extra)]


def _lightning_job(job: Job, mode: str, *extra: object, nodes: int = NODES, python: str = sys.executable) -> None:
    port = str(free_port())
    for node in range(nodes):
        env = _env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, NODE_RANK=str(node))
        job.start([python, *_scenario(mode, job.out, nodes, *extra)], env)


def _torchrun_job(
    job: Job, mode: str, *extra: object, nodes: int = NODES, restarts: int = 0, python: str = sys.executable
) -> None:
    port = str(free_port())
    for node in range(nodes):
        command = [python, "-m", "torch.distributed.run", f"--nnodes={nodes}", f"--nproc-per-node={DEVICES}"]
        command += [f"--node-rank={node}", "--master-addr=127.0.0.1", f"--master-port={port}"]
        command += [f"--max-restarts={restarts}", "--monitor-interval=0.5"]
        job.start([*command, *_scenario(mode, job.out, nodes, *extra)], _env())


def _slurm_job(job: Job, mode: str, python: str = sys.executable) -> None:
    """The tasks of ``srun --nodes 2 --ntasks-per-node 2``, with the variables srun gives each task."""
    world = DEVICES * NODES
    shared = {
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NAME": "train",
        "SLURM_NTASKS": str(world),
        "SLURM_NTASKS_PER_NODE": str(DEVICES),
        "SLURM_NNODES": str(NODES),
        "SLURM_JOB_NUM_NODES": str(NODES),
        "SLURM_NODELIST": "gaudi-[1-2]",
        "SLURM_STEP_NUM_TASKS": str(world),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    for rank in range(world):
        task = {
            "SLURM_PROCID": str(rank),
            "SLURM_LOCALID": str(rank % DEVICES),
            "SLURM_NODEID": str(rank // DEVICES),
            "SLURMD_NODENAME": f"gaudi-{1 + rank // DEVICES}",
        }
        job.start([python, *_scenario(mode, job.out, NODES)], _env(**shared, **task))


def _mpirun_job(job: Job, mode: str, *extra: object, nodes: int = NODES, python: str = sys.executable) -> None:
    mpi = _mpi()
    assert mpi is not None
    mpirun, mpi4py_path = mpi
    env = _env(RANKS_PER_NODE=str(DEVICES))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env["PYTHONPATH"], mpi4py_path]))
    env["PATH"] = os.pathsep.join([str(Path(mpirun).parent), env.get("PATH", "")])
    command = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(DEVICES * nodes)]
    node = SCENARIOS / "mpi_node_scenario.py"
    job.start([*command, python, str(node), *_scenario(mode, job.out, nodes, *extra)], env)


_EXPECTED_ENVIRONMENT = {
    "lightning": "LightningEnvironment",
    "torchrun": "TorchElasticEnvironment",
    "slurm": "SLURMEnvironment",
    "mpirun": "MPIEnvironment",
}


@pytest.mark.multiprocess
def test_two_nodes_with_each_launcher_train_ddp_fsdp_and_fsdp2(tmp_path: Path, python_executable: str) -> None:
    jobs = {name: Job(name, tmp_path / name) for name in _EXPECTED_ENVIRONMENT}
    _lightning_job(jobs["lightning"], "train", python=python_executable)
    _torchrun_job(jobs["torchrun"], "train", python=python_executable)
    _slurm_job(jobs["slurm"], "train", python=python_executable)
    if _mpi() is not None:
        _mpirun_job(jobs["mpirun"], "train", python=python_executable)
    else:
        del jobs["mpirun"]
    try:
        codes = {name: job.wait(timeout=420) for name, job in jobs.items()}
    finally:
        for job in jobs.values():
            job.kill()
    for name, job in jobs.items():
        assert set(codes[name]) == {0}, f"{name}: exit codes {codes[name]}\n{job.tail()}"
        reports = job.reports()
        assert sorted(reports) == [0, 1, 2, 3], name
        for rank, report in reports.items():
            assert report["environment"] == _EXPECTED_ENVIRONMENT[name], name
            assert report["world_size"] == 4
            assert (report["node_rank"], report["local_rank"]) == (rank // DEVICES, rank % DEVICES), (name, rank)
            for strategy in ("ddp", "fsdp", "fsdp2"):
                result = report[strategy]
                assert result["devices"] == [f"hpu:{rank % DEVICES}"], (name, rank, strategy)
                assert result["max_diff_to_reference"] < 1e-5, (name, rank, strategy, result)
    if "mpirun" not in jobs:
        pytest.skip(f"the mpirun leg did not run: {_NO_MPI}")


def _pids(out: Path) -> dict[int, int]:
    return {int(path.name[3:]): int(path.read_text()) for path in out.glob("pid*")}


@pytest.mark.multiprocess
def test_a_stalled_or_killed_rank_leaves_no_process_behind(tmp_path: Path, python_executable: str) -> None:
    """Stalls under Lightning's launcher (rank 1, a child of rank 0), torchrun (rank 0) and mpirun (rank 1); a
    Fabric rank that raises while rank 0 sleeps.

    The Lightning-launcher job runs in the real interpreter: a rank that dies with the process that launched it
    (``rank_watchdog.follow_launcher``) is the point there. The mpirun, torchrun and Fabric jobs, whose ranks end
    by the watchdog's decisions and their launcher's teardown, run in the preloaded one (``preloaded_python.py``),
    and so do the torchrun jobs (DDP, DeepSpeed) that this run restarts from their last checkpoint after their
    rank 1 was killed.
    """
    stalls = {"lightning": 1, "mpirun": 1, "torchrun": 0, "fabric": 0}
    if _mpi() is None:
        del stalls["mpirun"]
    jobs = {name: Job(name, tmp_path / name) for name in stalls}
    _lightning_job(jobs["lightning"], "stall", stalls["lightning"], STALL_TIMEOUT_S, nodes=1)
    if "mpirun" in jobs:
        _mpirun_job(jobs["mpirun"], "stall", stalls["mpirun"], STALL_TIMEOUT_S, nodes=1, python=python_executable)
    _torchrun_job(jobs["torchrun"], "stall", stalls["torchrun"], STALL_TIMEOUT_S, nodes=1, python=python_executable)
    _lightning_job(jobs["fabric"], "fabric_fail", nodes=1, python=python_executable)
    restarts = {
        strategy: Job(f"elastic-{strategy}", tmp_path / f"elastic-{strategy}") for strategy in ("ddp", "deepspeed")
    }

    pids: dict[str, dict[int, int]] = {name: {} for name in stalls}
    stalled_at: dict[str, float] = {}
    gone_at: dict[tuple[str, int], float] = {}
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            for name, job in jobs.items():
                pids[name].update(_pids(job.out))
                if name not in stalled_at and (job.out / "stalled").exists():
                    stalled_at[name] = time.monotonic()
                for rank, pid in pids[name].items():
                    if (name, rank) not in gone_at and not alive(pid):
                        gone_at[name, rank] = time.monotonic()
            if not restarts["ddp"].processes and len(stalled_at) == len(stalls):
                # The restart jobs do their work while the stalled jobs wait out their timeout.
                for strategy, job in restarts.items():
                    _torchrun_job(job, "elastic", strategy, nodes=1, restarts=1, python=python_executable)
            all_gone = all(len(gone) == 2 for gone in ([k for k in gone_at if k[0] == n] for n in stalls))
            if all_gone and all(job.processes[0].poll() is not None for job in jobs.values()):
                break
            time.sleep(0.2)
        codes = {name: job.wait(timeout=5) for name, job in jobs.items()}
        restart_codes = {
            name: job.wait(timeout=max(5.0, deadline - time.monotonic())) for name, job in restarts.items()
        }
    finally:
        for job in [*jobs.values(), *restarts.values()]:
            job.kill()

    for name, stalled in stalls.items():
        job = jobs[name]
        output, tail = job.output(), job.tail()
        assert name in stalled_at, f"{name}: the rank never stalled\n{tail}"
        assert len(pids[name]) == 2, (name, pids[name], tail)
        assert all(code != 0 for code in codes[name]), (name, codes[name], tail)
        for rank in (0, 1):
            assert (name, rank) in gone_at, f"{name}: rank {rank} outlived the job\n{tail}"
            took = gone_at[name, rank] - stalled_at[name]
            assert took < STALL_TIMEOUT_S + 30, (name, rank, took, tail)
        if name == "fabric":  # rank 1 raised: rank 0, asleep and hosting the store, leaves with rank 1's reason
            assert "rank 0 stops: rank 1 failed" in output and "data shard is missing" in output, tail
            continue
        # The rank that gave up names the stalled one, and the stalled rank is told why it has to go.
        assert f"rank {stalled} stalled (in training step 3" in output, tail
        assert f"rank {stalled} stops: rank {stalled} stalled" in output, tail

    for strategy, job in restarts.items():
        assert set(restart_codes[strategy]) == {0}, job.tail()
        assert "rank 1 is gone (no sign of life for" in job.output(), job.tail()  # rank 0 names the lost rank
        reports = job.reports()
        assert sorted(reports) == [0, 1], job.tail()
        for report in reports.values():
            assert report["strategy"] == {"ddp": "HPUParallelStrategy", "deepspeed": "HPUDeepSpeedStrategy"}[strategy]
            assert report["restart"] == 1  # the second attempt finished the run
            assert report["max_diff_to_reference"] < 1e-6, report
    if "mpirun" not in stalls:
        pytest.skip(f"the mpirun stall did not run: {_NO_MPI}")
