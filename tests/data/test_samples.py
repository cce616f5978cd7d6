"""Instances on the fly (data/pairs.py, samples.py, rows.py): the pair index makes each document's pairs
as instances.create_pair_instances makes them with the document's keyed draws, the packing index replays
pack_sentences on sentence lengths, so every row cut from the token store is the row the padded layout
would write out; a batch is a pure function of its step; the masking statistics are the recipe's."""

import random

import numpy as np
import pytest
import torch

from bertology.data import (
    IGNORE_INDEX,
    DocumentWindow,
    Segment,
    build_instances,
    create_pair_instances,
    pack_sentences,
    special_tokens,
)
from bertology.data.instances import assemble_pair, assemble_single
from bertology.data.pairs import PIECE_SEQUENCES, KeyedRandom, document_pairs
from bertology.data.samples import pack_spans
from bertology.data.store import InstanceStore
from bertology.data.tokenized import split_documents


def _document(lengths: list[int], start: int) -> tuple[list[int], list[int], list[Segment]]:
    """A document of sentences of `lengths` from token offset `start`, as spans and as Segments whose
    ids are the tokens' offsets (so a pair of Segments says which spans it took)."""
    starts = list(np.cumsum([start] + lengths[:-1]))
    segments = [Segment(list(range(s, s + n)), [True] * n) for s, n in zip(starts, lengths)]
    return starts, lengths, segments


def _span_ids(start: int, length: int) -> list[int]:
    return list(range(start, start + length))


@pytest.mark.parametrize("objective", ["nsp", "sop"])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sizes, M, short, window", [((1, 2, 5, 9, 17, 40), 24, 0.3, 3), ((1, 3, 70, 150), 20, 0.5, 1)])
def test_document_pairs_are_create_pair_instances_with_keyed_draws(objective, seed, sizes, M, short, window):
    """Every document of every pass, its pairs made by create_pair_instances (the recipe) with the
    document's KeyedRandom and the streaming negative window, are the pairs document_pairs makes for
    all documents at once (truncation over many 64-draw words included: sentences of 150 tokens), and
    counted alone (`only_jobs`) the same jobs; asked for one pair of each at batch time, it makes that pair alone."""
    g = random.Random(100 + seed)
    docs, offset = [], 0
    for _ in range(12):
        lengths = [g.choice(sizes) for _ in range(g.randint(1, 9))]
        docs.append(_document(lengths, offset))
        offset += sum(lengths)
    sent_offsets = np.cumsum([0] + [n for d in docs for n in d[1]])
    doc_offsets = np.cumsum([0] + [len(d[1]) for d in docs])
    expected = []
    for dupe in range(2):
        stream = DocumentWindow(window)
        pending = (cur for d in docs for cur in stream.push(d[2]))
        for k, cur in enumerate(_streamed(pending, stream)):
            rng, negatives = KeyedRandom(seed, dupe, k), stream if objective == "nsp" else None
            for p in create_pair_instances(cur, M, short, objective, rng, negatives):
                expected.append((dupe, k, p.a.ids, p.b.ids, p.label))
    dupes, positions = np.repeat([0, 1], len(docs)), np.tile(np.arange(len(docs)), 2)
    kw = dict(max_num_tokens=M, short_seq_prob=short, objective=objective, window=window, seed=seed)
    got = document_pairs(sent_offsets, doc_offsets, np.arange(len(docs)), dupes, positions, **kw)
    order = np.argsort(got["job"], kind="stable")
    made = [
        (int(dupes[j]), int(positions[j]), _span_ids(a0, a_len), _span_ids(b0, b_len), int(label))
        for j, a0, a_len, b0, b_len, label in zip(
            *(got[c][order].tolist() for c in ("job", "a_start", "a_len", "b_start", "b_len", "label"))
        )
    ]
    assert made == expected and len(made) > 10
    assert {label for *_, label in made} == {0, 1}
    # the index's count of pairs (truncation's draws counted, not drawn): the same jobs, in the same order
    count = document_pairs(sent_offsets, doc_offsets, np.arange(len(docs)), dupes, positions, only_jobs=True, **kw)
    assert list(count) == ["job"] and np.array_equal(count["job"], got["job"])
    # offsets in uint32 as the stores keep them, the last at the dtype's very top: the same pairs, moved
    top = int(np.iinfo(np.uint32).max - sent_offsets[-1])
    narrow = document_pairs(
        (sent_offsets + top).astype(np.uint32),
        doc_offsets.astype(np.uint32),
        np.arange(len(docs)),
        dupes,
        positions,
        **kw,
    )
    for c in ("job", "a_len", "b_len", "label"):
        assert np.array_equal(narrow[c], got[c])
    assert np.array_equal(narrow["a_start"], got["a_start"] + top) and np.array_equal(
        narrow["b_start"], got["b_start"] + top
    )
    if max(sizes) > M:
        assert any(len(a) + len(b) == M for _, _, a, b, _ in made)  # some were truncated
    # at batch time: pair j of job i alone, in any order, a job asked for twice
    counts = np.bincount(got["job"], minlength=len(dupes))
    first = np.cumsum(counts) - counts
    ask = np.random.default_rng(seed).permutation(np.r_[np.arange(len(made)), [0, len(made) - 1]])
    job = np.searchsorted(np.cumsum(counts), ask, "right")
    one = document_pairs(sent_offsets, doc_offsets, np.arange(len(docs)), dupes[job], positions[job],
                         want=ask - first[job], **kw)  # fmt: skip
    back = np.argsort(one["job"])
    assert np.array_equal(one["job"][back], np.arange(len(ask)))
    for c in ("a_start", "a_len", "b_start", "b_len", "label"):
        assert np.array_equal(one[c][back], got[c][order][ask])


