"""build_instances + InstanceStore on real text and real tokenizers: keys and formats, static vs
dynamic masks drawn per batch from unmasked rows, determinism, resume, rank slicing, held-out
documents, caching, errors."""

import numpy as np
import pytest
import torch

from bertology.data import InstanceStore, TokenizedCorpus, build_instances
from bertology.data.masking import IGNORE_INDEX, RowDraws, mask_rows_vectorised, seeded_generator


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def bert_store(small_corpus, wordpiece, cache):
    return build_instances(
        [small_corpus],
        wordpiece,
        "bert",
        max_seq_length=64,
        dupe_factor=2,
        seed=7,
        cache_dir=cache,
        show_progress=False,
    )


@pytest.fixture(scope="module")
def roberta_store(small_corpus, bytelevel_bpe, cache):
    return build_instances(
        [small_corpus], bytelevel_bpe, "roberta", max_seq_length=64, seed=7, cache_dir=cache, show_progress=False
    )


@pytest.fixture(scope="module")
def roberta_ngram_store(small_corpus, bytelevel_bpe, cache):
    """Dynamic masking of whole-word n-grams (the masking path with a loop over visits)."""
    return build_instances(
        [small_corpus],
        bytelevel_bpe,
        "roberta",
        max_seq_length=64,
        whole_word=True,
        ngram=3,
        seed=7,
        cache_dir=cache,
        show_progress=False,
    )


@pytest.fixture(scope="module")
def albert_store(small_corpus, unigram, cache):
    return build_instances(
        [small_corpus],
        unigram,
        "albert",
        max_seq_length=64,
        whole_word=True,
        seed=7,
        cache_dir=cache,
        show_progress=False,
    )


def _all_ids(store) -> torch.Tensor:
    """Every instance's unmasked input_ids (N, T)."""
    return store.rows(np.arange(len(store)))["input_ids"]


def test_bert_batch_format(bert_store, wordpiece):
    b = bert_store.batch(0, 16)
    assert sorted(b) == ["attention_mask", "input_ids", "labels", "next_sentence_label", "token_type_ids"]
    assert all(v.dtype == torch.long for v in b.values()) and b["input_ids"].shape == (16, 64)
    cls, sep, pad = 101, 102, 0
    for r in range(16):
        ids, att, types = b["input_ids"][r], b["attention_mask"][r], b["token_type_ids"][r]
        n = int(att.sum())
        assert ids[0] == cls and ids[n - 1] == sep and (ids[n:] == pad).all() and att[:n].all()
        seps = (ids == sep).nonzero().flatten().tolist()
        assert len(seps) == 2 and seps[1] == n - 1
        # token types: 0 for [CLS] A [SEP], 1 for B [SEP], 0 on padding
        assert (types[: seps[0] + 1] == 0).all() and (types[seps[0] + 1 : n] == 1).all() and (types[n:] == 0).all()
        labels = b["labels"][r]
        assert (labels[ids == cls] == IGNORE_INDEX).all() and (labels[n:] == IGNORE_INDEX).all()
    labels = torch.stack([bert_store.batch(s, 64)["next_sentence_label"] for s in range(5)])
    assert 0.4 < labels.float().mean() < 0.65


def test_roberta_batch_format_full_sentences(roberta_store, bytelevel_bpe):
    b = roberta_store.batch(0, 16)
    assert sorted(b) == ["attention_mask", "input_ids", "labels"]  # no token types, no pair label
    s, e = bytelevel_bpe.token_to_id("<s>"), bytelevel_bpe.token_to_id("</s>")
    lengths = b["attention_mask"].sum(1)
    assert (b["input_ids"][:, 0] == s).all()
    assert all(b["input_ids"][r, n - 1] == e for r, n in enumerate(lengths.tolist()))
    # FULL-SENTENCES packs sequences nearly full
    all_lengths = roberta_store.lengths()
    assert np.median(all_lengths) > 56


def test_static_masks_fixed_across_epochs(bert_store):
    N, B = len(bert_store), 32
    steps = N // B + 2
    seen = {}
    for step in range(2 * steps):
        idx = bert_store.indices(step, B)
        b = bert_store.batch(step, B)
        for j, i in enumerate(idx.tolist()):
            if i in seen:  # the same instance in a later epoch: the very same masked ids and labels
                assert torch.equal(seen[i][0], b["input_ids"][j]) and torch.equal(seen[i][1], b["labels"][j])
            seen[i] = (b["input_ids"][j], b["labels"][j])
    # epochs are reshuffled
    assert not np.array_equal(bert_store.indices(0, N), bert_store.indices(1, N))
    assert sorted(bert_store.indices(0, N).tolist()) == list(range(N))


