"""`bertology distill`'s options: the teacher, the student, the losses' weights, the corpus and its
recipe; checked on construction, before any file is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..data import Recipe
from ..options import (
    FRACTION_OR_COUNT,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_NUMBER,
    accepts_old_names,
    check_options,
    refuse_unread,
    option,
)
from .arguments import CorpusOptions, check_job_options
from .distillation import Alphas
from .sentence_distill import TEXT_UNITS
from .student import STUDENTS


@accepts_old_names
@dataclass
class DistillOptions(CorpusOptions):
    teacher: str = option(
        help="the teacher: a model directory holding tokenizer.json (any BERT, RoBERTa or DistilBERT)", metavar="DIR"
    )
    corpus: list[str] = option(
        help="text: one sentence per line, a blank line between documents (or --format raw); "
        ".gz, .xz, .bz2 read as they are; a folder: its text, Parquet and datasets files, recursively in "
        "name order (other files skipped, and said); a Parquet file or a datasets directory (save_to_disk): "
        "a row a document, from --text-column",
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
    teacher_precision: str = option(
        "auto",
        "the teacher's inference: auto (bf16 where a same-run probe shows it pays), fp32 or bf16",
        choices=("auto", "fp32", "bf16"),
    )
    weight_decay: float = option(
        0.0, "AdamW's decoupled weight decay (DistilBERT: 0)", check=NON_NEGATIVE, kw_only=True
    )
    max_grad_norm: float = option(5.0, "gradient clipping norm (DistilBERT: 5)", check=POSITIVE_NUMBER, kw_only=True)
    heldout: float = option(
        0.02, "fraction (or count ≥ 1) of documents held out for evaluation", check=FRACTION_OR_COUNT
    )

    def __post_init__(self):
        check_options(self)
        check_job_options(self)
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
            refuse_unread(
                self, ("temperature", "ce_over", "masking"), "--target tokens (the soft targets and their masks)"
            )
        else:
            refuse_unread(self, ("text_unit",), "--target sentence")
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
            max_seq_length=self.max_length,
            mlm_probability=self.mlm_probability,
            max_predictions=max(1, round(self.max_length * self.mlm_probability)),
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