def test_keyed_draws_are_uniform_and_independent_of_what_came_before():
    """KeyedRandom: the same (seed, pass, document) the same draws; randrange uniform; the coins
    (< 0.5, a bit of a word shared by 64 draws) balanced and uncorrelated with their neighbours."""
    a, b = KeyedRandom(3, 1, 17), KeyedRandom(3, 1, 17)
    assert [a.random() for _ in range(200)] == [b.random() for _ in range(200)]
    assert [KeyedRandom(3, 1, 17).random() for _ in range(3)] != [KeyedRandom(3, 2, 17).random() for _ in range(3)]
    g = KeyedRandom(0, 0, 0)
    faces = np.bincount([g.randint(1, 6) for _ in range(60_000)], minlength=7)[1:]
    assert np.all(np.abs(faces / 10_000 - 1) < 0.05)
    coins = np.array([g.random() < 0.5 for _ in range(64_000)])
    assert abs(coins.mean() - 0.5) < 0.01 and abs(np.mean(coins[1:] == coins[:-1]) - 0.5) < 0.01


@pytest.mark.parametrize("cross", [True, False])
def test_pack_spans_are_pack_sentences(cross):
    g = random.Random(3)
    docs, offset = [], 0
    for _ in range(30):
        lengths = [g.choice([1, 3, 8, 20, 70]) for _ in range(g.randint(1, 6))]
        docs.append(_document(lengths, offset))
        offset += sum(lengths)
    sep = -1
    expected = [s.ids for s in pack_sentences([d[2] for d in docs], 30, cross, sep)]
    starts, lengths, first = pack_spans([(d[0], d[1]) for d in docs], 30, cross)
    got = []
    for i in range(len(first) - 1):
        ids = []
        for p in range(first[i], first[i + 1]):
            ids += ([sep] if ids else []) + _span_ids(starts[p], lengths[p])
        got.append(ids)
    assert got == expected and len(got) > 20


def _written_rows(store: InstanceStore, doc_ids, tokenizer, seed: int) -> list[tuple]:
    """What the padded layout would write for `store`'s recipe: instances.py's pairs (each document with
    its keyed draws) / packing over the documents, assembled (ids, token types, word starts, label) per
    instance, pass after pass."""
    r, corpus = store.recipe, store.corpus
    sp = special_tokens(tokenizer, r.family)
    out = []
    for dupe in range(r.dupe_factor):
        if r.pair_task:
            window = DocumentWindow(r.negative_window)
            pending = (cur for d in corpus.documents(doc_ids) for cur in window.push(d))
            nsp = r.pair_task == "nsp"
            for d, cur in zip(doc_ids, _streamed(pending, window)):
                for q, piece in enumerate(_pieces(cur, PIECE_SEQUENCES * r.max_seq_length)):
                    for p in create_pair_instances(
                        piece, r.max_seq_length - 3, r.short_seq_prob, r.pair_task, KeyedRandom(seed, dupe, d, q),
                        window if nsp else None,
                    ):  # fmt: skip
                        out.append((*assemble_pair(p, sp), p.label))
        else:
            for s in pack_sentences(
                corpus.documents(doc_ids), r.max_seq_length - 2, r.packing == "full-sentences", sp.sep
            ):
                out.append((*assemble_single(s, sp), None))
    return out


