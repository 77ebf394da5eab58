"""LitGPT's command line on stand-in HPUs, unchanged, through ``examples/litgpt_cli.py`` (docs/guide/litgpt.md).

A tiny LLaMA-style config with random weights, a word-level tokenizer written here and random token data
(``tests/helpers/litgpt_data.py``): nothing is downloaded. ``pretrain`` runs on 1 and 2 HPUs (on 2, LitGPT's own
``FSDPStrategy`` object runs as ``HPUFSDPStrategy``; on both, its ``torch.compile`` uses ``hpu_backend``), and its
checkpoint is converted, LoRA-finetuned on a local JSON file and used by ``generate``. Each command runs in
``tests/scenarios/litgpt_hpu_scenario.py``, which starts the example and then prints the HPU memory the process used.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT, SCENARIOS

pytest.importorskip("litgpt", reason="needs LitGPT: pip install 'lightning-hpu[litgpt]'")

from tests.helpers.litgpt_data import WORDS, write_finetuning_data, write_tokenizer  # imports LitGPT

RUN = SCENARIOS / "litgpt_hpu_scenario.py"

#: A LLaMA-style model of 2 layers of width 16 (a few thousand parameters), for LitGPT's ``--config``.
MODEL_CONFIG = f"""model_name: tiny-gaudi
model_config:
  name: tiny-gaudi
  block_size: 64
  vocab_size: {len(WORDS)}
  padded_vocab_size: 16
  n_layer: 2
  n_head: 2
  n_embd: 16
  rotary_percentage: 1.0
  parallel_residual: false
  bias: false
  norm_class_name: RMSNorm
  mlp_class_name: LLaMAMLP
  intermediate_size: 32
