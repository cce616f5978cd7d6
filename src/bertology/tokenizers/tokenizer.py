"""The Tokenizer: Normalizer -> PreTokenizer -> Model -> PostProcessor -> Decoder.

    text ──normalize──> NormalizedString ──pre-tokenize──> words ──model──> tokens
         ──post-process──> Encoding (special tokens, type ids; truncation, padding)

Added tokens ([MASK], <s>, user tokens) are cut out of the text before everything else and
never split (added_tokens.py). Each stage can be run alone on a string for inspection
(`tok.normalizer.normalize_str`, `tok.pre_tokenizer.pre_tokenize_str`, `tok.model.tokenize`).

Where the work is: encode_paths.py (pieces -> tokens, and the hot path), truncation.py
(truncation, padding and their settings), batching.py (worker processes), tensors.py
(return_tensors), tokenizer_json.py and loading.py (files: tokenizer.json, BERT's vocab.txt,
GPT-2/RoBERTa's vocab.json + merges.txt, SentencePiece .model).
"""
from __future__ import annotations

import json
import os
from functools import partial
from itertools import repeat
from pathlib import Path

from ..io import atomic_write_text
from .added_tokens import AddedToken, AddedVocabulary
from .base import Model
from .batching import encode_parallel, workers_for
from .encode_paths import (Columns, Flat, WordCache, encode_matches, encode_pieces, flat_encodings, framed_encodings,
                           model_entry)
from .encoding import Encoding
from .loading import read_spec
from .post_processors import Frame
from .pre_tokenizers import Metaspace
from .unigram import Unigram
from .spec import TokenizerSpec
from .tensors import batch_tensors
from .tokenizer_json import spec_from_json, spec_to_json
from .truncation import (pad_encodings, padding_settings, resolve_padding, resolve_truncation, truncate_pair,
                         truncation_settings)

__all__ = ["Tokenizer", "AddedToken"]


