"""XLNet's permutation-LM pretraining: the objective (with memory carried from step to step) and the job.

The Trainer asks for a global batch per step (`data.permutation.PermutationData`: row r of step k
continues row r of step k-1) and calls the objective on micro-batches. The objective keeps the
memory each step leaves, per global batch row: a micro-batch (or a rank) reads its own rows'
memory from the step before and writes theirs for the next. The memory goes into every
checkpoint (`mems.safetensors`), so a resumed run continues exactly.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from ..data.instances import special_tokens
from ..data.permutation import PermutationData, build_stream
from ..data.recipe import Recipe
from ..data.tokenized import split_documents, tokenize_corpus
from ..io import atomic_path, atomic_write_json
from ..models import get_family, task_class
from ..models.heads import IGNORE, init_bias_from_counts
from ..models.init_embeddings import init_token_embeddings
from ..models.params import count
from ..nn import set_dropout
from . import distributed as dist
from .device import model_device, to_device
from .diagnostics import unigram_accuracy, unigram_loss
from .trainer import Trainer, TrainingArguments, checkpoints, run_summary

MEMS_FILE = "mems.safetensors"
MODEL_INPUTS = ("input_ids", "token_type_ids", "perm_mask", "target_mapping", "labels")


class PermutationLMObjective:
    """Cross-entropy of the targets through the query stream, memory carried across steps."""

    def __init__(self):
        self.previous: list[torch.Tensor] | None = None  # per layer (M, B_global, H): the last step's memory
        self.latest: list[torch.Tensor] | None = None  # being written by this step's micro-batches
        self.fresh = True  # this step starts every stream again (a new epoch): no memory

    def totals(self, batch: dict[str, torch.Tensor]) -> dict[str, int]:
        # called once per step on the global batch (on the CPU), before its micro-batches: the memory
        # written last step is now the past
        if self.latest is not None:
            self.previous, self.latest = self.latest, None
        self.fresh = self.previous is None or bool(batch["first"][0])
        return {"targets": max(1, int((batch["labels"] != IGNORE).sum())), "sequences": batch["labels"].shape[0]}

    def __call__(self, model, batch: dict[str, torch.Tensor], totals: dict[str, int]):
        rows = batch["row"]
        mems = None if self.fresh else [m[:, rows] for m in self.previous]
        out = model(**{k: batch[k] for k in MODEL_INPUTS}, mems=mems, use_mems=True)
        if self.latest is None:
            self.latest = [m.new_zeros(m.shape[0], totals["sequences"], m.shape[2]) for m in out.mems]
        for store, m in zip(self.latest, out.mems):
            store[:, rows] = m
        labels = batch["labels"]
        targets = (labels != IGNORE).sum()  # a tensor: read at log steps, not now
        loss = out.loss * (targets / totals["targets"])
        correct = (out.logits.argmax(-1) == labels).sum()
        return loss, {"plm_loss": loss.detach(), "loss": loss.detach(), "plm_accuracy": correct / totals["targets"]}

    # ---- checkpoints ----------------------------------------------------------------------------
    def gather_for_checkpoint(self) -> None:
        """Every rank (the Trainer calls this on all of them) ends up with all rows' memory: each
        wrote only its own rows and zeros elsewhere, so a sum over ranks is the whole."""
        if self.latest is not None:
            for m in self.latest:
                dist.all_reduce_tensor(m)

    def save(self, directory: Path) -> None:
        if self.latest is not None:
            with atomic_path(directory / MEMS_FILE) as tmp:
                save_file({f"layer.{i}": m.contiguous().cpu() for i, m in enumerate(self.latest)}, str(tmp))

    def load(self, directory: Path, device: torch.device | str = "cpu") -> None:
        """The memory a checkpoint's last step left (none: the run stopped before its first step), on `device`."""
        file = directory / MEMS_FILE
        if file.is_file():
            tensors = load_file(str(file), device=str(device))
            self.latest = [tensors[f"layer.{i}"] for i in range(len(tensors))]


