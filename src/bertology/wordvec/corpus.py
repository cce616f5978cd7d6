"""Training text for word vectors: one line is one sentence, words are separated by whitespace
(gensim's LineSentence and the C tools read it the same way). A Parquet file or a datasets
directory gives the lines of its text column's values (a row a line, unless its text holds newlines).

`LineSentences(paths)` streams the files again on each pass (vocabulary, then encoding); the
encoded corpus is one int32 array of word indices with sentence boundaries, 4 bytes per
in-vocabulary word, which is what the compiled training loops walk.

    >>> from bertology.wordvec.vocab import Vocab
    >>> sentences = [["the", "cat"], ["the", "dog", "sat"]]
    >>> corpus = Corpus.encode(sentences, Vocab.build(sentences, min_count=2))
    >>> corpus.tokens.tolist(), corpus.starts.tolist(), corpus.raw_before.tolist()
    ([0, 0], [0, 1, 2], [0, 2, 5])
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

import numpy as np

from ..io import CorpusError, open_corpus
from ..tables import DEFAULT_TEXT_COLUMN, open_table, table_format, table_lines

# gensim's MAX_WORDS_IN_BATCH: longer sentences are cut into pieces of this many words.
MAX_SENTENCE_LENGTH = 10_000


def check_files(paths: list[str], text_column: str = DEFAULT_TEXT_COLUMN) -> None:
    """Fail before anything is read when a path is missing or not a file, or a table (a Parquet file, a
    datasets directory) has no text column `text_column`."""
    for p in paths:
        if table_format(p):
            open_table(p).require_text(text_column)
        elif not os.path.isfile(p):
            raise FileNotFoundError(f"{p}: no such file" if not os.path.exists(p) else f"{p}: not a file")


def read_lines(paths: list[str], text_column: str = DEFAULT_TEXT_COLUMN) -> Iterator[str]:
    """The lines of UTF-8 text files, decoded; a byte that is not UTF-8 raises CorpusError naming
    the file and the line. A table's lines are those of its `text_column`'s values (tables.table_lines)."""
    for path in paths:
        if table_format(path):
            yield from table_lines(path, text_column)
            continue
        with open_corpus(path) as f:
            for line_no, raw in enumerate(f, 1):
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise CorpusError(
                        f"{path}: line {line_no}: invalid UTF-8 byte(s) {raw[e.start : e.end]!r} "
                        f"at column {e.start + 1}; convert the file to UTF-8"
                    ) from None


class LineSentences:
    """Re-iterable sentences of UTF-8 text files (.gz, .xz, .bz2 decompressed on the fly).

    A byte that is not UTF-8 raises CorpusError naming the file and the line; a missing file
    fails before anything is read."""

    def __init__(
        self, paths: Iterable[str | os.PathLike], lowercase: bool = False, text_column: str = DEFAULT_TEXT_COLUMN
    ):
        self.paths = [os.fspath(p) for p in paths]
        self.lowercase, self.text_column = lowercase, text_column
        check_files(self.paths, text_column)

    def __iter__(self) -> Iterator[list[str]]:
        for line in read_lines(self.paths, self.text_column):
            words = (line.lower() if self.lowercase else line).split()
            if words:
                yield words


class PieceSentences:
    """Re-iterable sentences of a tokenizer's pieces: each line of the files encoded without
    special tokens, truncation or padding, so a "word" is a vocabulary piece ("##ing", "Ġthe",
    "▁the") and word vectors trained on them are keyed by the pieces a model embeds.

        >>> tok = Tokenizer.load("tokenizer.json")                                  # doctest: +SKIP
        >>> next(iter(PieceSentences(["descriptions.txt"], tok)))                     # doctest: +SKIP
        ['real', '-', 'time', 'strategy', 'game', 'of', 'ancient', 'war', '##fa', '##re']

    `sentence_ids(path, tokenizer)`, where given, reads a text file's sentences as a pretraining corpus in
    the lines format: data.tokenstore.sentence_ids tokenizes it on every core into the token store that
    pretraining with the same tokenizer reads (the CLI and the demo pass it; wordvec sits below data).
    Otherwise, and for a table's values, lines are encoded here, a batch at a time. The first pass keeps
    the piece ids (int32, 4 bytes a piece); later passes (word2vec reads the corpus twice: counting, then
    encoding) replay them instead of encoding again.
    """

    BATCH = 2048  # lines per encode_batch call

    def __init__(
        self,
        paths: Iterable[str | os.PathLike],
        tokenizer,
        text_column: str = DEFAULT_TEXT_COLUMN,
        sentence_ids: Callable[[str, object], Iterator[np.ndarray]] | None = None,
    ):
        self.paths = [os.fspath(p) for p in paths]
        self.tokenizer, self.text_column, self.sentence_ids = tokenizer, text_column, sentence_ids
        check_files(self.paths, text_column)
        self._ids: list[np.ndarray] | None = None  # per non-empty line, once the first pass has finished
        self._pieces = [tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size)]

    def _encoded(self) -> Iterator[np.ndarray]:
        for path in self.paths:
            if self.sentence_ids is not None and not table_format(path):
                yield from self.sentence_ids(path, self.tokenizer)
            else:
                yield from self._lines(path)

    def _lines(self, path: str) -> Iterator[np.ndarray]:
        lines = read_lines([path], self.text_column)
        while batch := [line for _, line in zip(range(self.BATCH), lines)]:
            for enc in self.tokenizer.encode_batch(batch, add_special_tokens=False, padding=False, truncation=False):
                if enc.ids:
                    yield np.asarray(enc.ids, dtype=np.int32)

    def __iter__(self) -> Iterator[list[str]]:
        pieces = self._pieces
        if self._ids is not None:
            for ids in self._ids:
                yield [pieces[i] for i in ids]
            return
        kept = []
        for ids in self._encoded():
            kept.append(ids)
            yield [pieces[i] for i in ids]
        self._ids = kept


@dataclass
class Corpus:
    tokens: np.ndarray  # int32 word indices, in-vocabulary words only
    starts: np.ndarray  # int64, n_sentences + 1: sentence s is tokens[starts[s]:starts[s + 1]]
    raw_before: np.ndarray  # int64, n_sentences + 1: words read (rare ones included) before sentence s

    @property
    def raw_words(self) -> int:
        return int(self.raw_before[-1])

    def __len__(self) -> int:
        return len(self.starts) - 1

    @classmethod
    def encode(cls, sentences: Iterable[list[str]], vocab, max_sentence_length: int = MAX_SENTENCE_LENGTH) -> "Corpus":
        """Word indices of every in-vocabulary word; a sentence longer than `max_sentence_length` words
        is cut into pieces (contexts do not cross the cut, as in gensim)."""
        index = vocab.index
        tokens = np.empty(1 << 20, dtype=np.int32)
        n = 0
        starts, raw_before, raw = [0], [0], 0
        for sentence in sentences:
            for piece in range(0, len(sentence), max_sentence_length):
                words = sentence[piece : piece + max_sentence_length]
                ids = [index[w] for w in words if w in index]
                if n + len(ids) > len(tokens):
                    tokens = np.resize(tokens, max(2 * len(tokens), n + len(ids)))
                tokens[n : n + len(ids)] = ids
                n += len(ids)
                raw += len(words)
                starts.append(n)
                raw_before.append(raw)
        return cls(tokens[:n].copy(), np.array(starts, dtype=np.int64), np.array(raw_before, dtype=np.int64))