class Tokenizer:
    def __init__(self, model: Model, normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None):
        self.model = model
        self._normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.post_processor = post_processor
        self.decoder = decoder
        self.truncation: dict | None = None  # truncation.truncation_settings
        self.padding: dict | None = None     # truncation.padding_settings
        self._added = AddedVocabulary()
        self._words: WordCache | None = None  # see _word_cache

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
            self._added.refresh(value)

    # -- vocabulary ----------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """Model vocabulary plus added tokens that are not in it."""
        return self.model.vocab_size + sum(1 for t in self._added.ids if self.model.token_to_id(t) is None)

    def get_vocab(self) -> dict[str, int]:
        vocab = self.model.get_vocab()
        vocab.update(self._added.ids)
        return vocab

    def token_to_id(self, token: str) -> int | None:
        i = self._added.ids.get(token)
        return i if i is not None else self.model.token_to_id(token)

    def id_to_token(self, id: int) -> str | None:
        t = self._added.contents.get(id)
        return t if t is not None else self.model.id_to_token(id)

    @property
    def added_tokens(self) -> list[AddedToken]:
        return list(self._added.tokens)

    def add_tokens(self, tokens, special: bool = False, ids: list[int] | None = None) -> int:
        """Add tokens (str or AddedToken); returns how many were new. An id is the model's when
        the token is in its vocabulary, else the next free id after everything already there."""
        return self._added.add(tokens, self.model.token_to_id, self.model.vocab_size, special, ids, self.normalizer)

    def add_special_tokens(self, tokens) -> int:
        return self.add_tokens(tokens, special=True)

    # -- encoding --------------------------------------------------------------------------------

    def _word_cache(self) -> WordCache | None:
        """The cache of the model's words (None for models whose output is not a function of
        the word); a new model starts a new cache, as old entries would be stale."""
        if not WordCache.applies(self.model):
            return None
        if self._words is None or self._words.model is not self.model:
            self._words = WordCache(self.model)
        return self._words

    def _encode_one(self, text: str, type_id: int) -> Encoding:
        """One sequence through the pipeline, before post-processing (see encode_paths.py)."""
        if not isinstance(text, str):
            raise TypeError(f"encode expects str, got {type(text).__name__}: {text!r:.80}")
        out = Columns()
        word = 0
        pre = self.pre_tokenizer
        split = pre.word_split() if pre is not None else None
        cache = self._word_cache()
        entry = cache.entry if cache is not None else partial(model_entry, self.model)
        for ns, added in self._added.split(text, self.normalizer):
            if added is not None:
                out.append(self._added.ids[added.content], ns.normalized, ns.offsets_original(), word)
                word += 1
            elif cache is not None and split is not None and ns.spans is None:
                word += cache.encode(ns.normalized, ns.offset, split, out, word)
            elif split is not None and not split.byte_level:
                pattern = split.ascii if ns.normalized.isascii() else split.unicode
                word += encode_matches(ns, pattern, entry, out, word)
            else:
                word += encode_pieces(pre.pre_tokenize([ns]) if pre is not None else [ns], entry, out, word)
        n = len(out.ids)
        return Encoding(out.ids, out.tokens, out.offsets, out.words, [type_id] * n, [0] * n, [1] * n, [type_id] * n)

    def _hot_texts(self, texts: list, trim: bool | None = None) -> tuple[Flat, list[int]] | None:
        """The texts the hot path can take (no added token, normalized char for char) encoded
        as one Flat batch (WordCache.encode_texts, offsets trimmed as Frame.trim says), and
        their indices in texts; None when there are none or this tokenizer has no hot path."""
        cache, pre = self._word_cache(), self.pre_tokenizer
        split = pre.word_split() if pre is not None else None
        metaspace = (type(pre) is Metaspace and pre.split_on_replacement and trim is None
                     and cache is not None and type(cache.model) is Unigram)
        if (cache is None or (split is None and not metaspace) or (trim is not None and not split.byte_level)
                or not all(type(t) is str for t in texts)):
            return None
        plain = self._added.plain_texts(texts, self.normalizer)
        hot = [i for i, s in enumerate(plain) if s is not None]
        if not hot:
            return None
        if metaspace:
            return cache.encode_metaspace([plain[i] for i in hot], pre), hot
        return cache.encode_texts([plain[i] for i in hot], split, trim), hot

    def _encode_many(self, texts: list, type_id: int) -> list[Encoding]:
        """[_encode_one(text, type_id) for text in texts], the hot path's texts as one batch."""
        out = [None] * len(texts)
        found = self._hot_texts(texts)
        if found is not None:
            flat, hot = found
            for i, enc in zip(hot, flat_encodings(flat, range(len(hot)), type_id)):
                out[i] = enc
        return [enc if enc is not None else self._encode_one(texts[i], type_id) for i, enc in enumerate(out)]

    def _frame(self, add_special_tokens: bool) -> Frame | None:
        """Post-processing a single sequence as a Frame, where it is one."""
        if self.post_processor is None:
            return Frame(Encoding(), 0, Encoding(), None)
        return self.post_processor.frame() if add_special_tokens else None

    def _encode_framed(self, texts: list, frame: Frame, truncation: dict | None, pad: dict | None) -> list[Encoding]:
        """encode_batch's work for single texts whose post-processing is a Frame, padded as
        pad says: the hot path's texts that truncation leaves whole are built in one step
        (framed_encodings), the others one by one by _encode_one and _post_process."""
        out: list = [None] * len(texts)
        framed, in_flat = [], []  # indices in texts and in flat of the texts framed_encodings builds
        found = self._hot_texts(texts, frame.trim)
        if found is not None:
            flat, hot = found
            bounds = flat.bounds
            max_tokens = len(flat.ids) if truncation is None else (
                truncation["max_length"] - len(frame.before) - len(frame.after))
            for k, i in enumerate(hot):
                if bounds[k + 1] - bounds[k] <= max_tokens:
                    framed.append(i)
                    in_flat.append(k)
                    out[i] = frame  # (a place holder, replaced below)
                elif frame.trim is None:  # (trimmed offsets would be trimmed again)
                    out[i] = self._post_process(flat_encodings(flat, [k], 0)[0], None, True, truncation)
        for i, enc in enumerate(out):
            if enc is None:
                out[i] = self._post_process(self._encode_one(texts[i], 0), None, True, truncation)
        if framed:
            pad_to = 0
            if pad is not None and pad["direction"] == "right":
                n_frame = len(frame.before) + len(frame.after)
                pad_to = pad["length"] if pad["length"] is not None else max(
                    max(bounds[k + 1] - bounds[k] for k in in_flat) + n_frame,
                    max((len(e) for e in out if e is not frame), default=0))
                multiple = pad["pad_to_multiple_of"]
                if multiple and pad_to % multiple:
                    pad_to += multiple - pad_to % multiple
            for i, enc in zip(framed, framed_encodings(flat, in_flat, frame, pad_to, pad)):
                out[i] = enc
        return out

    def _encode_chunk(self, texts, pairs, add_special_tokens: bool, truncation: dict | None,
                      pad: dict | None = None) -> list[Encoding]:
        """Encode and post-process each text (with its pair), then pad if pad is given."""
        frame = self._frame(add_special_tokens) if pairs is None else None
        if frame is not None:
            out = self._encode_framed(texts, frame, truncation, pad)
        else:
            firsts = self._encode_many(texts, 0)
            seconds = self._encode_many(pairs, 1) if pairs is not None else repeat(None)
            out = [self._post_process(a, b, add_special_tokens, truncation) for a, b in zip(firsts, seconds)]
        if pad is not None:
            pad_encodings(out, **pad)
        return out

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
        trunc = resolve_truncation(self.truncation, truncation, max_length, stride)
        pad = resolve_padding(self.padding, padding, max_length, self.truncation, self.token_to_id)
        n = workers_for(texts, workers)
        if n > 1:  # the chunks come back unpadded: padding to the longest needs them all
            encode_chunk = partial(self._encode_chunk, add_special_tokens=add_special_tokens, truncation=trunc)
            encodings = encode_parallel(encode_chunk, texts, pairs, n)
            if pad is not None:
                pad_encodings(encodings, **pad)
        else:
            encodings = self._encode_chunk(texts, pairs, add_special_tokens, trunc, pad)
        if return_tensors is None:
            return encodings
        if return_tensors != "pt":
            raise ValueError(f"return_tensors must be None or 'pt', got {return_tensors!r}")
        return batch_tensors(encodings, return_overflowing, pad)

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        special = {t.content for t in self._added.tokens if t.special}
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
        self.truncation = truncation_settings(max_length, stride, strategy, direction)

    def no_truncation(self) -> None:
        self.truncation = None

    def enable_padding(self, direction: str = "right", pad_id: int = 0, pad_type_id: int = 0, pad_token: str = "[PAD]",
                       length: int | None = None, pad_to_multiple_of: int | None = None) -> None:
        self.padding = padding_settings(direction, pad_id, pad_type_id, pad_token, length, pad_to_multiple_of)

    def no_padding(self) -> None:
        self.padding = None

    # -- files -----------------------------------------------------------------------------------

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> "Tokenizer":
        """Build the tokenizer a file reader described (see spec.py)."""
        tok = cls(spec.model, spec.normalizer, spec.pre_tokenizer, spec.post_processor, spec.decoder)
        if spec.added_tokens:
            tok.add_tokens(spec.added_tokens, ids=spec.added_ids)
        if spec.truncation is not None:
            tok.enable_truncation(**spec.truncation)
        if spec.padding is not None:
            tok.enable_padding(**spec.padding)
        return tok

    def to_spec(self) -> TokenizerSpec:
        """This tokenizer's parts (shared, not copied), added tokens in id order."""
        ids = self._added.ids
        added = sorted(self._added.tokens, key=lambda t: ids[t.content])
        return TokenizerSpec(self.model, self.normalizer, self.pre_tokenizer, self.post_processor, self.decoder,
                             added, [ids[t.content] for t in added], self.truncation, self.padding)

    def to_json(self) -> dict:
        return spec_to_json(self.to_spec())

    def to_str(self, pretty: bool = False) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, indent=2 if pretty else None)

    @classmethod
    def from_json(cls, data: dict) -> "Tokenizer":
        return cls.from_spec(spec_from_json(data))

    @classmethod
    def from_str(cls, text: str) -> "Tokenizer":
        return cls.from_json(json.loads(text))

    def save(self, path: str | os.PathLike, pretty: bool = True) -> Path:
        """Write tokenizer.json (to path, or into path if it is a directory), atomically."""
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, self.to_str(pretty))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, **kw) -> "Tokenizer":
        """tokenizer.json | a directory holding one | vocab.txt (BERT) | vocab.json + merges.txt
        (GPT-2 / RoBERTa) | a SentencePiece .model. Keyword options go to the vocab.txt /
        vocab.json readers (e.g. lowercase=False)."""
        return cls.from_spec(read_spec(path, **kw))
