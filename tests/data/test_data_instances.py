"""Instances: NSP / SOP construction and balance, truncation, negatives window, RoBERTa packing.

Synthetic documents make every token traceable: token id = doc * 10000 + sentence * 100 + k.
"""

import random

import pytest

from bertology.data import DocumentWindow, Segment, create_pair_instances, pack_sentences, special_tokens, truncate_pair


def make_docs(n_docs=60, seed=0):
    rng = random.Random(seed)
    docs = []
    for d in range(n_docs):
        doc = []
        for s in range(rng.randint(1, 25)):
            n = rng.randint(3, 30)
            doc.append(Segment([d * 10000 + s * 100 + k for k in range(n)], [True] * n))
        docs.append(doc)
    return docs


def where(ids):
    """{(doc, sentence)} a token list comes from."""
    return sorted({(i // 10000, (i % 10000) // 100) for i in ids})


def all_pairs(objective, max_num_tokens=60, short_seq_prob=0.1, seed=1, docs=None):
    """(current document, instance) for every instance, through the streaming window."""
    docs = docs or make_docs()
    rng = random.Random(seed)
    window = DocumentWindow(10)
    out = []
    for cur in _stream(docs, window):
        for p in create_pair_instances(
            cur, max_num_tokens, short_seq_prob, objective, rng, window if objective == "nsp" else None
        ):
            out.append((cur, p))
    return out


def _stream(docs, window):
    for doc in docs:
        yield from window.push(doc)
    yield from window.drain()


def test_nsp_construction_and_balance():
    pairs = all_pairs("nsp", docs=make_docs(150))
    assert len(pairs) > 600
    labels = [p.label for _, p in pairs]
    # a chunk of one sentence always gets a random next, so slightly more than half are random
    assert 0.45 < sum(labels) / len(labels) < 0.55
    for cur, p in pairs:
        assert 1 <= len(p.a) and 1 <= len(p.b) and len(p.a) + len(p.b) <= 60
        wa, wb = where(p.a.ids), where(p.b.ids)
        doc = cur[0].ids[0] // 10000
        assert {d for d, _ in wa} == {doc}  # A comes from the current document
        if p.label == 0:  # B is the real continuation: same document, after A
            assert {d for d, _ in wb} == {doc}
            assert max(p.a.ids) < min(p.b.ids)
            if len(p.a) + len(p.b) < 60:  # not truncated: B starts at the sentence right after A's last
                (_, last), (_, first) = wa[-1], wb[0]
                if first == last:  # one long sentence cut in two (see create_pair_instances)
                    assert p.b.ids[0] == p.a.ids[-1] + 1
                else:
                    assert first == last + 1 and p.b.ids[0] % 100 == 0
                    assert p.a.ids[-1] == cur[last].ids[-1]
        else:  # B comes from one other document
            assert len({d for d, _ in wb}) == 1 and wb[0][0] != doc


def test_unused_segments_are_put_back():
    # Without put-back a random-next instance would lose the sentences after A. With it, every
    # sentence of a document reaches some A or a real-next B (truncation aside: long target).
    docs = make_docs(30)
    pairs = all_pairs("nsp", max_num_tokens=400, short_seq_prob=0.0, docs=docs)
    used = set()
    for _, p in pairs:
        used.update(where(p.a.ids))
        if p.label == 0:
            used.update(where(p.b.ids))
    every = {(d, s) for d, doc in enumerate(docs) for s in range(len(doc))}
    # Pair truncation can still cut a short first or last sentence away entirely: allow a few.
    assert used <= every and len(every - used) <= 0.02 * len(every), sorted(every - used)


def test_sop_construction_and_balance():
    pairs = all_pairs("sop", docs=make_docs(150))
    assert len(pairs) > 500
    labels = [p.label for _, p in pairs]
    assert 0.45 < sum(labels) / len(labels) < 0.55
    for cur, p in pairs:
        doc = cur[0].ids[0] // 10000
        wa, wb = where(p.a.ids), where(p.b.ids)
        assert {d for d, _ in wa + wb} == {doc}  # SOP never leaves the document
        first, second = (p.a, p.b) if p.label == 0 else (p.b, p.a)
        # in order: every token of `first` precedes every token of `second` in the document
        assert max(first.ids) < min(second.ids)


def test_short_seq_prob_makes_short_instances():
    long_only = [len(p.a) + len(p.b) for _, p in all_pairs("sop", 100, 0.0)]
    with_short = [len(p.a) + len(p.b) for _, p in all_pairs("sop", 100, 0.5)]
    assert sum(n < 50 for n in with_short) / len(with_short) > sum(n < 50 for n in long_only) / len(long_only) + 0.1


def test_truncate_pair_trims_the_longer_side_at_both_ends():
    fronts = backs = 0
    for s in range(50):
        a = Segment(list(range(100, 120)), [True] * 20)
        b = Segment(list(range(200, 205)), [True] * 5)
        truncate_pair(a, b, 15, random.Random(s))
        assert len(a) == 10 and b.ids == list(range(200, 205)) and len(a.starts) == 10
        assert a.ids == list(range(a.ids[0], a.ids[0] + 10))  # still contiguous
        fronts += a.ids[0] > 100
        backs += a.ids[-1] < 119
    assert fronts > 40 and backs > 40  # both ends get cut (each call cuts 10 tokens at random ends)


def test_nsp_needs_two_documents():
    doc = make_docs(1)[0]
    with pytest.raises(ValueError, match="two documents"):
        create_pair_instances(doc, 50, 0.1, "nsp", random.Random(0), DocumentWindow(5))


def test_document_window_is_bounded_and_excludes_the_current_document():
    window = DocumentWindow(3)
    seen = []
    for d in range(10):
        for cur in window.push([d]):
            assert len(window) <= 6 and all(x is not cur for x in list(window.ahead) + list(window.past))
            seen.append(cur[0])
    seen += [cur[0] for cur in window.drain()]
    assert seen == list(range(10))


def test_packing_full_sentences_fills_and_loses_nothing():
    docs = make_docs(40)
    SEP = -1
    seqs = list(pack_sentences(docs, 126, True, SEP))
    stream = [i for doc in docs for s in doc for i in s.ids]
    packed = [i for s in seqs for i in s.ids if i != SEP]
    assert packed == stream  # every token, in order, nothing dropped
    sentence_len = {(i // 10000, (i % 10000) // 100): len(s) for doc in docs for s in doc for i in s.ids[:1]}
    for s, nxt in zip(seqs, seqs[1:]):
        assert len(s) <= 126
        # a sequence ends only when the next sentence (with a separator if it opens a new
        # document) would not fit
        ((d, k),) = where(nxt.ids[:1])
        assert len(s) + sentence_len[(d, k)] + (k == 0) > 126
    # separators sit exactly at document boundaries inside a sequence
    for s in seqs:
        for k, i in enumerate(s.ids):
            if i == SEP:
                assert 0 < k < len(s) - 1 and s.ids[k - 1] // 10000 + 1 == s.ids[k + 1] // 10000
    assert sum(SEP in s.ids for s in seqs) > 10
    assert sum(len(s) for s in seqs) / len(seqs) > 110  # full-sentences fills the sequences


def test_packing_doc_sentences_never_crosses_documents():
    docs = make_docs(40)
    seqs = list(pack_sentences(docs, 126, False, -1))
    assert all(-1 not in s.ids and len({i // 10000 for i in s.ids}) == 1 for s in seqs)
    assert [i for s in seqs for i in s.ids] == [i for doc in docs for s in doc for i in s.ids]


def test_packing_cuts_overlong_sentences():
    docs = [[Segment(list(range(10)), [True] * 10)]]
    assert [s.ids for s in pack_sentences(docs, 4, True, -1)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_special_tokens_by_family(wordpiece, bytelevel_bpe, unigram):
    sp = special_tokens(wordpiece, "bert")
    assert (sp.cls, sp.sep, sp.mask, sp.pad) == (101, 102, 103, 0) and 100 in sp.all_ids  # [UNK] too
    r = special_tokens(bytelevel_bpe, "roberta")
    assert [bytelevel_bpe.id_to_token(i) for i in (r.cls, r.sep, r.mask, r.pad)] == ["<s>", "</s>", "<mask>", "<pad>"]
    a = special_tokens(unigram, "albert")
    assert [unigram.id_to_token(i) for i in (a.cls, a.sep, a.mask, a.pad)] == ["[CLS]", "[SEP]", "[MASK]", "<pad>"]
    with pytest.raises(
        ValueError, match=r"lacks the 'roberta' family's special token\(s\) '<s>', '</s>', '<mask>', '<pad>'"
    ):
        special_tokens(wordpiece, "roberta")
    with pytest.raises(ValueError, match="'<pad>'"):
        special_tokens(wordpiece, "albert")
    with pytest.raises(ValueError, match="unknown family"):
        special_tokens(wordpiece, "gpt")