"""

#: Short runs: a few steps, no evaluation before the last, no intermediate checkpoints.
SHORT = ["--train.lr_warmup_steps", "1", "--train.save_interval", "1000", "--eval.interval", "1000"]
SHORT += ["--eval.max_iters", "1", "--logger_name", "csv"]


def _litgpt(python: str, tmp_path: Path, *args: str, devices: int = 1, command: list[str] | None = None) -> str:
    """Runs LitGPT ``args`` through :data:`RUN` (which reports the HPU memory used), or through ``command`` (LitGPT's
    own console script or ``python -m litgpt``, which never import lightning_hpu)."""
    env = {
        **os.environ,
        "LIGHTNING_HPU_BACKEND": "cpu",
        "LIGHTNING_HPU_CPU_DEVICES": str(devices),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    }
    env.pop("PT_HPU_LAZY_MODE", None)
    result = subprocess.run(
        [*(command or [python, str(RUN)]), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    if command is not None:
        return output
    used = [int(n) for n in re.findall(r"^HPU memory used: (\d+) bytes$", result.stdout, flags=re.MULTILINE)]
    assert used and min(used) > 0, f"the command did not run on the HPU: {output[-2000:]}"
    return output


def _pretrain(python: str, tmp_path: Path, devices: int, command: list[str] | None = None) -> tuple[Path, str]:
    (tmp_path / "model.yaml").write_text(MODEL_CONFIG)
    tokenizer = write_tokenizer(tmp_path / "tokenizer")
    out = tmp_path / f"pretrain-{devices}"
    output = _litgpt(
        python,
        tmp_path,
        "pretrain",
        "--config", "model.yaml",
        "--devices", str(devices),
        "--data", "tests.helpers.litgpt_data.RandomTokens",
        "--tokenizer_dir", str(tokenizer),
        "--out_dir", str(out),
        "--train.micro_batch_size", "2",
        "--train.global_batch_size", str(2 * devices),
        "--train.max_seq_length", "8",
        "--train.max_tokens", str(64 * devices),
        *SHORT,
        devices=devices,
        command=command,
    )  # fmt: skip
    assert (out / "final" / "lit_model.pth").is_file()
    assert "Fabric compiles with backend='hpu_backend' instead." in output  # LitGPT's torch.compile, on HPU
    return out / "final", output


def test_pretrain_finetune_and_generate_on_one_hpu(python_executable: str, tmp_path: Path) -> None:
    final, _ = _pretrain(python_executable, tmp_path, devices=1)
    converted = tmp_path / "converted"
    _convert(python_executable, tmp_path, final, converted)
    data = write_finetuning_data(tmp_path / "finetune.json")
    finetuned = tmp_path / "finetuned"
    _litgpt(
        python_executable,
        tmp_path,
        "finetune_lora", str(converted),
        "--data", "JSON", "--data.json_path", str(data), "--data.val_split_fraction", "0.25",
        "--data.num_workers", "0",
        "--devices", "1",
        "--out_dir", str(finetuned),
        "--train.epochs", "1", "--train.max_steps", "2",
        "--train.micro_batch_size", "2", "--train.global_batch_size", "2",
        *SHORT,
    )  # fmt: skip
    assert (finetuned / "final" / "lit_model.pth").is_file()  # LoRA merged into the weights
    output = _litgpt(python_executable, tmp_path, "generate", str(finetuned / "final"), "--prompt", "hello gaudi",
                     "--max_new_tokens", "3")  # fmt: skip
    # The generated line (not the printed arguments): the finetuned checkpoint's prompt style (LitGPT's default,
    # Alpaca) wraps the prompt in its words, and 3 new tokens follow.
    generated = [line for line in output.splitlines() if "hello gaudi" in line and "'" not in line]
    assert len(generated) == 1 and not generated[0].endswith("hello gaudi"), output[-2000:]


def _convert(python: str, tmp_path: Path, final: Path, converted: Path) -> None:
    """``litgpt convert_pretrained_checkpoint``: it works on the host only (no HPU to check for)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]), "LIGHTNING_HPU_BACKEND": "cpu"}
    command = [python, str(ROOT / "examples" / "litgpt_cli.py"), "convert_pretrained_checkpoint", str(final)]
    result = subprocess.run(
        [*command, str(converted)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert (converted / "lit_model.pth").is_file() and (converted / "tokenizer.json").is_file()


def test_pretrain_on_two_hpus_runs_litgpts_fsdp_strategy_as_its_hpu_twin(
    python_executable: str, tmp_path: Path
) -> None:
    _, output = _pretrain(python_executable, tmp_path, devices=2)
    assert (
        "`Fabric(strategy=FSDPStrategy(...))` runs on HPU as lightning_hpu.fabric.strategies.HPUFSDPStrategy,"
        " with the same arguments." in output
    )
    assert "[rank: 1] Seed set to 42" in output  # the second rank ran


def test_python_m_litgpt_finds_the_hpu_without_importing_lightning_hpu(tmp_path: Path) -> None:
    """``python -m litgpt pretrain``: LitGPT's Fabric picks ``accelerator="auto"``, which is the HPU once lightning-hpu
    is installed (it registers when Lightning is imported); its ``torch.compile`` runs with ``hpu_backend``. A real
    interpreter: the registration by a fresh start's import of Lightning is the point (a preloaded one has imported
    it before)."""
    final, _ = _pretrain(sys.executable, tmp_path, devices=1, command=[sys.executable, "-m", "litgpt"])
    # _pretrain checked that Fabric compiled with hpu_backend, which it does only on an HPU accelerator
    assert (final / "lit_model.pth").is_file()


def test_litgpts_console_script_trains_on_two_hpus_without_importing_lightning_hpu(
    python_executable: str, tmp_path: Path
) -> None:
    """``litgpt pretrain ... --devices 2``, LitGPT's own console script: both ranks train on the HPUs, LitGPT's
    ``FSDPStrategy`` running as its HPU twin. In a preloaded Python (the script is run as its shebang runs it): a fresh
    start's registration is checked by ``python -m litgpt`` above."""
    console_script = Path(sys.executable).with_name("litgpt")
    assert console_script.is_file(), f"LitGPT's console script is not beside {sys.executable}"
    _, output = _pretrain(python_executable, tmp_path, devices=2, command=[python_executable, str(console_script)])
    assert (
        "`Fabric(strategy=FSDPStrategy(...))` runs on HPU as lightning_hpu.fabric.strategies.HPUFSDPStrategy,"
        " with the same arguments." in output
    )
    assert "[rank: 1] Seed set to 42" in output
