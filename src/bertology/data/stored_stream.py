"""XLNet's token stream read from the token store where a batch needs it, never held whole.

The permutation LM reads its documents as one stream (permutation.py: each document's tokens, then
an end-of-document token; a flag that flips at every sentence and every end of document), cut into
one stream per batch row. Held in memory, that stream takes 10 bytes a token (int64 ids and two
flags) beside the store's 2: on a corpus of real size more than the machine has. A step reads, from
each row, a window at its offset and a random span for B, so `StoredStream` keeps only a few numbers
per document (where it begins in the stream, the sentences before it) and reads a window from the
token store on demand; `StoredStream.rows` is the per-row view `PermutationData` reads (the same
slices as `batchify` of the stream held in memory, tests hold the two together).

    stream = StoredStream(corpus, train_docs, eod=specials.eod)
    rows = stream.rows(batch_size, bi_data=False)      # len(rows): tokens per row
    ids, starts, sentence = rows.row(3, position)       # each sliced as an array: ids[a:b]
"""

from __future__ import annotations

import numpy as np

from .rows import ranges

WINDOW = 1 << 13  # tokens a row reads ahead at once: the slices of an example and of the steps after it
FAR = 1 << 10  # tokens read for B's random span (a span of at most max_length)
BEHIND = 1 << 10  # and behind each window (B's random span is pulled back to a sentence start)
# a stream of at most this many tokens (84 MB at 10 bytes a token) is read whole, a row at its first
# example: B's random spans, a read each by windows, then cost nothing (a demo's corpus)
WHOLE_STREAM = 1 << 23


