"""Run the Intel Gaudi PyTorch bridge's own API tests (1.19.0) against the CPU stand-in.

    python scripts/bridge_suite.py [--source GIT_DIR_OR_URL] [--ref v1.19.0] [pytest arguments ...]

The bridge's ``tests/`` at ``--ref`` are exported into ``build/bridge/<ref>/`` (cloned from GitHub unless ``--source``
names a git repository: a clone, a bare mirror or its ``.git``); nothing of the bridge is changed or kept in the
project. Pytest then runs the files of :data:`FILES` from ``tests/pytest_working`` as the bridge's README says (cwd
``pytest_working/``, its ``conftest.py``, ``--mode``), one process per mode, in the mode their folder names:
``eager/`` and ``any_mode/`` files (and the top-level ones) with ``--mode=eager`` (current Gaudi software's default),
``lazy/`` with ``--mode=lazy``, ``compile/`` with ``--mode=compile``, on an emulated Gaudi2 (``--dut gaudi2``, the
conftest's default) with ``LIGHTNING_HPU_BACKEND=cpu``. A module that cannot be imported is reported, as CI would,
and not counted among the collected cases; a hung case fails after ``--timeout`` seconds (default 300).

The output is one line per failing case (and per file that does not import) with the first line of its reason,
then the summary line: passed of collected, failed, errors, skipped. ``build/bridge/<ref>/report-<mode>.xml`` hold
each case's outcome. Not part of ``scripts/test.sh``: the bridge's tests need its source, the project's do not.
Pytest arguments that name test files (relative to ``pytest_working/``, e.g. ``lazy/test_hpu_graph.py`` or
``any_mode/test_fused_adamw.py::test_name``) replace the default selection; others (``-k``, ``-x``) are passed on.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from git_export import export_paths  # a sibling when run as a script

ROOT = Path(__file__).resolve().parent.parent
BRIDGE_URL = "https://github.com/HabanaAI/gaudi-pytorch-bridge"
MODES = ("eager", "lazy", "compile")

#: The bridge's test files that exercise its Python API (its modules, custom ops, optimizers, HPU graphs, streams,
#: memory and metrics, the compile backend and its logs) rather than the numerics of one aten op over dtypes: 83
#: files of ``tests/pytest_working`` (relative to it).
FILES = (
    # The top level: the bridge's own API and helpers (collected only when named, as here).
    "test_autoload.py",
    "test_habanaframework_api.py",
    "test_hpu_linear.py",
    "test_hpu_stream.py",
    "test_mem_hlml.py",
    "test_metrics.py",
    "test_hpu_divergence_analyzer.py",
    # any_mode: the bridge's kernels, custom ops and optimizers.
    "any_mode/FusedSDPA/test_hpu_sdpa.py",
    "any_mode/FusedSDPA/test_hpu_sdpa_fp8.py",
    "any_mode/test_custom_softmax.py",
    "any_mode/test_dist_coalese.py",
    "any_mode/test_dist_pg_destroy.py",
    "any_mode/test_dist_scatter.py",
    "any_mode/test_ema.py",
    "any_mode/test_fused_adamw.py",
    "any_mode/test_hpu_ctc_loss.py",
    "any_mode/test_hpu_fp8_te.py",
    "any_mode/test_hpu_logger_flags.py",
    "any_mode/test_hpu_mixture_of_experts.py",
    "any_mode/test_hpu_multiple_sdpa_impls.py",
    "any_mode/test_hpu_random_ops_any_mode.py",
    "any_mode/test_hpu_rms_norm.py",
    "any_mode/test_hpu_rotary_pos_embedding_helper.py",
    "any_mode/test_hpu_scaled_masked_softmax.py",
    "any_mode/test_hpu_scaled_masked_triangular_softmax.py",
    "any_mode/test_hpu_scaled_triangular_softmax.py",
    "any_mode/test_log_level.py",
    # eager: fused optimizers, streams, shallow copies, collectives.
    "eager/fused_ops/test_fused_clip_norm.py",
    "eager/fused_ops/test_sgd.py",
    "eager/test_eager_collective_asycn.py",
    "eager/test_hpu_custom_lamb_optimizer.py",
    "eager/test_hpu_random_ops.py",
    "eager/test_hpu_streams.py",
    "eager/test_optimizer_lamb_fused_norm.py",
    "eager/test_reduce_scatter_base.py",
    "eager/test_shallow_copy.py",
    # lazy: HPU graphs, fused optimizers, mark_step semantics, fp8 parameters.
    "lazy/fused_ops/lars/test_fused_lars.py",
    "lazy/fused_ops/test_adagrad.py",
    "lazy/fused_ops/test_adamw.py",
    "lazy/fused_ops/test_lamb.py",
    "lazy/fused_ops/test_norm.py",
    "lazy/fused_ops/test_norm_ut.py",
    "lazy/fused_ops/test_sgd.py",
    "lazy/test_capture_replay.py",
    "lazy/test_capture_replay_inplace.py",
    "lazy/test_const_handling.py",
    "lazy/test_debug.py",
    "lazy/test_hpu_bounds_check_indices.py",
    "lazy/test_dynamic_shapes_detector.py",
    "lazy/test_hpu_custom_lamb_optimizer.py",
    "lazy/test_hpu_deterministic_api.py",
    "lazy/test_hpu_fp8_parameters.py",
    "lazy/test_hpu_graph.py",
    "lazy/test_hpu_graph_fp8_te.py",
    "lazy/test_hpu_hooks.py",
    "lazy/test_hpu_inference_const_section.py",
    "lazy/test_hpu_lazy_collectives.py",
    "lazy/test_hpu_record_stream.py",
    "lazy/test_hpu_shallow_copy.py",
    "lazy/test_inplace_output_handling.py",
    "lazy/test_lazy_data_ptr.py",
    "lazy/test_lazy_ds_hpugraphs.py",
    "lazy/test_memory_pool.py",
    # compile: hpu_backend, its configuration, passes, logs and dynamic shapes.
    "compile/dynamic/test_hpu_ndims_dynamic.py",
    "compile/dynamic/test_hpu_subgraphs.py",
    "compile/dynamic/test_recipe_cache.py",
    "compile/test_bwd_inputs_reuse.py",
    "compile/test_context_hints.py",
    "compile/test_dynamo_config.py",
    "compile/test_dynamo_utils.py",
    "compile/test_fuse_collectives.py",
    "compile/test_hpu_activation_checkpoint.py",
    "compile/test_hpu_backends.py",
    "compile/test_hpu_ctx_manager.py",
    "compile/test_hpu_propose_partitions.py",
    "compile/test_hpu_random_ops.py",
    "compile/test_hpu_skiplist.py",
    "compile/test_partition_fn.py",
    "compile/test_pass_inference.py",
    "compile/test_passes.py",
    "compile/test_reinplace.py",
    "compile/test_remove_full_copy.py",
    "compile/test_reorder_allreduce.py",
)


def mode_of(path: str) -> str:
    """The ``--mode`` a test file runs in: its folder's, eager for ``any_mode/`` and the top level."""
    top = path.split("/", 1)[0]
    return top if top in ("lazy", "compile") else "eager"


