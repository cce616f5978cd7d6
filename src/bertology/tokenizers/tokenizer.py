"""The Tokenizer: Normalizer -> PreTokenizer -> Model -> PostProcessor -> Decoder.

    text ──normalize──> NormalizedString ──pre-tokenize──> words ──model──> tokens
         ──post-process──> Encoding (special tokens, type ids; truncation, padding)

Added tokens ([MASK], <s>, user tokens) are cut out of the text before everything else and
never split. Each stage can be run alone on a string for inspection
(`tok.normalizer.normalize_str`, `tok.pre_tokenizer.pre_tokenize_str`, `tok.model.tokenize`).

Files: a Hugging Face tokenizer.json (read and written), BERT's vocab.txt, GPT-2/RoBERTa's
vocab.json + merges.txt, and SentencePiece .model files.
"""
from __future__ import annotations

import bisect
import contextlib
import gc
import json
import multiprocessing as mp
import os
import pickle
import tempfile
from dataclasses import dataclass
from itertools import accumulate, chain, count, repeat
from operator import add, itemgetter
from pathlib import Path

import regex

from . import decoders, normalizers, post_processors, pre_tokenizers
from .base import Model
from .bpe import BPE
from .byte_level import to_byte_chars
from .encoding import Encoding
from .normalizers import NormalizedString, _WS_CHARS
from .wordpiece import WordPiece


def _unigram():
    from .unigram import Unigram  # T3's model
    return Unigram


MODELS = {"WordPiece": WordPiece, "BPE": BPE, "Unigram": _unigram}


def model_from_json(data: dict) -> Model:
    if not isinstance(data, dict):
        raise ValueError(f"model: expected an object, got {type(data).__name__}")
    kind = data.get("type")
    if kind is None:  # files from before `type` was written: infer it like `tokenizers` does
        kind = ("BPE" if "merges" in data else "Unigram" if isinstance(data.get("vocab"), list)
                else "WordPiece" if "continuing_subword_prefix" in data or "max_input_chars_per_word" in data else None)
    if kind not in MODELS:
        raise ValueError(f"model: unknown type {kind!r}; known: {sorted(MODELS)}")
    cls = MODELS[kind]
    if cls is _unigram:
        cls = _unigram()
    try:
        return cls.from_json(data)
    except KeyError as e:
        raise ValueError(f"model {kind!r}: missing key {e.args[0]!r}") from None


@dataclass
class AddedToken:
    """A token matched in the raw text before the pipeline runs, and never split.

    normalized=None means "match on normalized text unless special" (the `tokenizers` default).
    """
    content: str
    special: bool = False
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool | None = None

    def __post_init__(self):
        if self.normalized is None:
            self.normalized = not self.special


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


# A cached word: the model's tokens as (ids, tokens, starts, ends), offsets relative to the word.
_IDS, _TOKENS, _STARTS, _ENDS = (itemgetter(i) for i in range(4))
_WORD_CACHE_LIMIT = 200_000  # distinct words; real text has a Zipfian vocabulary

_STRATEGIES = {"longest_first": "LongestFirst", "only_first": "OnlyFirst", "only_second": "OnlySecond"}


