"""Instances on the fly (data/samples.py, rows.py): the sample index replays instances.py's algorithms
on sentence lengths, so every row cut from the token store is the row the padded layout wrote out;
a batch is a pure function of its step; the masking statistics are the recipe's."""

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
    truncate_pair,
)
from bertology.data.instances import assemble_pair, assemble_single
from bertology.data.masking import seeded_generator
import bertology.data.samples as samples
from bertology.data.samples import negative_window, pack_spans, pair_spans, truncate_spans
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
def test_pair_spans_are_create_pair_instances(objective, seed):
    g = random.Random(100 + seed)
    docs, offset = [], 0
    for _ in range(12):  # sentences of 1..40 tokens, some longer than the sequence (cut at tokens)
        lengths = [g.choice([1, 2, 5, 9, 17, 40]) for _ in range(g.randint(1, 9))]
        docs.append(_document(lengths, offset))
        offset += sum(lengths)
    size, M, short = 3, 24, 0.3
    ref_rng, rng = random.Random(seed), random.Random(seed)
    window = DocumentWindow(size)
    pending = (cur for d in docs for cur in window.push(d[2]))
    expected, got = [], []
    for k, cur in enumerate(_streamed(pending, window)):
        # the reference: create_pair_instances on Segments, the window as instances.py streams it
        for p in create_pair_instances(cur, M, short, objective, ref_rng, window if objective == "nsp" else None):
            expected.append((p.a.ids, p.b.ids, p.label))

        def negative(r, k=k):
            after, before = negative_window(k, len(docs), size)
            j = r.randrange(after + before)
            other = docs[k + 1 + j] if j < after else docs[k - before + j - after]
            return other[0], other[1]

        for a0, a_len, b0, b_len, label in pair_spans(docs[k][0], docs[k][1], M, short, objective, rng, negative):
            got.append((_span_ids(a0, a_len), _span_ids(b0, b_len), label))
    assert got == expected and len(got) > 10
    assert {label for *_, label in got} == {0, 1}


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
    """What the padded layout wrote for `store`'s recipe: instances.py's pairs / packing over the
    documents, assembled (ids, token types, word starts, label) per instance, pass after pass."""
    r, corpus = store.recipe, store.corpus
    sp = special_tokens(tokenizer, r.family)
    out = []
    for dupe in range(r.dupe_factor):
        rng = random.Random(int(seeded_generator(seed, 1, dupe).initial_seed()))
        if r.pair_task:
            window = DocumentWindow(r.negative_window)
            pending = (cur for d in corpus.documents(doc_ids) for cur in window.push(d))
            nsp = r.pair_task == "nsp"
            for cur in _streamed(pending, window):
                for p in create_pair_instances(
                    cur, r.max_seq_length - 3, r.short_seq_prob, r.pair_task, rng, window if nsp else None
                ):
                    out.append((*assemble_pair(p, sp), p.label))
        else:
            for s in pack_sentences(
                corpus.documents(doc_ids), r.max_seq_length - 2, r.packing == "full-sentences", sp.sep
            ):
                out.append((*assemble_single(s, sp), None))
    return out


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


def test_truncate_spans_is_truncate_pair():
    g = random.Random(0)
    for _ in range(3000):
        a, b, M, seed = g.randint(1, 60), g.randint(1, 60), g.randint(2, 70), g.randint(0, 10**9)
        sa, sb = Segment(_span_ids(100, a), [True] * a), Segment(_span_ids(500, b), [True] * b)
        ref, rng = random.Random(seed), random.Random(seed)
        truncate_pair(sa, sb, M, ref)
        a0, a_len, b0, b_len, _ = truncate_spans((100, a, 500, b, 0), M, rng)
        assert (_span_ids(a0, a_len), _span_ids(b0, b_len)) == (sa.ids, sb.ids)
        assert ref.random() == rng.random()  # as many draws made


def test_passes_on_worker_processes_are_the_passes_in_turn(small_corpus, wordpiece, tmp_path, monkeypatch):
    monkeypatch.setattr(samples, "PARALLEL_MIN_DOCS", 1)
    kw = dict(max_seq_length=64, dupe_factor=3, seed=4, show_progress=False)
    one = build_instances([small_corpus], wordpiece, "bert", cache_dir=tmp_path / "a", workers=1, **kw)
    two = build_instances([small_corpus], wordpiece, "bert", cache_dir=tmp_path / "b", workers=2, **kw)
    assert sorted(one.meta["arrays"]) == sorted(two.meta["arrays"])
    for name in one.meta["arrays"]:
        assert (one.dir / f"{name}.bin").read_bytes() == (two.dir / f"{name}.bin").read_bytes()


@pytest.mark.parametrize("wide", [False, True])
def test_compact_pairs_reads_back_every_start_and_label(wide):
    """The pair index as kept (A's starts as offsets from a block's base, the far ones listed, labels
    as bits) gives back build_index's starts and labels, in any order: passes that restart within a
    block, long gaps (held-out documents, one long sentence), starts past 2^32 tokens."""
    from bertology.data.samples import OFFSET_BLOCK, compact_pairs, pair_labels, piece_starts

    g = np.random.default_rng(0)
    passes = []
    for _ in range(3):  # each pass's A starts grow, by a few hundred tokens or now and then by far more
        steps = np.where(g.random(700) < 0.002, g.integers(70_000, 900_000, 700), g.integers(0, 400, 700))
        passes.append(np.cumsum(steps) + (1 << 33 if wide else 0))
    a = np.concatenate(passes)
    b = np.where(g.random(len(a)) < 0.5, a + g.integers(1, 200, len(a)), g.integers(0, int(a.max()), len(a)))
    dtype = np.int64 if wide else np.uint32
    if not wide:
        a, b = a % (1 << 32), b % (1 << 32)
    plain = {
        "piece_start": np.stack([a, b], 1).ravel().astype(dtype),
        "piece_len": g.integers(1, 120, 2 * len(a)).astype(np.uint8),
        "label": g.integers(0, 2, len(a)).astype(np.int8),
    }
    kept = compact_pairs(plain)
    assert len(kept["a_far"]) > 3 and len(kept["a_base"]) == -(-len(a) // OFFSET_BLOCK)
    order = g.permutation(2 * len(a))
    assert np.array_equal(piece_starts(kept, order), plain["piece_start"][order].astype(np.int64))
    assert np.array_equal(pair_labels(kept, order // 2), plain["label"][order // 2])
    assert sum(v.nbytes for v in kept.values()) < 0.85 * sum(v.nbytes for v in plain.values())
    scattered = dict(plain, piece_start=(plain["piece_start"].astype(np.int64) * 1000).astype(np.int64))
    kept = compact_pairs(scattered)  # offsets would not fit: A's starts kept as they are
    assert "a_start" in kept and "a_offset" not in kept
    assert np.array_equal(piece_starts(kept, order), scattered["piece_start"][order])
