"""What a user meets when something is wrong or merely chatty: one-line errors in scripts, quiet HPU runs."""

from __future__ import annotations

import logging
import os
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest
from jsonargparse import ArgumentParser
from lightning.pytorch import Trainer
from lightning.pytorch.trainer.connectors.callback_connector import _CallbackConnector
from lightning_utilities.core import rank_zero as rank_zero_module

from lightning_hpu import HPUConfigurationError, HPUNotAvailableError, SingleHPUStrategy, integration
from lightning_hpu.distributed.deepspeed_config import _zero3_on_gaudi2_caveat
from lightning_hpu.support.user_errors import run_script
from tests.helpers.paths import EXAMPLES, SCENARIOS
from tests.scenarios.example_errors_scenario import NOT_RUN

SCENARIO = SCENARIOS / "example_errors_scenario.py"


def _fail(error: BaseException) -> Any:
    def main() -> None:
        raise error

    return main


def test_run_script_turns_user_errors_into_one_line_and_keeps_bugs_tracebacks() -> None:
    with pytest.raises(SystemExit) as end:
        run_script(_fail(HPUConfigurationError("`devices=3` asks for 3 HPUs.")))
    assert end.value.code == "error: `devices=3` asks for 3 HPUs."
    assert end.value.__suppress_context__ and end.value.__cause__ is None
    with pytest.raises(KeyError):
        run_script(_fail(KeyError("a bug")))


def test_run_script_finds_a_user_error_that_lightningcli_wrapped(no_hpu: None) -> None:
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--strategy", type=SingleHPUStrategy)

    def main() -> None:  # as LightningCLI does: jsonargparse builds the class and re-raises in its own words
        config = parser.parse_args(["--strategy", "lightning_hpu.SingleHPUStrategy"])
        parser.instantiate_classes(config)

    with pytest.raises(SystemExit) as end:
        run_script(main)
    assert isinstance(end.value.code, str) and end.value.code.startswith("error: HPU was requested but")
    assert "\n" not in end.value.code
    assert issubclass(HPUNotAvailableError, RuntimeError)


def test_every_example_says_no_hpu_and_too_few_devices_in_one_line(python_executable: str) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("LIGHTNING_HPU_")}
    env["LIGHTNING_HPU_BACKEND"] = "cpu"  # the scenario unsets it for its first part
    done = subprocess.run(
        [python_executable, str(SCENARIO)], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = [line.split("\t") for line in done.stdout.splitlines() if "\t" in line]
    examples = {path.name for path in EXAMPLES.glob("*.py")} - NOT_RUN
    no_hpu = {example: status for scenario, example, status in runs if scenario == "no-hpu"}
    assert set(no_hpu) == examples
    for example, status in no_hpu.items():
        assert status.startswith("error: HPU was requested but"), (example, status)
        assert status.endswith("set LIGHTNING_HPU_BACKEND=cpu to use the CPU stand-in."), (example, status)
    too_few = {example: status for scenario, example, status in runs if scenario == "too-few-devices"}
    assert {"multi_hpu.py", "fsdp.py", "deepspeed_zero.py", "fabric_hpu.py", "model_parallel.py"} <= set(too_few)
    for example, status in too_few.items():
        assert status == (
            "error: `devices=2` asks for 2 HPUs but only 1 is visible: set LIGHTNING_HPU_CPU_DEVICES=2 to emulate"
            " more on the CPU stand-in."
        ), (example, status)


def _tips_logged(**trainer_kwargs: Any) -> list[str]:
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Collect(level=logging.INFO)
    log = rank_zero_module.log
    previous = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        trainer = Trainer(enable_progress_bar=False, max_steps=0, **trainer_kwargs)  # Lightning 2.6.0 tips here
        show_at_fit = getattr(trainer._callback_connector, "_maybe_show_litmodels_tip", None)
        if show_at_fit is not None:
            show_at_fit()  # what fit() calls first (later Lightning 2.6 releases)
    finally:
        log.removeHandler(handler)
        log.setLevel(previous)
    return [message for message in messages if message.startswith(integration.LIGHTNING_TIP_PREFIX)]


def test_lightnings_tips_are_left_out_of_hpu_trainers_only(standin: Any, tmp_path: Path) -> None:
    assert _tips_logged(accelerator="hpu", default_root_dir=tmp_path) == []
    # Lightning 2.6.0 has the litmodels tip only; later 2.6 releases also the LitLogger one.
    tips = 2 if hasattr(_CallbackConnector, "_maybe_show_litmodels_tip") else 1
    assert len(_tips_logged(accelerator="cpu", default_root_dir=tmp_path)) == tips, "other Trainers keep Lightning's"


def test_gaudi2_software_caveat_names_the_stand_in_there() -> None:
    on_gaudi = _zero3_on_gaudi2_caveat(standin=False)
    assert "stand-in" not in on_gaudi and on_gaudi.startswith("DeepSpeed ZeRO stage 3 on Gaudi2 needs")
    assert _zero3_on_gaudi2_caveat(standin=True).startswith("The CPU stand-in emulates a Gaudi2 and runs ZeRO stage 3")


def test_lightnings_own_torch_deprecations_are_hidden_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    from lightning_hpu.integration import quiet_warnings, registration

    def warn(message: str, module: str) -> None:
        warnings.warn_explicit(message, FutureWarning, "file.py", 1, module=module)

    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()  # Python's defaults show every FutureWarning
        quiet_warnings.hide_lightning_noise()
        leafspec = "`isinstance(treespec, LeafSpec)` is deprecated, use `isinstance(treespec, TreeSpec)` instead."
        warn(leafspec, "lightning.pytorch.utilities._pytree")
        warn(leafspec, "my_code")  # the same words from elsewhere are not Lightning's
        warn("something else is deprecated", "lightning.pytorch.utilities._pytree")
    assert [str(w.message) for w in caught] == [leafspec, "something else is deprecated"]
    summary = "lightning.pytorch.utilities.model_summary.model_summary"
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        quiet_warnings.hide_lightning_noise()
        for precision in ("bf16-mixed", "64-true"):  # 64-true: Lightning's estimate would be wrong, so it stays
            message = f"Precision {precision} is not supported by the model summary. Using 32 bits instead."
            warnings.warn_explicit(message, UserWarning, "model_summary.py", 242, module=summary)
    assert [str(w.message)[:20] for w in caught] == ["Precision 64-true is"]
    calls: list[bool] = []
    monkeypatch.setattr(registration, "hide_lightning_noise", lambda: calls.append(True))
    registration.register_all()
    assert calls == [True], "importing the package hides them"


def test_hidden_warnings_do_not_override_the_users_filters() -> None:
    from lightning_hpu.integration import quiet_warnings

    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("error", FutureWarning)  # as `python -W error::FutureWarning`
        quiet_warnings.hide_lightning_noise()
        with pytest.raises(FutureWarning):
            warnings.warn_explicit(
                "`isinstance(treespec, LeafSpec)` is deprecated",
                FutureWarning,
                "f.py",
                1,
                module="lightning.pytorch.utilities._pytree",
            )
