"""Extractive question answering, SQuAD style: predict the answer's first and last token.

A long context is cut into windows that overlap by `stride` tokens; the question is repeated in
each and never truncated:

    [CLS] question [SEP] context tokens 0 … k      [SEP]
    [CLS] question [SEP] context tokens k-stride+1 … [SEP]     ...

Training: the answer's characters are mapped to tokens through the offsets; in a window that
does not hold the whole answer both positions point at [CLS] (as transformers does).
Inference, per window: the n_best highest start and end logits among the context tokens, every
pair with start <= end and at most max_answer_length tokens, scored start + end logit; the best
over all windows wins and its text is cut from the ORIGINAL context by character offsets.
SQuAD v2.0: the no-answer score is [CLS]'s start + end logit (the smallest over the windows);
the answer is "" when it beats the best span by more than null_score_threshold.
"""

from __future__ import annotations

from typing import Any

import torch

from . import squad
from ..tokenizers.encoding import model_tensors
from .base import Example, Features, Task

_CLS_TOKENS = ("[CLS]", "<cls>", "<s>")


def context_offsets(context: str, offsets, sequence_ids) -> list[tuple[int, int] | None]:
    """Offsets of the context tokens (sequence 1), moved past leading whitespace; None elsewhere.

    Metaspace ("▁word") and untrimmed byte-level ("Ġword") tokens include the space before the word.

    >>> context_offsets(" ab c", [(0, 0), (0, 1), (0, 3), (3, 5)], [None, 0, 1, 1])
    [None, None, (1, 3), (4, 5)]
    """
    out: list[tuple[int, int] | None] = []
    for (a, b), seq in zip(offsets, sequence_ids):
        if seq != 1:
            out.append(None)
            continue
        while a < b and context[a].isspace():
            a += 1
        out.append((a, b))
    return out


def answer_positions(
    offsets: list[tuple[int, int] | None], start_char: int, end_char: int, cls_index: int = 0
) -> tuple[int, int]:
    """(first, last) token of the answer characters [start_char, end_char) in one window, or
    (cls_index, cls_index) when the window does not hold the whole answer.

    >>> offs = [None, None, (0, 3), (4, 9), (10, 14), None]     # [CLS] q "The quick brown" [SEP]
    >>> answer_positions(offs, 4, 14), answer_positions(offs, 4, 20)
    ((3, 4), (0, 0))
    """
    ctx = [i for i, o in enumerate(offsets) if o is not None]
    if not ctx or offsets[ctx[0]][0] > start_char or offsets[ctx[-1]][1] < end_char:
        return cls_index, cls_index
    first = next(i for i in reversed(ctx) if offsets[i][0] <= start_char)
    last = next(i for i in ctx if offsets[i][1] >= end_char)
    return first, last


def best_spans(
    start_logits: torch.Tensor,
    end_logits: torch.Tensor,
    offsets: list[tuple[int, int] | None],
    n_best: int = 20,
    max_answer_length: int = 30,
) -> list[tuple[float, int, int]]:
    """(score, first, last) candidates of one window, best first: from the n_best start and end
    logits of the context tokens, pairs with first <= last spanning at most max_answer_length tokens.

    >>> s = torch.tensor([0., 0., 5., 1., 0.]); e = torch.tensor([0., 0., 0., 1., 4.])
    >>> best_spans(s, e, [None, (0, 1), (2, 3), (4, 5), (6, 7)], n_best=2)
    [(9.0, 2, 4), (6.0, 2, 3), (5.0, 3, 4), (2.0, 3, 3)]
    """
    ctx = torch.tensor([o is not None for o in offsets] + [False] * (len(start_logits) - len(offsets)))
    if not ctx.any():
        return []
    k = min(n_best, int(ctx.sum()))
    neg = torch.finfo(start_logits.dtype).min
    starts = start_logits.masked_fill(~ctx, neg).topk(k).indices.tolist()
    ends = end_logits.masked_fill(~ctx, neg).topk(k).indices.tolist()
    out = [
        (float(start_logits[a] + end_logits[b]), a, b)
        for a in starts
        for b in ends
        if a <= b and b - a + 1 <= max_answer_length
    ]
    out.sort(key=lambda c: (-c[0], c[1], c[2]))
    return out


