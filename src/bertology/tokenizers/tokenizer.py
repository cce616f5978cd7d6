"""The Tokenizer: Normalizer -> PreTokenizer -> Model -> PostProcessor -> Decoder.

    text ──normalize──> NormalizedString ──pre-tokenize──> words ──model──> tokens
         ──post-process──> Encoding (special tokens, type ids; truncation, padding)

Added tokens ([MASK], <s>, user tokens) are cut out of the text before everything else and
never split (added_tokens.py). Each stage can be run alone on a string for inspection
(`tok.normalizer.normalize_str`, `tok.pre_tokenizer.pre_tokenize_str`, `tok.model.tokenize`).

`encode_sequence` and `post_process` are the pipeline as written in the textbook, the reference.
The same work, faster, is the fast encoder's (fast/: word caches, whole batches at once, worker
processes), which `self.fast` holds; it gives the same Encodings (tests hold it to that), and
`tok.fast = None` switches it off. Elsewhere: truncation.py (truncation, padding and their
settings), tensors.py (return_tensors), tokenizer_json.py and loading.py (files: tokenizer.json,
BERT's vocab.txt, GPT-2/RoBERTa's vocab.json + merges.txt, SentencePiece .model).
"""

from __future__ import annotations

import json
import os
from functools import partial
from itertools import groupby, repeat
from pathlib import Path

from ..io import atomic_write_text
from .added_tokens import AddedToken, AddedVocabulary
from .base import Model
from .encoding import EncodedIds, Encoding
from .fast import FastEncoder
from .fast.workers import encode_parallel, workers_for
from .loading import read_spec
from .spec import TokenizerSpec
from .tensors import batch_tensors
from .tokenizer_json import spec_from_json, spec_to_json
from .truncation import (
    pad_encodings,
    padding_settings,
    resolve_padding,
    resolve_truncation,
    truncate_pair,
    truncation_settings,
)

__all__ = ["Tokenizer", "AddedToken"]