def test_dupe_factor_gives_different_masks_of_the_same_text(small_corpus, wordpiece, cache):
    one = build_instances(
        [small_corpus],
        wordpiece,
        "bert",
        max_seq_length=64,
        dupe_factor=1,
        seed=7,
        cache_dir=cache,
        show_progress=False,
    )
    two = build_instances(
        [small_corpus],
        wordpiece,
        "bert",
        max_seq_length=64,
        dupe_factor=2,
        seed=7,
        cache_dir=cache,
        show_progress=False,
    )
    assert 1.8 < len(two) / len(one) < 2.2
    every = np.arange(len(two))
    labels = two.masker(two.rows(every), seed=7, step=0, instances=every)["labels"]
    assert (labels != IGNORE_INDEX).any(1).all()  # every instance has predictions


def test_dynamic_masks_change_with_step_and_are_deterministic(roberta_store):
    N = len(roberta_store)
    a, b = roberta_store.batch(0, 8), roberta_store.batch(0, 8)
    assert all(torch.equal(a[k], b[k]) for k in a)  # same (step, seed) -> same batch
    # the same instances fed again one epoch later: same text, different masks
    later = N  # a step whose batch starts the second epoch (batch size 1)
    x, y = roberta_store.batch(0, 1), roberta_store.batch(later, 1)
    i0, i1 = roberta_store.indices(0, 1)[0], roberta_store.indices(later, 1)[0]
    raw = _all_ids(roberta_store).numpy()
    for batch, i in ((x, i0), (y, i1)):  # masked in both epochs; the labels put back give the stored text
        stored = torch.from_numpy(raw[i].astype(np.int64))
        labels = batch["labels"][0]
        assert (batch["input_ids"][0] != stored).any()
        assert torch.equal(torch.where(labels != IGNORE_INDEX, labels, batch["input_ids"][0]), stored)
    masks = set()
    for step in range(0, 10 * N, N):  # instance perm_e[0] for epochs 0..9
        idx = roberta_store.indices(step, 1)[0]
        labels = roberta_store.batch(step, 1)["labels"][0]
        masks.add((int(idx), tuple((labels != IGNORE_INDEX).nonzero().flatten().tolist())))
    assert len(masks) == 10
    c = roberta_store.batch(0, 8, seed=8)
    assert not torch.equal(a["labels"], c["labels"])


def _mask_kw(store):
    m, r = store.masker, store.recipe
    return dict(
        mask_id=m.mask_id,
        random_ids=m.random_ids,
        mlm_probability=r.mlm_probability,
        max_predictions=r.max_predictions,
        ngram=r.ngram,
    )


def test_the_store_keeps_text_and_static_masks_are_instance_seeded(small_corpus, wordpiece, tmp_path):
    # the documented contract: the store holds unmasked rows; instance i is masked by the vectorised
    # masker with a generator of its own, keyed (seed, 2, i), so a build is a function of the seed and
    # the instance order, and its masks are the same in whatever batch the instance comes
    kw = dict(max_seq_length=16, dupe_factor=2, seed=7, show_progress=False)
    store = build_instances([small_corpus], wordpiece, "bert", cache_dir=tmp_path / "a", **kw)
    assert "labels" not in store.rows(np.arange(4)) and len(store) > 4096
    for step in (0, 1000):
        idx = store.indices(step, 64)
        rows = _all_ids(store)[idx]
        masked, lab = mask_rows_vectorised(
            rows, torch.isin(rows, store.special_ids), None, RowDraws([(7, 2, int(i)) for i in idx]), **_mask_kw(store)
        )
        b = store.batch(step, 64)
        assert torch.equal(b["input_ids"], masked) and torch.equal(b["labels"], lab)
        assert torch.equal(torch.where(lab != IGNORE_INDEX, lab, b["input_ids"]), rows)  # the text, unmasked
    again = build_instances([small_corpus], wordpiece, "bert", cache_dir=tmp_path / "b", **kw)
    assert again.dir != store.dir
    every = np.arange(len(store))
    assert len(again) == len(store)
    assert all(torch.equal(v, again.rows(every)[k]) for k, v in store.rows(every).items())


def test_an_earlier_layout_is_refused_with_the_directory_named(tmp_path):
    old = tmp_path / "instances-old"
    old.mkdir()
    (old / "meta.json").write_text('{"config": {}, "arrays": {}}')
    with pytest.raises(
        ValueError, match="instances-old: an instance store of an earlier bertology.*delete the directory"
    ):
        InstanceStore(old)
    tokens = tmp_path / "tokens-old"
    tokens.mkdir()
    (tokens / "meta.json").write_text('{"files": [], "format": "lines", "arrays": {}}')
    with pytest.raises(
        ValueError, match="tokens-old: a tokenized corpus of an earlier bertology.*delete the directory"
    ):
        TokenizedCorpus(tokens)


