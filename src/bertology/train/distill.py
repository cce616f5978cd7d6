"""The distillation job (Sanh et al., 2019): a shallower student initialised from its teacher's
layers (student.py), trained by the shared Trainer on the teacher's soft predictions and hidden
states (objectives.DistillationObjective), written in Hugging Face layout.

    bertology distill --teacher runs/bert --corpus corpus.txt --out runs/distilbert --steps 2000

The output loads in transformers (DistilBertForMaskedLM, or BertForMaskedLM / RobertaForMaskedLM
for a student of the teacher's own family) and fine-tunes with `bertology finetune`.

With `--target sentence` the teacher is a sentence-embedding model and the student a small preset
with a tokenizer of its own, matched embedding to embedding (sentence_distill.py):

    bertology distill --target sentence --teacher minilm/ --preset tiny --tokenizer tok/ \
        --corpus corpus.txt --out runs/tiny --steps 2000
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch

from ..data import FORMATS, Masker, Recipe, build_store, check_corpus_documents, heldout_value
from ..data.masking import token_weights
from ..hardware import bf16_pays, check_bf16_requested, cuda_precision, precision_reason
from ..io import atomic_copy, atomic_write_json, claim_output_dir
from ..models import check_tokenizer, get_family, load
from ..nn import set_dropout
from ..options import (
    DROPOUT,
    FRACTION_OR_COUNT,
    MASKING_RATE,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_NUMBER,
    check_options,
    option,
)
from ..tokenizers import Tokenizer
from . import distributed as dist
from .continued import corpus_name, stage_table_corpus
from .device import say
from .resume import same_run
from .objectives import Alphas, DistillationObjective, SentenceDistillationObjective, evaluate_student
from .sentence_distill import TEXT_UNITS, build_student, read_texts, run_sentence_distillation, split_texts
from .student import STUDENTS, init_student, parts
from .trainer import RunOptions, Trainer, TrainingArguments, checkpoints, run_summary, seeded


@dataclass
class DistillOptions(RunOptions):
    teacher: str = option(
        help="the teacher: a model directory holding tokenizer.json (any BERT, RoBERTa or DistilBERT)", metavar="DIR"
    )
    corpus: list[str] = option(
        help="text: one sentence per line, a blank line between documents (or --format raw); "
        ".gz, .xz, .bz2 read as they are; a folder: its files in name order; a Parquet "
        "file or a datasets directory (save_to_disk): a row a document, from "
        "--text-column",
        metavar="FILE",
    )
    out_dir: str = option(help="output directory", flag="--out", metavar="DIR")
    target: str = option(
        "tokens",
        "what is matched: tokens (DistilBERT: the teacher's predictions and hidden states, "
        "a student from its layers) or sentence (the teacher's mean-pooled, normalised "
        "embedding, through a projection; a student from --preset with its own --tokenizer)",
        choices=("tokens", "sentence"),
    )
    student: str | None = option(
        None,
        "tokens: distilbert (default; no token types, no pooler; from a BERT teacher), or "
        "the teacher's own family with fewer layers (bert, roberta); sentence: any "
        "family's --preset (default bert)",
        choices=STUDENTS,
    )
    preset: str | None = option(None, "sentence: the student's size (default tiny)")
    tokenizer: str | None = option(None, "sentence: the student's tokenizer.json or directory (default: the teacher's)")
    text_unit: str = option(
        "document", "sentence: a training text is a whole document or each of its sentences", choices=TEXT_UNITS
    )
    layers: str | None = option(
        None,
        "teacher layers the student starts from, in order (default: spread evenly over "
        "the teacher, half its depth: 12 → 0,2,4,7,9,11)",
        metavar="I,J,…",
    )
    depth: int | None = option(
        None, "student layers with the default spread (default half the teacher's)", check=POSITIVE
    )
    alpha_ce: float | None = option(
        None,
        "weight of T²·KL between the softened predictions (default 5.0; 0 and said when the teacher has no MLM head)",
        check=NON_NEGATIVE,
    )
    alpha_mlm: float | None = option(
        None, "weight of the student's own MLM loss (default 2.0; sentence: 0)", check=NON_NEGATIVE
    )
    alpha_cos: float | None = option(
        None,
        "weight of 1 − cos between the last hidden states (sentence: between the embeddings) (default 1.0)",
        check=NON_NEGATIVE,
    )
    alpha_mse: float | None = option(
        None,
        "weight of the squared error between the logits (default 0; sentence: the "
        "squared distance between the embeddings, default 1.0)",
        check=NON_NEGATIVE,
    )
    temperature: float = option(2.0, "softmax temperature of the soft targets", check=POSITIVE_NUMBER)
    ce_over: str = option("masked", "positions the soft targets are matched at", choices=("masked", "all"))
    masking: str = option(
        "uniform",
        "uniform (BERT's) or smoothed (DistilBERT's: p ∝ count^-0.7 over the batch)",
        choices=("uniform", "smoothed"),
    )
    mlm_probability: float = option(0.15, "share of tokens masked", check=MASKING_RATE)
    steps: int | None = option(
        None, "optimizer steps (default 1000; with --time-budget a cap, default none)", check=POSITIVE
    )
    batch_size: int = option(32, "global batch (over accumulation and ranks)", check=POSITIVE)
    seq_len: int = option(128, "tokens per sequence, special tokens included", check=POSITIVE)
    lr: float = option(5e-4, "peak learning rate (DistilBERT: 5e-4)", check=POSITIVE_NUMBER)
    warmup: int = option(100, "warmup steps, then linear decay to 0", check=NON_NEGATIVE)
    weight_decay: float = option(0.0, "AdamW's decoupled weight decay (DistilBERT: 0)", check=NON_NEGATIVE)
    dropout: float | None = option(
        None, "the student's dropout while distilling (default: the teacher config's)", check=DROPOUT
    )
    accumulation: int = option(1, "micro-batches per optimizer step", check=POSITIVE)
    max_grad_norm: float = option(5.0, "gradient clipping norm (DistilBERT: 5)", check=POSITIVE_NUMBER)
    bf16: bool = option(
        False,
        "bf16 autocast for the student (pays where the CPU multiplies bf16 natively; on a GPU "
        "the precision is measured and said)",
    )
    teacher_precision: str = option(
        "auto",
        "the teacher's inference: auto (bf16 where a same-run probe shows it pays), fp32 or bf16",
        choices=("auto", "fp32", "bf16"),
    )
    seed: int = option(0, "seeds dropout, the instances and the masks")
    format: str = option("lines", "corpus format", choices=FORMATS)
    text_column: str | None = option(
        None,
        "read the --corpus files as tables (CSV / TSV / JSON lines / Parquet / a "
        "datasets directory) and distil on this column's texts, a record a "
        "document; a Parquet or datasets --corpus is read so without it, from "
        "its 'text' column",
        metavar="NAME",
    )
    heldout: float = option(
        0.02, "fraction (or count ≥ 1) of documents held out for evaluation", check=FRACTION_OR_COUNT
    )

    def __post_init__(self):
        check_options(self)
        sentence = self.target == "sentence"
        if self.student is None:
            self.student = "bert" if sentence else "distilbert"
        if sentence:
            misplaced = [
                flag
                for flag, value in (
                    ("--layers", self.layers),
                    ("--depth", self.depth),
                    ("--alpha-ce", self.alpha_ce or None),
                )
                if value is not None
            ]
            if misplaced:
                raise ValueError(
                    f"{', '.join(misplaced)}: for --target tokens; a sentence-level student is built from "
                    "--preset with its own tokenizer (no teacher layers to copy, no token predictions to match)"
                )
            if self.student not in SENTENCE_STUDENTS:
                raise ValueError(
                    f"--student {self.student}: a sentence-level student is one of "
                    f"{', '.join(SENTENCE_STUDENTS)}, built from --preset"
                )
            self.preset = self.preset or "tiny"
        else:
            given = [
                flag
                for flag, value in (("--preset", self.preset), ("--tokenizer", self.tokenizer))
                if value is not None
            ]
            if given:
                raise ValueError(
                    f"{', '.join(given)}: for --target sentence; a --target tokens student is the teacher's "
                    "layers, its vocabulary and width (use --layers / --depth)"
                )

    def recipe(self) -> Recipe:
        """What the student learns from: DistilBERT's MLM over full sentences, masked per batch
        (uniform: BERT's dynamic masks; smoothed: p ∝ count^-0.7)."""
        return Recipe.resolve(
            self.student,
            objective="mlm",
            packing="full-sentences",
            masking="smoothed" if self.masking == "smoothed" else "dynamic",
            max_seq_length=self.seq_len,
            mlm_probability=self.mlm_probability,
            max_predictions=max(1, round(self.seq_len * self.mlm_probability)),
        )

    def alphas(self) -> Alphas:
        """The loss weights with each target's defaults filled in (alpha_ce: see distill())."""
        if self.target == "sentence":
            return Alphas(
                ce=0.0,
                mlm=_given(self.alpha_mlm, 0.0),
                cos=_given(self.alpha_cos, 1.0),
                mse=_given(self.alpha_mse, 1.0),
            )
        return Alphas(
            ce=_given(self.alpha_ce, 5.0),
            mlm=_given(self.alpha_mlm, 2.0),
            cos=_given(self.alpha_cos, 1.0),
            mse=_given(self.alpha_mse, 0.0),
        )

    def layer_list(self) -> list[int] | None:
        if self.layers is None:
            return None
        try:
            return [int(x) for x in self.layers.split(",")]
        except ValueError:
            raise ValueError(f"--layers {self.layers!r}: comma-separated layer numbers such as 0,2,4") from None


SENTENCE_STUDENTS = ("bert", "roberta", "distilbert")


def _given(value: float | None, default: float) -> float:
    return default if value is None else value


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


def distill(o: DistillOptions, resume: bool = False, overwrite: bool = False) -> dict[str, Any]:
    """Run (or continue) a distillation job; returns its summary (also out/summary.json). Everything
    is checked before the first write: options, device, teacher, layers, corpus, output directory."""
    with tempfile.TemporaryDirectory() as staging:  # a table corpus's texts, for the run's length
        return _checked_distill(stage_table_corpus(o, Path(staging)), o, resume, overwrite)


def _checked_distill(o: DistillOptions, asked: DistillOptions, resume: bool, overwrite: bool) -> dict[str, Any]:
    """`asked`: the options as given (a table --corpus staged as text in `o`), what a resume compares."""
    device = dist.rank_device(o.device, say)  # a GPU asked for and absent fails here, before any write
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
        return _distill_sentences(o, asked, teacher, tokenizer, alphas, teacher_bf16, notes, resume, overwrite, device)
    objective = DistillationObjective(teacher, alphas, o.temperature, o.ce_over, teacher_bf16)
    with seeded(o.seed):
        student = init_student(teacher, o.student, o.layer_list(), o.depth)
    if o.seq_len > student.config.max_length:
        raise ValueError(f"--seq-len {o.seq_len} is longer than the teacher's {student.config.max_length} positions")
    check_corpus_documents(o.corpus, o.format, heldout_value(o.heldout), nsp=False)
    dist.init_from_env(device)
    out = Path(o.out_dir)
    if dist.is_main():
        claim_output_dir(out, "distill", resume=resume, overwrite=overwrite)
    dist.barrier()
    if resume and not checkpoints(out):  # killed before its first checkpoint: start again
        resume, overwrite = False, True
    same_run(out, asked, resume)  # a resume with options that change the run is refused here, before any write
    with seeded(o.seed):
        return _distill(o, teacher, tokenizer, student, objective, out, resume, overwrite, notes, device)


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
    with seeded(o.seed):  # the preset, --seq-len and the tokenizer's specials, checked before anything is written
        build_student(o.student, o.preset, student_tok, o.seq_len, bool(alphas.mlm))
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
    if dist.world_size() > 1:
        raise ValueError(
            "--target sentence runs in one process (the teacher dominates; run ranks of it in parallel "
            "for different seeds instead)"
        )
    out = Path(o.out_dir)
    claim_output_dir(out, "distill", resume=resume, overwrite=overwrite)
    if resume and not checkpoints(out):
        resume, overwrite = False, True
    same_run(out, asked, resume)
    with seeded(o.seed):
        return run_sentence_distillation(
            o,
            teacher,
            teacher_tok,
            student_tok,
            objective,
            (train_texts, heldout_texts),
            out,
            resume,
            overwrite,
            notes,
            device,
        )


def _distill(
    o: DistillOptions,
    teacher,
    tokenizer,
    student,
    objective: DistillationObjective,
    out: Path,
    resume: bool,
    overwrite: bool,
    notes: list[str],
    device: torch.device,
) -> dict[str, Any]:
    if o.dropout is not None:
        set_dropout(student, o.dropout)
    if dist.is_main() and not resume:
        tokenizer.save(out / "tokenizer.json")
    recipe = o.recipe()
    store = build_store(
        o.corpus,
        tokenizer,
        replace(recipe, masking="dynamic"),
        seed=o.seed,
        cache_dir=out / "cache",
        format=o.format,
        heldout=heldout_value(o.heldout),
        show_progress=not o.quiet and dist.is_main(),
    )
    if store.num_instances < o.batch_size:
        raise ValueError(
            f"{', '.join(o.corpus)}: {store.num_instances} sequences of length {o.seq_len}, fewer than one "
            f"batch of {o.batch_size}; use a larger corpus or a smaller --batch-size / --seq-len"
        )
    if recipe.masking == "smoothed":  # weights from the training text's counts: known once the store is built
        m = store.masker
        store = store.masked_by(
            Masker(
                recipe,
                m.mask_id,
                m.special_ids,
                m.random_ids,
                token_weights(store.token_counts(student.config.vocab_size)),
            )
        )

    def batches(step: int) -> dict[str, torch.Tensor]:
        return store.batch(step, o.batch_size)

    evaluate = None
    if store.heldout is not None and store.heldout.num_instances:
        size = min(o.batch_size, store.heldout.num_instances)
        n = max(1, min(o.eval_batches, math.ceil(store.heldout.num_instances / size)))
        eval_batches = [store.heldout.batch(i, size, seed=o.seed + 1) for i in range(n)]

        def evaluate(m):
            return evaluate_student(m, teacher, eval_batches)

    trainer = Trainer(
        student,
        TrainingArguments.from_options(o, out, overwrite, device=str(device)),
        batches,
        objective,
        evaluate,
        save_extra=lambda d: atomic_copy(out / "tokenizer.json", d / "tokenizer.json"),
    )
    result = trainer.train(resume=resume)
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
    if dist.is_main() and not result["interrupted"]:
        student.save(out)
        atomic_write_json(out / "summary.json", summary)
    return summary
