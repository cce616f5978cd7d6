"""Sequence-level tasks: one label (or one number) per text or text pair.

    classify  text → label           accuracy, macro-F1 (+ Matthews correlation when binary)
    pair      text + pair → label    the same metrics; the pair goes through the tokenizer's pair
                                     template ([CLS] a [SEP] b [SEP], type ids 0 / 1 for BERT)
    regress   text (+ pair) → float  Pearson, Spearman; num_labels = 1 (the model's loss is MSE)

Labels are the names found in the training data, sorted; the job uses them as id2label. A class
prediction is Prediction(label, probability, {label: probability}).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from . import metrics as M
from ..models.family import PROMPT_HEAD
from .base import Example, Features, PaddedFeatures, Task
from .prompt import Prompt
from ..readers import read_table

_TASK_DEFAULT = object()  # "the task's own default pair column" (None would mean: no pair column)
# what the tokenizer returns that is not a model argument (num_overflowing is read for `truncated`)
_NOT_MODEL_INPUTS = ("special_tokens_mask", "offset_mapping", "num_overflowing", "overflow_to_sample_mapping")


class Prediction(NamedTuple):
    label: str
    probability: float
    probabilities: dict[str, float]


def encode_sequences(examples: list[Example], tokenizer, max_length: int, use_pairs: bool):
    """Tokenize texts (and pairs) to one padded row each; returns (tensors, number truncated)."""
    for e in examples:
        _check_text(e.text, e.where, "text")
        if use_pairs:
            _check_text(e.pair, e.where, "pair")
    texts = [e.text for e in examples]
    pairs = [e.pair for e in examples] if use_pairs else None
    enc = tokenizer.encode_batch(
        texts, pairs, padding=True, truncation=True, max_length=max_length, return_tensors="pt"
    )
    truncated = int((enc["num_overflowing"] > 0).sum())
    return {k: v for k, v in enc.items() if k not in _NOT_MODEL_INPUTS}, truncated


def _check_text(value: Any, where: str, what: str) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{where}: the {what} should be a string, got {type(value).__name__} {value!r}")
    if not value.strip():
        raise ValueError(f"{where}: empty {what}")


def _logits(outputs: list[Any], n_rows: int) -> torch.Tensor:
    logits = torch.cat([o.logits.detach().float().cpu() for o in outputs]) if outputs else torch.empty(0, 1)
    if logits.shape[0] != n_rows:
        raise ValueError(f"model outputs cover {logits.shape[0]} rows, the features have {n_rows}")
    return logits


class ClassifyTask(Task):
    name = "classify"
    head = "ForSequenceClassification"
    main_metric = "accuracy"
    pair_required = False  # classify takes a pair column if one is named (or an Example has a pair)
    default_pair_column: str | None = None

    def __init__(self, prompt: dict | None = None):
        """`prompt` (Prompt.to_dict()): the examples are written into a template and the model's pretrained
        head reads the blank (tasks/prompt.py; the head is then ForPromptClassification)."""
        self.prompt = Prompt.from_dict(prompt) if prompt is not None else None
        if self.prompt is not None:
            self.head = PROMPT_HEAD

    def read(
        self,
        path: str,
        text_column: str = "text",
        pair_column: str | None = _TASK_DEFAULT,
        label_column: str | None = "label",
        **unknown,
    ) -> list[Example]:
        """Examples from a CSV / TSV / JSON-lines / Parquet file or a datasets directory (see readers.py).
        pair_column defaults to none for classify / regress and "pair" for pair; label_column=None
        reads unlabelled data. An "id" column, if present, becomes Example.id."""
        if unknown:
            raise TypeError(
                f"{self.name} task: unknown column option(s) {', '.join(sorted(unknown))}; "
                "use text_column, pair_column, label_column"
            )
        if pair_column is _TASK_DEFAULT:
            pair_column = self.default_pair_column
        if self.pair_required and pair_column is None:
            raise ValueError(f"the {self.name} task needs a pair_column")
        table = read_table(path)
        table.require(text_column=text_column, pair_column=pair_column, label_column=label_column)
        table.require_text(text_column=text_column, pair_column=pair_column)
        out = []
        for row in table.rows:
            pair = row.text(pair_column) if pair_column is not None else None
            label = self._read_label(row, label_column) if label_column is not None else None
            out.append(Example(row.text(text_column), pair, label, id=str(row.get("id", len(out))), where=row.where))
        return out

    def _read_label(self, row, column: str) -> Any:
        value = row[column]
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ValueError(f"{row.where}: label {value!r} in column {column!r} should be a name (or an integer)")
        value = str(value).strip()
        if not value:
            raise ValueError(f"{row.where}: empty label in column {column!r}")
        return value

    def label_set(self, examples: list[Example]) -> list[str]:
        missing = next((e for e in examples if e.label is None), None)
        if missing is not None:
            raise ValueError(f"{missing.where}: training example without a label")
        labels = sorted({e.label for e in examples})
        if len(labels) < 2:
            raise ValueError(
                f"{examples[0].where if examples else 'training data'}: "
                f"{len(labels)} distinct label(s) {labels}; classification needs at least 2"
            )
        return labels

    def featurize(
        self, examples: list[Example], tokenizer, max_length: int, label2id: dict[str, int] | None, stride: int = 128
    ) -> Features:
        if self.prompt is not None:
            return self.prompt.featurize(examples, tokenizer, max_length, self._label_tensor(examples, label2id))
        use_pairs = self.pair_required or any(e.pair is not None for e in examples)
        tensors, truncated = encode_sequences(examples, tokenizer, max_length, use_pairs)
        labels = self._label_tensor(examples, label2id)
        if labels is not None:
            tensors["labels"] = labels
        return PaddedFeatures(tensors, [[i] for i in range(len(examples))], truncated=truncated)

    def _label_tensor(self, examples: list[Example], label2id) -> torch.Tensor | None:
        """Label ids; None when there is nothing to train on (no label2id, or unlabelled examples)."""
        if label2id is None or all(e.label is None for e in examples):
            return None
        ids = []
        for e in examples:
            if e.label is None:
                raise ValueError(f"{e.where}: example without a label among labelled ones")
            if e.label not in label2id:
                raise ValueError(
                    f"{e.where}: label {e.label!r} was not seen in training; "
                    f"known labels: {', '.join(map(str, label2id))}"
                )
            ids.append(label2id[e.label])
        return torch.tensor(ids, dtype=torch.long)

    def predict(
        self, outputs: list[Any], features: Features, examples: list[Example], id2label: dict[int, str] | None
    ) -> list[Prediction]:
        logits = _logits(outputs, len(features))
        probs = logits.softmax(-1)
        id2label = id2label or {}
        names = [str(id2label.get(i, id2label.get(str(i), i))) for i in range(probs.shape[1])]  # JSON keys are strings
        out = []
        for rows in features.rows_of_example:
            p = probs[rows[0]]
            best = int(p.argmax())
            out.append(Prediction(names[best], float(p[best]), {n: float(v) for n, v in zip(names, p.tolist())}))
        return out

    def metrics(self, predictions: list[Prediction], examples: list[Example]) -> dict[str, float]:
        gold = _gold(examples)
        predicted = [p.label for p in predictions]
        scores = {"accuracy": M.accuracy(predicted, gold), "macro_f1": M.macro_f1(predicted, gold)}
        if predictions and len(predictions[0].probabilities) == 2:  # a binary label vocabulary
            scores["mcc"] = M.matthews_corrcoef(predicted, gold)
        return scores

    def format_prediction(self, prediction: Prediction) -> str:
        return f"{prediction.label}  {prediction.probability:.2f}"


class PairTask(ClassifyTask):
    name = "pair"
    pair_required = True
    default_pair_column = "pair"


class RegressTask(ClassifyTask):
    name = "regress"
    main_metric = "pearson"

    def _read_label(self, row, column: str) -> float:
        return row.number(column)

    def label_set(self, examples: list[Example]) -> None:
        return None  # one output (num_labels = 1)

    def _label_tensor(self, examples: list[Example], label2id) -> torch.Tensor | None:
        if all(e.label is None for e in examples):
            return None
        for e in examples:
            if isinstance(e.label, bool) or not isinstance(e.label, (int, float)):
                raise ValueError(f"{e.where}: regression label should be a number, got {e.label!r}")
        return torch.tensor([float(e.label) for e in examples], dtype=torch.float32)

    def predict(
        self, outputs: list[Any], features: Features, examples: list[Example], id2label: dict[int, str] | None
    ) -> list[float]:
        logits = _logits(outputs, len(features))
        if logits.shape[1] != 1:
            raise ValueError(f"regression expects one output per row (num_labels=1), got {logits.shape[1]}")
        return [float(logits[rows[0], 0]) for rows in features.rows_of_example]

    def metrics(self, predictions: list[float], examples: list[Example]) -> dict[str, float]:
        gold = _gold(examples)
        return {"pearson": M.pearson(predictions, gold), "spearman": M.spearman(predictions, gold)}

    def format_prediction(self, prediction: float) -> str:
        return f"{prediction:.3f}"


def _gold(examples: list[Example]) -> list[Any]:
    missing = next((e for e in examples if e.label is None), None)
    if missing is not None:
        raise ValueError(f"{missing.where}: no gold label to score against")
    return [e.label for e in examples]
