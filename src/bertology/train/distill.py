"""The distillation job (Sanh et al., 2019): a shallower student initialised from its teacher's
layers (student.py), trained by the shared Trainer on the teacher's soft predictions and hidden
states (distillation.DistillationObjective), written in Hugging Face layout.

    bertology distill --teacher runs/bert --corpus corpus.txt --out runs/distilbert --steps 2000

The output loads in transformers (DistilBertForMaskedLM, or BertForMaskedLM / RobertaForMaskedLM
for a student of the teacher's own family) and fine-tunes with `bertology finetune`.

With `--target sentence` the teacher is a sentence-embedding model and the student a small preset
with a tokenizer of its own, matched embedding to embedding (sentence_distill.py):

    bertology distill --target sentence --teacher minilm/ --preset tiny --tokenizer tok/ \
        --corpus corpus.txt --out runs/tiny --steps 2000
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from ..data import Masker, check_corpus_documents, heldout_value
from ..data.masking import token_weights
from ..data.staging import corpus_name, stage_table_corpus
from ..hardware import bf16_pays, check_bf16_requested, cuda_precision, precision_reason
from ..io import atomic_copy
from ..models import check_tokenizer, get_family, load
from ..nn import set_dropout
from ..tokenizers import Tokenizer
from . import distributed as dist
from .arguments import TrainingArguments
from .budget import CommandBudget
from .device import check_precision, say
from .distill_options import DistillOptions
from .distillation import Alphas, DistillationObjective, SentenceDistillationObjective, evaluate_student
from .pretrain_data import PretrainData
from .pretrain_options import default_eval_every
from .run import Run, claim_run, run_summary, seeded
from .sentence_distill import build_student, read_texts, run_sentence_distillation, split_texts
from .student import init_student, parts
from .trainer import Trainer


def _teacher(o: DistillOptions):
    """(teacher model, its tokenizer), checked to share one vocabulary."""
    path = Path(o.teacher)
    if not path.is_dir():
        raise FileNotFoundError(
            f"--teacher {o.teacher}: not a model directory" + ("" if path.exists() else " (it does not exist)")
        )
    if not (path / "tokenizer.json").is_file():
        raise FileNotFoundError(f"{path / 'tokenizer.json'}: missing; the student trains with its teacher's tokenizer")
    teacher, tokenizer = load(path), Tokenizer.load(path / "tokenizer.json")
    check_tokenizer(teacher.config, tokenizer, path / "tokenizer.json")
    if tokenizer.vocab_size != teacher.config.vocab_size:
        raise ValueError(
            f"--teacher {o.teacher}: the tokenizer has {tokenizer.vocab_size:,} tokens, the model's vocabulary "
            f"{teacher.config.vocab_size:,}: they do not belong together"
        )
    return teacher, tokenizer


def distill(
    o: DistillOptions, resume: bool = False, overwrite: bool = False, started: float | None = None
) -> dict[str, Any]:
    """Run (or continue) a distillation job; returns its summary (also out/summary.json). Everything
    is checked before the first write: options, device, teacher, layers, corpus, output directory.
    `o.time_budget` bounds the whole job, the teacher's loading included, counted from `started` (a
    time.perf_counter() reading: the CLI passes when the command began) or from this call (train/budget.py)."""
    started = time.perf_counter() if started is None else started
    with tempfile.TemporaryDirectory() as staging:  # a table corpus's texts, for the run's length
        return _checked_distill(stage_table_corpus(o, Path(staging)), o, resume, overwrite, started)


def _checked_distill(
    o: DistillOptions, asked: DistillOptions, resume: bool, overwrite: bool, started: float
) -> dict[str, Any]:
    """`asked`: the options as given (a table --corpus staged as text in `o`), what a resume compares."""
    # the held-out slice is scored by default, as pretrain's (the Trainer also scores the last step)
    if o.eval_every is None:
        o = replace(o, eval_every=default_eval_every(o.steps, o.time_budget))
    device = dist.rank_device(o.device, say)  # a GPU asked for and absent fails here, before any write
    check_precision(device, o.precision)
    teacher, tokenizer = _teacher(o)
    notes = []
    alphas = o.alphas()
    if o.target == "tokens" and o.alpha_ce is None and parts(teacher)[1] is None:
        alphas = replace(alphas, ce=0.0)
        notes.append(
            f"the teacher ({teacher.architecture}) has no MLM head: distilling through the hidden states "
            "(cosine) and the student's own MLM loss, with no soft targets"
        )
    if not any((alphas.ce, alphas.mlm, alphas.cos, alphas.mse)):
        raise ValueError("every --alpha-* is 0: nothing to learn from")
    teacher_bf16 = {"auto": None, "fp32": False, "bf16": True}[o.teacher_precision]
    if device.type == "cuda":  # the GPU's own probe: bf16 where it pays there (an fp16 GPU runs the teacher in fp32)
        probe = cuda_precision(device)
        if teacher_bf16 is None:
            teacher_bf16 = probe["pick"] == "bf16"
            notes.append(f"the teacher runs in {'bf16' if teacher_bf16 else 'fp32'} ({probe['reason']})")
        elif teacher_bf16 and probe["half"] != "bf16":
            raise ValueError(
                f"--teacher-precision bf16: {probe['gpu']} (compute capability {probe['capability']}) has "
                "no bf16; an Ampere or later GPU does (8.0)"
            )
    elif teacher_bf16 is None:
        teacher_bf16 = bf16_pays()
        notes.append(f"the teacher runs in {precision_reason()}")
    elif teacher_bf16:
        check_bf16_requested()
    teacher.to(device)
    if o.target == "sentence":
        return _distill_sentences(
            o, asked, teacher, tokenizer, alphas, teacher_bf16, notes, resume, overwrite, device, started
        )
    objective = DistillationObjective(teacher, alphas, o.temperature, o.ce_over, teacher_bf16)
    with seeded(o.seed):
        student = init_student(teacher, o.student, o.layer_list(), o.depth)
    if o.max_length > student.config.max_length:
        raise ValueError(
            f"--max-length {o.max_length} is longer than the teacher's {student.config.max_length} positions"
        )
    check_corpus_documents(
        o.corpus, o.format, heldout_value(o.heldout), nsp=False, show_progress=not o.quiet and dist.is_main()
    )
    dist.init_from_env(device)
    run = claim_run(o.out_dir, "distill", asked, resume, overwrite, o.run_arguments(o.steps))
    if run.done is not None:
        return run.done  # complete under these options: nothing changes
    with seeded(o.seed):
        return _distill(o, teacher, tokenizer, student, objective, run, notes, device, started)


def _distill_sentences(
    o: DistillOptions,
    asked: DistillOptions,
    teacher,
    teacher_tok,
    alphas: Alphas,
    teacher_bf16: bool,
    notes: list[str],
    resume: bool,
    overwrite: bool,
    device: torch.device,
    started: float,
) -> dict[str, Any]:
    """--target sentence: every check (tokenizer, preset, corpus, output directory) before the first write."""
    objective = SentenceDistillationObjective(teacher, alphas, teacher_bf16)
    if o.tokenizer is not None:
        student_tok = Tokenizer.load(o.tokenizer)
    else:
        student_tok = teacher_tok
        notes.append(
            f"the student uses the teacher's tokenizer ({teacher_tok.vocab_size:,} tokens): its embedding "
            "table alone may outweigh the rest of a small preset; --tokenizer gives it one of its own"
        )
    with seeded(o.seed):  # the preset, --max-length and the tokenizer's specials, checked before anything is written
        build_student(o.student, o.preset, student_tok, o.max_length, bool(alphas.mlm))
    if alphas.mlm and student_tok.token_to_id(get_family(o.student).specials.mask) is None:
        raise ValueError(
            f"--alpha-mlm {alphas.mlm}: the student's tokenizer has no "
            f"{get_family(o.student).specials.mask} token to mask with"
        )
    where = corpus_name(o.corpus)  # a table corpus by the user's file and column, not the staged text
    check_corpus_documents(o.corpus, o.format, heldout_value(o.heldout), nsp=False)
    train_texts, heldout_texts = split_texts(
        read_texts(o.corpus, o.format, o.text_unit), heldout_value(o.heldout), o.seed, where
    )
    if len(train_texts) < o.batch_size:
        raise ValueError(f"{where}: {len(train_texts)} training texts, fewer than one batch of {o.batch_size}")
    if dist.launched_world_size() > 1:  # (no process group is joined on this path: ask torchrun's environment)
        raise ValueError(
            "--target sentence runs in one process (the teacher dominates; run ranks of it in parallel "
            "for different seeds instead)"
        )
    run = claim_run(o.out_dir, "distill", asked, resume, overwrite, o.run_arguments(o.steps))
    if run.done is not None:
        return run.done
    with seeded(o.seed):
        return run_sentence_distillation(
            o,
            teacher,
            teacher_tok,
            student_tok,
            objective,
            (train_texts, heldout_texts),
            run,
            notes,
            device,
            started,
        )


def _distill(
    o: DistillOptions,
    teacher,
    tokenizer,
    student,
    objective: DistillationObjective,
    run: Run,
    notes: list[str],
    device: torch.device,
    started: float,
) -> dict[str, Any]:
    out = run.out
    budget = CommandBudget.of(o.time_budget, started)
    if o.dropout is not None:
        set_dropout(student, o.dropout)
    if dist.is_main() and not run.resume:
        tokenizer.save(out / "tokenizer.json")
    recipe = o.recipe()
    data = PretrainData.build(o, tokenizer, replace(recipe, masking="dynamic"), out)  # rank 0 builds it
    if recipe.masking == "smoothed":  # weights from the training text's counts: known once the store is built
        m = data.store.masker
        weights = token_weights(data.token_counts(student.config.vocab_size))
        data = replace(
            data, store=data.store.masked_by(Masker(recipe, m.mask_id, m.special_ids, m.random_ids, weights))
        )
    held = data.heldout_batches(objective, o.eval_batches)
    evaluate = (lambda m: evaluate_student(m, teacher, held)) if held else None

    trainer = Trainer(
        student,
        TrainingArguments.from_options(o, out, run.overwrite, device=str(device)),
        data.batches(objective),
        objective,
        evaluate,
        save_extra=lambda d: atomic_copy(out / "tokenizer.json", d / "tokenizer.json"),
        budget=budget,
    )
    result = trainer.train(resume=run.resume)
    summary = {
        "teacher": o.teacher,
        "teacher_architecture": teacher.architecture,
        "architecture": student.architecture,
        "layers": o.layer_list() or "default",
        "parameters": student.num_parameters(),
        "teacher_parameters": teacher.num_parameters(),
        "alphas": asdict(objective.alphas),
        "teacher_bf16": objective.teacher_bf16,
        "notes": notes,
        **run_summary(trainer, result),
        "options": asdict(o),
    }
    return run.finish(student.save, summary, result["interrupted"], started, budget and budget.seconds)
