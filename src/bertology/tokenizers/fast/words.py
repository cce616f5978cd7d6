"""Words to tokens without a Python loop per token: the WordCache and the Flat batch.

A word's tokens come as an entry (ids, tokens, starts, ends, shape) with offsets relative to the
word (shape: the same as pairs, the key of `placed`), made from the model's output and memoized
per word where the model's output depends on the word alone (WordPiece, BPE without dropout,
Unigram with float64 scores). Three ways from a piece of text to tokens, which give the general
path's result:

  WordCache.encode   whole words from the cache, the output lists joined in C: behind a
                     pre-tokenizer that only keeps the matches of a pattern (splits.word_split),
                     on text the normalizer left aligned char for char. The hot path.
  encode_matches     the same pre-tokenizers on re-aligned text, or with a model not memoized
  encode_pieces      any pre-tokenizer: its NormalizedString pieces, one word each

Each appends one entry per token to the `Columns` and returns how many words it read.
encode_batch's hot path does the first one for a whole batch of texts at once
(WordCache.encode_texts -> Flat; for Unigram behind a splitting Metaspace,
WordCache.encode_metaspace).

The tables that share tuples between entries (`shapes`, `placed`, the offset pairs) belong to
the WordCache, so they go with it when the model changes.
"""

from __future__ import annotations

from functools import partial
from itertools import accumulate, chain, compress, count, repeat
from operator import itemgetter, not_, rshift, sub
from typing import Callable, Iterable

from ..base import Model
from ..bpe import BPE
from ..byte_level import to_byte_chars
from ..encoding import Encoding
from ..normalized_string import NormalizedString
from ..post_processors import trimmed_offsets
from ..pre_tokenizers import Metaspace
from ..unigram import Unigram
from ..wordpiece import WordPiece
from .models import UnigramColumns, bpe_columns, token_columns
from .splits import WordSplit

_WORD_CACHE_LIMIT = 200_000  # distinct words per table; real text has a Zipfian vocabulary

_IDS, _TOKENS, _SHAPE = itemgetter(0), itemgetter(1), itemgetter(4)
_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_ALL_BUT_LAST, _LAST = itemgetter(slice(None, -1)), itemgetter(-1)
Entry = tuple  # (ids, tokens, starts, ends, shape): tuples of ints / strs, offsets relative to the word


class _Shared(dict):
    """Each key looked up for the first time is stored as its own value (up to a limit), so
    that equal tuples made later are looked up instead of kept. A batch keeps an offset pair
    per token; Python's garbage collector runs whenever enough new container objects have
    piled up and then walks the older ones too, so a new tuple per token would cost a large
    share of the encoding time. Looked up, a pair allocates nothing."""

    limit = 200_000

    def __missing__(self, key):
        if len(self) < self.limit:
            self[key] = key
        return key


class _Shapes(dict):
    """Offset pairs relative to a word -> (starts, ends, pairs) tuples, so that entries share
    them (bounded); the pairs themselves are shared too."""

    limit = 100_000

    def __init__(self):
        super().__init__()
        self.pairs = _Shared()

    def __missing__(self, shape):
        starts, ends = tuple(map(_FIRST, shape)), tuple(map(_SECOND, shape))
        shape = tuple(map(self.pairs.__getitem__, zip(starts, ends)))
        if len(self) < self.limit:
            self[shape] = starts, ends, shape
        return starts, ends, shape


class _Placed(dict):
    """(start, shape) -> the offsets of a word at `start` of its text whose tokens have the
    relative offsets `shape`. Real text has few distinct shapes at few distinct starts, so a
    batch's offsets are one lookup per word, with no tuple made per token."""

    limit = 500_000

    def __missing__(self, key):
        start, shape = key
        placed = tuple([(start + a, start + b) for a, b in shape])
        if len(self) < self.limit:
            self[key] = placed
        return placed


def _plus_one(total: int, n: int) -> int:
    return total + n + 1


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

    def encoding(self, type_id: int) -> Encoding:
        """The sequence as an Encoding before post-processing (all its tokens of type type_id)."""
        n = len(self.ids)
        return Encoding(self.ids, self.tokens, self.offsets, self.words, [type_id] * n, [0] * n, [1] * n, [type_id] * n)


def _fill(entries: list, words: list[str], cache: dict[str, Entry], new_entry: Callable[[str], Entry]) -> None:
    """Fill the None entries (words not in cache) with new_entry(word), memoized in the cache
    (up to its limit): a new word that occurs again in the same batch is made once."""
    for i in compress(count(), map(not_, entries)):  # (an entry is a non-empty tuple)
        word = words[i]
        e = cache.get(word)
        if e is None:
            e = new_entry(word)
            if len(cache) < _WORD_CACHE_LIMIT:
                cache[word] = e
        entries[i] = e


