"""The sharded HPU strategies across 2 stand-in devices over the stand-in "hccl" group, in one launch.

``sharded_scenario.py`` runs every scenario on both ranks (see its docstring), in the session's two-rank launch
(``two_device_run.py``); this test checks what each rank reports, then reads the full FSDP checkpoint in a fresh
Python without lightning-hpu (as a machine without HPU would) and into the plain, unsharded model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.helpers.paths import ROOT, SCENARIOS
from tests.helpers.processes import scenario_environment
from tests.helpers.two_device_run import TwoDeviceRun

SCRIPT = SCENARIOS / "sharded_scenario.py"
HCCL_REFUSAL = "Unsupported ReduceOp for HCCL process group"

_READ_WITHOUT_HPU = """
import sys, torch
checkpoint = torch.load(sys.argv[1], map_location="cpu", weights_only=True)
state = checkpoint["state_dict"]
print(",".join(sorted(state)))
print(torch.cat([state[key].reshape(-1).float() for key in sorted(state)]).tolist())
"""


def _env() -> dict[str, str]:
    return scenario_environment(
        leave_out=("PT_HPU_LAZY_MODE",), LIGHTNING_HPU_BACKEND="cpu", LIGHTNING_HPU_CPU_DEVICES="2"
    )


def _check_rank(report: dict[str, Any]) -> None:
    fsdp = report["fsdp"]
    assert fsdp["strategy"] == "HPUFSDPStrategy", "strategy='fsdp' on HPU must pick HPUFSDPStrategy"
    assert fsdp["precision"] == "HPUFSDPPrecisionPlugin"
    assert fsdp["process_group"] == "HCCLStandInProcessGroup"
    assert fsdp["rank_watchdog"], "every HPU parallel strategy runs the rank watchdog (no rank outlives its job)"
    assert fsdp["max_diff_to_reference"] < 1e-5, "FSDP on 2 devices must equal one device on the global batch"
    assert fsdp["rank_value_epoch"] == pytest.approx(6.0)

    resume = report["fsdp_resume"]
    assert resume["checkpoint_is_folder"] and {"meta.pt", "__0_0.distcp", "__1_0.distcp"} <= set(resume["shard_files"])
    assert resume["resumed_global_step"] == 4
    assert resume["max_diff_first_to_straight"] > 1e-3, "the resumed run must have something left to train"
    assert resume["max_diff_resumed_to_straight"] < 1e-6, "a resumed run must continue exactly"
    assert resume["max_diff_straight_to_reference"] < 1e-5

    for name, mesh, dtensors in (
        # Both with clipping by norm across the shards (and, for TP, beside plain-tensor gradients).
        ("fsdp2", {"data_parallel": 2, "tensor_parallel": 1}, 10),
        ("tensor_parallel", {"data_parallel": 1, "tensor_parallel": 2}, 8),
    ):
        scenario = report[name]
        assert scenario["strategy"] == "HPUModelParallelStrategy", name
        assert scenario["mesh"] == mesh, name
        assert scenario["mesh_device_type"] == "hpu", name  # a DeviceMesh of HPUs, not of the host
        assert scenario["dtensor_parameters"] == dtensors, name
        assert scenario["max_diff_to_reference"] < 1e-5, name
        assert scenario["rank_value_epoch"] == pytest.approx(6.0), name
        assert scenario["checkpoint_is_folder"], name

    fabric = report["fabric"]
    assert fabric["strategy"] == "HPUFSDPStrategy" and fabric["precision"] == "HPUFSDPPrecision"
    assert fabric["rank_watchdog"], "Fabric's FSDP runs the rank watchdog too"
    assert fabric["max_diff_to_reference"] < 1e-5
    assert fabric["max_diff_after_load"] == 0.0 and fabric["loaded_step"] == 3 and fabric["remainder"] == {}
    assert fabric["mean"] == pytest.approx(6.0)

    # HYBRID_SHARD on one node: a warning (from rank 0), then the parameters sharded over both devices, trained as
    # FULL_SHARD.
    hybrid = report["hybrid_one_node"]
    assert hybrid["warned"] == (report["env_rank"] == "0") and hybrid["shard_group_size"] == 2
    assert hybrid["max_diff_to_reference"] < 1e-5
    # bf16-mixed with norm layers that get an fp32 input and bf16 weights (FSDP's cast) trains, as on a Gaudi.
    assert report["norms_bf16"] == {"steps": 3, "finite": True}

    fabric_model_parallel = report["fabric_model_parallel"]
    assert fabric_model_parallel["strategy"] == "HPUModelParallelStrategy"
    assert fabric_model_parallel["max_diff_to_reference"] < 1e-5

    ops = report["ops_seen"]
    assert ops.get("SUM", 0) > 0, "the reductions must reach the stand-in group"
    assert set(ops) <= {"SUM", "MIN", "MAX"}, f"only HCCL's reduce ops may be sent: {ops}"
    # Without the strategy, torch's FSDP2 sends AVG: the stand-in refuses it as HCCL does; forced to SUM it runs.
    assert report["fsdp2_avg"]["forced"] == "ran"
    assert report["fsdp2_avg"]["default"].startswith(f"{HCCL_REFUSAL}: ReduceOp.AVG cannot run on HCCL")


@pytest.mark.multiprocess
def test_sharded_strategies_on_two_standin_devices(two_device_run: TwoDeviceRun, python_executable: str) -> None:
    reports = two_device_run.reports("sharded")
    for report in reports:
        _check_rank(report)

    # The full checkpoint: one file, read by a Python that never imports lightning-hpu, with weights_only=True.
    checkpoint = Path(reports[0]["fsdp"]["full_checkpoint"])
    plain_env = {key: value for key, value in _env().items() if not key.startswith("LIGHTNING_HPU")}
    read = subprocess.run(
        [python_executable, "-c", _READ_WITHOUT_HPU, str(checkpoint)], env=plain_env, capture_output=True, text=True
    )
    assert read.returncode == 0, read.stderr[-3000:]
    keys, values = read.stdout.strip().splitlines()
    assert all(key.startswith("net.") for key in keys.split(","))
    reference = torch.tensor(reports[0]["fsdp"]["reference"])
    assert torch.allclose(torch.tensor(json.loads(values)), reference, atol=1e-5)

    # ... and it loads, strictly, into the plain model.
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from sharded_scenario import Net, flat
    finally:
        sys.path.remove(str(SCRIPT.parent))
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)["state_dict"]
    plain = Net()
    plain.load_state_dict({key.removeprefix("net."): value for key, value in state.items()}, strict=True)
    assert torch.allclose(flat(plain.state_dict()), reference, atol=1e-5)


@pytest.mark.multiprocess
def test_fsdp_example_saves_a_sharded_checkpoint_on_two_standin_devices(tmp_path: Path, python_executable: str) -> None:
    """``examples/fsdp.py --checkpoint``; the README's commands run it and ``examples/model_parallel.py`` without."""
    command = [str(ROOT / "examples" / "fsdp.py"), "--checkpoint", str(tmp_path / "ckpt")]
    result = subprocess.run(
        [python_executable, *command, "--devices", "2", "--max-steps", "3"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=400,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "FSDP on 2 HPUs (HPUFSDPStrategy)" in result.stdout
    assert (tmp_path / "ckpt" / "meta.pt").is_file()


@pytest.mark.multiprocess
def test_fabric_fsdp_auto_wrap_trains_a_compiled_model_on_two_standin_devices(two_device_run: TwoDeviceRun) -> None:
    """LitGPT's 2-HPU ``pretrain`` reduced to its parts (``fsdp_compile_scenario.py``): Fabric's ``FSDPStrategy`` with
    ``auto_wrap_policy`` over a model compiled before ``fabric.setup``. On torch 2.9 it crashed both ranks."""
    reports = two_device_run.reports("fsdp_compile")
    for report in reports:
        assert report["strategy"] == "HPUFSDPStrategy"  # Fabric's FSDPStrategy, run as its HPU twin
        assert report["compiled_module"] == "OptimizedModule" and report["compiled_graphs"] > 0
        assert report["wrapped_blocks"] == 2  # each Block its own FSDP unit
        assert len(report["losses"]) == 2
        assert report["max_diff_to_reference"] < 1e-5, "must train as one process does on the global batches"
    assert reports[0]["trained"] == reports[1]["trained"]
