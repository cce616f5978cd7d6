"""The fast encoder: what Tokenizer.encode_sequence and encode_batch make, made faster.

A Tokenizer holds one (`tok.fast`; None switches it off) and hands it every sequence and batch.
It gives exactly the general path's Encodings (tests/tokenizers/test_encoding_speed_paths.py
holds it to that and to `tokenizers`), by three means:

* words: the model's tokens per distinct word, memoized (words.WordCache), and a whole text
  cut into words by one `pattern.split` where the pre-tokenizer only keeps a pattern's matches
  (splits.word_split);
* batches: the texts of a batch with no added token, normalized char for char, go through
  each step at once (WordCache.encode_texts / encode_metaspace -> a Flat);
* framing: where post-processing one sequence only adds special tokens around it
  (framed.frame_of), whole finished, padded Encodings come straight from the Flat, their
  columns made when read (framed.framed_encodings).

This package is the only code that looks at the concrete types of a tokenizer's stages, and it
owns every cache of the encoding path (they live in its WordCache, made anew with a new model).
The tokenizer reached through `tok` is read, never changed.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate, groupby, repeat
from operator import sub

from ..encoding import EncodedIds, Encoding
from ..pre_tokenizers import Metaspace
from ..truncation import pad_encodings
from ..unigram import Unigram
from .framed import Frame, frame_of, framed_encodings
from .plain import plain_texts
from .splits import word_split
from .words import Columns, Flat, WordCache


class FastEncoder:
    def __init__(self):
        self.words: WordCache | None = None  # the current model's (see word_cache)

    def word_cache(self, model) -> WordCache:
        """The WordCache of this model: a new model starts a new one, as old entries would be stale."""
        if self.words is None or self.words.model is not model:
            self.words = WordCache(model)
        return self.words

    def encode_one(self, tok, text: str, type_id: int) -> Encoding:
        """tok.encode_sequence(text, type_id)."""
        if not isinstance(text, str):
            raise TypeError(f"encode expects str, got {type(text).__name__}: {text!r:.80}")
        out = Columns()
        word = 0
        pre, added_vocab = tok.pre_tokenizer, tok.added_vocabulary
        split = word_split(pre)
        cache = self.word_cache(tok.model)
        for ns, added in added_vocab.split(text, tok.normalizer):
            if added is not None:
                out.append(added_vocab.ids[added.content], ns.normalized, ns.offsets_original(), word)
                word += 1
            elif cache.memoize and split is not None and ns.spans is None:
                word += cache.encode(ns.normalized, ns.offset, split, out, word)
            elif split is not None and not split.byte_level:
                pattern = split.ascii if ns.normalized.isascii() else split.unicode
                word += cache.encode_matches(ns, pattern, out, word)
            else:
                word += cache.encode_pieces(pre.pre_tokenize([ns]) if pre is not None else [ns], out, word)
        return out.encoding(type_id)

    def encode_chunk(
        self,
        tok,
        texts: list,
        pairs: list | None,
        add_special_tokens: bool,
        truncation: dict | None,
        pad: dict | None = None,
    ) -> list[Encoding]:
        """[tok.post_process(encode_one(text), encode_one(pair), ...) for each text], padded if
        pad is given (truncation.padding_settings)."""
        frame = frame_of(tok.post_processor, add_special_tokens) if pairs is None else None
        if frame is not None:
            out = self._encode_framed(tok, texts, frame, truncation, pad)
        else:
            firsts = self._encode_many(tok, texts, 0)
            seconds = self._encode_many(tok, pairs, 1) if pairs is not None else repeat(None)
            out = [tok.post_process(a, b, add_special_tokens, truncation) for a, b in zip(firsts, seconds)]
        if pad is not None:
            pad_encodings(out, **pad)
        return out

    def _hot_texts(self, tok, texts: list, trim: bool | None = None) -> tuple[Flat, list[int]] | None:
        """The texts the hot path can take (no added token, normalized char for char) encoded
        as one Flat batch (WordCache.encode_texts, offsets trimmed as Frame.trim says), and
        their indices in texts; None when there are none or this tokenizer has no hot path."""
        cache, pre = self.word_cache(tok.model), tok.pre_tokenizer
        split = word_split(pre)
        metaspace = (
            type(pre) is Metaspace
            and pre.split_on_replacement
            and trim is None
            and cache.memoize
            and type(cache.model) is Unigram
        )
        if (
            not cache.memoize
            or (split is None and not metaspace)
            or (trim is not None and not split.byte_level)
            or not all(type(t) is str for t in texts)
        ):
            return None
        plain = plain_texts(tok.added_vocabulary, texts, tok.normalizer)
        hot = [i for i, s in enumerate(plain) if s is not None]
        if not hot:
            return None
        if metaspace:
            return cache.encode_metaspace([plain[i] for i in hot], pre), hot
        return cache.encode_texts([plain[i] for i in hot], split, trim), hot

    def encode_ids(self, tok, texts: list) -> EncodedIds:
        """tok.encode_batch_ids(texts): the hot path's texts (plain_texts) as one batch that makes
        ids and word sizes alone (WordCache.encode_ids; Unigram behind a Metaspace: the Flat's), the
        others by encode_one, put back in the texts' order."""
        cache, pre = self.word_cache(tok.model), tok.pre_tokenizer
        split = word_split(pre)
        found = None
        if cache.memoize and split is not None and all(type(t) is str for t in texts):
            plain = plain_texts(tok.added_vocabulary, texts, tok.normalizer)
            hot = [i for i, s in enumerate(plain) if s is not None]
            if hot:
                found = cache.encode_ids([plain[i] for i in hot], split), hot
        else:
            metaspace = self._hot_texts(tok, texts)  # (a Metaspace hot path, or None)
            if metaspace is not None:
                flat, hot = metaspace
                bounds = flat.bounds
                sizes = list(filter(None, flat.word_counts()))
                found = (flat.ids, list(map(sub, bounds[1:], bounds[:-1])), sizes), hot
        if found is not None and len(found[1]) == len(texts):
            return EncodedIds(*found[0])
        return self._merge_ids(tok, texts, found)

    def _merge_ids(self, tok, texts: list, found) -> EncodedIds:
        """EncodedIds of texts: those of `found` ((ids, lengths, word sizes) of the texts `hot`)
        where it has them, encode_one's for the others."""
        ids: list[int] = []
        lengths: list[int] = []
        word_sizes: list[int] = []
        hot_of: dict[int, int] = {}
        if found is not None:
            (h_ids, h_lengths, h_sizes), hot = found
            hot_of = {i: k for k, i in enumerate(hot)}
            token_at = list(accumulate(h_lengths, initial=0))
            # the words of hot text k: a word's tokens never cross texts and every size is > 0, so
            # the running sum of the sizes meets each text's first token
            word_ends = list(accumulate(h_sizes, initial=0))
            word_at = [bisect_left(word_ends, t) for t in token_at]
        for i, text in enumerate(texts):
            k = hot_of.get(i)
            if k is not None:
                ids += h_ids[token_at[k] : token_at[k + 1]]
                lengths.append(h_lengths[k])
                word_sizes += h_sizes[word_at[k] : word_at[k + 1]]
                continue
            enc = self.encode_one(tok, text, 0)
            ids += enc.ids
            lengths.append(len(enc.ids))
            word_sizes += [len(list(group)) for _, group in groupby(enc.word_ids)]
        return EncodedIds(ids, lengths, word_sizes)

    def _encode_many(self, tok, texts: list, type_id: int) -> list[Encoding]:
        """[encode_one(tok, text, type_id) for text in texts], the hot path's texts as one batch."""
        out = [None] * len(texts)
        found = self._hot_texts(tok, texts)
        if found is not None:
            flat, hot = found
            for i, enc in zip(hot, flat.encodings(range(len(hot)), type_id)):
                out[i] = enc
        return [enc if enc is not None else self.encode_one(tok, texts[i], type_id) for i, enc in enumerate(out)]

    def _encode_framed(
        self, tok, texts: list, frame: Frame, truncation: dict | None, pad: dict | None
    ) -> list[Encoding]:
        """encode_chunk's work for single texts whose post-processing is a Frame, padded as
        pad says: the hot path's texts that truncation leaves whole are built in one step
        (framed_encodings), the others one by one by encode_one and tok.post_process."""
        out: list = [None] * len(texts)
        framed, in_flat = [], []  # indices in texts and in flat of the texts framed_encodings builds
        found = self._hot_texts(tok, texts, frame.trim)
        if found is not None:
            flat, hot = found
            bounds = flat.bounds
            max_tokens = (
                len(flat.ids)
                if truncation is None
                else (truncation["max_length"] - len(frame.before) - len(frame.after))
            )
            for k, i in enumerate(hot):
                if bounds[k + 1] - bounds[k] <= max_tokens:
                    framed.append(i)
                    in_flat.append(k)
                    out[i] = frame  # (a place holder, replaced below)
                elif frame.trim is None:  # (trimmed offsets would be trimmed again)
                    out[i] = tok.post_process(flat.encodings([k], 0)[0], None, True, truncation)
        for i, enc in enumerate(out):
            if enc is None:
                out[i] = tok.post_process(self.encode_one(tok, texts[i], 0), None, True, truncation)
        if framed:
            pad_to = 0
            if pad is not None and pad["direction"] == "right":
                n_frame = len(frame.before) + len(frame.after)
                pad_to = (
                    pad["length"]
                    if pad["length"] is not None
                    else max(
                        max(bounds[k + 1] - bounds[k] for k in in_flat) + n_frame,
                        max((len(e) for e in out if e is not frame), default=0),
                    )
                )
                multiple = pad["pad_to_multiple_of"]
                if multiple and pad_to % multiple:
                    pad_to += multiple - pad_to % multiple
            for i, enc in zip(framed, framed_encodings(flat, in_flat, frame, pad_to, pad)):
                out[i] = enc
        return out
