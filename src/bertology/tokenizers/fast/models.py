"""A model's tokens for one word as columns (ids, tokens, starts, ends), without Token objects.

What `model.tokenize(word)` gives, by shortcuts that hold for the common models:

* BPE whose symbols are single chars all in the vocabulary (byte-level BPE, no dropout): a
  merged token's string is its chars, so the token lengths give the offsets and the merges
  need no spans (`bpe_columns`);
* Unigram with finite float64 scores: the same Viterbi relaxed as a prefix tree of the pieces
  finds the nodes, with no lattice (`UnigramColumns`, built once per model by the WordCache).

Anything else is `model.tokenize(word)`, made into columns.
"""

from __future__ import annotations

import math
from itertools import accumulate
from operator import sub

from ..base import Model
from ..bpe import BPE, apply_merges
from ..unigram import Unigram

Columns4 = tuple  # (ids, tokens, starts, ends): lists


def token_columns(model: Model, word: str) -> Columns4:
    """model.tokenize(word) as columns."""
    toks = model.tokenize(word)
    return [t.id for t in toks], [t.value for t in toks], [t.offsets[0] for t in toks], [t.offsets[1] for t in toks]


def bpe_columns(model: BPE, word: str) -> Columns4:
    """token_columns(model, word), without spans where every char is a known symbol."""
    if (
        word
        and not (model.continuing_subword_prefix or model.end_of_word_suffix or model.dropout)
        and not (model.ignore_merges and word in model.vocab)
    ):
        ids = list(map(model.vocab.get, word))
        if None not in ids:
            apply_merges(ids, None, model.ranks)
            tokens = list(map(model.vocab_r.__getitem__, ids))
            ends = list(accumulate(map(len, tokens)))
            if ends[-1] == len(word):  # (else a vocabulary that maps two tokens to one id)
                return ids, tokens, list(map(sub, ends, map(len, tokens))), ends
    return token_columns(model, word)


class UnigramColumns:
    """token_columns(model, word) for a Unigram model, by the same Viterbi (same node order, a
    tie keeps the first-found node) with the nodes relaxed as a prefix tree of the pieces finds
    them. The tokens are the vocabulary's own strings. A word with a char no piece covers (an
    unknown node), a path through the unk piece (fused, maybe spelled as bytes) and float32
    scores take model.tokenize.

    >>> UnigramColumns(Unigram([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -1.5)], 0))("abab")
    ([3, 3], ['ab', 'ab'], [0, 2], [2, 4])
    """

    def __init__(self, model: Unigram):
        self.model = model
        self.tokens = [p for p, _ in model.vocab]  # id -> piece
        # only without float32 and with finite scores, where a strict > against -inf is the
        # lattice's first-found rule
        self.fast = not model.float32 and all(map(math.isfinite, model.scores)) and math.isfinite(model.unk_score)
        self.singles = frozenset(p for p in model.pieces if len(p) == 1)  # chars with a piece
        # the pieces' prefix tree: char -> (children, score, id), score -inf and id -1 for a
        # prefix that is no piece (a sum with it is never > the best, so it needs no test)
        self.trie: dict = {}
        if self.fast:
            for p, i in model.pieces.items():
                node = self.trie
                for c in p[:-1]:
                    x = node.get(c)
                    if x is None:
                        x = node[c] = ({}, -math.inf, -1)
                    node = x[0]
                x = node.get(p[-1])
                node[p[-1]] = (x[0] if x is not None else {}, model.scores[i], i)

    def __call__(self, word: str) -> Columns4:
        n = len(word)
        if not self.fast or n == 0 or not self.singles.issuperset(word):
            return token_columns(self.model, word)
        trie, max_len = self.trie, self.model.max_len
        best = [0.0] + [-math.inf] * n  # best[j]: the best path score into j
        back = [0] * (n + 1)  # the start of its last node
        ids = [0] * (n + 1)  # and that node's id
        for i in range(n):
            here = best[i]
            node, j = trie, i
            for ch in word[i : i + max_len]:
                x = node.get(ch)
                if x is None:
                    break
                node, score, pid = x
                j += 1
                c = here + score
                if c > best[j]:
                    best[j] = c
                    back[j] = i
                    ids[j] = pid
        out_ids, starts, ends = [], [], []
        end = n
        while end:
            out_ids.append(ids[end])
            ends.append(end)
            end = back[end]
            starts.append(end)
        if self.model.unk_id in out_ids:  # (a matched unk piece fuses with its neighbours)
            return token_columns(self.model, word)
        out_ids.reverse(), starts.reverse(), ends.reverse()
        return out_ids, list(map(self.tokens.__getitem__, out_ids)), starts, ends