def _pieces(document: list[Segment], tokens: int) -> list[list[Segment]]:
    """A document cut before each sentence whose offset in it has passed another multiple of `tokens`."""
    pieces, at = {}, 0
    for s in document:
        pieces.setdefault(at // tokens, []).append(s)
        at += len(s)
    return list(pieces.values())


def _streamed(pending, window):
    """The documents one at a time while the window moves (NSP samples the window as it stands)."""
    yield from pending
    yield from window.drain()


@pytest.mark.parametrize(
    "family, kw",
    [
        ("bert", dict(dupe_factor=2, heldout=2, whole_word=True, negative_window=2)),
        ("albert", dict(dupe_factor=2)),
        ("roberta", dict(dupe_factor=2, max_seq_length=48)),
        ("roberta", dict(packing="doc-sentences", masking="static", heldout=2)),
    ],
)
def test_rows_cut_on_the_fly_are_the_rows_the_padded_layout_wrote(
    small_corpus, wordpiece, bytelevel_bpe, unigram, tmp_path, family, kw
):
    tok = {"bert": wordpiece, "albert": unigram, "roberta": bytelevel_bpe}[family]
    kw = {"max_seq_length": 64, **kw}
    store = build_instances([small_corpus], tok, family, seed=5, cache_dir=tmp_path, show_progress=False, **kw)
    train, held = split_documents(store.corpus.num_documents, kw.get("heldout", 0), 5, "corpus")
    for part, docs in ((store, train), (store.heldout, held)):
        if part is None:
            continue
        written = _written_rows(part, docs, tok, seed=5)
        rows = part.rows(np.arange(len(part)))
        assert len(part) == len(written)
        T = part.max_seq_length
        for i, (ids, types, starts, label) in enumerate(written):
            n = len(ids)
            assert rows["input_ids"][i, :n].tolist() == ids and int(rows["attention_mask"][i].sum()) == n
            assert (rows["input_ids"][i, n:] == special_tokens(tok, family).pad).all() and n <= T
            if "token_type_ids" in rows:
                assert rows["token_type_ids"][i, :n].tolist() == types and not rows["token_type_ids"][i, n:].any()
            if "word_start" in rows:
                assert rows["word_start"][i, :n].tolist() == starts
            if label is not None:
                assert int(rows[part.recipe.pair_label][i]) == label


def test_a_batch_is_a_pure_function_of_its_step(small_corpus, wordpiece, tmp_path):
    kw = dict(max_seq_length=64, dupe_factor=2, seed=1, show_progress=False)
    store = build_instances([small_corpus], wordpiece, "bert", cache_dir=tmp_path / "a", **kw)
    steps = [7, 0, 3, 250, 3]
    forward = {s: store.batch(s, 16) for s in sorted(set(steps))}
    reopened = InstanceStore(store.dir)  # a resumed process: nothing but the directory
    rebuilt = build_instances([small_corpus], wordpiece, "bert", cache_dir=tmp_path / "b", **kw)
    for s in steps:
        for other in (reopened, rebuilt):
            b = other.batch(s, 16)
            assert all(torch.equal(forward[s][k], b[k]) for k in b)
    assert not torch.equal(forward[0]["input_ids"], forward[3]["input_ids"])


def test_masking_statistics_are_the_recipes(small_corpus, wordpiece, tmp_path):
    store = build_instances(
        [small_corpus], wordpiece, "bert", max_seq_length=128, dupe_factor=3, seed=2, cache_dir=tmp_path,
        max_predictions_per_seq=40, show_progress=False,
    )  # fmt: skip
    batches = [store.batch(s, 64) for s in range(8)]
    ids = torch.cat([b["input_ids"] for b in batches])
    labels = torch.cat([b["labels"] for b in batches])
    real = torch.cat([b["attention_mask"] for b in batches]).bool() & ~torch.isin(
        torch.where(labels != IGNORE_INDEX, labels, ids), store.special_ids
    )
    chosen = labels != IGNORE_INDEX
    assert not (chosen & ~real).any()
    assert 0.14 < chosen.sum() / real.sum() < 0.16  # mlm_probability 0.15 of the real tokens
    masked = (ids == store.masker.mask_id) & chosen
    kept = (ids == labels) & chosen
    random_ = chosen & ~masked & ~kept
    n = chosen.sum()
    assert 0.77 < masked.sum() / n < 0.83 and 0.08 < kept.sum() / n < 0.12 and 0.08 < random_.sum() / n < 0.12
    nsp = torch.cat([b["next_sentence_label"] for b in batches]).float().mean()
    assert 0.4 < nsp < 0.6
    # dupe_factor: the copies of a text are different instances with different static masks
    every = store.rows(np.arange(len(store)))
    third = len(store) // 3
    assert not torch.equal(every["input_ids"][:third], every["input_ids"][third : 2 * third])


def test_the_index_is_small_beside_the_token_store(small_corpus, wordpiece, tmp_path):
    store = build_instances(
        [small_corpus], wordpiece, "bert", max_seq_length=128, seed=0, cache_dir=tmp_path, show_progress=False
    )
    index = sum(f.stat().st_size for f in store.dir.glob("*.bin"))
    tokens = sum(f.stat().st_size for d in store.corpus.dirs for f in d.glob("*.bin"))
    padded = len(store) * 128 * (4 + 1)  # what the padded layout wrote: int32 ids and int8 token types per position
    assert index < 0.05 * tokens and index < padded / 50


def test_the_pair_index_on_worker_processes_is_the_index_made_here(small_corpus, wordpiece, tmp_path, monkeypatch):
    import bertology.data.pairs as pairs

    monkeypatch.setattr(pairs, "PARALLEL_MIN_DOCS", 1)
    monkeypatch.setattr(pairs, "BLOCK", 3)  # several blocks a pass
    kw = dict(max_seq_length=64, dupe_factor=3, seed=4, show_progress=False)
    one = build_instances([small_corpus], wordpiece, "bert", cache_dir=tmp_path / "a", workers=1, **kw)
    two = build_instances([small_corpus], wordpiece, "bert", cache_dir=tmp_path / "b", workers=2, **kw)
    assert sorted(one.meta["arrays"]) == sorted(two.meta["arrays"])
    for name in one.meta["arrays"]:
        assert (one.dir / f"{name}.bin").read_bytes() == (two.dir / f"{name}.bin").read_bytes()
    assert len(one) == int(np.asarray(one.index["pair_count"], np.int64).sum()) > 0


def test_a_long_document_is_made_in_pieces_that_tile_it():
    """A corpus of one long document (a text with no blank line) is swept piece by piece, so neither the
    build nor a batch steps through all its chunks one at a time: pieces start where the offset passes
    each multiple of the piece size, tile the document, and each makes its pairs within itself."""
    from bertology.data.pairs import document_pieces, piece_bounds

    lengths = np.random.default_rng(0).integers(1, 30, 5000)
    so = np.r_[0, np.cumsum(lengths)]
    do = np.array([0, 2000, 2001, 5000])  # a long document, a one-sentence one, another long one
    docs = np.arange(3)
    pos, first = document_pieces(so, do, docs, 1000)
    stop, number = piece_bounds(pos, first, do, docs)
    per_doc = [len(np.unique((so[do[d] : do[d + 1]] - so[do[d]]) // 1000)) for d in docs]
    assert np.array_equal(np.bincount(pos), per_doc) and per_doc[0] > 20 and per_doc[1] == 1
    assert np.array_equal(first[1:], stop[:-1]) and first[0] == 0 and stop[-1] == 5000  # they tile the corpus
    assert np.array_equal(number[pos == 2], np.arange((pos == 2).sum()))
    assert np.all(so[stop] - so[first] <= 1000 + 30)
    kw = dict(max_num_tokens=61, short_seq_prob=0.1, objective="sop", window=10, seed=0)
    got = document_pairs(so, do, docs, np.zeros(len(pos), np.int64), pos, pieces=(first, stop, number), **kw)
    inside = (got["a_start"] >= so[first[got["job"]]]) & (got["b_start"] + got["b_len"] <= so[stop[got["job"]]])
    assert inside.all() and len(got["job"]) > 1000
