"""Synthetic pretraining batches for Trainer tests: a pure function of the step, like the real data."""

import torch

from bertology.models import BertConfig, BertForPreTraining

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=32,
)


def tiny_model(seed=0, **overrides):
    torch.manual_seed(seed)
    return BertForPreTraining(BertConfig(**{**TINY, **overrides}))


def synthetic_batches(batch_size=8, length=12, seed=0, fixed=False):
    def batch(step):
        g = torch.Generator().manual_seed(seed if fixed else seed * 100_003 + step)
        ids = torch.randint(5, 99, (batch_size, length), generator=g)
        mask = torch.ones_like(ids)
        lengths = torch.randint(length // 2, length + 1, (batch_size,), generator=g)
        mask[torch.arange(length)[None, :] >= lengths[:, None]] = 0
        labels = torch.full_like(ids, -100)
        chosen = (torch.rand(ids.shape, generator=g) < 0.3) & (mask == 1)
        chosen[:, 1] = True
        labels[chosen] = ids[chosen]
        inputs = ids.masked_fill(chosen, 4).masked_fill(mask == 0, 0)
        return {
            "input_ids": inputs,
            "attention_mask": mask,
            "token_type_ids": torch.zeros_like(ids),
            "labels": labels,
            "next_sentence_label": torch.randint(0, 2, (batch_size,), generator=g),
        }

    return batch


def wiki_head(path, chars: int):
    """The first `chars` characters of data/wiki.txt, cut at a document boundary, written to `path`."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "data" / "wiki.txt").read_text(encoding="utf-8")
    path.write_text(text[: text.index("\n\n", chars) + 1], encoding="utf-8")
    return path


def single_and_two_ranks(args: list[str], tmp_path, timeout: int = 300) -> None:
    """`bertology ARGS` in one process (--out tmp_path/single), then under torchrun with two ranks
    (--out tmp_path/ddp) with the single run's tokenizer (and without ARGS' --vocab-size, which it makes
    unread); each must succeed."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    single = subprocess.run(
        [sys.executable, "-m", "bertology", *args, "--out", str(tmp_path / "single")],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert single.returncode == 0, single.stderr[-3000:]
    if "--vocab-size" in args:  # the single run's tokenizer is given: --vocab-size would be refused, unread
        at = args.index("--vocab-size")
        args = args[:at] + args[at + 2 :]
    ddp = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "-m",
            "bertology",
            *args,
            "--out",
            str(tmp_path / "ddp"),
            "--tokenizer",
            str(tmp_path / "single" / "tokenizer.json"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert ddp.returncode == 0, ddp.stderr[-3000:]