def export_suite(source: str, ref: str, dest: Path) -> Path:
    """The bridge's ``tests/`` at ``ref`` under ``dest`` (kept between runs); returns ``tests/pytest_working``."""
    working = dest / "tests" / "pytest_working"
    if working.is_dir():
        return working
    export_paths(source, ref, ["tests"], dest)
    # Pytest's settings for the bridge's tests, outside its tree: none of the project's (its markers, plugins).
    (dest / "pytest.ini").write_text("[pytest]\n")
    return working


def summarize(reports: list[Path], working: Path) -> tuple[int, int]:
    """Print one line per failing case and per file that does not import, then the summary; (passed, collected)."""
    outcomes: Counter[str] = Counter()
    unimportable: list[str] = []
    for report in reports:
        if not report.exists():
            continue
        for case in ET.parse(report).iter("testcase"):
            problem = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
            outcome = "passed" if problem is None else problem.tag
            if not case.get("classname") and outcome == "error":  # a module that cannot be imported
                unimportable.append(f"NOT IMPORTABLE {_file_of(case.get('name', ''), working)}: {_reason(problem)}")
                continue
            outcomes[outcome] += 1
            if outcome in ("failure", "error"):
                message = ((problem.get("message") or problem.text or "") if problem is not None else "").strip()
                first = message.splitlines()[0][:200] if message else "?"
                print(f"{outcome.upper()} {_node_id(case, working)}: {first}")
    for line in unimportable:
        print(line)
    total = sum(outcomes.values())
    print(
        f"bridge suite: {outcomes['passed']} passed of {total} collected cases, {outcomes['failure']} failed, "
        f"{outcomes['error']} errors, {outcomes['skipped']} skipped; {len(unimportable)} files not importable"
    )
    return outcomes["passed"], total


def _file_of(dotted: str, working: Path) -> str:
    """The test file (relative to ``pytest_working/``) of a dotted module or class path of a report."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if (working / path).is_file():
            return path
    return dotted


def _node_id(case: ET.Element, working: Path) -> str:
    """``file.py::Class::name`` of a report's test case."""
    classname = case.get("classname", "")
    path = _file_of(classname, working)
    classes = classname.split(".")[path.count("/") + 1 :]
    return "::".join([path, *classes, case.get("name", "")])


def _reason(problem: ET.Element | None) -> str:
    """The last ``E   ...`` line of a collection error: the exception that stopped the import."""
    text = (problem.text or problem.get("message") or "") if problem is not None else ""
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    return (errors[-1] if errors else text.strip().splitlines()[-1] if text.strip() else "?")[:200]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--source", default=BRIDGE_URL, help="gaudi-pytorch-bridge git repository (path or URL)")
    parser.add_argument("--ref", default="v1.19.0", help="the release whose tests run (default: v1.19.0)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds before a hung case fails (default: 300)")
    args, pytest_args = parser.parse_known_args(argv)
    dest = ROOT / "build" / "bridge" / args.ref
    working = export_suite(args.source, args.ref, dest)
    chosen = [arg for arg in pytest_args if arg.split("::")[0].endswith(".py")] or list(FILES)
    options = [arg for arg in pytest_args if arg not in chosen]
    env = dict(os.environ, LIGHTNING_HPU_BACKEND="cpu", LIGHTNING_HPU_CPU_DEVICES="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    reports: list[Path] = []
    for mode in MODES:
        files = [path for path in chosen if mode_of(path) == mode]
        if not files:
            continue
        report = dest / f"report-{mode}.xml"
        report.unlink(missing_ok=True)
        command = [sys.executable, "-m", "pytest", "-c", str(dest / "pytest.ini"), "--rootdir", str(working)]
        command += ["-q", "-p", "no:cacheprovider", "--disable-plugin-autoload", "-p", "timeout"]
        command += [f"--timeout={args.timeout}", "--continue-on-collection-errors", f"--mode={mode}"]
        command += ["--dut=gaudi2", f"--junitxml={report}", *options, *files]
        mode_env = dict(env, PT_HPU_LAZY_MODE="1" if mode == "lazy" else "0")
        subprocess.run(command, cwd=working, env=mode_env, check=False, stdout=subprocess.DEVNULL)
        reports.append(report)
    summarize(reports, working)
    return 0


if __name__ == "__main__":
    sys.exit(main())
