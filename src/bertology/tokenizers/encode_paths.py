"""From the pieces of one text to the model's tokens, with offsets into the original text.

The Tokenizer cuts a text into pieces (added tokens apart, the rest normalized); every other
piece reaches the model by one of three paths, which give the same result:

  WordCache.encode   whole words from a cache, the output lists joined in C. For WordPiece and
                     BPE (no dropout) behind a pre-tokenizer that only keeps the matches of a
                     pattern (`PreTokenizer.word_split`), on text the normalizer left aligned
                     char for char (`NormalizedString.spans is None`). The hot path.
  encode_matches     the same pre-tokenizers on re-aligned text, or with any other model
  encode_pieces      any pre-tokenizer: its NormalizedString pieces, one word each

Each appends one entry per token to the `Columns` and returns how many words it read.
"""
from __future__ import annotations

from itertools import accumulate, chain, count, repeat
from operator import add, itemgetter

from .base import Model
from .bpe import BPE
from .byte_level import to_byte_chars
from .normalized_string import NormalizedString
from .pre_tokenizers import WordSplit
from .wordpiece import WordPiece

_WORD_CACHE_LIMIT = 200_000  # distinct words; real text has a Zipfian vocabulary

# A cached word: the model's tokens as (ids, tokens, starts, ends), offsets relative to the word.
_IDS, _TOKENS, _STARTS, _ENDS = (itemgetter(i) for i in range(4))


class Columns:
    """The token lists of one sequence under construction (an Encoding's first four fields)."""
    __slots__ = ("ids", "tokens", "offsets", "words")

    def __init__(self):
        self.ids: list[int] = []
        self.tokens: list[str] = []
        self.offsets: list[tuple[int, int]] = []
        self.words: list[int] = []

    def append(self, id: int, token: str, offsets: tuple[int, int], word: int) -> None:
        self.ids.append(id)
        self.tokens.append(token)
        self.offsets.append(offsets)
        self.words.append(word)


class WordCache:
    """word -> the model's tokens for it, for models whose output depends on the word alone.

    Entries are tuples of tuples of ints and strs only: the garbage collector stops tracking
    such tuples the first time it sees them, so a large cache costs later collections nothing.
    """

    def __init__(self, model: Model, split: WordSplit):
        self.model, self.split = model, split
        self.entries: dict[str, tuple] = {}

    def __len__(self):
        return len(self.entries)

    @staticmethod
    def applies(model: Model, split: WordSplit | None) -> bool:
        """Whether the hot path can serve this model behind this word split."""
        return split is not None and (type(model) is WordPiece or (type(model) is BPE and not model.dropout))

    def entry(self, word: str) -> tuple:
        """The model's tokens for one word as (ids, tokens, starts, ends), offsets in chars of the
        word, as the general path maps them: a byte-level token spans the chars its first and
        last byte come from."""
        if not self.split.byte_level:
            toks = self.model.tokenize(word)
            return (tuple(t.id for t in toks), tuple(t.value for t in toks),
                    tuple(t.offsets[0] for t in toks), tuple(t.offsets[1] for t in toks))
        toks = self.model.tokenize(to_byte_chars(word))
        if word.isascii():
            char_of = range(len(word))
        else:  # byte i of the word's UTF-8 -> the index of its char
            char_of = [i for i, c in enumerate(word) for _ in range(len(c.encode("utf-8")))]
        return (tuple(t.id for t in toks), tuple(t.value for t in toks),
                tuple(char_of[t.offsets[0]] for t in toks), tuple(char_of[t.offsets[1] - 1] + 1 for t in toks))

    def encode(self, s: str, base: int, out: Columns, first_word: int) -> int:
        """Encode s (whose char i is original[base + i]) into out; returns the word count.

        Exactly the general path's result, without a Python loop per word or per token: the
        pattern cuts s into [gap, word, gap, ..., word, gap], running sums of the part lengths
        give each word's start, the cache gives each word's tokens, and map / zip / chain
        join them up in C.
        """
        split, cache = self.split, self.entries
        parts = (split.ascii if s.isascii() else split.unicode).split(s)
        text_words = parts[1::2]
        word_starts = list(accumulate(map(len, parts), initial=base))[1:-1:2]
        entries = list(map(cache.get, text_words))
        if None in entries:  # words not seen before
            for i, e in enumerate(entries):
                if e is None:
                    e = entries[i] = self.entry(text_words[i])
                    if len(cache) < _WORD_CACHE_LIMIT:
                        cache[text_words[i]] = e
        counts = list(map(len, map(_IDS, entries)))
        out.ids += chain.from_iterable(map(_IDS, entries))
        out.tokens += chain.from_iterable(map(_TOKENS, entries))
        token_starts = list(chain.from_iterable(map(repeat, word_starts, counts)))  # its word's start, per token
        out.offsets += zip(map(add, token_starts, chain.from_iterable(map(_STARTS, entries))),
                           map(add, token_starts, chain.from_iterable(map(_ENDS, entries))))
        out.words += chain.from_iterable(map(repeat, count(first_word), counts))
        return len(text_words)


def encode_matches(ns: NormalizedString, pattern, model: Model, out: Columns, first_word: int) -> int:
    """Each match of pattern in ns is a word for the model; offsets through ns's alignment."""
    tokenize = model.tokenize
    ids, tokens, offsets, words = out.ids, out.tokens, out.offsets, out.words
    spans, base = ns.spans, ns.offset
    word = first_word
    for m in pattern.finditer(ns.normalized):
        a = m.start()
        for t in tokenize(m.group()):
            ids.append(t.id)
            tokens.append(t.value)
            s, e = t.offsets
            if spans is None:
                offsets.append((base + a + s, base + a + e))
            elif e > s:
                offsets.append((spans[a + s][0], spans[a + e - 1][1]))
            else:
                offsets.append(ns.original_span(a + s, a + e))
            words.append(word)
        word += 1
    return word - first_word


def encode_pieces(pieces: list[NormalizedString], model: Model, out: Columns, first_word: int) -> int:
    """Each piece (from any pre-tokenizer) is a word for the model."""
    tokenize = model.tokenize
    ids, tokens, offsets, words = out.ids, out.tokens, out.offsets, out.words
    word = first_word
    for p in pieces:
        if p.spans is None:  # plain slice of the original: offsets are a shift
            base = p.offset
            for t in tokenize(p.normalized):
                ids.append(t.id)
                tokens.append(t.value)
                a, b = t.offsets
                offsets.append((base + a, base + b))
                words.append(word)
        else:
            span = p.original_span
            for t in tokenize(p.normalized):
                ids.append(t.id)
                tokens.append(t.value)
                offsets.append(span(*t.offsets))
                words.append(word)
        word += 1
    return word - first_word
