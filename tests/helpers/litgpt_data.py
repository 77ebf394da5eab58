"""What the LitGPT tests run on without downloading anything: a word-level tokenizer and random token data.

``RandomTokens`` is a LitGPT ``DataModule``, so ``litgpt pretrain --data tests.helpers.litgpt_data.RandomTokens`` takes
it
through LitGPT's own command line; its batches are what LitGPT's pretraining data gives (token rows of the block
size plus one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from litgpt.data import DataModule
from torch.utils.data import DataLoader, TensorDataset

#: The tokenizer's words: special tokens first, then the words the prompts and the finetuning data use.
WORDS = ["<unk>", "<s>", "</s>", "hello", "world", "the", "gaudi", "trains", "a", "model", "fast", "slow", "is"]


def write_tokenizer(directory: Path) -> Path:
    """A word-level Hugging Face tokenizer (``tokenizer.json`` + ``tokenizer_config.json``) in ``directory``."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.WordLevel({word: index for index, word in enumerate(WORDS)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(directory / "tokenizer.json"))
    config = {"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": False, "tokenizer_class": "Tiny"}
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    return directory


def write_finetuning_data(path: Path, samples: int = 8) -> Path:
    """A LitGPT ``JSON`` data file of instruction/output pairs in the tokenizer's words."""
    rows = [{"instruction": "hello gaudi", "input": "", "output": "the model trains fast"}] * samples
    path.write_text(json.dumps(rows))
    return path


def _stack_rows(batch: list[tuple[torch.Tensor]]) -> torch.Tensor:
    """The batch as one tensor of rows, as LitGPT's pretraining loaders give it ."""
    return torch.stack([row for (row,) in batch])


class _RowLoader(DataLoader):
    """A loader with a (empty) state, as LitGPT's streaming loaders have: ``fabric.save`` stores its state, not it."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class RandomTokens(DataModule):
    """Random token rows of ``max_seq_length + 1`` for ``litgpt pretrain`` (train and validation)."""

    def __init__(self, vocab_size: int = len(WORDS), samples: int = 32, seed: int = 0) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.samples = samples
        self.seed = seed
        self.batch_size = 1
        self.max_seq_length = 8

    def connect(self, tokenizer: Any = None, batch_size: int = 1, max_seq_length: int | None = None, **_: Any) -> None:
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length or self.max_seq_length

    def _loader(self, seed: int) -> DataLoader:
        generator = torch.Generator().manual_seed(seed)
        rows = torch.randint(0, self.vocab_size, (self.samples, self.max_seq_length + 1), generator=generator)
        return _RowLoader(TensorDataset(rows), batch_size=self.batch_size, collate_fn=_stack_rows)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.seed)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.seed + 1)