class QATask(Task):
    name = "qa"
    head = "ForQuestionAnswering"
    main_metric = "f1"

    def __init__(
        self,
        version_2: bool | None = None,
        n_best: int = 20,
        max_answer_length: int = 30,
        null_score_threshold: float = 0.0,
    ):
        """version_2: allow "no answer" (None: as the files read say: a v2.0 file or is_impossible keys)."""
        self.version_2 = version_2
        self._file_says_v2 = False
        self.n_best, self.max_answer_length = n_best, max_answer_length
        self.null_score_threshold = null_score_threshold

    @property
    def allows_no_answer(self) -> bool:
        return self.version_2 if self.version_2 is not None else self._file_says_v2

    def read(self, path: str, **columns) -> list[Example]:
        unused = {k: v for k, v in columns.items() if v is not None}
        if unused:
            raise ValueError(f"{path}: a SQuAD JSON file has fixed keys; unexpected column options {unused}")
        examples, v2 = squad.read_squad(path)
        self._file_says_v2 |= v2
        return examples

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
        rows, rows_of_example, offsets, cls_indices, starts, ends = [], [], [], [], [], []
        labelled = all(ex.label is not None for ex in examples)
        for ex in examples:
            if (
                not isinstance(ex.text, str)
                or not ex.text.strip()
                or not isinstance(ex.pair, str)
                or not ex.pair.strip()
            ):
                raise ValueError(f"{ex.where}: a question and a context (non-empty strings) are needed")
            try:
                (enc,) = tokenizer.encode_batch(
                    [ex.text],
                    [ex.pair],
                    truncation="only_second",
                    max_length=max_length,
                    stride=stride,
                    padding="max_length",
                )
            except ValueError as e:  # a question too long for max_length, or stride >= the context's room
                raise ValueError(
                    f"{ex.where}: cannot fit question + context windows in max_length={max_length} "
                    f"with stride={stride}: {e}"
                ) from None
            answer = ex.label[0] if labelled and ex.label else None
            mine = []
            for window in [enc, *enc.overflowing]:
                offs = context_offsets(ex.pair, window.offsets, window.sequence_ids)
                cls = _cls_index(window)
                mine.append(len(rows))
                rows.append(window)
                offsets.append(offs)
                cls_indices.append(cls)
                if labelled:
                    s, e = (
                        (cls, cls)
                        if answer is None
                        else answer_positions(offs, answer["start"], answer["start"] + len(answer["text"]), cls)
                    )
                    starts.append(s)
                    ends.append(e)
            rows_of_example.append(mine)
        tensors = model_tensors(rows)
        if labelled:
            tensors["start_positions"] = torch.tensor(starts, dtype=torch.long)
            tensors["end_positions"] = torch.tensor(ends, dtype=torch.long)
        # windows cover the whole context, and the question is never cut: nothing is truncated
        return Features(tensors, rows_of_example, {"offsets": offsets, "cls_index": cls_indices}, 0)

    def predict(
        self, outputs: list[Any], features: Features, examples: list[Example], id2label: dict[int, str] | None = None
    ) -> list[dict]:
        start = torch.cat([o.start_logits for o in outputs]).detach().float()  # (rows, T)
        end = torch.cat([o.end_logits for o in outputs]).detach().float()
        if start.shape[0] != len(features):
            raise ValueError(f"{start.shape[0]} rows of logits for {len(features)} rows of features")
        out = []
        for ex, rows in zip(examples, features.rows_of_example):
            best, null = None, None
            for r in rows:
                offs = features.extra["offsets"][r]
                cls = features.extra["cls_index"][r]
                null_r = float(start[r, cls] + end[r, cls])
                null = null_r if null is None else min(null, null_r)
                cands = best_spans(start[r], end[r], offs, self.n_best, self.max_answer_length)
                if cands and (best is None or cands[0][0] > best[0]):
                    best = (cands[0][0], offs[cands[0][1]][0], offs[cands[0][2]][1])
            if best is None or (self.allows_no_answer and null - best[0] > self.null_score_threshold):
                out.append({"text": "", "score": null, "start": None, "end": None})
            else:
                score, a, b = best
                out.append({"text": ex.pair[a:b], "score": score, "start": a, "end": b})
        return out

    def metrics(self, predictions: list[dict], examples: list[Example]) -> dict[str, float]:
        """exact_match and f1 (percent, the official SQuAD script's), HasAns_* / NoAns_* for v2.0 data."""
        if any(ex.label is None for ex in examples):
            raise ValueError("metrics need examples with answers")
        preds = {ex.id: p["text"] for ex, p in zip(examples, predictions, strict=True)}
        return squad.score(preds, {ex.id: ex.label for ex in examples})

    def format_prediction(self, prediction: dict) -> str:
        text = prediction["text"]
        score = prediction["score"]
        shown = repr(text) if text else "(no answer)"
        return shown if score is None else f"{shown} ({score:.2f})"


def _cls_index(window) -> int:
    """Where [CLS] / <s> / <cls> sits (0 for BERT-like templates, the end for XLNet's)."""
    for i, (tok, special) in enumerate(zip(window.tokens, window.special_tokens_mask)):
        if special and window.attention_mask[i] and tok in _CLS_TOKENS:
            return i
    return 0
