"""Token classification (NER, chunking, POS): one tag per word, predicted on sub-tokens.

Words are joined with single spaces and encoded as one text; each token is mapped back to its
word through its character offsets (not the tokenizer's own word ids, whose pre-tokenizer may
split "U.S." in four), which works alike for WordPiece, byte-level BPE and Unigram:

    words      John      Smithson         lives
    tokens     john      smith  ##son     lives          (WordPiece)
    labels     B-PER     I-PER  -100      O              (first sub-token carries the word's tag)
    label_all  B-PER     I-PER  I-PER     O              (label_all_subtokens=True: B- becomes I-)

Special tokens and padding get -100 (ignored by the loss). A word's prediction is its first
sub-token's; a word truncated away gets none (counted in Features.truncated, scored as O).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import torch

from ..models.heads import IGNORE_INDEX
from ..tables import table_format
from ..tokenizers.encoding import model_tensors
from .base import Example, Features, Task
from .conll import chunks, conlleval, read_conll, split_tag
from ..readers import read_table

MAX_SENTENCE_WORDS = 1000  # a longer 'sentence' is a file without sentence breaks, not a sentence


def word_of_tokens(word_starts: list[int], text: str, offsets, sequence_ids) -> list[int | None]:
    """The word index of every token (None for special tokens and padding).

    A token's start is moved past whitespace first (Metaspace "▁word" tokens and untrimmed
    byte-level "Ġword" tokens include the space before the word).

    >>> word_of_tokens([0, 5], "John lives", [(0, 0), (0, 4), (4, 8), (8, 10), (0, 0)], [None, 0, 0, 0, None])
    [None, 0, 1, 1, None]
    """
    out: list[int | None] = []
    for (a, b), seq in zip(offsets, sequence_ids):
        if seq is None:
            out.append(None)
            continue
        while a < b and text[a].isspace():
            a += 1
        out.append(bisect_right(word_starts, a) - 1)
    return out


def align_labels(
    token_words: list[int | None],
    word_labels: list[int],
    label_all_subtokens: bool = False,
    continuation: dict[int, int] | None = None,
) -> list[int]:
    """Token labels from word labels: the first sub-token of a word gets its label, the others
    IGNORE_INDEX (or, with label_all_subtokens, the label mapped through `continuation`, B-X -> I-X).

    >>> align_labels([None, 0, 1, 1, None], [3, 1])
    [-100, 3, 1, -100, -100]
    >>> align_labels([None, 0, 0, 1], [3, 1], True, {3: 4})
    [-100, 3, 4, 1]
    """
    out, prev = [], None
    for w in token_words:
        if w is None:
            out.append(IGNORE_INDEX)
        elif w != prev:
            out.append(word_labels[w])
        elif label_all_subtokens:
            lab = word_labels[w]
            out.append((continuation or {}).get(lab, lab))
        else:
            out.append(IGNORE_INDEX)
        prev = w if w is not None else prev
    return out


def _logits(outputs: list[Any], name: str = "logits") -> torch.Tensor:
    return torch.cat([getattr(o, name) if not isinstance(o, torch.Tensor) else o for o in outputs]).detach().float()


def _label_of(id2label: dict, i: int) -> str:
    if i in id2label:
        return id2label[i]
    if str(i) in id2label:  # config.json round trips make the keys strings
        return id2label[str(i)]
    raise ValueError(f"id2label has no entry for id {i}")


class TagTask(Task):
    name = "tag"
    head = "ForTokenClassification"
    main_metric = "f1"

    def __init__(self, label_all_subtokens: bool = False, format: str = "auto"):
        if format not in ("auto", "spans", "word/tag"):
            raise ValueError(f"format must be 'auto', 'spans' or 'word/tag', got {format!r}")
        self.label_all_subtokens = label_all_subtokens
        self.format = format

    def read(self, path: str, text_column=None, label_column=None, pair_column=None, **columns) -> list[Example]:
        """A CoNLL file: word in column text_column (default 0), tag in label_column (default: the last).
        A JSON-lines file (.jsonl, .ndjson, .json), a Parquet file or a datasets directory: one sentence per
        row, a list of words under text_column (default "tokens") and a list of tag names under label_column
        (default "tags"; a datasets list of ClassLabel gives its names)."""
        if pair_column is not None or columns:
            raise ValueError(
                f"{path}: the tag task reads words and tags only; unexpected columns "
                f"{ {'pair_column': pair_column, **columns} }"
            )
        if str(path).lower().endswith((".jsonl", ".ndjson", ".json")) or table_format(path):  # a table's rows as lines
            return read_tagged_jsonl(path, text_column or "tokens", label_column or "tags")
        if str(path).lower().endswith(".csv"):
            raise ValueError(
                f"{path}: the tag task reads CoNLL (one word and its tag per line, a blank line between "
                'sentences) or JSON lines ({"tokens": [...], "tags": [...]}), not CSV'
            )
        word, label = (_column(path, "text_column", text_column, 0), _column(path, "label_column", label_column, -1))
        examples = read_conll(path, word, label)
        if len(examples) == 1 and len(examples[0].text) > MAX_SENTENCE_WORDS:
            raise ValueError(
                f"{path}: read as CoNLL, the whole file is one sentence of {len(examples[0].text):,} words; "
                "CoNLL separates sentences with blank lines (is it a table of texts and labels? the "
                "tag task needs one word per line)"
            )
        return examples

    def label_set(self, examples: list[Example]) -> list[str]:
        tags = {t for ex in examples for t in (ex.label or [])}
        if not tags:
            raise ValueError(f"{examples[0].where if examples else 'training data'}: no tags in the training data")
        return sorted(tags)

    def featurize(
        self, examples: list[Example], tokenizer, max_length: int, label2id: dict[str, int] | None, stride: int = 128
    ) -> Features:
        if not examples:
            raise ValueError("featurize: no examples")
        labelled = [ex.label is not None for ex in examples]
        if any(labelled) and not all(labelled):
            raise ValueError(f"{examples[labelled.index(False)].where}: some sentences have tags and some not")
        labelled = all(labelled) and label2id is not None
        texts, starts = [], []
        for ex in examples:
            words = ex.text
            if (
                not isinstance(words, list)
                or not words
                or any(not isinstance(w, str) or not w or w.split() != [w] for w in words)
            ):
                raise ValueError(
                    f"{ex.where}: a sentence is a non-empty list of words without spaces, got {words!r:.80}"
                )
            if ex.label is not None and len(ex.label) != len(words):
                raise ValueError(f"{ex.where}: {len(words)} words but {len(ex.label)} tags")
            texts.append(" ".join(words))
            starts.append(_starts(words))
        encs = tokenizer.encode_batch(texts, truncation=True, max_length=max_length, padding=True)
        continuation = {}
        if labelled and self.label_all_subtokens:  # B-X -> I-X where I-X exists, as transformers' examples
            for tag, i in label2id.items():
                prefix, kind = split_tag(tag)
                if prefix == "B" and f"I-{kind}" in label2id:
                    continuation[i] = label2id[f"I-{kind}"]
        rows_labels, first_tokens, truncated, missing = [], [], 0, 0
        for ex, text, ws, enc in zip(examples, texts, starts, encs):
            token_words = word_of_tokens(ws, text, enc.offsets, enc.sequence_ids)
            first = [-1] * len(ws)
            for t in range(len(token_words) - 1, -1, -1):  # backwards: the first sub-token wins
                if token_words[t] is not None:
                    first[token_words[t]] = t
            lost = first.count(-1)
            missing += lost
            truncated += bool(enc.overflowing)
            first_tokens.append(first)
            if labelled:
                ids = []
                for k, tag in enumerate(ex.label):
                    if tag not in label2id:
                        raise ValueError(
                            f"{ex.where}: tag {tag!r} (word {k + 1}, {ex.text[k]!r}) was not seen in "
                            f"training; known tags: {sorted(label2id)}"
                        )
                    ids.append(label2id[tag])
                rows_labels.append(align_labels(token_words, ids, self.label_all_subtokens, continuation))
        tensors = model_tensors(encs)
        if labelled:
            tensors["labels"] = torch.tensor(rows_labels, dtype=torch.long)
        return Features(
            tensors,
            [[i] for i in range(len(examples))],
            {"first_token": first_tokens, "words_without_prediction": missing},
            truncated,
        )

    def predict(
        self, outputs: list[Any], features: Features, examples: list[Example], id2label: dict[int, str] | None
    ) -> list[dict]:
        if id2label is None:
            raise ValueError("the tag task needs id2label to name its predictions")
        probs = _logits(outputs).softmax(-1)  # (N, T, L)
        if probs.shape[0] != len(features):
            raise ValueError(f"{probs.shape[0]} rows of logits for {len(features)} rows of features")
        best_p, best = probs.max(-1)
        out = []
        for i, ex in enumerate(examples):
            (row,) = features.rows_of_example[i]
            tags, scores = [], []
            for t in features.extra["first_token"][i]:
                tags.append(_label_of(id2label, int(best[row, t])) if t >= 0 else None)
                scores.append(float(best_p[row, t]) if t >= 0 else None)
            out.append({"words": list(ex.text), "tags": tags, "scores": scores})
        return out

    def metrics(self, predictions: list[dict], examples: list[Example]) -> dict[str, float]:
        if any(ex.label is None for ex in examples):
            raise ValueError("metrics need tagged sentences")
        gold = [ex.label for ex in examples]
        guessed = [[t if t is not None else "O" for t in p["tags"]] for p in predictions]  # truncated: O
        return conlleval(gold, guessed)

    def format_prediction(self, prediction: dict) -> str:
        """'[PER John Smith] lives in [LOC Paris] .' (chunk tags) or 'John/NNP lives/VBZ' (others)."""
        words, tags = prediction["words"], [t if t is not None else "O" for t in prediction["tags"]]
        style = self.format
        if style == "auto":
            style = (
                "spans"
                if all(t == "O" or (split_tag(t)[0] in "BIES" and split_tag(t)[1]) for t in tags)
                else "word/tag"
            )
        if style == "word/tag":
            return " ".join(f"{w}/{t}" for w, t in zip(words, prediction["tags"]))
        parts, i = [], 0
        for kind, a, b in chunks(tags):
            parts.extend(words[i:a])
            parts.append(f"[{kind} {' '.join(words[a : b + 1])}]")
            i = b + 1
        parts.extend(words[i:])
        return " ".join(parts)


def _starts(words: list[str]) -> list[int]:
    """Character start of each word in " ".join(words).

    >>> _starts(["John", "lives", "."])
    [0, 5, 11]
    """
    out, pos = [], 0
    for w in words:
        out.append(pos)
        pos += len(w) + 1
    return out


def read_tagged_jsonl(path: str, words_key: str, tags_key: str) -> list[Example]:
    """Sentences of a JSON-lines file, {"tokens": [...], "tags": [...]} per line (tags optional for
    prediction); errors name file:line.

    Tags must be names ("B-PER"): integer ids (as in some dataset dumps) carry no label names to save.
    """
    examples = []
    for row in read_table(path, "jsonl").rows:
        words, tags = row.values.get(words_key), row.values.get(tags_key)
        if not isinstance(words, list) or not words or not all(isinstance(w, str) and w for w in words):
            raise ValueError(f"{row.where}: {words_key!r} must be a non-empty list of words, got {words!r}")
        if tags is not None:
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise ValueError(f"{row.where}: {tags_key!r} must be a list of tag names such as 'B-PER', got {tags!r}")
            if len(tags) != len(words):
                raise ValueError(f"{row.where}: {len(words)} words but {len(tags)} tags")
        examples.append(Example(words, None, tags, id=str(len(examples)), where=row.where))
    return examples


def _column(path: str, key: str, value, default: int) -> int:
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{path}: {key} for a CoNLL file is a column number (0 = first, -1 = last), got {value!r}"
        ) from None