class Tokenizer:
    def __init__(self, model: Model, normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None):
        self.model = model
        self._normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.post_processor = post_processor
        self.decoder = decoder
        self.truncation: dict | None = None  # truncation.truncation_settings
        self.padding: dict | None = None  # truncation.padding_settings
        self._added = AddedVocabulary()
        self.fast: FastEncoder | None = FastEncoder()  # None: the general path alone (the reference)

    def __repr__(self):
        return (
            f"Tokenizer(model={type(self.model).__name__}(vocab_size={self.model.vocab_size}), "
            f"normalizer={self.normalizer!r}, pre_tokenizer={self.pre_tokenizer!r}, "
            f"post_processor={self.post_processor!r}, decoder={self.decoder!r})"
        )

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
    def added_vocabulary(self) -> AddedVocabulary:
        """The added tokens and their matching (read it; change it through add_tokens)."""
        return self._added

    @property
    def added_tokens(self) -> list[AddedToken]:
        return list(self._added.tokens)

    def add_tokens(self, tokens, special: bool = False, ids: list[int] | None = None) -> int:
        """Add tokens (str or AddedToken); returns how many were new. An id is the model's when
        the token is in its vocabulary, else the next free id after everything already there."""
        return self._added.add(tokens, self.model.token_to_id, self.model.vocab_size, special, ids, self.normalizer)

    def add_special_tokens(self, tokens) -> int:
        return self.add_tokens(tokens, special=True)

    # -- encoding: the pipeline ------------------------------------------------------------------

    def encode(self, text: str, pair: str | None = None, add_special_tokens: bool = True) -> Encoding:
        """Encode one sequence (or a pair) with the tokenizer's truncation and padding settings."""
        enc = self._sequence(text, 0)
        pair_enc = self._sequence(pair, 1) if pair is not None else None
        enc = self.post_process(enc, pair_enc, add_special_tokens, self.truncation)
        if self.padding is not None:
            pad_encodings([enc], **self.padding)
        return enc

    def encode_sequence(self, text: str, type_id: int = 0) -> Encoding:
        """One sequence through the pipeline, before post-processing: added tokens are cut out,
        the rest is normalized, pre-tokenized into words, and each word split by the model.
        word_ids number the words (an added token is one); offsets point into `text`."""
        if not isinstance(text, str):
            raise TypeError(f"encode expects str, got {type(text).__name__}: {text!r:.80}")
        ids, tokens, offsets, word_ids = [], [], [], []
        word = 0
        for piece, added in self._added.split(text, self.normalizer):  # (the other pieces normalized)
            if added is not None:  # one word, one token, never split
                ids.append(self._added.ids[added.content])
                tokens.append(piece.normalized)
                offsets.append(piece.offsets_original())
                word_ids.append(word)
                word += 1
                continue
            words = self.pre_tokenizer.pre_tokenize([piece]) if self.pre_tokenizer is not None else [piece]
            for w in words:
                for t in self.model.tokenize(w.normalized):  # (offsets within the word)
                    ids.append(t.id)
                    tokens.append(t.value)
                    offsets.append(w.original_span(*t.offsets))
                    word_ids.append(word)
                word += 1
        n = len(ids)
        return Encoding(ids, tokens, offsets, word_ids, [type_id] * n, [0] * n, [1] * n, [type_id] * n)

    def post_process(
        self,
        enc: Encoding,
        pair: Encoding | None = None,
        add_special_tokens: bool = True,
        truncation: dict | None = None,
    ) -> Encoding:
        """Truncate as `truncation` says (truncation.truncation_settings; None: not at all),
        leaving room for the special tokens, then add them (the post-processor)."""
        if truncation is not None:
            max_length = truncation["max_length"]
            if add_special_tokens:
                max_length -= self._n_added(pair is not None)
                if max_length < 0:
                    raise ValueError(
                        f"truncation max_length={truncation['max_length']} is smaller than the "
                        f"{self._n_added(pair is not None)} special tokens the template adds"
                    )
            truncate_pair(
                enc,
                pair,
                max_length,
                truncation.get("stride", 0),
                truncation.get("strategy", "longest_first"),
                truncation.get("direction", "right"),
            )
        if self.post_processor is not None:
            return self.post_processor.process(enc, pair, add_special_tokens)
        if pair is None:
            return enc
        return Encoding.merge([enc, pair])

    def _n_added(self, is_pair: bool) -> int:
        return self.post_processor.added_tokens(is_pair) if self.post_processor is not None else 0

    def _sequence(self, text: str, type_id: int) -> Encoding:
        """encode_sequence, by the fast encoder when there is one (the same result)."""
        if self.fast is not None:
            return self.fast.encode_one(self, text, type_id)
        return self.encode_sequence(text, type_id)

    def _encode_chunk(
        self, texts, pairs, add_special_tokens: bool, truncation: dict | None, pad: dict | None = None
    ) -> list[Encoding]:
        """Encode and post-process each text (with its pair), then pad if pad is given."""
        if self.fast is not None:
            return self.fast.encode_chunk(self, texts, pairs, add_special_tokens, truncation, pad)
        firsts = [self.encode_sequence(text, 0) for text in texts]
        seconds = [self.encode_sequence(pair, 1) for pair in pairs] if pairs is not None else repeat(None)
        out = [self.post_process(a, b, add_special_tokens, truncation) for a, b in zip(firsts, seconds)]
        if pad is not None:
            pad_encodings(out, **pad)
        return out

    def encode_batch(
        self,
        texts: list[str],
        pairs: list[str] | None = None,
        padding=None,
        truncation=None,
        max_length: int | None = None,
        stride: int = 0,
        return_overflowing: bool = False,
        return_tensors: str | None = None,
        add_special_tokens: bool = True,
        workers: int | None = None,
    ):
        """Encode many inputs.

        padding: None (the tokenizer's setting), False, True / "longest", "max_length".
        truncation: None (the tokenizer's setting), False, True / "longest_first", "only_first", "only_second".
        What truncation cuts is kept in each Encoding's `overflowing` (windows overlapping by
        `stride`). return_tensors="pt" gives a dict of torch tensors; with return_overflowing
        the windows become extra rows and `overflow_to_sample_mapping` says whose they are.
        workers: processes for a large batch (>= 2,000 texts or >= 1M chars), as `tokenizers`
        uses threads; None or 1: this process alone (forking, copy-on-write and pickling the
        results back can cost more than a second process gains on a busy machine). The result
        is the same either way.
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

    def encode_batch_ids(self, texts: list[str]) -> EncodedIds:
        """The ids of each text and where its words begin, as one EncodedIds (encoding.py): the
        tokens encode_sequence makes (no special tokens, no truncation, no padding), without the
        token strings, offsets and Encoding objects a caller that keeps ids alone would drop.
        The same ids and words as encode_batch's (tests hold the two together)."""
        if isinstance(texts, str):
            raise TypeError("encode_batch_ids expects a list of strings")
        if self.fast is not None:
            return self.fast.encode_ids(self, texts)
        ids: list[int] = []
        lengths: list[int] = []
        word_sizes: list[int] = []
        for text in texts:
            enc = self.encode_sequence(text, 0)
            ids += enc.ids
            lengths.append(len(enc.ids))
            word_sizes += [len(list(group)) for _, group in groupby(enc.word_ids)]
        return EncodedIds(ids, lengths, word_sizes)

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

    def enable_truncation(
        self, max_length: int, stride: int = 0, strategy: str = "longest_first", direction: str = "right"
    ) -> None:
        self.truncation = truncation_settings(max_length, stride, strategy, direction)

    def no_truncation(self) -> None:
        self.truncation = None

    def enable_padding(
        self,
        direction: str = "right",
        pad_id: int = 0,
        pad_type_id: int = 0,
        pad_token: str = "[PAD]",
        length: int | None = None,
        pad_to_multiple_of: int | None = None,
    ) -> None:
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
        return TokenizerSpec(
            self.model,
            self.normalizer,
            self.pre_tokenizer,
            self.post_processor,
            self.decoder,
            added,
            [ids[t.content] for t in added],
            self.truncation,
            self.padding,
        )

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