@pytest.mark.parametrize("world", [1, 3])
def test_dynamic_masks_are_the_global_batch_masked_with_seed_3_step(roberta_store, world):
    raw = _all_ids(roberta_store)
    rows = raw[roberta_store.indices(4, 12, seed=5)]
    masked, labels = mask_rows_vectorised(
        rows, torch.isin(rows, roberta_store.special_ids), None, seeded_generator(5, 3, 4), **_mask_kw(roberta_store)
    )
    for r in range(world):
        b = roberta_store.batch(4, 12, seed=5, rank=r, world_size=world)
        assert torch.equal(b["input_ids"], masked[r::world]) and torch.equal(b["labels"], labels[r::world])


def test_batch_is_independent_of_history_and_survives_reopening(roberta_store, bert_store):
    for store in (roberta_store, bert_store):
        ref = store.batch(5, 8)
        for s in range(5):
            store.batch(s, 8)
        again = InstanceStore(store.dir).batch(5, 8)  # e.g. a resumed process
        assert all(torch.equal(ref[k], again[k]) for k in ref)
        assert all(torch.equal(ref[k], store.batch(5, 8)[k]) for k in ref)


@pytest.mark.parametrize("world", [2, 3])
def test_rank_slices_reproduce_the_global_batch(roberta_store, roberta_ngram_store, albert_store, world):
    for store in (roberta_store, roberta_ngram_store, albert_store):
        full = store.batch(3, 12)
        parts = [store.batch(3, 12, rank=r, world_size=world) for r in range(world)]
        for k, v in full.items():
            for r in range(world):
                assert torch.equal(parts[r][k], v[r::world]), (k, r)


def test_albert_sop_and_whole_word_ngrams(albert_store, unigram):
    b = albert_store.batch(0, 64)
    assert sorted(b) == ["attention_mask", "input_ids", "labels", "sentence_order_label", "token_type_ids"]
    assert 0.35 < b["sentence_order_label"].float().mean() < 0.65
    assert albert_store.recipe.ngram == 3 and albert_store.recipe.whole_word
    # whole words: a masked token that continues a word (no ▁, not right after a special token: [CLS],
    # [SEP], or an <unk> inside a word, which is never masked) has the token before it (same word) masked too
    boundary = set(albert_store.special_ids.tolist())
    originals = torch.where(b["labels"] != IGNORE_INDEX, b["labels"], b["input_ids"])
    sel = (b["labels"] != IGNORE_INDEX).tolist()
    checked = 0
    for r in range(64):
        toks = [unigram.id_to_token(i) for i in originals[r].tolist()]
        for t in range(1, 63):
            if sel[r][t] and not toks[t].startswith("▁") and int(originals[r, t - 1]) not in boundary:
                assert sel[r][t - 1], toks[t - 1 : t + 1]
                checked += 1
    assert checked > 0


def test_heldout_documents_never_reach_training(small_corpus, bytelevel_bpe, cache):
    kw = dict(max_seq_length=64, packing="doc-sentences", seed=3, cache_dir=cache, show_progress=False)
    store = build_instances([small_corpus], bytelevel_bpe, "roberta", heldout=2, **kw)
    assert store.heldout is not None and len(store.heldout) > 0
    full = build_instances([small_corpus], bytelevel_bpe, "roberta", **kw)
    assert len(store) + len(store.heldout) == len(full)

    def grams(rows):
        out = set()
        for row in np.asarray(rows):
            row = row[row > 4]
            out.update(tuple(row[i : i + 24]) for i in range(len(row) - 24))
        return out

    held = grams(_all_ids(store.heldout))
    assert held and not held & grams(_all_ids(store))
    assert held <= grams(_all_ids(full))  # the test could fail: the full store has them
    again = build_instances([small_corpus], bytelevel_bpe, "roberta", heldout=2, **kw)
    assert again.dir == store.dir and again.heldout.dir == store.heldout.dir  # same split, from the cache


def test_cache_is_reused_and_atomic(small_corpus, wordpiece, cache, bert_store):
    again = build_instances(
        [small_corpus],
        wordpiece,
        "bert",
        max_seq_length=64,
        dupe_factor=2,
        seed=7,
        cache_dir=cache,
        show_progress=False,
    )
    assert again.dir == bert_store.dir
    assert not list(cache.glob(".tmp-*"))
    other = build_instances(
        [small_corpus],
        wordpiece,
        "bert",
        max_seq_length=64,
        dupe_factor=2,
        seed=8,
        cache_dir=cache,
        show_progress=False,
    )
    assert other.dir != bert_store.dir


