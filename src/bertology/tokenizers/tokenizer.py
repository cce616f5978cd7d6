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

import json
import os
import tempfile
from dataclasses import dataclass
from itertools import accumulate, chain, count, repeat
from operator import add, itemgetter
from pathlib import Path

import regex

from . import decoders, normalizers, post_processors, pre_tokenizers
from .base import Model, component_from_json
from .bpe import BPE
from .byte_level import to_byte_chars
from .encoding import Encoding, model_tensors
from .normalizers import NormalizedString, _WS_CHARS
from .batching import encode_parallel, gc_paused, workers_for
from .truncation import pad_encodings, truncate_pair
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
    return component_from_json("model", MODELS, data, kind)


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
        with gc_paused():
            n = workers_for(texts, workers)
            if n > 1:
                encodings = encode_parallel(self, texts, pairs, add_special_tokens, trunc, n)
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
            **model_tensors(rows),
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
        from . import vocab_files

        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
        if path.is_dir():
            for name in ("tokenizer.json",):
                if (path / name).is_file():
                    return cls._load_json(path / name)
            if (path / "vocab.txt").is_file():
                return vocab_files.from_vocab_txt(path / "vocab.txt", **kw)
            if (path / "vocab.json").is_file() and (path / "merges.txt").is_file():
                return vocab_files.from_vocab_merges(path / "vocab.json", path / "merges.txt", **kw)
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
            return vocab_files.from_vocab_merges(vocab, merges, **kw)
        if path.suffix == ".json":
            return cls._load_json(path)
        if path.suffix == ".txt":
            return vocab_files.from_vocab_txt(path, **kw)
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