@contextlib.contextmanager
def _gc_paused():
    """Pause Python's cyclic garbage collector while a batch is encoded.

    A batch allocates hundreds of thousands of small tuples and lists (an offset pair per
    token) and keeps them all, so the collector would keep running and re-scanning them
    (and the word cache), although encoding makes no reference cycles: that costs about a
    third of the time. Reference counting still frees everything as usual. Afterwards the
    young objects go straight to the oldest generation (freeze + unfreeze: two list splices,
    no scan) rather than being scanned at once as the next young collection would: they
    are results that live on, and any garbage among them waits for the next full collection.
    Not done when the program has frozen objects itself (gc.freeze before forking servers).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


# -- large batches over worker processes ---------------------------------------------------------
# `tokenizers` encodes a batch on a thread pool; Python threads would share one interpreter
# lock, so a large batch is cut into contiguous chunks for forked processes instead. A fork
# sees this tokenizer exactly as it is (settings, word cache) without pickling it; only the
# finished (unpadded) encodings travel back, in order. Padding is done after, over the batch.

_PARALLEL_MIN_TEXTS, _PARALLEL_MIN_CHARS = 2_000, 1_000_000


def _workers_for(texts: list, workers: int | None) -> int:
    """How many processes should encode this batch (1: this one alone)."""
    if workers is None:
        env = os.environ.get("BERTOLOGY_ENCODE_WORKERS")
        if env:
            try:
                workers = int(env)
            except ValueError:
                raise ValueError(f"BERTOLOGY_ENCODE_WORKERS must be an integer, got {env!r}") from None
        else:
            workers = 1
    if (workers <= 1 or "fork" not in mp.get_all_start_methods() or mp.current_process().daemon
            or len(texts) < 2):
        return 1  # (daemonic processes, e.g. DataLoader workers, may not have children)
    if len(texts) < _PARALLEL_MIN_TEXTS and sum(len(t) for t in texts if isinstance(t, str)) < _PARALLEL_MIN_CHARS:
        return 1
    return min(workers, len(texts))


def _chunks(texts: list, n: int) -> list[tuple[int, int]]:
    """n contiguous [a, b) ranges of texts with about equal numbers of chars."""
    ends = list(accumulate(len(t) if isinstance(t, str) else 0 for t in texts))
    total = ends[-1]
    cuts = [0] + [min(max(bisect.bisect_left(ends, total * k / n) + 1, 1), len(texts)) for k in range(1, n)] + [len(texts)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _encode_chunk(tok: "Tokenizer", texts, pairs, a: int, b: int, add_special_tokens, truncation, conn) -> None:
    """A worker's job: encode texts[a:b] and send back ("ok", encodings) or ("error", exception)."""
    try:
        result = ("ok", tok._encode_many(texts[a:b], pairs[a:b] if pairs is not None else None,
                                         add_special_tokens, truncation))
    except Exception as e:  # raised in the parent, as the serial path would raise it
        result = ("error", e)
    try:
        data = pickle.dumps(result, pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        data = pickle.dumps(("error", RuntimeError(f"encode_batch worker: {result[1]!r} ({e})")))
    conn.send_bytes(data)
    conn.close()


def _encode_parallel(tok: "Tokenizer", texts, pairs, add_special_tokens, truncation, n: int) -> list[Encoding]:
    """texts encoded over n processes: this one takes the first chunk, forks take the rest."""
    ctx = mp.get_context("fork")
    (a0, b0), *rest = _chunks(texts, n)
    jobs = []
    try:
        for a, b in rest:
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_encode_chunk, daemon=True,
                            args=(tok, texts, pairs, a, b, add_special_tokens, truncation, send))
            p.start()
            send.close()
            jobs.append((p, recv, a, b))
        out = tok._encode_many(texts[a0:b0], pairs[a0:b0] if pairs is not None else None,
                               add_special_tokens, truncation)
        for p, recv, a, b in jobs:
            try:
                status, payload = pickle.loads(recv.recv_bytes())
            except (EOFError, OSError):  # the worker died (killed, out of memory): do its share here
                status, payload = "ok", tok._encode_many(texts[a:b], pairs[a:b] if pairs is not None else None,
                                                         add_special_tokens, truncation)
            if status == "error":
                raise payload
            out.extend(payload)
        return out
    finally:
        for p, recv, _, _ in jobs:
            recv.close()
            if p.is_alive():
                p.terminate()
            p.join()


