"""optimum-habana's GaudiTrainer and lightning-hpu on the same tiny model, data, seed and settings: step losses.

A GPT-2 causal LM from a small config with random weights, one batch of random token ids, fp32, AdamW (lr 1e-3,
eps 1e-6, no weight decay, constant schedule), no clipping, one HPU. Each trainer runs in its own process
(``--trainer``), so each starts the stand-in (or the bridge) the way it would alone; without ``--trainer`` the script
runs both, prints the losses side by side with their largest difference, and draws both curves with matplotlib
(``--figure``).

optimum-habana 1.21.2 needs its own environment beside torch 2.13 (it must not touch the project's venv)::

    /root/.pyenv/versions/3.11.7/bin/python -m venv --system-site-packages .venv-oh
    echo 'import site; site.addsitedir("/path/to/project/.venv/lib/python3.11/site-packages")' \\
        > .venv-oh/lib/python3.11/site-packages/project_venv.pth
    .venv-oh/bin/pip install optimum-habana==1.21.2     # installs accelerate, optimum, diffusers...; not torch
    # optimum-habana checks the bridge's version with `pip list | grep habana-torch-plugin` on import; on the
    # stand-in, give that check the metadata of Intel Gaudi 1.24's plugin (no code):
    mkdir .venv-oh/lib/python3.11/site-packages/habana_torch_plugin-1.24.0.dist-info
    printf 'Metadata-Version: 2.1\\nName: habana-torch-plugin\\nVersion: 1.24.0\\n' > .../METADATA

Then::

    export PATH=$PWD/.venv-oh/bin:$PATH LIGHTNING_HPU_BACKEND=cpu
    .venv-oh/bin/python benchmarks/optimum_habana_comparison.py --mode eager \\
        --figure docs/guide/optimum_habana_losses.png
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

VOCAB, SEQUENCE, BATCH, SEED, LR = 128, 16, 4, 1234, 1e-3


def tiny_lm() -> Any:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=SEQUENCE, attn_implementation="eager",
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
    )  # fmt: skip
    return GPT2LMHeadModel(config)


def token_ids() -> Any:
    """One batch of random token ids, trained on at every step: GaudiTrainer shuffles its data with its own sampler,
    so a single batch is what makes both trainers see the same data at each step."""
    import torch

    generator = torch.Generator().manual_seed(SEED)
    return torch.randint(0, VOCAB, (BATCH, SEQUENCE), generator=generator)


def labels_of(ids: Any) -> Any:
    """The labels of a causal LM batch, the first token of each row ignored (-100): the model never predicts it, and
    Transformers' Trainer divides the summed loss by the number of labels that are not -100, so without this its
    loss would be (SEQUENCE - 1) / SEQUENCE of the model's own mean."""
    labels = ids.clone()
    labels[:, 0] = -100
    return labels


def _without_torchvision() -> None:
    """optimum-habana imports ``torchvision.transforms`` for a vision model's tokenizer at import; torchvision has no
    wheel for torch 2.13+cpu on PyPI, and nothing here uses it, so an empty module stands in for it."""
    import importlib.util
    import types

    if importlib.util.find_spec("torchvision") is None:
        import transformers.utils.import_utils  # noqa: F401  (decides now that torchvision is absent)

        stub = types.ModuleType("torchvision")
        stub.transforms = types.ModuleType("torchvision.transforms")  # type: ignore[attr-defined]
        sys.modules.update({"torchvision": stub, "torchvision.transforms": stub.transforms})  # type: ignore[attr-defined]