def test_raw_format(tmp_path, wordpiece):
    p = tmp_path / "raw.txt"
    p.write_text("The cat sat on the mat. It was happy. Then it left!\n\nDogs bark. Birds sing. Fish swim.\n")
    store = build_instances(
        [p], wordpiece, "bert", max_seq_length=16, format="raw", seed=0, cache_dir=tmp_path, show_progress=False
    )
    assert len(store) >= 2


def test_errors(tmp_path, wordpiece, bytelevel_bpe, small_corpus):
    kw = dict(cache_dir=tmp_path, show_progress=False)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n   \n")
    with pytest.raises(ValueError, match="empty.txt hold no text"):
        build_instances([empty], wordpiece, "bert", **kw)
    one = tmp_path / "one.txt"
    one.write_text("Just one document.\nWith two sentences.\n")
    with pytest.raises(ValueError, match="NSP .*needs at least two.*one.txt"):
        build_instances([one], wordpiece, "bert", **kw)
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("a\n")
    with pytest.raises(ValueError, match="tiny.txt are too small"):
        build_instances([tiny], wordpiece, "bert", objective="mlm+sop", **kw)
    with pytest.raises(Exception, match="missing.txt"):
        build_instances([tmp_path / "missing.txt"], wordpiece, "bert", **kw)
    with pytest.raises(ValueError, match="special token.*'<s>'"):
        build_instances([small_corpus], wordpiece, "roberta", **kw)
    with pytest.raises(ValueError, match="does not go with packing"):
        build_instances([small_corpus], wordpiece, "bert", objective="mlm+nsp", packing="full-sentences", **kw)
    with pytest.raises(ValueError, match="unknown masking"):
        build_instances([small_corpus], wordpiece, "bert", masking="sometimes", **kw)
    with pytest.raises(ValueError, match="cannot hold out 8 of the 8 documents"):
        build_instances([small_corpus], wordpiece, "bert", heldout=8, **kw)


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_token_counts_kept_with_the_index_are_the_instances_text_counts(
    family, small_corpus, wordpiece, bytelevel_bpe, tmp_path, monkeypatch
):
    """The unigram prior's counts, counted once when the index is built (on a corpus large beside
    its vocabulary: here any, or none), are the counts of the instances' text, each pass (special
    tokens and padding left out): for packing exactly the instances' tokens (its repeated passes too),
    for pairs the training documents' tokens, each pass (a random next segment is text of a document
    nearby: the instances' own counts are the same distribution); widened to a larger vocabulary,
    refused for one too small to hold the ids; an index without them (a small corpus) counts the same."""
    import bertology.data.build as build

    tok = wordpiece if family == "bert" else bytelevel_bpe
    kw = dict(max_seq_length=64, dupe_factor=2, seed=7, show_progress=False)
    monkeypatch.setattr(build, "KEEP_COUNTS_TOKENS_PER_ID", 10**12)
    small = build_instances([small_corpus], tok, family, cache_dir=tmp_path / "a", **kw)
    monkeypatch.setattr(build, "KEEP_COUNTS_TOKENS_PER_ID", 0)
    kept = build_instances([small_corpus], tok, family, cache_dir=tmp_path / "b", **kw)
    assert "token_counts" in kept.index and "token_counts" not in small.index
    ids = _all_ids(kept).numpy()
    V = int(ids.max()) + 1
    in_instances = np.bincount(ids.ravel(), minlength=V + 5)
    in_instances[kept.special_ids.numpy()] = 0
    if family == "roberta":
        expected = in_instances
    else:
        corpus = kept.corpus
        text = np.concatenate(
            [
                np.asarray(corpus.parts[0].ids[a:b])
                for a, b in zip(corpus.doc_token_offsets()[:-1], corpus.doc_token_offsets()[1:])
            ]
        )
        expected = 2 * np.bincount(text.astype(np.int64), minlength=V + 5)
        expected[kept.special_ids.numpy()] = 0
        p, q = expected / expected.sum(), in_instances / in_instances.sum()
        # the same distribution up to the draws of the random segments, and about as many tokens
        assert np.corrcoef(p, q)[0, 1] > 0.98 and 0.9 < in_instances.sum() / expected.sum() < 1.2
    assert expected.sum() > 10_000
    assert np.array_equal(kept.token_counts(V + 5).numpy(), expected)
    assert np.array_equal(small.token_counts(V + 5).numpy(), expected)
    with pytest.raises(ValueError, match=f"token id {V - 1} outside a vocabulary of {V - 1}"):
        kept.token_counts(V - 1)
