"""BPE: split a word into characters, then apply the learned merges, lowest rank first.

    >>> bpe = BPE({"l": 0, "o": 1, "w": 2, "lo": 3, "low": 4}, [("l", "o"), ("lo", "w")])
    >>> [t.value for t in bpe.tokenize("lowol")]
    ['low', 'o', 'l']

The byte-level variant (GPT-2, RoBERTa) is this same model behind the ByteLevel
pre-tokenizer, whose 256-symbol alphabet makes every input encodable.
"""

from __future__ import annotations

import json
import random
from itertools import repeat

from .base import DictVocabModel, Token


_NO_MERGE = (float("inf"), -1)


def apply_merges(ids: list[int], spans: list[list[int]] | None, ranks: dict) -> None:
    """Merge adjacent symbols in place, always the pair of lowest rank (leftmost first).

    ranks maps (id_a, id_b) -> (rank, merged_id); spans are [start, end] per symbol (or None,
    for the caller that knows them from the merged tokens' lengths). `found`
    holds the rank of each adjacent pair, so each step is a min and an index over it (in C),
    and a merge re-ranks only the two pairs next to it.

    >>> ids, spans = [0, 1, 0, 1], [[0, 1], [1, 2], [2, 3], [3, 4]]
    >>> apply_merges(ids, spans, {(0, 1): (0, 2), (2, 2): (1, 3)})
    >>> ids, spans
    ([3], [[0, 4]])
    """
    get = ranks.get
    found = list(map(get, zip(ids, ids[1:]), repeat(_NO_MERGE)))
    while found:
        best = min(found)
        if best is _NO_MERGE:
            return
        at = [found.index(best)]  # every non-overlapping occurrence, left to right
        if found.count(best) > 1:
            for i in range(at[0] + 2, len(found)):
                if found[i] == best and i >= at[-1] + 2:
                    at.append(i)
        merged = best[1]
        for i in reversed(at):  # from the right, so that the positions to the left stay put
            ids[i] = merged
            if spans is not None:
                spans[i][1] = spans[i + 1][1]
                del spans[i + 1]
            del ids[i + 1], found[i]
            if i < len(found):
                found[i] = get((merged, ids[i + 1]), _NO_MERGE)
            if i > 0:
                found[i - 1] = get((ids[i - 1], merged), _NO_MERGE)


def _apply_merges_dropout(ids, spans, ranks, dropout: float, rng: random.Random) -> None:
    """BPE-dropout (Provilkov et al. 2020): each merge step skips a candidate with prob. dropout."""
    while len(ids) > 1:
        cands = sorted((ranks[p][0], i) for i, p in enumerate(zip(ids, ids[1:])) if p in ranks)
        chosen = next((i for _, i in cands if rng.random() >= dropout), None)
        if chosen is None:
            return
        ids[chosen] = ranks[(ids[chosen], ids[chosen + 1])][1]
        spans[chosen][1] = spans[chosen + 1][1]
        del ids[chosen + 1], spans[chosen + 1]