class Tokenizer:
    def __init__(self, model: Model, normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None):
        self.model = model
        self._normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.post_processor = post_processor
        self.decoder = decoder
        self.truncation: dict | None = None  # max_length, stride, strategy, direction
        self.padding: dict | None = None     # length (None: longest), direction, pad_id, pad_type_id, pad_token, pad_to_multiple_of
        self._added: list[AddedToken] = []
        self._added_ids: dict[str, int] = {}
        self._added_r: dict[int, str] = {}
        self._raw_re = self._norm_re = None
        self._words: dict[str, tuple] = {}  # see _word_cache
        self._words_for = None

    def __repr__(self):
        return (f"Tokenizer(model={type(self.model).__name__}(vocab_size={self.model.vocab_size}), "
                f"normalizer={self.normalizer!r}, pre_tokenizer={self.pre_tokenizer!r}, "
                f"post_processor={self.post_processor!r}, decoder={self.decoder!r})")

    @property
    def normalizer(self):
        return self._normalizer

    @normalizer.setter
    def normalizer(self, value):
        self._normalizer = value  # normalized added tokens are matched in their normalized form
        if self._added:
            self._refresh_added()

    # -- vocabulary ----------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """Model vocabulary plus added tokens that are not in it."""
        return self.model.vocab_size + sum(1 for t in self._added_ids if self.model.token_to_id(t) is None)

    def get_vocab(self) -> dict[str, int]:
        vocab = self.model.get_vocab()
        vocab.update(self._added_ids)
        return vocab

    def token_to_id(self, token: str) -> int | None:
        i = self._added_ids.get(token)
        return i if i is not None else self.model.token_to_id(token)

    def id_to_token(self, id: int) -> str | None:
        t = self._added_r.get(id)
        return t if t is not None else self.model.id_to_token(id)

    @property
    def added_tokens(self) -> list[AddedToken]:
        return list(self._added)

    def add_tokens(self, tokens, special: bool = False, ids: list[int] | None = None) -> int:
        """Add tokens (str or AddedToken); returns how many were new. An id is the model's when
        the token is in its vocabulary, else the next free id after everything already there."""
        added = 0
        for k, tok in enumerate(tokens):
            if isinstance(tok, str):
                tok = AddedToken(tok, special=special)
            elif not isinstance(tok, AddedToken) or (special and not tok.special):
                # also accepts tokenizers.AddedToken; made special, a token matches the raw text
                is_special = special or bool(getattr(tok, "special", False))
                tok = AddedToken(tok.content, is_special, tok.single_word, tok.lstrip, tok.rstrip,
                                 False if is_special else tok.normalized)
            if not tok.content:
                raise ValueError("an added token cannot be empty")
            if tok.content in self._added_ids:
                for i, old in enumerate(self._added):  # same content: the new flags win
                    if old.content == tok.content:
                        self._added[i] = tok
                continue
            if ids is not None:
                new_id = ids[k]
            else:
                new_id = self.model.token_to_id(tok.content)
                if new_id is None:
                    new_id = max([self.model.vocab_size - 1, *self._added_r], default=-1) + 1
            self._added.append(tok)
            self._added_ids[tok.content] = new_id
            self._added_r[new_id] = tok.content
            added += 1
        self._refresh_added()
        return added

    def add_special_tokens(self, tokens) -> int:
        return self.add_tokens(tokens, special=True)

    def _refresh_added(self) -> None:
        def alternation(contents):
            contents = sorted(set(c for c in contents if c), key=len, reverse=True)  # longest first
            return regex.compile("|".join(regex.escape(c) for c in contents)) if contents else None
        self._raw_re = alternation(t.content for t in self._added if not t.normalized)
        norm = self.normalizer
        self._norm_re = alternation(norm.normalize_str(t.content) if norm else t.content
                                    for t in self._added if t.normalized)
        # normalized form -> added token, to look the id up after a normalized match
        self._norm_map = {}
        for t in self._added:
            if t.normalized:
                self._norm_map[norm.normalize_str(t.content) if norm else t.content] = t
        self._raw_map = {t.content: t for t in self._added if not t.normalized}

    # -- encoding --------------------------------------------------------------------------------

    def _find_added(self, s: str, pattern, by_text: dict) -> list[tuple[int, int, AddedToken | None]]:
        """Cut s at added-token matches (leftmost longest), honouring single_word / lstrip / rstrip."""
        parts, pos = [], 0
        for m in pattern.finditer(s):
            a, b = m.span()
            if a < pos:
                continue  # swallowed by the previous token's rstrip
            tok = by_text[m.group()]
            if tok.single_word and ((a > 0 and _is_word_char(s[a - 1])) or (b < len(s) and _is_word_char(s[b]))):
                continue
            if tok.lstrip:
                while a > pos and s[a - 1] in _WS_CHARS:
                    a -= 1
            if tok.rstrip:
                while b < len(s) and s[b] in _WS_CHARS:
                    b += 1
            if pos < a:
                parts.append((pos, a, None))
            parts.append((a, b, tok))
            pos = b
        if pos < len(s):
            parts.append((pos, len(s), None))
        return parts

    def _splits(self, text: str) -> list[tuple[NormalizedString, AddedToken | None]]:
        """Added tokens cut out of the raw text, the rest normalized (piece by piece)."""
        if self._raw_re is not None and self._raw_re.search(text):
            raw = [(NormalizedString(text, text[a:b], None, a), t) for a, b, t in self._find_added(text, self._raw_re, self._raw_map)]
        else:
            raw = [(NormalizedString(text), None)]
        out = []
        for ns, tok in raw:
            if tok is not None:
                out.append((ns, tok))
                continue
            if self.normalizer is not None:
                self.normalizer.normalize(ns)
            if not ns.normalized:
                continue
            if self._norm_re is not None and self._norm_re.search(ns.normalized):
                for a, b, t in self._find_added(ns.normalized, self._norm_re, self._norm_map):
                    out.append((ns.slice(a, b), t))
            else:
                out.append((ns, None))
        return out

    def _encode_one(self, text: str, type_id: int) -> Encoding:
        if not isinstance(text, str):
            raise TypeError(f"encode expects str, got {type(text).__name__}: {text!r:.80}")
        ids, tokens, offsets, words = [], [], [], []
        word = 0
        tokenize = self.model.tokenize
        pre = self.pre_tokenizer
        split = pre.word_split() if pre is not None else None
        cache = self._word_cache(split)
        # Hot path: a pre-tokenizer that only keeps regex matches needs no piece objects.
        fast = pre.pattern if isinstance(pre, pre_tokenizers._RegexFind) else None
        for ns, added in self._splits(text):
            if added is not None:
                ids.append(self._added_ids[added.content])
                tokens.append(ns.normalized)
                offsets.append(ns.offsets_original())
                words.append(word)
                word += 1
                continue
            if cache is not None and ns._align is None:  # the hottest path: see _encode_words
                word += self._encode_words(ns.normalized, ns._start, split, cache, ids, tokens, offsets, words, word)
                continue
            if fast is not None:
                align = ns._align
                base = ns._start
                for m in fast.finditer(ns.normalized):
                    a = m.start()
                    for t in tokenize(m.group()):
                        ids.append(t.id)
                        tokens.append(t.value)
                        s, e = t.offsets
                        if align is None:
                            offsets.append((base + a + s, base + a + e))
                        elif e > s:
                            offsets.append((align[a + s][0], align[a + e - 1][1]))
                        else:
                            offsets.append(ns.original_span(a + s, a + e))
                        words.append(word)
                    word += 1
                continue
            pieces = pre.pre_tokenize([ns]) if pre is not None else [ns]
            for p in pieces:
                if p._align is None:  # plain slice of the original: offsets are a shift
                    base = p._start
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
        n = len(ids)
        return Encoding(ids, tokens, offsets, words, [type_id] * n, [0] * n, [1] * n, [type_id] * n)

    # -- the hot path: whole words from a cache, lists built at C speed -------------------------

    def _word_cache(self, split) -> dict | None:
        """word -> (ids, tokens, starts, ends), for models whose output depends on the word
        alone (not BPE-dropout, not sampling); None where the hot path does not apply."""
        model = self.model
        if split is None or not (type(model) is WordPiece or (type(model) is BPE and not model.dropout)):
            return None
        if self._words_for != (model, split.byte_level):  # a new model: old entries are stale
            self._words, self._words_for = {}, (model, split.byte_level)
        return self._words

    def _word_entry(self, word: str, byte_level: bool) -> tuple:
        """The model's tokens for one word, offsets in chars of the word (as the general path
        maps them: a byte-level token spans the chars its first and last byte come from)."""
        if not byte_level:
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

    def _encode_words(self, s: str, base: int, split, cache: dict, ids: list, tokens: list, offsets: list,
                      words: list, first_word: int) -> int:
        """Encode s (whose char i is original[base + i]) into the lists; returns the word count.

        Exactly the general path's result, without a Python loop per word or per token: the
        pattern cuts s into [gap, word, gap, ..., word, gap], running sums of the part lengths
        give each word's start, the cache gives each word's tokens, and map / zip / chain
        join them up in C.
        """
        parts = (split.ascii if s.isascii() else split.unicode).split(s)
        text_words = parts[1::2]
        word_starts = list(accumulate(map(len, parts), initial=base))[1:-1:2]
        entries = list(map(cache.get, text_words))
        if None in entries:  # words not seen before
            for i, e in enumerate(entries):
                if e is None:
                    e = entries[i] = self._word_entry(text_words[i], split.byte_level)
                    if len(cache) < _WORD_CACHE_LIMIT:
                        cache[text_words[i]] = e
        counts = list(map(len, map(_IDS, entries)))
        ids += chain.from_iterable(map(_IDS, entries))
        tokens += chain.from_iterable(map(_TOKENS, entries))
        token_starts = list(chain.from_iterable(map(repeat, word_starts, counts)))  # its word's start, per token
        offsets += zip(map(add, token_starts, chain.from_iterable(map(_STARTS, entries))),
                       map(add, token_starts, chain.from_iterable(map(_ENDS, entries))))
        words += chain.from_iterable(map(repeat, count(first_word), counts))
        return len(text_words)

    def _n_added(self, is_pair: bool) -> int:
        return self.post_processor.added_tokens(is_pair) if self.post_processor is not None else 0

    def _post_process(self, enc: Encoding, pair: Encoding | None, add_special_tokens: bool,
                      truncation: dict | None) -> Encoding:
        if truncation is not None:
            max_length = truncation["max_length"]
            if add_special_tokens:
                max_length -= self._n_added(pair is not None)
                if max_length < 0:
                    raise ValueError(f"truncation max_length={truncation['max_length']} is smaller than the "
                                     f"{self._n_added(pair is not None)} special tokens the template adds")
            truncate_pair(enc, pair, max_length, truncation.get("stride", 0),
                          truncation.get("strategy", "longest_first"), truncation.get("direction", "right"))
        if self.post_processor is not None:
            return self.post_processor.process(enc, pair, add_special_tokens)
        if pair is None:
            return enc
        return Encoding.merge([enc, pair])

    def encode(self, text: str, pair: str | None = None, add_special_tokens: bool = True) -> Encoding:
        """Encode one sequence (or a pair) with the tokenizer's truncation and padding settings."""
        enc = self._encode_one(text, 0)
        pair_enc = self._encode_one(pair, 1) if pair is not None else None
        enc = self._post_process(enc, pair_enc, add_special_tokens, self.truncation)
        if self.padding is not None:
            pad_encodings([enc], **self.padding)
        return enc

    def encode_batch(self, texts: list[str], pairs: list[str] | None = None, padding=None, truncation=None,
                     max_length: int | None = None, stride: int = 0, return_overflowing: bool = False,
                     return_tensors: str | None = None, add_special_tokens: bool = True,
                     workers: int | None = None):
        """Encode many inputs.

        padding: None (the tokenizer's setting), False, True / "longest", "max_length".
        truncation: None (the tokenizer's setting), False, True / "longest_first", "only_first", "only_second".
        What truncation cuts is kept in each Encoding's `overflowing` (windows overlapping by
        `stride`). return_tensors="pt" gives a dict of torch tensors; with return_overflowing
        the windows become extra rows and `overflow_to_sample_mapping` says whose they are.
        workers: processes for a large batch (>= 2,000 texts or >= 1M chars), as `tokenizers`
        uses threads; None reads BERTOLOGY_ENCODE_WORKERS (default 1: measured on a loaded
        2-core machine, forking, copy-on-write and pickling the results back cost more than
        the second process gained). The result is the same either way.
        """
        if isinstance(texts, str):
            raise TypeError("encode_batch expects a list of strings; use encode() for one string")
        if pairs is not None and len(pairs) != len(texts):
            raise ValueError(f"encode_batch: {len(texts)} texts but {len(pairs)} pairs")
        trunc = self._resolve_truncation(truncation, max_length, stride)
        pad = self._resolve_padding(padding, max_length)
        with _gc_paused():
            n = _workers_for(texts, workers)
            if n > 1:
                encodings = _encode_parallel(self, texts, pairs, add_special_tokens, trunc, n)
            else:
                encodings = self._encode_many(texts, pairs, add_special_tokens, trunc)
        if pad is not None:
            pad_encodings(encodings, **pad)
        if return_tensors is None:
            return encodings
        if return_tensors != "pt":
            raise ValueError(f"return_tensors must be None or 'pt', got {return_tensors!r}")
        return self._to_tensors(encodings, return_overflowing, pad)

    def _encode_many(self, texts, pairs, add_special_tokens: bool, truncation: dict | None) -> list[Encoding]:
        """Encode and post-process each text (with its pair); no padding."""
        out = []
        for i, text in enumerate(texts):
            enc = self._encode_one(text, 0)
            pair_enc = self._encode_one(pairs[i], 1) if pairs is not None else None
            out.append(self._post_process(enc, pair_enc, add_special_tokens, truncation))
        return out

    def _resolve_truncation(self, truncation, max_length, stride) -> dict | None:
        if truncation is None:
            if self.truncation is None:
                return None
            t = dict(self.truncation)
            if max_length is not None:
                t["max_length"] = max_length
            if stride:
                t["stride"] = stride
            return t
        if truncation is False:
            return None
        strategy = "longest_first" if truncation is True else truncation
        if strategy not in _STRATEGIES:
            raise ValueError(f"truncation must be True, False or one of {sorted(_STRATEGIES)}, got {truncation!r}")
        if max_length is None:
            if self.truncation is None:
                raise ValueError("truncation needs max_length (none given and none set by enable_truncation)")
            max_length = self.truncation["max_length"]
        return {"max_length": max_length, "stride": stride, "strategy": strategy, "direction": "right"}

    def _resolve_padding(self, padding, max_length) -> dict | None:
        if padding is None:
            return dict(self.padding) if self.padding is not None else None
        if padding is False:
            return None
        base = dict(self.padding) if self.padding is not None else self._default_padding()
        if padding is True or padding == "longest":
            base["length"] = None
        elif padding == "max_length":
            if max_length is None:
                max_length = base.get("length") or (self.truncation or {}).get("max_length")
            if max_length is None:
                raise ValueError("padding='max_length' needs max_length")
            base["length"] = max_length
        else:
            raise ValueError(f"padding must be True, False, 'longest' or 'max_length', got {padding!r}")
        return base

    def _default_padding(self) -> dict:
        for tok in ("[PAD]", "<pad>", "<|padding|>"):
            i = self.token_to_id(tok)
            if i is not None:
                return {"length": None, "direction": "right", "pad_id": i, "pad_type_id": 0, "pad_token": tok,
                        "pad_to_multiple_of": None}
        raise ValueError("padding needs a pad token: none of [PAD], <pad> is in the vocabulary; "
                         "call enable_padding(pad_id=..., pad_token=...)")

    @staticmethod
    def _to_tensors(encodings: list[Encoding], return_overflowing: bool, pad: dict | None) -> dict:
        import torch
        rows, sample = [], []
        for i, e in enumerate(encodings):
            rows.append(e)
            sample.append(i)
            if return_overflowing:
                rows.extend(e.overflowing)
                sample.extend([i] * len(e.overflowing))
        if return_overflowing and pad is not None:
            pad_encodings(rows, **{**pad, "length": pad.get("length") or max(map(len, rows), default=0)})
        lengths = {len(r) for r in rows}
        if len(lengths) > 1:
            raise ValueError(f"return_tensors='pt' needs equal lengths, got lengths {sorted(lengths)}; "
                             "pass padding=True (or 'max_length')")
        out = {
            "input_ids": torch.tensor([r.ids for r in rows], dtype=torch.long),
            "token_type_ids": torch.tensor([r.type_ids for r in rows], dtype=torch.long),
            "attention_mask": torch.tensor([r.attention_mask for r in rows], dtype=torch.long),
            "special_tokens_mask": torch.tensor([r.special_tokens_mask for r in rows], dtype=torch.long),
            "offset_mapping": torch.tensor([r.offsets for r in rows], dtype=torch.long).reshape(len(rows), -1, 2),
        }
        if return_overflowing:
            out["overflow_to_sample_mapping"] = torch.tensor(sample, dtype=torch.long)
        else:  # not silent: how many windows each row lost to truncation
            out["num_overflowing"] = torch.tensor([len(e.overflowing) for e in encodings], dtype=torch.long)
        return out

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        special = {t.content for t in self._added if t.special}
        tokens = []
        for i in ids:
            t = self.id_to_token(int(i))
            if t is None or (skip_special_tokens and t in special):
                continue
            tokens.append(t)
        if self.decoder is not None:
            return self.decoder.decode(tokens)
        return " ".join(tokens)

    def decode_batch(self, batch, skip_special_tokens: bool = True) -> list[str]:
        return [self.decode(ids, skip_special_tokens) for ids in batch]

    # -- settings --------------------------------------------------------------------------------

    def enable_truncation(self, max_length: int, stride: int = 0, strategy: str = "longest_first",
                          direction: str = "right") -> None:
        if strategy not in _STRATEGIES:
            raise ValueError(f"truncation strategy must be one of {sorted(_STRATEGIES)}, got {strategy!r}")
        if direction not in ("left", "right"):
            raise ValueError(f"truncation direction must be 'left' or 'right', got {direction!r}")
        self.truncation = {"max_length": max_length, "stride": stride, "strategy": strategy, "direction": direction}

    def no_truncation(self) -> None:
        self.truncation = None

    def enable_padding(self, direction: str = "right", pad_id: int = 0, pad_type_id: int = 0, pad_token: str = "[PAD]",
                       length: int | None = None, pad_to_multiple_of: int | None = None) -> None:
        if direction not in ("left", "right"):
            raise ValueError(f"padding direction must be 'left' or 'right', got {direction!r}")
        self.padding = {"length": length, "direction": direction, "pad_id": pad_id, "pad_type_id": pad_type_id,
                        "pad_token": pad_token, "pad_to_multiple_of": pad_to_multiple_of}

    def no_padding(self) -> None:
        self.padding = None

    # -- tokenizer.json --------------------------------------------------------------------------

    def to_json(self) -> dict:
        trunc = pad = None
        if self.truncation is not None:
            t = self.truncation
            trunc = {"direction": t["direction"].capitalize(), "max_length": t["max_length"],
                     "strategy": _STRATEGIES[t["strategy"]], "stride": t["stride"]}
        if self.padding is not None:
            p = self.padding
            pad = {"strategy": "BatchLongest" if p["length"] is None else {"Fixed": p["length"]},
                   "direction": p["direction"].capitalize(), "pad_to_multiple_of": p["pad_to_multiple_of"],
                   "pad_id": p["pad_id"], "pad_type_id": p["pad_type_id"], "pad_token": p["pad_token"]}
        added = [{"id": self._added_ids[t.content], "content": t.content, "single_word": t.single_word,
                  "lstrip": t.lstrip, "rstrip": t.rstrip, "normalized": t.normalized, "special": t.special}
                 for t in sorted(self._added, key=lambda t: self._added_ids[t.content])]
        part = lambda x: x.to_json() if x is not None else None  # noqa: E731
        return {"version": "1.0", "truncation": trunc, "padding": pad, "added_tokens": added,
                "normalizer": part(self.normalizer), "pre_tokenizer": part(self.pre_tokenizer),
                "post_processor": part(self.post_processor), "decoder": part(self.decoder),
                "model": self.model.to_json()}

    def to_str(self, pretty: bool = False) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, indent=2 if pretty else None)

    @classmethod
    def from_json(cls, data: dict) -> "Tokenizer":
        if not isinstance(data, dict):
            raise ValueError(f"a tokenizer.json holds an object, got {type(data).__name__}")
        if "model" not in data:
            raise ValueError("missing key 'model'")
        tok = cls(model_from_json(data["model"]),
                  normalizers.normalizer_from_json(data.get("normalizer")),
                  pre_tokenizers.pre_tokenizer_from_json(data.get("pre_tokenizer")),
                  post_processors.post_processor_from_json(data.get("post_processor")),
                  decoders.decoder_from_json(data.get("decoder")))
        added, ids = [], []
        for k, t in enumerate(data.get("added_tokens") or []):
            try:
                added.append(AddedToken(t["content"], t.get("special", False), t.get("single_word", False),
                                        t.get("lstrip", False), t.get("rstrip", False), t.get("normalized")))
                ids.append(int(t["id"]))
            except (KeyError, TypeError, ValueError) as e:
                raise ValueError(f"added_tokens[{k}]: bad entry {t!r} ({e})") from None
        tok.add_tokens(added, ids=ids)
        tr = data.get("truncation")
        if tr:
            strategy = {v: k for k, v in _STRATEGIES.items()}.get(tr.get("strategy", "LongestFirst"))
            if strategy is None:
                raise ValueError(f"truncation.strategy: unknown value {tr.get('strategy')!r}")
            tok.enable_truncation(tr["max_length"], tr.get("stride", 0), strategy, tr.get("direction", "Right").lower())
        pd = data.get("padding")
        if pd:
            s = pd.get("strategy", "BatchLongest")
            length = s.get("Fixed") if isinstance(s, dict) else None
            if not (s == "BatchLongest" or length is not None):
                raise ValueError(f"padding.strategy: unknown value {s!r}")
            tok.enable_padding(pd.get("direction", "Right").lower(), pd.get("pad_id", 0), pd.get("pad_type_id", 0),
                               pd.get("pad_token", "[PAD]"), length, pd.get("pad_to_multiple_of"))
        return tok

    @classmethod
    def from_str(cls, text: str) -> "Tokenizer":
        return cls.from_json(json.loads(text))

    def save(self, path: str | os.PathLike, pretty: bool = True) -> Path:
        """Write tokenizer.json (to path, or into path if it is a directory), atomically."""
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self.to_str(pretty))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, **kw) -> "Tokenizer":
        """tokenizer.json | a directory holding one | vocab.txt (BERT) | vocab.json + merges.txt
        (GPT-2 / RoBERTa) | a SentencePiece .model. Keyword options go to the vocab.txt /
        vocab.json builders (e.g. lowercase=False)."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
        if path.is_dir():
            for name in ("tokenizer.json",):
                if (path / name).is_file():
                    return cls._load_json(path / name)
            if (path / "vocab.txt").is_file():
                return from_vocab_txt(path / "vocab.txt", **kw)
            if (path / "vocab.json").is_file() and (path / "merges.txt").is_file():
                return from_vocab_merges(path / "vocab.json", path / "merges.txt", **kw)
            models = sorted(path.glob("*.model"))
            if models:
                return cls._load_spm(models[0], **kw)
            raise FileNotFoundError(f"{path}: no tokenizer.json, vocab.txt, vocab.json + merges.txt or "
                                    "SentencePiece .model in this directory")
        if path.name == "vocab.json" or path.name == "merges.txt":
            vocab, merges = path.with_name("vocab.json"), path.with_name("merges.txt")
            for p in (vocab, merges):
                if not p.is_file():
                    raise FileNotFoundError(f"{p}: needed next to {path} for a BPE tokenizer")
            return from_vocab_merges(vocab, merges, **kw)
        if path.suffix == ".json":
            return cls._load_json(path)
        if path.suffix == ".txt":
            return from_vocab_txt(path, **kw)
        if path.suffix == ".model":
            return cls._load_spm(path, **kw)
        raise ValueError(f"{path}: unknown tokenizer file type (expected tokenizer.json, vocab.txt, "
                         "vocab.json + merges.txt or a SentencePiece .model)")

    @classmethod
    def _load_json(cls, path: Path) -> "Tokenizer":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not UTF-8 text ({e})") from None
        try:
            return cls.from_json(data)
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path}: {e}") from None

    @staticmethod
    def _load_spm(path: Path, **kw) -> "Tokenizer":
        from .sentencepiece_model import load_spm  # T3
        return load_spm(path, **kw)


# -- truncation and padding (as `tokenizers` does them) -------------------------------------------

def truncate_pair(enc: Encoding, pair: Encoding | None, max_length: int, stride: int, strategy: str,
                  direction: str) -> None:
    """Cut enc (and pair) to max_length tokens in all; the cut parts go to `overflowing`."""
    if max_length == 0:
        enc.truncate(0, stride, direction)
        if pair is not None:
            pair.truncate(0, stride, direction)
        return
    total = len(enc) + (len(pair) if pair is not None else 0)
    if total <= max_length:
        return
    to_remove = total - max_length
    if strategy == "longest_first":
        if pair is None:
            enc.truncate(max_length, stride, direction)
            return
        n1, n2 = len(enc), len(pair)
        swap = n1 > n2
        if swap:
            n1, n2 = n2, n1
        n2 = n1 if n1 > max_length else max(n1, max_length - n1)
        if n1 + n2 > max_length:
            n1 = max_length // 2
            n2 = n1 + max_length % 2
        if swap:
            n1, n2 = n2, n1
        enc.truncate(n1, stride, direction)
        pair.truncate(n2, stride, direction)
    elif strategy in ("only_first", "only_second"):
        target = enc if strategy == "only_first" else pair
        if target is None:
            raise ValueError("truncation 'only_second' needs a pair of sequences")
        if len(target) <= to_remove:
            raise ValueError(f"truncation {strategy!r}: the sequence has {len(target)} tokens, too few to remove "
                             f"the {to_remove} needed to reach max_length={max_length}")
        target.truncate(len(target) - to_remove, stride, direction)
    else:
        raise ValueError(f"unknown truncation strategy {strategy!r}")


def pad_encodings(encodings: list[Encoding], length: int | None = None, direction: str = "right", pad_id: int = 0,
                  pad_type_id: int = 0, pad_token: str = "[PAD]", pad_to_multiple_of: int | None = None) -> None:
    """Pad to `length`, or to the longest encoding when length is None (overflowing too)."""
    if not encodings:
        return
    target = length if length is not None else max(len(e) for e in encodings)
    if pad_to_multiple_of and target % pad_to_multiple_of:
        target += pad_to_multiple_of - target % pad_to_multiple_of
    for e in encodings:
        e.pad(target, pad_id, pad_type_id, pad_token, direction)


# -- building from plain vocabulary files ---------------------------------------------------------

def _special(tok: Tokenizer, names, **flags) -> None:
    present = [n for n in names if tok.model.token_to_id(n) is not None]
    tok.add_tokens([AddedToken(n, special=True, **flags.get(n, {})) for n in present])


def from_vocab_txt(path, lowercase: bool | None = None, strip_accents: bool | None = None,
                   handle_chinese_chars: bool = True, unk_token: str = "[UNK]") -> Tokenizer:
    """The BERT pipeline over a vocab.txt (uncased unless lowercase=False, or a sibling
    tokenizer_config.json says do_lower_case false)."""
    path = Path(path)
    if lowercase is None:
        cfg = path.with_name("tokenizer_config.json")
        lowercase = True
        if cfg.is_file():
            try:
                lowercase = bool(json.loads(cfg.read_text(encoding="utf-8")).get("do_lower_case", True))
            except json.JSONDecodeError as e:
                raise ValueError(f"{cfg}: not valid JSON ({e})") from None
    model = WordPiece.from_vocab_txt(path, unk_token=unk_token)
    tok = Tokenizer(model, normalizers.BertNormalizer(True, handle_chinese_chars, strip_accents, lowercase),
                    pre_tokenizers.BertPreTokenizer(), None, decoders.WordPiece())
    cls_id, sep_id = model.token_to_id("[CLS]"), model.token_to_id("[SEP]")
    if cls_id is not None and sep_id is not None:
        tok.post_processor = post_processors.bert_processing(cls_id, sep_id)
    _special(tok, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return tok


def from_vocab_merges(vocab_json, merges_txt, add_prefix_space: bool = False, trim_offsets: bool = True) -> Tokenizer:
    """The GPT-2 / RoBERTa byte-level BPE pipeline over vocab.json + merges.txt."""
    model = BPE.from_files(vocab_json, merges_txt)
    tok = Tokenizer(model, None, pre_tokenizers.ByteLevel(add_prefix_space, trim_offsets), None, decoders.ByteLevel())
    bos, eos = model.token_to_id("<s>"), model.token_to_id("</s>")
    if bos is not None and eos is not None:  # RoBERTa
        tok.post_processor = post_processors.RobertaProcessing(("</s>", eos), ("<s>", bos), trim_offsets, add_prefix_space)
        _special(tok, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], **{"<mask>": {"lstrip": True}})
    else:  # GPT-2
        tok.post_processor = post_processors.ByteLevel(add_prefix_space, trim_offsets)
        _special(tok, ["<|endoftext|>"])
    return tok
