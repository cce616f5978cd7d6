"""The sample index of packed sequences (RoBERTa FULL-SENTENCES / DOC-SENTENCES): each instance as a
few token spans of the token store, not a copy. (Segment pairs have their own index: pairs.py.)

An instance is [CLS] piece_1 [SEP] piece_2 [SEP] ... piece_k [SEP], one piece per document it draws
on, the separator between documents RoBERTa's. The index holds, per part (training or held-out):

    piece_start  (pieces,)        uint32 (int64 past 2^32 tokens): global token offset
    piece_len    (pieces,)        uint8 (uint16 from max_seq_length 258 on): tokens
    first_piece  (instances + 1,) uint32 / int64: where each instance's pieces begin

It is made by the very algorithm of instances.py on sentence lengths instead of token lists:
`pack_spans` cuts exactly where `instances.pack_sentences` cuts. Packing draws nothing, so its
dupe_factor passes are one pass repeated: the index holds one, and instance i is instance i mod N of it.
"""

from __future__ import annotations

import numpy as np

from ..progress import progress_bar


def pack_spans(documents, max_num_tokens: int, cross_documents: bool) -> tuple[list[int], list[int], list[int]]:
    """`instances.pack_sentences` on spans: `documents` yields each document's (starts, lengths);
    returns (piece starts, piece lengths, first piece of each sequence + the total).

    >>> pack_spans([([0, 2], [2, 1]), ([3], [2])], 6, True)
    ([0, 3], [3, 2], [0, 2])
    >>> pack_spans([([0, 2], [2, 1]), ([3], [2])], 4, True)
    ([0, 3], [3, 2], [0, 1, 2])
    """
    p_start: list[int] = []
    p_len: list[int] = []
    first: list[int] = [0]
    used = 0  # tokens (and separators) in the sequence being filled
    for starts, lengths in documents:
        if used and not cross_documents:
            first.append(len(p_start))
            used = 0
        new_doc = used > 0
        for s, n in zip(starts, lengths):
            for k in range(0, n, max_num_tokens):
                size = min(max_num_tokens, n - k)
                need = size + (1 if new_doc else 0)
                if used and used + need > max_num_tokens:
                    first.append(len(p_start))
                    used, need, new_doc = 0, size, False
                if used == 0 or new_doc:  # a new piece: a new sequence, or a document after its separator
                    p_start.append(s + k)
                    p_len.append(size)
                    new_doc = False
                else:  # the rest of the same document runs on
                    p_len[-1] += size
                used += need
    if used:
        first.append(len(p_start))
    return p_start, p_len, first


def build_index(corpus, doc_ids: list[int], r, show_progress: bool, desc: str) -> dict[str, np.ndarray]:
    """The index arrays (module docstring) of documents `doc_ids` of a TokenizedCorpus under packing recipe `r`."""
    M = r.max_seq_length - 2
    doc_ids = np.asarray(doc_ids, dtype=np.int64)
    sentences = _Sentences(corpus.sent_offsets, corpus.doc_offsets)
    bar = progress_bar(total=r.dupe_factor * len(doc_ids), desc=desc, unit="doc", disable=not show_progress)
    with bar:
        p_start, p_len, first = pack_spans(
            _counted(map(sentences, doc_ids.tolist()), bar, r.dupe_factor), M, r.packing == "full-sentences"
        )
    wide = corpus.num_tokens >= 1 << 32
    return {
        "first_piece": np.asarray(first, dtype=np.int64 if len(p_start) >= 1 << 32 else np.uint32),
        "piece_start": np.asarray(p_start, dtype=np.int64 if wide else np.uint32),
        "piece_len": np.asarray(p_len, dtype=np.uint8 if M < 1 << 8 else np.uint16),
    }


class _Sentences:
    """Document d -> (token offsets, lengths) of its sentences, as lists (the loops below read scalars)."""

    def __init__(self, sent_offsets: np.ndarray, doc_offsets: np.ndarray):
        self.sent, self.lengths = sent_offsets, np.diff(sent_offsets)
        self.docs = doc_offsets.tolist()  # (a list: a scalar read off an array costs more than the slice)

    def __call__(self, d: int) -> tuple[list[int], list[int]]:
        s0, s1 = self.docs[d], self.docs[d + 1]
        return self.sent[s0:s1].tolist(), self.lengths[s0:s1].tolist()


def _counted(items, bar, weight: int = 1):
    """`items`, each counted `weight` times on `bar` (packing's one pass stands for dupe_factor passes)."""
    for item in items:
        yield item
        bar.update(weight)


def piece_starts(index, piece: np.ndarray) -> np.ndarray:
    """(P,) int64 token offsets of pieces `piece` of a packing index."""
    return np.asarray(index["piece_start"][np.asarray(piece, dtype=np.int64)], dtype=np.int64)