def _words(texts: list[str], split: WordSplit) -> tuple[list[str], list[int], "Iterable[int]"]:
    """The words of all texts (flat), how many each text has, and where each starts in its text.

    A split whose words tile the text (split.tiles) takes findall, and a word starts where the
    words before it in its text end. Otherwise each text's parts minus its last gap are (gap,
    word) pairs, so in the flattened parts every word sits at an odd index and the running sum
    of the part lengths gives its position; subtracting where its text begins makes that
    relative to the text.
    """
    if split.tiles:
        asc, uni = split.ascii.findall, split.unicode.findall
        per_text = [asc(s) if s.isascii() else uni(s) for s in texts]
        words = list(chain.from_iterable(per_text))
        lengths = list(map(len, words))
        n_chars = list(map(len, texts))
        if sum(lengths) != sum(n_chars):
            raise RuntimeError(f"the words of {split.unicode.pattern!r} do not tile the text (split.tiles is wrong)")
        n_words = list(map(len, per_text))
        text_starts = chain.from_iterable(map(repeat, accumulate(n_chars, initial=0), n_words))
        return words, n_words, map(sub, accumulate(lengths, initial=0), text_starts)
    asc, uni = split.ascii.split, split.unicode.split
    parts = [asc(s) if s.isascii() else uni(s) for s in texts]
    pairs = list(map(_ALL_BUT_LAST, parts))  # [gap, word, gap, word, ...] per text
    n_words = list(map(rshift, map(len, pairs), repeat(1)))
    flat = list(chain.from_iterable(pairs))
    positions = list(accumulate(map(len, flat), initial=0))
    # where each text's first part lands in the running sum: the lengths of the texts before
    # it, less their dropped last gaps
    text_starts = accumulate(map(sub, map(len, texts), map(len, map(_LAST, parts))), initial=0)
    return flat[1::2], n_words, map(sub, positions[1::2], chain.from_iterable(map(repeat, text_starts, n_words)))