class StoredStream:
    """The documents `docs` of a TokenizedCorpus, end to end, each followed by `eod` (the stream
    `permutation.build_stream` makes of them), read a window at a time."""

    def __init__(self, corpus, docs, eod: int):
        self.corpus, self.eod = corpus, int(eod)
        self.docs = np.asarray(list(docs), dtype=np.int64)  # (D,)
        first = np.asarray(corpus.doc_offsets[self.docs], dtype=np.int64)  # (D,) each document's first sentence
        sentences = np.asarray(corpus.doc_offsets[self.docs + 1], dtype=np.int64) - first  # (D,)
        tokens = np.asarray(corpus.sent_offsets[first + sentences], dtype=np.int64) - np.asarray(
            corpus.sent_offsets[first], dtype=np.int64
        )  # (D,) each document's tokens
        self.begin = np.concatenate([[0], np.cumsum(tokens + 1)])  # (D + 1,) stream offset of each document
        # the flag of a token is the parity of its segment's number: sentences and eods before it
        self.segments_before = np.concatenate([[0], np.cumsum(sentences + 1)])  # (D + 1,)

    def __len__(self) -> int:
        return int(self.begin[-1])

    def read(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids int64, word starts, sentence flags) of stream positions [lo, hi)."""
        if not 0 <= lo <= hi <= len(self):
            raise IndexError(f"stream positions [{lo}, {hi}) outside the stream's {len(self)}")
        if lo == hi:
            return np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, bool)
        c = self.corpus
        j0, j1 = np.searchsorted(self.begin, [lo, hi - 1], side="right") - 1
        j = np.arange(j0, j1 + 1)  # (J,) the documents the window touches
        # each document's part of the window: its tokens [a, a + taken), and its eod where the window holds it
        a = np.maximum(self.begin[j], lo) - self.begin[j]
        b = np.minimum(self.begin[j + 1], hi) - self.begin[j]  # (J,) offsets in the document (its eod: its size)
        size = self.begin[j + 1] - self.begin[j] - 1
        taken = np.minimum(b, size) - a  # (J,)
        first_sentence = np.asarray(c.doc_offsets[self.docs[j]], dtype=np.int64)  # (J,)
        first_token = np.asarray(c.sent_offsets[first_sentence], dtype=np.int64) + a  # (J,) corpus positions
        # documents that follow one another in the corpus are read as one span of it, with the sentence
        # of each token read (the flags count sentences); a held-out document between two is a new span
        ids, starts, sentence, local = [], [], [], np.empty(len(j), np.int64)
        spans = np.split(np.arange(len(j)), np.flatnonzero(np.diff(self.docs[j]) != 1) + 1)
        for k in spans:
            g0, g1 = int(first_token[k[0]]), int(first_token[k[-1]] + taken[k[-1]])
            local[k] = sum(map(len, ids)) + first_token[k] - g0
            span_ids, span_starts = c.span(g0, g1)
            at = np.array([g0, max(g0, g1 - 1)], c.sent_offsets.dtype)  # (a search across dtypes copies the offsets)
            s0, s1 = np.searchsorted(c.sent_offsets, at, side="right") - 1  # first, last
            marks = np.zeros(g1 - g0, np.int64)
            marks[np.asarray(c.sent_offsets[s0 + 1 : s1 + 1], dtype=np.int64) - g0] = 1  # sentences begun inside
            ids.append(span_ids), starts.append(span_starts), sentence.append(np.cumsum(marks) + s0)
        ids, starts, sentence = (np.concatenate(x) for x in (ids, starts, sentence))
        at_token = ranges(local, taken)  # (T,) where the window's tokens are in what was read
        doc = np.repeat(np.arange(len(j)), taken)  # (T,) index into j
        segment = self.segments_before[j][doc] + (sentence[at_token] - first_sentence[doc])
        has_eod = b > size  # (J,)
        filled = taken + has_eod  # (J,) window positions each document fills
        at = np.cumsum(filled) - filled  # (J,) where each begins in the window
        token_at = ranges(at, taken)
        out_ids, out_starts = np.full(hi - lo, self.eod, np.int64), np.ones(hi - lo, bool)
        out_flags = np.empty(hi - lo, bool)
        out_ids[token_at], out_starts[token_at] = ids[at_token], starts[at_token]
        out_flags[token_at] = segment % 2 == 1
        eod_at = (at + filled - 1)[has_eod]
        out_flags[eod_at] = (self.segments_before[j + 1][has_eod] - 1) % 2 == 1
        return out_ids, out_starts, out_flags

    def rows(self, n_rows: int, bi_data: bool = False) -> "StoredRows":
        """The stream cut into `n_rows` rows as `permutation.batchify` cuts it."""
        return StoredRows(self, n_rows, bi_data)


class StoredRows:
    """`permutation.batchify` of a StoredStream: rows of equal length (the tail that does not divide
    dropped); with bi_data, half the rows and the same rows backwards."""

    def __init__(self, stream: StoredStream, n_rows: int, bi_data: bool):
        if bi_data and n_rows % 2:
            raise ValueError(
                f"bi_data needs an even batch size (forward rows and the same rows backwards), got {n_rows}"
            )
        self.stream, self.forward = stream, n_rows // 2 if bi_data else n_rows
        self.length = len(stream) // self.forward
        self._readers: dict[int, _RowReader] = {}  # each row's windows, kept from step to step

    def __len__(self) -> int:
        return self.length

    def row(self, r: int, position: int = 0) -> tuple["_Field", "_Field", "_Field"]:
        """(ids, word starts, sentence flags) of row `r`, each read by slices, for an example at `position`."""
        reader = self._readers.get(r)
        if reader is None:
            reader = self._readers[r] = _RowReader(
                self.stream, r % self.forward * self.length, self.length, r >= self.forward
            )
        reader.at(position)
        return _Field(reader, 0), _Field(reader, 1), _Field(reader, 2)


class _RowReader:
    """Slices of one row, from two windows: `near`, WINDOW tokens from the example's offset on (its
    slices, and the next steps' examples, whose offsets move on by reuse_len), and `far`, read
    around B's random span. A row read backwards is a forward row's slices reversed."""

    def __init__(self, stream: StoredStream, base: int, length: int, reverse: bool):
        self.stream, self.base, self.length, self.reverse = stream, base, length, reverse
        self.near: tuple[int, int, tuple] | None = None  # (lo, hi, arrays) in forward row positions
        self.far: tuple[int, int, tuple] | None = None

    def _forward(self, a: int, b: int) -> tuple[int, int]:
        """Row positions [a, b) as forward row positions (clipped to the row)."""
        a, b = max(0, a), min(self.length, b)
        return (self.length - b, self.length - a) if self.reverse else (a, b)

    def _read(self, a: int, b: int) -> tuple[int, int, tuple]:
        lo, hi = self._forward(a, b)
        return lo, hi, self.stream.read(self.base + lo, self.base + hi)

    def at(self, position: int) -> None:
        """An example starts at `position`: the near window holds the next WINDOW / 2 tokens from it (or
        the whole row, read once, where the stream is small)."""
        if len(self.stream) <= WHOLE_STREAM:
            if self.near is None:
                self.near = self._read(0, self.length)
            return
        lo, hi = self._forward(position - BEHIND, position + WINDOW // 2)
        if self.near is None or not (self.near[0] <= lo and hi <= self.near[1]):
            self.near = self._read(position - BEHIND, position + WINDOW)

    def slice(self, field: int, start, stop) -> np.ndarray:
        a, b, _ = slice(start, stop).indices(self.length)
        b = max(a, b)
        fa, fb = self._forward(a, b)
        window = next((w for w in (self.near, self.far) if w is not None and w[0] <= fa and fb <= w[1]), None)
        if window is None:
            window = self.far = self._read(a - BEHIND, max(b, a + FAR))
        lo, _, arrays = window
        out = arrays[field][fa - lo : fb - lo]
        return out[::-1] if self.reverse else out


class _Field:
    """One array of a stored row: its length, and slices (all `make_example` takes of a row)."""

    def __init__(self, reader: _RowReader, field: int):
        self.reader, self.field = reader, field

    def __len__(self) -> int:
        return self.reader.length

    def __getitem__(self, key) -> np.ndarray:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError(f"a stored row is read by slices, got {key!r}")
        return self.reader.slice(self.field, key.start, key.stop)