def run_gaudi_trainer(steps: int, lazy: bool, out: Path) -> list[float]:
    _without_torchvision()
    import torch
    from optimum.habana import GaudiConfig, GaudiTrainer, GaudiTrainingArguments
    from transformers import TrainerCallback

    losses: list[float] = []

    class Record(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, float] | None = None, **_: Any) -> None:
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    torch.manual_seed(SEED)
    model = tiny_lm()
    ids = token_ids()
    data = [{"input_ids": row, "labels": label} for row, label in zip(ids, labels_of(ids), strict=True)]
    args = GaudiTrainingArguments(
        output_dir=str(out), use_habana=True, use_lazy_mode=lazy, max_steps=steps, per_device_train_batch_size=BATCH,
        learning_rate=LR, adam_epsilon=1e-6, weight_decay=0.0, lr_scheduler_type="constant", max_grad_norm=None,
        logging_steps=1, save_strategy="no", report_to=[], seed=SEED, dataloader_drop_last=True,
        logging_nan_inf_filter=False,
    )  # fmt: skip
    trainer = GaudiTrainer(model=model, args=args, gaudi_config=GaudiConfig(), train_dataset=data, callbacks=[Record()])
    trainer.train()
    return losses


def run_lightning(steps: int, out: Path) -> list[float]:
    import torch
    from lightning.pytorch import LightningModule, Trainer
    from torch.utils.data import DataLoader, TensorDataset

    class LM(LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = tiny_lm()
            self.losses: list[float] = []

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            (ids,) = batch
            loss = self.model(input_ids=ids, labels=labels_of(ids)).loss
            self.losses.append(float(loss.detach()))
            return loss

        def configure_optimizers(self) -> Any:
            return torch.optim.AdamW(self.parameters(), lr=LR, eps=1e-6, weight_decay=0.0)

    torch.manual_seed(SEED)
    module = LM()
    loader = DataLoader(TensorDataset(token_ids()), batch_size=BATCH)
    trainer = Trainer(
        accelerator="hpu", devices=1, max_steps=steps, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, default_root_dir=str(out),
    )  # fmt: skip
    trainer.fit(module, loader)
    return module.losses


def run_both(args: argparse.Namespace) -> None:
    env = {**os.environ, "PT_HPU_LAZY_MODE": "1" if args.mode == "lazy" else "0"}
    results: dict[str, list[float]] = {}
    for name in ("gaudi_trainer", "lightning"):
        command = [sys.executable, __file__, "--trainer", name, "--mode", args.mode, "--steps", str(args.steps)]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{args.mode} mode, {args.steps} steps, seed {SEED}")
    print("step  GaudiTrainer  lightning-hpu  difference")
    for step, (a, b) in enumerate(zip(results["gaudi_trainer"], results["lightning"], strict=True), start=1):
        print(f"{step:4d}  {a:12.6f}  {b:13.6f}  {abs(a - b):10.2e}")
    diffs = [abs(a - b) for a, b in zip(results["gaudi_trainer"], results["lightning"], strict=True)]
    print(f"largest difference: {max(diffs):.2e}")
    if args.figure:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, axes = plt.subplots(figsize=(6, 3.5))
        steps = range(1, args.steps + 1)
        axes.plot(steps, results["gaudi_trainer"], "o-", label="optimum-habana 1.21.2 GaudiTrainer")
        axes.plot(steps, results["lightning"], "x--", label="lightning-hpu (Lightning Trainer)")
        axes.set(xlabel="step", ylabel="training loss", title=f"Tiny GPT-2, {args.mode} mode, CPU stand-in")
        axes.legend()
        figure.tight_layout()
        figure.savefig(args.figure, dpi=120)
        print(f"figure: {args.figure}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["eager", "lazy"], default="eager")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--trainer", choices=["gaudi_trainer", "lightning"], help="run one trainer (internal)")
    parser.add_argument("--figure", type=Path, help="where to draw the two loss curves")
    args = parser.parse_args()
    if args.trainer is None:
        run_both(args)
        return
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        if args.trainer == "gaudi_trainer":
            losses = run_gaudi_trainer(args.steps, args.mode == "lazy", Path(out))
        else:
            import lightning_hpu  # noqa: F401  (registers accelerator="hpu")

            losses = run_lightning(args.steps, Path(out))
    print(json.dumps(losses))


if __name__ == "__main__":
    main()
