"""Rows cut from the token store at batch time: an instance's pieces (samples.py) laid out as the
model reads them, padded to max_seq_length.

    [CLS] piece_1 [SEP] piece_2 [SEP] ... piece_k [SEP] [PAD] ...

Token types: 0 up to and including the first [SEP], 1 after it (segment B and its [SEP]) for a
pair; 0 everywhere for a packed sequence. Word starts: a piece's own, False on the special tokens.
This is the layout instances.assemble_pair / assemble_single wrote to disk, padded.
"""

from __future__ import annotations

import numpy as np

from .instances import SpecialTokens


def ranges(begins, lengths) -> np.ndarray:
    """[begins[0], begins[0] + lengths[0]) then [begins[1], …) … end to end, as one int64 array.

    >>> ranges(np.array([5, 0]), np.array([2, 3])).tolist()
    [5, 6, 0, 1, 2]
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    shift = np.asarray(begins, dtype=np.int64) - (np.cumsum(lengths) - lengths)  # (n,)
    return np.repeat(shift, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


def piece_table(first_piece, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row of each piece, piece number) of packed sequences `idx` (B,): sequence i has pieces
    first_piece[i] .. first_piece[i + 1] - 1.

    >>> piece_table(np.array([0, 2, 3]), np.array([1, 0]))
    (array([0, 1, 1]), array([2, 0, 1]))
    """
    lo, hi = np.asarray(first_piece[idx], np.int64), np.asarray(first_piece[idx + 1], np.int64)
    return np.repeat(np.arange(len(idx)), hi - lo), ranges(lo, hi - lo)


def cut_rows(
    corpus, starts: np.ndarray, lengths: np.ndarray, row: np.ndarray, n_rows: int, T: int, sp: SpecialTokens
) -> dict[str, np.ndarray]:
    """The rows of pieces (starts, lengths, row) of a TokenizedCorpus: input_ids (B, T) int64,
    lengths (B,), word_start (B, T) bool, second (B, T) bool (after the first [SEP], for token types)."""
    starts, lengths = np.asarray(starts, np.int64), np.asarray(lengths, np.int64)
    # each piece's first column: 1 after [CLS], then each piece and its [SEP] in turn within a row
    span = lengths + 1
    ends = np.cumsum(span)
    row_first = np.searchsorted(row, np.arange(n_rows))  # (B,) index of each row's first piece
    before = ends - span - np.repeat(ends[row_first] - span[row_first], np.bincount(row, minlength=n_rows))
    col0 = 1 + before  # (pieces,)
    total = int(lengths.sum())
    # the token columns and store positions of every piece's tokens, flat
    cols, positions = ranges(col0, lengths), ranges(starts, lengths)
    rows_of = np.repeat(row, lengths)
    if total and cols.max() >= T:
        raise ValueError(f"an instance of {int(cols.max()) + 2} tokens does not fit max_seq_length={T}")
    ids, word = corpus.gather(positions)
    input_ids = np.full((n_rows, T), sp.pad, np.int64)
    word_start = np.zeros((n_rows, T), bool)
    input_ids[:, 0] = sp.cls
    input_ids[rows_of, cols] = ids
    word_start[rows_of, cols] = word
    input_ids[row, col0 + lengths] = sp.sep  # a [SEP] after every piece
    row_len = np.bincount(row, weights=span, minlength=n_rows).astype(np.int64) + 1
    first_sep = np.full(n_rows, T, np.int64)
    np.minimum.at(first_sep, row, col0 + lengths)
    second = np.arange(T)[None, :] > first_sep[:, None]
    return {"input_ids": input_ids, "lengths": row_len, "word_start": word_start, "second": second}