class BPE(DictVocabModel):
    def __init__(
        self,
        vocab: dict[str, int],
        merges: list[tuple[str, str]],
        unk_token: str | None = None,
        continuing_subword_prefix: str | None = None,
        end_of_word_suffix: str | None = None,
        fuse_unk: bool = False,
        byte_fallback: bool = False,
        dropout: float | None = None,
        ignore_merges: bool = False,
        seed: int | None = None,
    ):
        self.vocab = dict(vocab)
        self.vocab_r = {i: t for t, i in self.vocab.items()}
        self.merges = [_merge_pair(m, rank) for rank, m in enumerate(merges)]
        self.unk_token = unk_token
        self.continuing_subword_prefix = continuing_subword_prefix
        self.end_of_word_suffix = end_of_word_suffix
        self.fuse_unk = fuse_unk
        self.byte_fallback = byte_fallback
        if dropout is not None and not 0.0 <= dropout <= 1.0:
            raise ValueError(f"BPE dropout must be in [0, 1], got {dropout}")
        self.dropout = dropout
        self.ignore_merges = ignore_merges
        self._rng = random.Random(seed)
        prefix_len = len(continuing_subword_prefix or "")
        self.ranks: dict[tuple[int, int], tuple[int, int]] = {}  # (a id, b id) -> (rank, merged id)
        for rank, (a, b) in enumerate(self.merges):
            for part in (a, b):
                if part not in self.vocab:
                    raise ValueError(f"BPE merge {rank} ({a!r}, {b!r}): {part!r} is not in the vocabulary")
            new = a + b[prefix_len:]
            if new not in self.vocab:
                raise ValueError(f"BPE merge {rank} ({a!r}, {b!r}): result {new!r} is not in the vocabulary")
            self.ranks.setdefault((self.vocab[a], self.vocab[b]), (rank, self.vocab[new]))

    def _symbols(self, word: str) -> tuple[list[int], list[list[int]]]:
        """Initial symbols: one per char (with prefix / suffix), unknowns handled."""
        vocab, prefix, suffix = self.vocab, self.continuing_subword_prefix, self.end_of_word_suffix
        if not prefix and not suffix:  # the common case (byte-level BPE): one vocabulary lookup per char
            ids = list(map(vocab.get, word))
            if None not in ids:
                return ids, [[i, i + 1] for i in range(len(word))]
        ids, spans = [], []
        unk_id = None
        last_unk = False
        n = len(word)
        for i, c in enumerate(word):
            s = c
            if prefix and i > 0:
                s = prefix + s
            if suffix and i == n - 1:
                s = s + suffix
            tid = vocab.get(s)
            if tid is not None:
                ids.append(tid)
                spans.append([i, i + 1])
                last_unk = False
                continue
            if self.byte_fallback:
                # like `tokenizers`, the bytes of the whole symbol (prefix and suffix included)
                byte_ids = [vocab.get(f"<0x{b:02X}>") for b in s.encode("utf-8")]
                if all(b is not None for b in byte_ids):
                    for b in byte_ids:
                        ids.append(b)
                        spans.append([i, i + 1])
                    last_unk = False
                    continue
            if self.unk_token is None:
                continue  # `tokenizers` drops a char it cannot represent when there is no unk token
            if unk_id is None:
                unk_id = vocab.get(self.unk_token)
                if unk_id is None:
                    raise KeyError(
                        f"BPE: unk_token {self.unk_token!r} is not in the vocabulary "
                        f"(needed for {c!r} in {word[:50]!r})"
                    )
            if self.fuse_unk and last_unk:
                spans[-1][1] = i + 1
            else:
                ids.append(unk_id)
                spans.append([i, i + 1])
            last_unk = True
        return ids, spans

    def tokenize(self, sequence: str) -> list[Token]:
        # (no cache here: the fast encoder memoizes words, see fast/words.py)
        if not sequence:
            return []
        if self.ignore_merges and sequence in self.vocab:
            return [Token(self.vocab[sequence], sequence, (0, len(sequence)))]
        ids, spans = self._symbols(sequence)
        if self.dropout:
            _apply_merges_dropout(ids, spans, self.ranks, self.dropout, self._rng)
        else:
            apply_merges(ids, spans, self.ranks)
        return [Token(i, self.vocab_r[i], (a, b)) for i, (a, b) in zip(ids, spans)]

    def to_json(self):
        return {
            "type": "BPE",
            "dropout": self.dropout,
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.continuing_subword_prefix,
            "end_of_word_suffix": self.end_of_word_suffix,
            "fuse_unk": self.fuse_unk,
            "byte_fallback": self.byte_fallback,
            "ignore_merges": self.ignore_merges,
            "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1])),
            "merges": [list(m) for m in self.merges],
        }

    @classmethod
    def from_json(cls, data):
        return cls(
            data["vocab"],
            data.get("merges", []),
            unk_token=data.get("unk_token"),
            continuing_subword_prefix=data.get("continuing_subword_prefix"),
            end_of_word_suffix=data.get("end_of_word_suffix"),
            fuse_unk=data.get("fuse_unk", False),
            byte_fallback=data.get("byte_fallback", False),
            dropout=data.get("dropout"),
            ignore_merges=data.get("ignore_merges", False),
        )

    @classmethod
    def from_files(cls, vocab_json, merges_txt, **kw) -> "BPE":
        """GPT-2 / RoBERTa's vocab.json + merges.txt."""
        try:
            with open(vocab_json, encoding="utf-8") as f:
                vocab = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{vocab_json}: not valid JSON ({e})") from None
        if not isinstance(vocab, dict):
            raise ValueError(f"{vocab_json}: expected a JSON object token -> id")
        merges = []
        with open(merges_txt, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.rstrip("\r\n")
                if (n == 1 and line.startswith("#version")) or not line:
                    continue
                parts = line.split(" ")
                if len(parts) != 2:
                    raise ValueError(f"{merges_txt}:{n}: a merge line needs exactly two tokens, got {line!r}")
                merges.append((parts[0], parts[1]))
        return cls(vocab, merges, **kw)


def _merge_pair(m, rank) -> tuple[str, str]:
    if isinstance(m, str):  # the older tokenizer.json form "a b"
        parts = m.split(" ", 1)
    else:
        parts = list(m)
    if len(parts) != 2:
        raise ValueError(f"BPE merge {rank}: expected two tokens, got {m!r}")
    return parts[0], parts[1]
