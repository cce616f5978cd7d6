"""Sentence-level distillation (Reimers & Gurevych, 2020): a small student with a tokenizer of its own
learns to put each text where a sentence-embedding teacher (all-MiniLM-L6-v2, say) puts it.

    bertology distill --target sentence --teacher minilm/ --student bert --preset tiny \\
        --tokenizer tok8k/ --corpus descriptions.txt.xz --out runs/tiny --steps 2000

The tokenizers differ, so nothing is matched token by token: both models read the same text, each
with its own tokenizer; the student's mean-pooled last hidden state goes through a linear
projection to the teacher's width, and the loss (objectives.SentenceDistillationObjective) pulls it
to the teacher's normalised mean-pooled embedding. The shared Trainer trains the student and the
projection together (SentenceStudent); the output directory holds the student alone in Hugging
Face layout (config.json, model.safetensors, tokenizer.json: what `bertology finetune` and
`bertology.load` read) and the projection beside it (projection.safetensors), for whoever wants
vectors in the teacher's space.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file
from torch import nn

from ..data import Masker, Recipe, iter_documents, special_tokens
from ..data.tokenized import heldout_count, split_documents
from ..io import atomic_path
from ..models import PreTrainedModel, from_config, get_family, task_class
from ..models.checkpoint import save as save_checkpoint_layout
from ..models.heads import mean_pool
from ..nn import set_dropout
from ..tokenizers import Tokenizer
from . import distributed as dist
from .arguments import NO_STEP_CAP, TrainingArguments
from .budget import CommandBudget
from .distillation import SentenceDistillationObjective, evaluate_sentence_student
from .run import Run, run_summary
from .student import parts
from .trainer import Trainer

TEXT_UNITS = ("document", "sentence")


class SentenceStudent(PreTrainedModel):
    """What the Trainer trains: the student's encoder (and its MLM head when it learns MLM too) and a
    linear projection from its width to the teacher's. Parameters are named as the student's own
    (backbone.*, mlm.*) plus projection.*, so a checkpoint is the student's plus one tensor pair."""

    def __init__(self, student: PreTrainedModel, teacher_width: int):
        super().__init__(student.config)
        self.backbone, self.mlm = parts(student)
        self.projection = nn.Linear(student.config.hidden_size, teacher_width)
        # the model that is written at the end; not a submodule: its parameters are the ones above
        self.__dict__["student"] = student

    @property
    def architecture(self) -> str:
        return self.student.architecture

    def embed(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, H_t): the projected mean over real tokens of the last hidden state of the clean input."""
        keys = ("input_ids", "attention_mask") + (("token_type_ids",) if self.config.type_vocab_size > 1 else ())
        h = self.backbone(**{k: batch[k] for k in keys if k in batch}).last_hidden_state  # (B, T, H)
        return self.projection(mean_pool(h, batch["attention_mask"]))

    def save(self, path) -> None:
        """A checkpoint: the student's tensors and the projection's, in one model.safetensors."""
        save_checkpoint_layout(self, path)

    def save_student(self, path: Path) -> None:
        """The output: the student alone (Hugging Face layout) and projection.safetensors beside it."""
        self.student.save(path)
        with atomic_path(path / "projection.safetensors") as tmp:
            save_file(
                {k: v.detach().contiguous() for k, v in self.projection.state_dict().items()},
                str(tmp),
                metadata={"format": "pt", "what": "student mean-pooled vector → teacher embedding space"},
            )


def read_texts(files: list[str], format: str, unit: str) -> list[list[str]]:
    """The corpus's texts grouped by document: a document's sentences joined by spaces (one text per
    document), or each sentence on its own."""
    return [[" ".join(doc)] if unit == "document" else list(doc) for doc in iter_documents(files, format)]


def split_texts(documents: list[list[str]], heldout: float | int, seed: int, where: str) -> tuple[list[str], list[str]]:
    """(training texts, held-out texts): whole documents held out, chosen by the seed."""
    n = len(documents)
    held = heldout_count(n, heldout)
    if n == 0:
        raise ValueError(f"corpus file(s) {where} hold no text")
    if held >= n:
        raise ValueError(
            f"--heldout {heldout:g} sets aside {held} of the {n} documents of {where}, leaving none to train on"
        )
    train_docs, held_docs = split_documents(n, heldout, seed, where)  # the one held-out rule
    return [t for i in train_docs for t in documents[i]], [t for i in held_docs for t in documents[i]]


def _encode(tokenizer: Tokenizer, texts: list[str], seq_len: int, prefix: str = "") -> dict[str, torch.Tensor]:
    """Padded to the batch's longest text, cut at seq_len tokens (special tokens included)."""
    enc = tokenizer.encode_batch(texts, padding=True, truncation=True, max_length=seq_len, return_tensors="pt")
    return {prefix + k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}