class WordCache:
    """Memoized entries, for models whose output depends on the word alone (WordPiece, BPE
    without dropout), so that the model splits each distinct word once.

    Entries are tuples of ints and strs only: the garbage collector stops tracking such tuples
    the first time it sees them, so a large cache costs later collections almost nothing (the
    models themselves keep no cache of Token lists, which it would scan on every full collection).
    """

    def __init__(self, model: Model):
        self.model = model
        self.memoize = self.applies(model)
        # the model's tokens of a word as columns (models.py)
        if type(model) is BPE:
            self.columns = partial(bpe_columns, model)
        elif type(model) is Unigram:
            self.columns = UnigramColumns(model)
        else:
            self.columns = partial(token_columns, model)
        self.shapes, self.placed = _Shapes(), _Placed()
        self.entries: dict[str, Entry] = {}  # model word -> entry
        self.by_text: dict[str, Entry] = {}  # byte-level hot path: original word -> entry in its chars
        # byte-level, offsets trimmed as trimmed_offsets does (encode_texts): the entries of words
        # that are not first in their text, and those of first words with a prefix space
        self.trimmed: dict[str, Entry] = {}
        self.trimmed_first: dict[str, Entry] = {}
        self.prepended: dict[str, Entry] = {}  # Metaspace: a text's first word, r prepended
        self.after_r: dict[str, Entry] = {}  # Metaspace: the part of a word after its r -> the word's entry

    def __len__(self):
        return len(self.entries)

    def make_entry(self, ids, tokens, starts, ends) -> Entry:
        starts, ends, shape = self.shapes[tuple(zip(starts, ends))]
        return tuple(ids), tuple(tokens), starts, ends, shape

    def model_entry(self, word: str) -> Entry:
        """The model's tokens for word as an entry (not memoized).

        >>> WordCache(WordPiece({"un": 0, "##able": 1})).model_entry("unable")
        ((0, 1), ('un', '##able'), (0, 2), (2, 6), ((0, 2), (2, 6)))
        """
        return self.make_entry(*self.columns(word))

    @staticmethod
    def applies(model: Model) -> bool:
        """Whether the model's output is a function of the word alone, so words can be memoized."""
        return (
            type(model) is WordPiece
            or (type(model) is BPE and not model.dropout)
            or (type(model) is Unigram and not model.float32)
        )  # (float32: whole sentences)

    def prepended_entry(self, word: str, entry: Entry) -> Entry:
        """For a word that Metaspace made by prepending its first char (the replacement) to a
        text, its entry (`entry`) as the text sees it: that char spans the text's first char, as
        does the next one."""
        e = self.prepended.get(word)
        if e is None:
            ids, tokens, starts, ends, _ = entry
            e = self.make_entry(ids, tokens, [max(a - 1, 0) for a in starts], [max(b - 2, 0) + 1 for b in ends])
            if len(self.prepended) < _WORD_CACHE_LIMIT:
                self.prepended[word] = e
        return e

    def encode_metaspace(self, texts: list[str], pre: Metaspace) -> "Flat":
        """What the general path makes of each text (normalized char for char) under
        pre (a splitting Metaspace), as one Flat: spaces become the replacement r, r goes in
        front of a text that does not start with one (unless prepend_scheme is 'never'; 'first'
        is 'always' for a whole text), and a word starts at each r. A word's offsets are its
        position in the text less the prepended r, so they come from `placed` as encode_texts'
        do; a prepended first word has its own entry (prepended_entry), and so does a first
        word left without an r.

        The words are looked up as the parts of the text between its r's (`after_r`, the entry
        of r + part), so that no word string is made per word.
        """
        r = pre.replacement
        prepend = pre.prepend_scheme != "never"
        parts: list[str] = []  # each word without its r
        n_words, shift = [], []  # per text: its word count, 1 where its first word has no r in the text
        firsts = []  # index in parts of each text's first word when it has no r in the text
        for s in texts:
            if not s:
                n_words.append(0)
                shift.append(0)
                continue
            text_parts = s.replace(" ", r).split(r)
            k = len(parts)
            if text_parts[0]:
                firsts.append(k)
                shift.append(1)
            else:
                del text_parts[0]
                shift.append(0)
            parts += text_parts
            n_words.append(len(parts) - k)
        cache = self.after_r
        entries = list(map(cache.get, parts))
        if None in entries:
            _fill(entries, parts, cache, lambda part: self.model_entry(r + part))
        for i in firsts:  # (r prepended, or no r at all)
            entries[i] = self.prepended_entry(r + parts[i], entries[i]) if prepend else self.entry(parts[i])
        # a word's start in its text: the running sum of word lengths (each with its r, as if
        # prepended to a first word without one), less where its text's words begin in that sum
        # and its shift; such a first word comes out at -1, placed at 0
        text_starts = chain.from_iterable(
            map(
                repeat,
                map(sum, zip(accumulate(map(len, texts), initial=0), accumulate(shift, initial=0), shift)),
                n_words,
            )
        )
        word_starts = map(max, map(sub, accumulate(map(len, parts), _plus_one, initial=0), text_starts), repeat(0))
        return _flat(entries, n_words, word_starts, self.placed)

    def entry(self, word: str) -> Entry:
        """model_entry(word), memoized where the model allows."""
        e = self.entries.get(word)
        if e is None:
            e = self.model_entry(word)
            if self.memoize and len(self.entries) < _WORD_CACHE_LIMIT:
                self.entries[word] = e
        return e

    def text_entry(self, word: str) -> Entry:
        """The entry of a word of the original text under a byte-level split: the model sees the
        word's byte stand-ins, and a token spans the chars its first and last byte come from."""
        e = self.entry(to_byte_chars(word))
        if word.isascii():  # one byte per char
            return e
        ids, tokens, starts, ends, _ = e
        char_of = [i for i, c in enumerate(word) for _ in range(len(c.encode("utf-8")))]  # byte -> its char
        return self.make_entry(ids, tokens, [char_of[a] for a in starts], [char_of[b - 1] + 1 for b in ends])

    def trimmed_entry(self, word: str, first_with_prefix_space: bool = False) -> Entry:
        """text_entry(word) with its offsets trimmed (post_processors.trimmed_offsets), as they
        are when the word is not first in its text, or first with add_prefix_space set."""
        ids, tokens, starts, ends, shape = self.text_entry(word)
        offsets = trimmed_offsets(tokens, list(shape), first_with_prefix_space, [0] if first_with_prefix_space else [])
        return self.make_entry(ids, tokens, map(_FIRST, offsets), map(_SECOND, offsets))

    def encode(self, s: str, base: int, split: WordSplit, out: Columns, first_word: int) -> int:
        """Encode s (whose char i is original[base + i]), cut into words by split, into out;
        returns the word count.

        Exactly the general path's result, without a Python loop per word or per token: the
        pattern cuts s into [gap, word, gap, ..., word, gap], running sums of the part lengths
        give each word's start, the cache gives each word's tokens, `placed` their offsets, and
        map / zip / chain join them up in C.
        """
        if split.byte_level:
            cache, new_entry = self.by_text, self.text_entry
        else:
            cache, new_entry = self.entries, self.entry
        parts = (split.ascii if s.isascii() else split.unicode).split(s)
        text_words = parts[1::2]
        word_starts = list(accumulate(map(len, parts), initial=base))[1:-1:2]
        entries = list(map(cache.get, text_words))
        if None in entries:
            _fill(entries, text_words, cache, new_entry)
        out.ids += chain.from_iterable(map(_IDS, entries))
        out.tokens += chain.from_iterable(map(_TOKENS, entries))
        out.offsets += chain.from_iterable(map(self.placed.__getitem__, zip(word_starts, map(_SHAPE, entries))))
        out.words += chain.from_iterable(map(repeat, count(first_word), map(len, map(_IDS, entries))))
        return len(text_words)

    def encode_matches(self, ns: NormalizedString, pattern, out: Columns, first_word: int) -> int:
        """Each match of pattern in ns is a word, self.entry(word) its tokens; offsets through ns's alignment."""
        ids, tokens, offsets, words = out.ids, out.tokens, out.offsets, out.words
        spans, base, entry, placed = ns.spans, ns.offset, self.entry, self.placed
        word = first_word
        for m in pattern.finditer(ns.normalized):
            a = m.start()
            w_ids, w_tokens, starts, ends, shape = entry(m.group())
            ids += w_ids
            tokens += w_tokens
            words += repeat(word, len(w_ids))
            if spans is None:
                offsets += placed[base + a, shape]
            else:
                for s, e in zip(starts, ends):
                    if e > s:
                        offsets.append((spans[a + s][0], spans[a + e - 1][1]))
                    else:
                        offsets.append(ns.original_span(a + s, a + e))
            word += 1
        return word - first_word

    def encode_pieces(self, pieces: list[NormalizedString], out: Columns, first_word: int) -> int:
        """Each piece (from any pre-tokenizer) is a word, self.entry(word) its tokens."""
        ids, tokens, offsets, words = out.ids, out.tokens, out.offsets, out.words
        entry, placed = self.entry, self.placed
        word = first_word
        for p in pieces:
            w_ids, w_tokens, starts, ends, shape = entry(p.normalized)
            ids += w_ids
            tokens += w_tokens
            words += repeat(word, len(w_ids))
            if p.spans is None:  # plain slice of the original: offsets are a shift
                offsets += placed[p.offset, shape]
            else:
                offsets += map(p.original_span, starts, ends)
            word += 1
        return word - first_word

    def encode_texts(self, texts: list[str], split: WordSplit, trim: bool | None = None) -> "Flat":
        """encode(text, 0, split, ...) for every text of a batch, as one Flat: the texts'
        columns one after the other, text k's tokens at [bounds[k], bounds[k + 1]). With trim
        (byte-level only) the offsets come trimmed as post_processors.trimmed_offsets trims
        them, add_prefix_space=trim.

        The whole batch goes through each step at once (map / chain / accumulate over all its
        words and tokens), so the Python-level work per text is one pattern match (_words). A
        word's offsets come from `placed`, by its start and its entry's shape.
        """
        if trim is not None:
            if not split.byte_level:
                raise ValueError("encode_texts: trimming offsets needs a byte-level split")
            cache, new_entry = self.trimmed, self.trimmed_entry
        elif split.byte_level:
            cache, new_entry = self.by_text, self.text_entry
        else:
            cache, new_entry = self.entries, self.entry
        words, n_words, word_starts = _words(texts, split)
        entries = list(map(cache.get, words))
        if None in entries:
            _fill(entries, words, cache, new_entry)
        word_bounds = list(accumulate(n_words, initial=0))
        if trim:  # a text's first word keeps a prefix space (trimmed_offsets)
            for i in compress(word_bounds, n_words):
                e = self.trimmed_first.get(words[i])
                if e is None:
                    e = self.trimmed_entry(words[i], True)
                    if len(self.trimmed_first) < _WORD_CACHE_LIMIT:
                        self.trimmed_first[words[i]] = e
                entries[i] = e
        return _flat(entries, n_words, word_starts, self.placed, word_bounds)

    def encode_ids(self, texts: list[str], split: WordSplit) -> tuple[list[int], list[int], list[int]]:
        """encode_texts(texts, split) for a caller that reads only ids and where words begin:
        (ids of all texts, one after the other; tokens of each text; tokens of each word that has
        any, the texts' words one after the other). No token strings, offsets or word ids are made.

        >>> from bertology.tokenizers.fast.splits import BERT_SPLIT
        >>> WordCache(WordPiece({"un": 0, "##able": 1, "a": 2})).encode_ids(["a unable", "a"], BERT_SPLIT)
        ([2, 0, 1, 2], [3, 1], [1, 2, 1])
        """
        cache, new_entry = (self.by_text, self.text_entry) if split.byte_level else (self.entries, self.entry)
        words, n_words, _ = _words(texts, split)
        entries = list(map(cache.get, words))
        if None in entries:
            _fill(entries, words, cache, new_entry)
        word_ids = list(map(_IDS, entries))
        counts = list(map(len, word_ids))
        token_ends = list(accumulate(counts, initial=0))
        text_ends = list(map(token_ends.__getitem__, accumulate(n_words, initial=0)))
        lengths = list(map(sub, text_ends[1:], text_ends[:-1]))
        return list(chain.from_iterable(word_ids)), lengths, list(filter(None, counts))


