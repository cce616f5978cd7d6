"""Word counting shortcuts for training: what corpus.generic_words counts, line by line, faster.

* whitespace-dropping pre-tokenizers (BERT, Whitespace, WhitespaceSplit) behind char-local
  normalizers: count whitespace-separated chunks first (`str.split` + `Counter`, both in C),
  then normalize and pre-tokenize each distinct chunk once; files are counted as chunks of
  bytes (fast/chunks.py, `chunk_words`);
* ByteLevel: one compiled regex over the line, then each distinct piece mapped to bytes once;
* Metaspace: plain string replace and split.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Callable, Iterable

from .. import normalizers as N, pre_tokenizers as P
from ..byte_level import GPT2_PATTERN, to_byte_chars

# str.split() splits at these, where the pipeline does not: the tokenizers' whitespace set does not
# hold \x1c-\x1f, and BertNormalizer's clean_text deletes them and \x0b, \x0c, \x85 (control
# characters), joining what stood either side. A line holding one is counted as one chunk.
_NOT_SPLIT_AT = frozenset("\x0b\x0c\x1c\x1d\x1e\x1f\x85")
# Normalizers that act char by char (or on combining sequences, which never span whitespace):
# normalizing a line equals normalizing each whitespace-separated chunk.
_LOCAL_NORMALIZERS = (N.BertNormalizer, N.Lowercase, N.NFC, N.NFD, N.NFKC, N.NFKD, N.StripAccents)
_WS_DROPPING = (P.BertPreTokenizer, P.Whitespace, P.WhitespaceSplit)

Counter_ = Callable[[Iterable[str], object], Counter]  # (lines, progress bar or None) -> word counts


def _stages(stage, sequence: type) -> list:
    """A stage and, for a Sequence, its members (flattened)."""
    if stage is None:
        return []
    if type(stage) is sequence:
        members = stage.normalizers if sequence is N.Sequence else stage.pretokenizers
        return [m for s in members for m in _stages(s, sequence)]
    return [stage]


def word_counter(normalizer, pre_tokenizer) -> Counter_ | None:
    """The shortcut that counts this pipeline's words, if it has one (exact types only)."""
    norms, pres = _stages(normalizer, N.Sequence), _stages(pre_tokenizer, P.Sequence)
    if len(pres) != 1:
        return None
    pre, kind = pres[0], type(pres[0])
    if kind in _WS_DROPPING and all(type(n) in _LOCAL_NORMALIZERS for n in norms):
        return partial(_count_chunked, normalizer, pre)
    if kind is P.ByteLevel:
        return partial(_count_byte_level, normalizer, pre)
    if kind is P.Metaspace:
        return partial(_count_metaspace, normalizer, pre)
    return None


def chunk_words(normalizer, pre_tokenizer) -> Callable[[dict, str], dict[str, int]] | None:
    """For the pipelines counted by whitespace chunks (as `_count_chunked`): a function from
    {chunk as bytes: count} (fast/chunks.py) and the decoding's errors setting to the word
    counts, in the order the chunks come. None for the other pipelines.

    On text free of _NOT_SPLIT_AT the words come in the order `_count_chunked` gives them: the
    chunks come in the order they first occur, and so do the str chunks each would split into
    (a str chunk's first occurrence is inside the first byte chunk that holds it), while later
    repeats add no new word. The trained vocabulary depends on that order (ties go to the
    symbols seen first).
    """
    norms, pres = _stages(normalizer, N.Sequence), _stages(pre_tokenizer, P.Sequence)
    if len(pres) != 1 or type(pres[0]) not in _WS_DROPPING or any(type(n) not in _LOCAL_NORMALIZERS for n in norms):
        return None
    return partial(_words_of_chunks, normalizer, pres[0])


def _words_of_chunks(normalizer, pre_tokenizer, chunks: dict, errors: str) -> dict[str, int]:
    # a chunk ends at whitespace the normalizer keeps, so it normalizes and splits as in its line
    words: dict[str, int] = {}
    find = pre_tokenizer.pattern.findall
    normalize = normalizer.normalize_str if normalizer is not None else None
    get = words.get
    for raw, n in chunks.items():
        text = raw.decode("utf-8", errors)
        for w in find(normalize(text) if normalize is not None else text):
            words[w] = get(w, 0) + n
    return words


def _count_chunked(normalizer, pre_tokenizer, lines, bar) -> Counter:
    chunks: Counter = Counter()
    for line in lines:
        if _NOT_SPLIT_AT.isdisjoint(line):
            chunks.update(line.split())
        else:
            chunks[line] += 1  # (normalized and split as a whole below, as the pipeline does)
        if bar is not None:
            bar.update(len(line))
    words: Counter = Counter()
    find = pre_tokenizer.pattern.findall
    for chunk, n in chunks.items():
        for w in find(normalizer.normalize_str(chunk) if normalizer is not None else chunk):
            words[w] += n
    return words


def _count_byte_level(normalizer, pre_tokenizer, lines, bar) -> Counter:
    pieces: Counter = Counter()
    prefix = pre_tokenizer.add_prefix_space
    use_regex = pre_tokenizer.use_regex
    for line in lines:
        if bar is not None:
            bar.update(len(line))
        if normalizer is not None:
            line = normalizer.normalize_str(line)
        if not line:  # prepending to an empty string is a no-op in tokenizers
            continue
        if prefix and not line.startswith(" "):
            line = " " + line
        if use_regex:
            pieces.update(GPT2_PATTERN.findall(line))
        elif line:
            pieces[line] += 1
    words: Counter = Counter()
    for piece, n in pieces.items():
        if piece:
            words[to_byte_chars(piece)] += n
    return words


def _count_metaspace(normalizer, pre_tokenizer, lines, bar) -> Counter:
    rep = pre_tokenizer.replacement
    prepend = pre_tokenizer.prepend_scheme in ("always", "first")  # a line starts at offset 0
    split = pre_tokenizer.split_on_replacement
    words: Counter = Counter()
    for line in lines:
        if bar is not None:
            bar.update(len(line))
        if normalizer is not None:
            line = normalizer.normalize_str(line)
        if not line:
            continue
        s = line.replace(" ", rep)
        if prepend and not s.startswith(rep):
            s = rep + s
        if not split:
            if s:
                words[s] += 1
            continue
        parts = s.split(rep)
        if parts[0]:
            words[parts[0]] += 1
        words.update(rep + p for p in parts[1:])
    return words
