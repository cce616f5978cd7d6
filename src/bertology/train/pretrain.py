"""The pretraining job, every family and objective: options → checks → run directory → tokenizer → data
→ model → objective → Trainer → a Hugging Face directory.

    pretrain(PretrainOptions(family="bert", corpus=["wiki.txt"], out_dir="runs/bert"))

Each family's defaults follow its paper (its record's `pretraining`, models/family.py): BERT MLM + NSP,
static masks over pairs; RoBERTa MLM only, dynamic masks over FULL-SENTENCES packing, byte-level BPE;
ALBERT MLM + SOP with n-gram masking; XLNet the permutation LM over streams of text with memory; ELECTRA
replaced-token detection (a generator and the discriminator, models/electra.py ElectraPair; the
discriminator is saved as the model, the generator in generator/). The sentence objectives (--objective
simcse / tsdae) train and save the family's encoder alone. Every step below is one module:

    options      train/pretrain_options.py   one Recipe from them (data/recipe.py), validated once
    --init       train/start.py              the checkpoint read and checked against the options
    run          train/run.py                the output directory claimed, a resume checked, the final write
    tokenizer    train/build.py              trained, given, --init's, or extended (tokenizers/extend.py)
    data         train/pretrain_data.py      the instance store or XLNet's streams, behind one interface
    model        train/build.py              fresh, --init, grown, word vectors, unigram prior
    objective    train/registry.py           by name: one file per objective
    Trainer      train/trainer.py            steps, checkpoints, exact resume, evaluation, time budget

The output directory ends up holding config.json + model.safetensors + tokenizer.json (loadable by
bertology.load and transformers' AutoModelForPreTraining / AutoModelForMaskedLM), metrics.jsonl,
summary.json, checkpoints/ and the data cache.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from ..data import check_corpus_documents, heldout_value
from ..data.recipe import PLM, RTD, SENTENCE_OBJECTIVES, Recipe
from ..data.staging import TASK_CORPUS, corpus_name, stage_table_corpus
from ..io import atomic_copy
from ..models import get_family
from ..models.electra import check_pair_checkpoint
from ..models.init_embeddings import read_init_vectors
from ..models.params import count
from ..tokenizers import Tokenizer
from ..tokenizers.extend import Extension, extend_vocabulary
from . import distributed as dist
from .arguments import TrainingArguments
from .budget import CommandBudget
from .build import model_for, tokenizer_for
from .device import check_precision, say
from .diagnostics import unigram_accuracy, unigram_loss
from .plm import check_batch as check_permutation_batch
from .pretrain_data import PretrainData
from .pretrain_options import (
    PretrainOptions,
    check_model_options,
    check_objective_options,
    default_eval_every,
)
from .registry import is_sentence_objective, objective_for
from .run import Run, checkpoints, claim_run, run_summary, seeded
from .start import Start, check_init, check_same_start, write_init_record
from .trainer import Trainer

__all__ = ["PretrainOptions", "default_eval_every", "pretrain"]


def pretrain(
    o: PretrainOptions, resume: bool = False, overwrite: bool = False, started: float | None = None
) -> dict[str, Any]:
    """Run (or continue) a pretraining job; returns its summary (also written to out/summary.json).

    Everything is checked before the first write (`check_pretrain`); a directory of the user's is
    refused, an earlier run of ours is continued with `resume` or started afresh with `overwrite`.
    `o.time_budget` bounds the whole job, counted from `started` (a time.perf_counter() reading: the CLI
    passes when the command began) or from this call (train/budget.py).
    """
    started = time.perf_counter() if started is None else started
    budget = CommandBudget.of(o.time_budget, started)
    with tempfile.TemporaryDirectory() as staging:  # a table's texts, until the output directory is ours
        c = check_pretrain(o, resume, Path(staging))
        run = claim_run(o.out_dir, "pretrain", o, resume, overwrite, o.run_arguments(o.steps))
        if run.done is not None:
            return run.done  # complete under these options: its model, checkpoints and summary stay as they are
        if run.resume and c.recipe.objective == RTD:  # a checkpoint without its generator cannot continue
            check_pair_checkpoint(checkpoints(run.out)[-1])
        o = _keep_with_run(c, run)
    with seeded(o.seed):  # the model's initial weights and dropout: torch's global state is left as it was
        tok = tokenizer_for(o, run, c.given)
        data = PretrainData.build(o, tok, c.recipe, run.out)
        objective = objective_for(c.recipe.objective, o)
        model, init = model_for(o, c.recipe, tok, data, objective, run, c.start, c.extension, c.vectors)
        trainer = Trainer(
            model,
            TrainingArguments.from_options(o, run.out, run.overwrite, device=str(c.device)),
            data.batches(objective),
            objective,
            _evaluation(objective, data, o.eval_batches, model),
            save_extra=lambda d: tok.save(d / "tokenizer.json"),
            budget=budget,
        )
        result = trainer.train(resume=run.resume)
    saved = objective.encoder(model) if is_sentence_objective(objective) else model
    summary = {
        "family": o.family,
        "preset": o.preset,
        "architecture": saved.architecture,
        "objective": c.recipe.objective,
        "parameters": saved.num_parameters(),
        "resumed_from": trainer.resumed_from,
        "tokens": result["step"] * o.batch_size * o.max_length,
        **data.summary(),
        "init_embeddings": init.summary() if init is not None else None,
        "init": None if o.init is None else {"path": o.init, "extension": c.extension and c.extension.summary()},
        "flops_per_token": count(saved.config, seq_length=o.max_length).flops_per_token["total"],
        **run_summary(trainer, result),
        "options": {k: v for k, v in asdict(o).items() if k != "config_overrides"},
    }
    return run.finish(saved.save, summary, result["interrupted"], started, budget and budget.seconds)


@dataclass
class Checked:
    """What `check_pretrain` read and decided, before anything was written."""

    options: PretrainOptions  # with a table corpus staged as text, --eval-every's default filled in
    recipe: Recipe
    device: torch.device
    start: Start | None  # --init's checkpoint
    given: Tokenizer | None  # --tokenizer, --init's, or --init's extended
    vectors: Any  # --init-embeddings
    extension: Extension | None  # --extend-vocab's pieces
    staged: Path | None  # a table corpus's texts, to keep with the run


def check_pretrain(o: PretrainOptions, resume: bool, staging: Path) -> Checked:
    """Every check before the first write: the options, the device, an --init checkpoint against the
    options, the corpus files, a given tokenizer, word vectors, the resume's start, --extend-vocab's pieces."""
    device = dist.rank_device(o.device, say)  # a GPU asked for and absent fails here
    check_precision(device, o.precision)
    recipe = Recipe.from_options(o)
    start = check_init(o, recipe.head) if o.init is not None else None
    if start is None:
        check_model_options(o, recipe)
    else:
        recipe.check_model()
        check_objective_options(o, recipe, start.config if start.generator is None else None)
    if recipe.objective in SENTENCE_OBJECTIVES:  # e.g. SimCSE without dropout
        config = start.config if start is not None else get_family(o.family).preset(o.preset, **o.config_overrides)
        objective_for(recipe.objective, o).check(o, config)
    if recipe.objective == PLM:
        check_permutation_batch(o, recipe)
    staged_o = stage_table_corpus(o, staging)  # a labelled file's texts (task-adaptive), Parquet, datasets
    check_corpus_documents(
        staged_o.corpus,
        staged_o.format,
        heldout_value(o.heldout),
        nsp=recipe.pair_task == "nsp",
        show_progress=not o.quiet and dist.is_main(),
    )
    given = start.tokenizer if start is not None else Tokenizer.load(o.tokenizer) if o.tokenizer is not None else None
    vectors = None
    if o.init_embeddings is not None:
        vectors = read_init_vectors(o.init_embeddings, get_family(o.family).preset(o.preset, **o.config_overrides))
    dist.init_from_env(device)
    out = Path(o.out_dir)
    continuing = resume and out.is_dir() and bool(checkpoints(out))
    if continuing:
        check_same_start(o, out)  # the same --init (or none) as the run it continues
    extension = None
    if start is not None and o.extend_vocab and not continuing:
        extension = extend_vocabulary(
            start.tokenizer,
            staged_o.corpus,
            o.extend_vocab,
            get_family(o.family).tokenizer,
            start.config.vocab_size,
            o.vocab_size,
            show_progress=not o.quiet and dist.is_main(),
            where=corpus_name(staged_o.corpus),
            **dict(get_family(o.family).tokenizer_options),
        )
        given = extension.tokenizer
    staged = staging / TASK_CORPUS if staged_o is not o else None
    if staged_o.eval_every is None:  # the held-out slice is scored by default (the Trainer also scores the last step)
        staged_o = replace(staged_o, eval_every=default_eval_every(o.steps, o.time_budget))
    return Checked(staged_o, recipe, device, start, given, vectors, extension, staged)


def _keep_with_run(c: Checked, run: Run) -> PretrainOptions:
    """The options the run trains with: a staged table corpus copied into the run (a resume reads it there),
    and the record of its start (--init, --extend-vocab) written for a later --resume to compare."""
    o = c.options
    if c.staged is not None:
        if dist.is_main():
            atomic_copy(c.staged, run.out / TASK_CORPUS)
        dist.barrier()
        o = replace(o, corpus=[str(run.out / TASK_CORPUS)])
    if not run.resume and dist.is_main():
        write_init_record(o, run.out, c.extension)
    return o


def _evaluation(objective, data: PretrainData, n: int, model):
    """The job's held-out evaluation: the objective's metrics on n held-out batches, and for a token objective
    the unigram distribution's accuracy and loss on the same targets (what the model must beat); None when no
    text is held out."""
    held = data.heldout_batches(objective, n)
    if not held:
        return None
    baseline = {}
    if not is_sentence_objective(objective):
        counts = data.token_counts(model.config.vocab_size)
        labels = torch.cat([b["labels"].flatten() for b in held])
        baseline = {"unigram_accuracy": unigram_accuracy(counts, labels), "unigram_loss": unigram_loss(counts, labels)}
    return lambda m: {**objective.evaluate(m, held), **baseline}
