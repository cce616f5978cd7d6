"""Multiple choice (SWAG style): pick the ending that follows a context.

Each choice is encoded as a pair (context, start + " " + ending) — as transformers' run_swag does —
and all are padded to one length, so a batch is (N examples, C choices, T tokens); the model
scores every choice with one logit and the label is the index of the right one.

Files: CSV (SWAG's columns: sent1 = context, sent2 = the start of the second sentence,
ending0 … endingN, label) or JSON lines ({"context", "question" or "start" (optional),
"choices": [...], "label"}); other column names through text_column / pair_column / label_column.
"""

from __future__ import annotations

from typing import Any

import torch

from .base import Example, Features, PaddedFeatures, Task
from ..readers import read_table

_CONTEXT = ("sent1", "context")
_START = ("sent2", "question", "start")


def choice_columns(columns: list[str]) -> list[str]:
    """ending0, ending1, … in order (at least two, numbered without gaps).

    >>> choice_columns(["sent1", "ending1", "ending0", "label"])
    ['ending0', 'ending1']
    """
    found = []
    while f"ending{len(found)}" in columns:
        found.append(f"ending{len(found)}")
    return found


def _row_to_example(row: dict, where: str, text_column, pair_column, label_column) -> Example:
    def pick(explicit, defaults, required):
        if explicit is not None:
            if explicit not in row:
                raise ValueError(f"{where}: no column {explicit!r}; columns: {sorted(row)}")
            return row[explicit]
        for c in defaults:
            if c in row:
                return row[c]
        if required:
            raise ValueError(f"{where}: no context column (one of {list(defaults)}); columns: {sorted(row)}")
        return None

    context = pick(text_column, _CONTEXT, True)
    start = pick(pair_column, _START, False)
    if "choices" in row:
        endings = row["choices"]
        if not isinstance(endings, list):
            raise ValueError(f"{where}: 'choices' must be a list, got {type(endings).__name__}")
    else:
        endings = [row[c] for c in choice_columns(list(row))]
    if len(endings) < 2:
        raise ValueError(f"{where}: a multiple-choice example needs 2+ choices ('choices' or ending0, ending1, …)")
    for k, e in enumerate([context, *endings]):
        if not isinstance(e, str) or not e.strip():
            what = "context" if k == 0 else f"choice {k - 1}"
            raise ValueError(f"{where}: empty or non-text {what}: {e!r}")
    start = start.strip() if isinstance(start, str) else ""
    choices = [f"{start} {e.strip()}" if start else e.strip() for e in endings]
    label_key = label_column or "label"
    label = row.get(label_key)
    if label is not None and label != "":
        try:
            label = int(label)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: {label_key!r} must be a choice index, got {label!r}") from None
        if not 0 <= label < len(choices):
            raise ValueError(f"{where}: label {label} is not a choice index (0..{len(choices) - 1})")
    else:
        label = None
    return Example(context, choices, label, id=str(row.get("id", row.get("video-id", ""))) or None, where=where)


def read_choice(path: str, text_column=None, pair_column=None, label_column=None) -> list[Example]:
    """Multiple-choice examples from a JSON-lines or CSV / TSV file (readers.read_table)."""
    examples = [
        _row_to_example(row.values, row.where, text_column, pair_column, label_column) for row in read_table(path).rows
    ]
    if not examples:
        raise ValueError(f"{path}: no examples")
    return examples


class ChoiceTask(Task):
    name = "choice"
    head = "ForMultipleChoice"
    main_metric = "accuracy"

    def read(self, path: str, text_column=None, pair_column=None, label_column=None, **columns) -> list[Example]:
        if any(v is not None for v in columns.values()):
            raise ValueError(f"{path}: unexpected column options for multiple choice: {columns}")
        return read_choice(path, text_column, pair_column, label_column)

    def featurize(
        self,
        examples: list[Example],
        tokenizer,
        max_length: int,
        label2id: dict[str, int] | None = None,
        stride: int = 128,
    ) -> Features:
        if not examples:
            raise ValueError("featurize: no examples")
        C = len(examples[0].pair)
        for ex in examples:
            if not isinstance(ex.pair, list) or len(ex.pair) != C:
                raise ValueError(
                    f"{ex.where}: {len(ex.pair) if isinstance(ex.pair, list) else ex.pair!r} choices, "
                    f"but the first example has {C}: a batch needs the same number of choices"
                )
        contexts = [ex.text for ex in examples for _ in range(C)]
        seconds = [c for ex in examples for c in ex.pair]
        encs = tokenizer.encode_batch(contexts, seconds, truncation=True, max_length=max_length, padding=True)
        N, T = len(examples), len(encs[0])

        def stack(field: str) -> torch.Tensor:
            return torch.tensor([getattr(e, field) for e in encs], dtype=torch.long).view(N, C, T)  # (N, C, T)

        tensors = {
            "input_ids": stack("ids"),
            "attention_mask": stack("attention_mask"),
            "token_type_ids": stack("type_ids"),
        }
        labels = [ex.label for ex in examples]
        if all(lab is not None for lab in labels):
            for ex in examples:
                if not 0 <= ex.label < C:
                    raise ValueError(f"{ex.where}: label {ex.label} is not a choice index (0..{C - 1})")
            tensors["labels"] = torch.tensor(labels, dtype=torch.long)
        truncated = sum(any(encs[i * C + k].overflowing for k in range(C)) for i in range(N))
        return PaddedFeatures(tensors, [[i] for i in range(N)], {}, truncated)

    def predict(
        self, outputs: list[Any], features: Features, examples: list[Example], id2label: dict[int, str] | None = None
    ) -> list[dict]:
        logits = (
            torch.cat([o.logits if not isinstance(o, torch.Tensor) else o for o in outputs]).detach().float()
        )  # (N, C)
        if logits.shape[0] != len(examples):
            raise ValueError(f"{logits.shape[0]} rows of logits for {len(examples)} examples")
        p, best = logits.softmax(-1).max(-1)
        return [
            {"choice": int(b), "probability": float(q), "text": ex.pair[int(b)]} for b, q, ex in zip(best, p, examples)
        ]

    def metrics(self, predictions: list[dict], examples: list[Example]) -> dict[str, float]:
        """accuracy as a fraction (like the classification tasks)."""
        if any(ex.label is None for ex in examples):
            raise ValueError("metrics need labelled examples")
        right = sum(p["choice"] == ex.label for p, ex in zip(predictions, examples, strict=True))
        return {"accuracy": right / len(examples)}

    def format_prediction(self, prediction: dict) -> str:
        return f"{prediction['choice']} ({prediction['probability']:.3f}): {prediction['text']}"