class SentenceBatches:
    """batches(step): the step's texts encoded for the student and the teacher; a pure function of the
    step (an epoch's order is a permutation seeded by (seed, epoch)), as resume and data parallelism need."""

    def __init__(
        self,
        texts: list[str],
        student_tok: Tokenizer,
        teacher_tok: Tokenizer,
        batch_size: int,
        seq_len: int,
        seed: int,
        masker: Masker | None = None,
    ):
        self.texts, self.student_tok, self.teacher_tok = texts, student_tok, teacher_tok
        self.batch_size, self.seq_len, self.seed, self.masker = batch_size, seq_len, seed, masker
        self.per_epoch = len(texts) // batch_size
        self._order: tuple[int, list[int]] | None = None

    def indices(self, step: int) -> list[int]:
        epoch, k = divmod(step, self.per_epoch)
        if self._order is None or self._order[0] != epoch:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._order = (epoch, torch.randperm(len(self.texts), generator=g).tolist())
        return self._order[1][k * self.batch_size : (k + 1) * self.batch_size]

    def encode(self, texts: list[str], step: int = 0) -> dict[str, torch.Tensor]:
        batch = {
            **_encode(self.student_tok, texts, self.seq_len),
            **_encode(self.teacher_tok, texts, self.seq_len, "teacher_"),
        }
        if self.masker is not None:  # the student's own MLM reads a masked copy; the embeddings the plain text
            rows = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
            masked = self.masker(rows, seed=self.seed, step=step, instances=np.arange(len(texts)))
            batch["masked_input_ids"], batch["labels"] = masked["input_ids"], masked["labels"]
        return batch

    def __call__(self, step: int) -> dict[str, torch.Tensor]:
        return self.encode([self.texts[i] for i in self.indices(step)], step)


def build_student(family: str, preset: str, tokenizer: Tokenizer, seq_len: int, with_mlm: bool) -> PreTrainedModel:
    """A randomly initialised `family` `preset` model sized to the tokenizer's vocabulary and to seq_len positions."""
    record = get_family(family)
    pad = tokenizer.token_to_id(record.specials.pad)
    if pad is None:
        raise ValueError(f"the student's tokenizer has no {record.specials.pad} token, which {family} pads with")
    config = record.preset(preset, vocab_size=tokenizer.vocab_size, pad_token_id=pad)
    if seq_len > config.max_length:
        raise ValueError(
            f"--max-length {seq_len} is longer than the {config.max_length} positions of the {family}-{preset} preset"
        )
    config.max_position_embeddings = max(seq_len + config.position_offset, 64)
    return task_class(family, "ForMaskedLM")(config) if with_mlm else from_config(config, record.backbone)


def student_masker(o, tokenizer: Tokenizer) -> Masker:
    """The student's MLM masks: ⌈mlm_probability · #tokens⌉ positions of each batch, uniformly (smoothed
    masking with equal weights)."""
    recipe = Recipe.resolve(
        o.student,
        objective="mlm",
        packing="full-sentences",
        masking="smoothed",
        max_seq_length=o.max_length,
        mlm_probability=o.mlm_probability,
    )
    sp = special_tokens(tokenizer, o.student)
    random_ids = torch.tensor(sorted(set(range(tokenizer.vocab_size)) - set(sp.all_ids)))
    return Masker(recipe, sp.mask, torch.tensor(sp.all_ids), random_ids, weights=torch.ones(tokenizer.vocab_size))


