"""StoredStream: permutation.build_stream of the token store's documents, read a window at a time,
and its rows those of batchify."""

import numpy as np
import pytest
import torch

import bertology.data.stored_stream as stored_stream
from bertology.data.instances import SpecialTokens
from bertology.data.permutation import PermutationData, PermutationSettings, build_stream
from bertology.data.stored_stream import StoredStream
from bertology.data.tokenized import tokenize_corpus


@pytest.fixture(scope="module")
def split_corpus(tmp_path_factory, small_corpus, wordpiece):
    """The shipped documents in 3 files, and a training split with gaps (as a held-out split leaves)."""
    tmp = tmp_path_factory.mktemp("stored")
    documents = small_corpus.read_text(encoding="utf-8").split("\n\n")
    paths = []
    for f in range(3):
        paths.append(tmp / f"c{f}.txt")
        paths[-1].write_text("\n\n".join(documents[f::3]), encoding="utf-8")
    corpus = tokenize_corpus(paths, wordpiece, tmp / "cache", workers=1)
    return corpus, [d for d in range(corpus.num_documents) if d % 3 != 1]


def test_a_stored_stream_reads_what_the_whole_stream_holds(split_corpus, monkeypatch):
    corpus, docs = split_corpus
    whole = build_stream(corpus.documents(docs), eod=99)
    whole = (whole.ids, whole.starts, whole.sentence)
    stored = StoredStream(corpus, docs, eod=99)
    assert len(stored) == len(whole[0])
    rng = np.random.default_rng(0)
    windows = [(0, len(stored)), (0, 0), (len(stored) - 3, len(stored))]
    windows += [tuple(sorted(rng.integers(0, len(stored) + 1, 2).tolist())) for _ in range(200)]
    for lo, hi in windows:  # every window, across documents, files and the held-out gaps
        for got, expected in zip(stored.read(lo, hi), whole):
            assert got.tolist() == expected[lo:hi].tolist(), (lo, hi)
    with pytest.raises(IndexError, match="outside the stream"):
        stored.read(0, len(stored) + 1)


@pytest.mark.parametrize("read_whole", [True, False], ids=["rows read whole", "rows read by windows"])
@pytest.mark.parametrize("bi_data", [False, True])
def test_stored_rows_are_batchify_of_the_stream(split_corpus, monkeypatch, bi_data, read_whole):
    corpus, docs = split_corpus
    monkeypatch.setattr(stored_stream, "WINDOW", 64)  # slices beyond one window, read again
    if not read_whole:  # (a stream of real size)
        monkeypatch.setattr(stored_stream, "WHOLE_STREAM", 0)
    whole = build_stream(corpus.documents(docs), eod=99).rows(6, bi_data)
    stored = StoredStream(corpus, docs, eod=99).rows(6, bi_data)
    assert len(stored) == len(whole)
    reads, read = [], stored.stream.read
    monkeypatch.setattr(stored.stream, "read", lambda lo, hi: reads.append(hi - lo) or read(lo, hi))
    rng = np.random.default_rng(1)
    for r in range(6):
        fields = stored.row(r)
        assert all(len(f) == len(whole) for f in fields)
        for a, b in [(0, None), (None, 5), (len(whole) - 70, len(whole) + 9), (7, 3)] + [
            tuple(sorted(rng.integers(0, len(whole), 2).tolist())) for _ in range(40)
        ]:
            for got, expected in zip(fields, whole.row(r)):
                assert got[a:b].tolist() == expected[a:b].tolist(), (r, a, b)
        with pytest.raises(TypeError, match="read by slices"):
            fields[0][3]
    if read_whole:  # a read a row, of all of it
        assert reads == [len(whole)] * 6
    else:  # windows, and slices beyond them
        assert len(reads) > 6


@pytest.mark.parametrize("read_whole", [True, False], ids=["rows read whole", "rows read by windows"])
def test_permutation_batches_from_the_store_are_those_of_the_stream(split_corpus, monkeypatch, read_whole):
    corpus, docs = split_corpus
    if not read_whole:
        monkeypatch.setattr(stored_stream, "WHOLE_STREAM", 0)
    settings = PermutationSettings(seq_len=32, reuse_len=16, num_predict=6, perm_size=8, bi_data=True)
    specials = SpecialTokens(cls=4, sep=3, mask=5, pad=0, all_ids=(0, 2, 3, 4, 5), eod=2)
    whole = PermutationData(build_stream(corpus.documents(docs), eod=2), settings, specials, batch_size=4, seed=5)
    stored = PermutationData(StoredStream(corpus, docs, eod=2), settings, specials, batch_size=4, seed=5)
    assert stored.steps_per_epoch == whole.steps_per_epoch
    for step in [0, 1, 2, whole.steps_per_epoch - 1, whole.steps_per_epoch + 3]:
        a, b = whole.batch(step), stored.batch(step)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), step


def test_a_window_reads_its_documents_not_those_between(split_corpus, monkeypatch):
    corpus, _ = split_corpus
    far_apart = [0, corpus.num_documents // 2, corpus.num_documents - 1]  # e.g. --heldout 3
    stored = StoredStream(corpus, far_apart, eod=99)
    read = []
    span = corpus.span
    monkeypatch.setattr(corpus, "span", lambda lo, hi: read.append(hi - lo) or span(lo, hi))
    got = stored.read(0, len(stored))
    assert sum(read) == len(stored) - 3  # the three documents' tokens, none of the ones between
    whole = build_stream(corpus.documents(far_apart), eod=99)
    assert [x.tolist() for x in got] == [whole.ids.tolist(), whole.starts.tolist(), whole.sentence.tolist()]