@torch.no_grad()
def evaluate_plm(model, batches: list[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Held-out loss, accuracy and perplexity of the targets over consecutive batches, memory carried."""
    objective = PermutationLMObjective()
    loss = correct = 0.0
    targets = 0
    device = model_device(model)
    for batch in batches:
        totals = objective.totals(batch)
        batch_loss, metrics = objective(model, to_device(batch, device), totals)
        loss += float(batch_loss) * totals["targets"]
        correct += float(metrics["plm_accuracy"]) * totals["targets"]
        targets += totals["targets"]
    return {
        "plm_loss": loss / targets,
        "plm_accuracy": correct / targets,
        "perplexity": math.exp(min(loss / targets, 50)),
    }


def check_batch(o, recipe: Recipe) -> None:
    """--bi-data runs half the batch rows backwards: the batch splits in two."""
    if recipe.permutation.bi_data and o.batch_size % 2:
        raise ValueError(f"--bi-data: --batch-size {o.batch_size} must be even (forward and backward rows)")


def pretrain_permutation_lm(
    o,
    recipe: Recipe,
    out: Path,
    tok,
    resume: bool,
    overwrite: bool,
    heldout: float | int,
    device: torch.device,
    build=None,
    vectors=None,
) -> dict[str, Any]:
    """The XLNet job: corpus → streams → permutation batches → XLNetLMHeadModel → Trainer → out/,
    on `device` (resolved by the pretraining job before anything was written). `build(head, tok,
    **config fields)` → (model, whether its LM bias is new): a run continued from a checkpoint (--init).
    `vectors` (--init-embeddings, read and checked by the caller) start the token embedding of a fresh run."""
    settings = recipe.permutation
    record = get_family(recipe.family)
    specials = special_tokens(tok, recipe.family)  # XLNet's examples are built with <sep>, <cls> and </s>
    corpus = tokenize_corpus(o.corpus, tok, out / "cache" / "tokens", o.format, show_progress=not o.quiet)
    train_docs, held = split_documents(corpus.num_documents, heldout, o.seed, ", ".join(map(str, o.corpus)))
    data = PermutationData(
        build_stream(corpus.documents(train_docs), specials.eod), settings, specials, o.batch_size, o.seed
    )

    overrides = dict(
        mem_len=o.mem_len if o.mem_len is not None else settings.seq_len * 3 // 4,
        reuse_len=settings.reuse_len,
        bi_data=settings.bi_data,
    )
    if build is None:
        config = record.preset(
            o.preset, vocab_size=tok.vocab_size, pad_token_id=specials.pad, **{**overrides, **o.config_overrides}
        )
        config.max_position_embeddings = max(settings.seq_len, 64)
        model = task_class(recipe.family, recipe.head)(config)
        model, new_bias = (model if o.dropout is None else set_dropout(model, o.dropout)), True
    else:
        model, new_bias = build(recipe.head, tok, **overrides)
        config = model.config
    init = (
        init_token_embeddings(model, tok, vectors, o.init_embeddings, log=not o.quiet and dist.is_main())
        if vectors is not None and not resume
        else None
    )  # on resume the checkpoint holds the embedding
    counts = corpus.token_counts(config.vocab_size, train_docs)
    if o.unigram_prior and not resume and new_bias:
        init_bias_from_counts(model.lm_loss.bias, counts)

    evaluate = None
    if held:
        held_stream = build_stream(corpus.documents(held), specials.eod)
        try:
            held_data = PermutationData(held_stream, settings, specials, o.batch_size, o.seed + 1)
        except ValueError:
            held_data = None  # too little held-out text for one batch: no evaluation
        if held_data is not None:
            eval_batches = [held_data.batch(i) for i in range(min(o.eval_batches, held_data.steps_per_epoch))]
            labels = torch.cat([b["labels"].flatten() for b in eval_batches])
            unigram = {
                "unigram_accuracy": unigram_accuracy(counts, labels),
                "unigram_loss": unigram_loss(counts, labels),
            }
            evaluate = lambda m: {**evaluate_plm(m, eval_batches), **unigram}  # noqa: E731

    objective = PermutationLMObjective()
    args = TrainingArguments.from_options(o, out, overwrite, device=str(device))

    def save_extra(d: Path) -> None:
        tok.save(d / "tokenizer.json")
        objective.save(d)

    trainer = Trainer(model, args, data.batch, objective, evaluate, save_extra=save_extra)
    if resume and checkpoints(out):
        objective.load(checkpoints(out)[-1], trainer.device)
    result = trainer.train(resume=resume)
    summary = {
        "family": recipe.family,
        "preset": o.preset,
        "architecture": model.architecture,
        "objective": recipe.objective,
        "parameters": model.num_parameters(),
        "resumed_from": trainer.resumed_from,
        "tokens": result["step"] * o.batch_size * o.seq_len,
        "steps_per_epoch": data.steps_per_epoch,
        "recipe": {**settings.__dict__, "mem_len": config.mem_len},
        "flops_per_token": count(model.config, seq_length=settings.seq_len).flops_per_token["total"],
        "init_embeddings": init.summary() if init is not None else None,
        **run_summary(trainer, result),
    }
    if not result["interrupted"]:
        model.save(out)
        atomic_write_json(out / "summary.json", summary)
    return summary