def run_sentence_distillation(
    o,
    teacher,
    teacher_tok: Tokenizer,
    student_tok: Tokenizer,
    objective: SentenceDistillationObjective,
    texts: tuple[list[str], list[str]],
    run: Run,
    notes: list[str],
    device: torch.device | str = "cpu",
    started: float | None = None,
) -> dict[str, Any]:
    """The job after every check (distill.distill): build the student, train it with the projection, write it.
    `started`: when the command began (time.perf_counter), which --time-budget counts from (None: now)."""
    started = time.perf_counter() if started is None else started
    budget = CommandBudget.of(o.time_budget, started)
    train_texts, heldout_texts = texts
    with_mlm = bool(objective.alphas.mlm)
    student = build_student(o.student, o.preset, student_tok, o.max_length, with_mlm)
    if o.dropout is not None:
        set_dropout(student, o.dropout)
    model = SentenceStudent(student, teacher.config.hidden_size)
    if not run.resume and dist.is_main():
        student_tok.save(run.out / "tokenizer.json")
    batches = SentenceBatches(
        train_texts,
        student_tok,
        teacher_tok,
        o.batch_size,
        o.max_length,
        o.seed,
        student_masker(o, student_tok) if with_mlm else None,
    )
    evaluate, final_eval = None, {}
    if heldout_texts:
        size = min(o.batch_size, len(heldout_texts))
        n = max(1, min(o.eval_batches, math.ceil(len(heldout_texts) / size)))
        eval_batches = [batches.encode(heldout_texts[i * size : (i + 1) * size]) for i in range(n)]
        eval_batches = [b for b in eval_batches if len(b["input_ids"])]
        eval_targets = [objective.teacher_embedding(b) for b in eval_batches]  # once: the teacher does not change

        def evaluate(m):
            return evaluate_sentence_student(m, eval_batches, eval_targets)

    # the held-out set is scored at the last step at least (the Trainer's, so that a time budget reserves its cost)
    eval_every = o.eval_every or (NO_STEP_CAP if evaluate is not None else None)
    trainer = Trainer(
        model,
        TrainingArguments.from_options(o, run.out, run.overwrite, device=str(device), eval_every=eval_every),
        batches,
        objective,
        evaluate,
        save_extra=lambda d: student_tok.save(d / "tokenizer.json"),
        budget=budget,
    )
    result = trainer.train(resume=run.resume)
    if evaluate is not None:
        last = trainer.history[-1] if trainer.history else {}
        if last.get("step") == result["step"] and "eval/cosine" in last:
            final_eval = {k: v for k, v in last.items() if k.startswith("eval/")}
        else:  # no step was trained in this command: the checkpoint's model, scored now
            final_eval = {f"eval/{k}": v for k, v in trainer.run_evaluation().items()}
    summary = {
        "target": "sentence",
        "teacher": o.teacher,
        "teacher_architecture": teacher.architecture,
        "architecture": student.architecture,
        "preset": o.preset,
        "parameters": student.num_parameters(),
        "projection_parameters": sum(p.numel() for p in model.projection.parameters()),
        "teacher_parameters": teacher.num_parameters(),
        "vocab_size": student_tok.vocab_size,
        "alphas": asdict(objective.alphas),
        "teacher_bf16": objective.teacher_bf16,
        "train_texts": len(train_texts),
        "heldout_texts": len(heldout_texts),
        "heldout_cosine": final_eval.get("eval/cosine"),
        "notes": notes,
        **run_summary(trainer, result),
        "eval": final_eval,
        "options": asdict(o),
    }
    return run.finish(model.save_student, summary, result["interrupted"], started, budget and budget.seconds)