def _flat(
    entries: list,
    n_words: list[int],
    word_starts: "Iterable[int]",
    placed: _Placed,
    word_bounds: list[int] | None = None,
) -> "Flat":
    """The Flat of a batch whose words have these entries, texts these word counts, and words
    these starts in their texts."""
    if word_bounds is None:
        word_bounds = list(accumulate(n_words, initial=0))
    counts = list(map(len, map(_IDS, entries)))
    token_ends = list(accumulate(counts, initial=0))
    return Flat(
        list(chain.from_iterable(map(_IDS, entries))),
        list(chain.from_iterable(map(_TOKENS, entries))),
        list(map(token_ends.__getitem__, word_bounds)),
        entries,
        n_words,
        list(word_starts),
        counts,
        placed,
    )


class Flat:
    """The first four columns of an Encoding for a batch of texts, one text after the other:
    text k's tokens are [bounds[k], bounds[k + 1]); offsets and word ids are its own.

    ids and tokens are made at once; offsets and word ids for the whole batch when first read
    (most callers read ids only), from the words' entries and starts kept until then.
    """

    __slots__ = (
        "ids",
        "tokens",
        "bounds",
        "_entries",
        "_n_words",
        "_word_starts",
        "_counts",
        "_placed",
        "_offsets",
        "_words",
    )

    def __init__(
        self,
        ids: list[int],
        tokens: list[str],
        bounds: list[int],
        entries: list[Entry],
        n_words: list[int],
        word_starts: list[int],
        counts: list[int],
        placed: _Placed,
    ):
        self.ids, self.tokens, self.bounds = ids, tokens, bounds
        self._entries, self._n_words, self._word_starts, self._counts = entries, n_words, word_starts, counts
        self._placed = placed
        self._offsets: list[tuple[int, int]] | None = None
        self._words: list[int] | None = None

    @property
    def offsets(self) -> list[tuple[int, int]]:
        if self._offsets is None:
            self._offsets = list(
                chain.from_iterable(map(self._placed.__getitem__, zip(self._word_starts, map(_SHAPE, self._entries))))
            )
            self._drop_sources()
        return self._offsets

    @property
    def words(self) -> list[int]:
        if self._words is None:
            self._words = list(
                chain.from_iterable(map(repeat, chain.from_iterable(map(range, self._n_words)), self._counts))
            )
            self._drop_sources()
        return self._words

    def word_counts(self) -> list[int]:
        """Tokens of each word, the texts' words one after the other (before offsets and word ids are read)."""
        if self._counts is None:
            raise RuntimeError("Flat.word_counts: the word counts went when offsets and word ids were made")
        return self._counts

    def encodings(self, which, type_id: int) -> list[Encoding]:
        """The Encoding of each text k in `which`, as the general path makes it before post-processing."""
        ids, tokens, offsets, words, bounds = self.ids, self.tokens, self.offsets, self.words, self.bounds
        out = []
        for k in which:
            s, e = bounds[k], bounds[k + 1]
            n = e - s
            out.append(
                Encoding(
                    ids[s:e], tokens[s:e], offsets[s:e], words[s:e], [type_id] * n, [0] * n, [1] * n, [type_id] * n
                )
            )
        return out

    def _drop_sources(self) -> None:
        if self._offsets is not None and self._words is not None:
            self._entries = self._n_words = self._word_starts = self._counts = self._placed = None
