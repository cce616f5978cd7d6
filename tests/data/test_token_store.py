"""The token store (data/tokenstore.py): ids and word starts exactly as encoding sentence by sentence
gives them, the narrowest id dtype, offsets, the same bytes whatever the number of workers, one
store per file reused by every run and family, and a new file tokenized alone."""

import json
from pathlib import Path

import numpy as np
import pytest

import bertology.data.tokenstore as tokenstore
from bertology.data import build_instances, iter_documents, tokenize_document
from bertology.data.tokenized import TokenizedCorpus, tokenize_corpus
from bertology.tokenizers import Tokenizer


def _documents(n: int) -> list[str]:
    """The first n documents of the shipped data/wiki.txt, each as its lines."""
    docs = []
    for doc in iter_documents([Path(__file__).resolve().parents[2] / "data" / "wiki.txt"]):
        docs.append("\n".join(doc) + "\n")
        if len(docs) == n:
            return docs


def _plain(tok):
    """The tokenizer without its padding and truncation (the store encodes sentences whole)."""
    tok = Tokenizer.from_str(tok.to_str())
    tok.no_padding()
    tok.no_truncation()
    return tok


def _reference(files, tok):
    """Each non-empty document as [(ids, word starts)] per sentence: the sentence-by-sentence encoding."""
    docs = [tokenize_document(d, _plain(tok)) for d in iter_documents(files)]
    return [[(s.ids, s.starts) for s in d] for d in docs if d]


def _as_read(corpus: TokenizedCorpus):
    return [[(s.ids, s.starts) for s in corpus.document(d)] for d in range(corpus.num_documents)]


@pytest.mark.parametrize("name", ["wordpiece", "bytelevel_bpe", "unigram"])
def test_every_tokenizer_stores_its_sentence_encodings(small_corpus, request, tmp_path, name):
    tok = request.getfixturevalue(name)  # (the store encodes with the template's tokens and drops them)
    corpus = tokenize_corpus([small_corpus], tok, tmp_path, workers=1)
    assert _as_read(corpus) == _reference([small_corpus], tok)


def test_added_tokens_in_the_text_are_words_of_their_own(tmp_path, wordpiece):
    p = tmp_path / "added.txt"
    p.write_text("un[MASK]wanted [SEP] words here.\nAnd [CLS]\n\nA second [PAD] document.\n")
    corpus = tokenize_corpus([p], wordpiece, tmp_path, workers=1)
    assert _as_read(corpus) == _reference([p], wordpiece)
    assert wordpiece.token_to_id("[MASK]") in corpus.document(0)[0].ids


def test_ids_word_starts_and_offsets_are_the_sentence_encodings(small_corpus, wordpiece, tmp_path):
    corpus = tokenize_corpus([small_corpus], wordpiece, tmp_path, workers=1)
    assert _as_read(corpus) == _reference([small_corpus], wordpiece)
    (part,) = corpus.parts
    meta = json.loads((part.dir / "meta.json").read_text())
    n = corpus.num_tokens
    assert part.ids.dtype == np.uint16 and (part.dir / "ids.bin").stat().st_size == 2 * n
    # WordPiece: an id either always starts a word or never does (a ## piece), so a bit an id, none a token
    assert not (part.dir / "starts.bin").exists() and part.bits is None
    assert (part.dir / "start_ids.bin").stat().st_size == (max(wordpiece.get_vocab().values()) + 1 + 7) // 8
    assert meta["arrays"]["sent_offsets"]["dtype"] == "uint32"
    assert corpus.sent_offsets[0] == 0 and corpus.sent_offsets[-1] == n and (np.diff(corpus.sent_offsets) > 0).all()
    assert corpus.doc_offsets[-1] == len(corpus.sent_offsets) - 1 and corpus.num_documents == 8


@pytest.mark.parametrize("name", ["wordpiece", "bytelevel_bpe", "unigram"])
def test_word_starts_are_kept_by_id_exactly_where_the_ids_say_them(small_corpus, request, tmp_path, name):
    tok = request.getfixturevalue(name)
    (part,) = tokenize_corpus([small_corpus], tok, tmp_path, workers=1).parts
    seen = {(i, s) for doc in _reference([small_corpus], tok) for ids, starts in doc for i, s in zip(ids, starts)}
    both = {i for i, s in seen if (i, not s) in seen}  # ids that start a word somewhere and not elsewhere
    assert (part.start_of_id is None) == bool(both) and (part.dir / "starts.bin").exists() == bool(both)
    if not both:
        assert all(part.start_of_id[i] == s for i, s in seen)


def test_a_vocabulary_past_uint16_stores_uint32_and_the_same_ids(small_corpus, wordpiece, tmp_path):
    spec = json.loads(wordpiece.to_str())
    top = max(spec["model"]["vocab"].values())
    spec["model"]["vocab"].update({f"[unused-{k}]": top + 1 + k for k in range(70_000)})
    big = Tokenizer.from_str(json.dumps(spec))
    assert max(big.get_vocab().values()) >= 1 << 16
    wide = tokenize_corpus([small_corpus], big, tmp_path, workers=1)
    narrow = tokenize_corpus([small_corpus], wordpiece, tmp_path, workers=1)
    assert wide.parts[0].ids.dtype == np.uint32 and narrow.parts[0].ids.dtype == np.uint16
    assert wide.dirs[0].parent != narrow.dirs[0].parent  # keyed by the tokenizer
    assert np.array_equal(np.asarray(wide.parts[0].ids), np.asarray(narrow.parts[0].ids))


def test_workers_write_the_same_bytes_in_document_order(small_corpus, wordpiece, tmp_path, monkeypatch):
    monkeypatch.setattr(tokenstore, "CHUNK_CHARS", 4000)  # many chunks, so the workers interleave
    one = tokenize_corpus([small_corpus], wordpiece, tmp_path / "one", workers=1)
    two = tokenize_corpus([small_corpus], wordpiece, tmp_path / "two", workers=2)
    names = sorted(p.name for p in one.dirs[0].glob("*.bin"))
    assert names == sorted(p.name for p in two.dirs[0].glob("*.bin")) and "ids.bin" in names
    for name in names:
        assert (one.dirs[0] / name).read_bytes() == (two.dirs[0] / name).read_bytes(), name


def test_adding_a_file_tokenizes_only_that_file(tmp_path, wordpiece, counted_builds):
    a, b, both = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "ab.txt"
    docs = _documents(6)
    a.write_text("\n".join(docs[:3]))
    b.write_text("\n".join(docs[3:]))
    both.write_text("\n".join(docs))
    first = tokenize_corpus([a], wordpiece, tmp_path / "cache")
    stamp = (first.dirs[0] / "meta.json").stat().st_mtime_ns
    grown = tokenize_corpus([a, b], wordpiece, tmp_path / "cache")
    assert counted_builds == [str(a), str(b)]  # a once, then b alone
    assert grown.dirs[0] == first.dirs[0] and (first.dirs[0] / "meta.json").stat().st_mtime_ns == stamp
    # the two stores read as one corpus are the corpus of the two files written as one
    whole = tokenize_corpus([both], wordpiece, tmp_path / "cache")
    assert grown.num_documents == whole.num_documents == 6
    assert _as_read(grown) == _as_read(whole)
    assert np.array_equal(grown.sent_offsets, whole.sent_offsets)
    assert np.array_equal(grown.doc_offsets, whole.doc_offsets)
    assert tokenize_corpus([a, b], wordpiece, tmp_path / "cache").dirs == grown.dirs
    assert counted_builds == [str(a), str(b), str(both)]
    b.write_text(b.read_text() + "\nOne more document.\n")  # a changed file (size, mtime) is tokenized again
    tokenize_corpus([a, b], wordpiece, tmp_path / "cache")
    assert counted_builds[-1] == str(b) and len(counted_builds) == 4


def test_every_family_and_run_with_the_tokenizer_shares_the_store(
    small_corpus, wordpiece, tmp_path, monkeypatch, counted_builds
):
    monkeypatch.setenv("BERTOLOGY_TOKEN_CACHE", str(tmp_path / "shared"))
    kw = dict(max_seq_length=64, seed=0, show_progress=False)
    bert = build_instances([small_corpus], wordpiece, "bert", cache_dir=tmp_path / "run1", **kw)
    electra = build_instances([small_corpus], wordpiece, "electra", cache_dir=tmp_path / "run2", **kw)
    assert counted_builds == [str(small_corpus)]
    assert bert.meta["token_stores"] == electra.meta["token_stores"]
    assert bert.meta["token_stores"][0].startswith(str(tmp_path / "shared"))
    assert not list((tmp_path / "run1").glob("*"))  # the token store and the index are in the shared cache
    again = build_instances([small_corpus], wordpiece, "bert", cache_dir=tmp_path / "run3", **kw)
    assert again.dir == bert.dir  # a later run of the same recipe and seed finds its index there


def test_token_counts_of_documents_count_each_token(small_corpus, wordpiece, tmp_path):
    corpus = tokenize_corpus([small_corpus], wordpiece, tmp_path)
    docs = [1, 4, 6]
    expected = np.zeros(wordpiece.vocab_size, np.int64)
    for d in docs:
        for ids, _ in _as_read(corpus)[d : d + 1][0]:
            np.add.at(expected, ids, 1)
    assert np.array_equal(corpus.token_counts(wordpiece.vocab_size, docs).numpy(), expected)
    # a span counted twice counts twice (dupe_factor copies of packed text)
    offsets = corpus.doc_token_offsets()
    twice = corpus.span_counts(wordpiece.vocab_size, offsets[[1, 1]], offsets[[2, 2]])
    assert np.array_equal(twice, 2 * corpus.token_counts(wordpiece.vocab_size, [1]).numpy())


def test_counts_of_scattered_documents_read_in_batches_across_files(wordpiece, tmp_path, monkeypatch):
    """Many short ranges are read and counted in batches of about _COUNT_CHUNK ids, a range longer than
    a chunk split over batches, across the files of a corpus: the counts are the tokens', one by one."""
    import bertology.data.tokenized as tokenized

    docs = _documents(6)
    files = [tmp_path / "a.txt", tmp_path / "b.txt"]
    files[0].write_text("\n".join(docs[:4]), encoding="utf-8")
    files[1].write_text("\n".join(docs[4:]), encoding="utf-8")
    corpus = tokenize_corpus(files, wordpiece, tmp_path / "cache")
    V, read = wordpiece.vocab_size, _as_read(corpus)
    for chunk in (7, 1000, 1 << 20):
        monkeypatch.setattr(tokenized, "_COUNT_CHUNK", chunk)
        for chosen in ([0, 2, 5], [1, 3, 4], [4]):
            expected = np.zeros(V, np.int64)
            for d in chosen:
                for ids, _ in read[d]:
                    np.add.at(expected, ids, 1)
            assert np.array_equal(corpus.token_counts(V, chosen).numpy(), expected), (chunk, chosen)


def test_the_store_counts_its_ids_and_most_documents_are_counted_from_them(small_corpus, wordpiece, tmp_path):
    """Each file's store keeps how often each id occurs (counted as its chunks are written); the counts
    of most of the corpus are those less the other documents' (without them, an older store: a pass)."""
    corpus = tokenize_corpus([small_corpus], wordpiece, tmp_path)
    (part,) = corpus.parts
    V = wordpiece.vocab_size
    assert np.array_equal(part.id_counts, np.bincount(np.asarray(part.ids, np.int64), minlength=len(part.id_counts)))
    docs = [0, 2, 3, 5, 6, 7]  # most of the 8 documents
    expected = np.zeros(V, np.int64)
    for d in docs:
        for ids, _ in _as_read(corpus)[d]:
            np.add.at(expected, ids, 1)
    assert np.array_equal(corpus.token_counts(V, docs).numpy(), expected)
    part.id_counts = None  # an older store: counted by a pass over the ids
    assert np.array_equal(corpus.token_counts(V, docs).numpy(), expected)
    part.id_counts = np.bincount(np.asarray(part.ids, np.int64))
    top = int(np.asarray(part.ids).max())
    with pytest.raises(ValueError, match=f"token id {top} outside a vocabulary of {top}"):
        corpus.token_counts(top, docs)


def test_the_document_count_is_remembered_with_the_shared_cache(small_corpus, tmp_path, monkeypatch):
    """With $BERTOLOGY_TOKEN_CACHE, check_corpus_documents counts a file once (keyed by its path, size
    and mtime, as its token store is) and answers later runs from the memo; a changed file is counted again."""
    import os

    import bertology.data.tokenized as tokenized

    counted = []
    count = tokenized.count_documents
    monkeypatch.setattr(
        tokenized, "count_documents", lambda files, fmt, **kw: counted.append(files) or count(files, fmt, **kw)
    )
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(small_corpus.read_bytes())
    assert tokenized.check_corpus_documents([corpus], "lines", 0, nsp=False) == 8
    assert len(counted) == 1  # no memo without the shared cache
    monkeypatch.setenv("BERTOLOGY_TOKEN_CACHE", str(tmp_path / "shared"))
    for _ in range(3):
        assert tokenized.check_corpus_documents([corpus], "lines", 0, nsp=False) == 8
    assert len(counted) == 2
    with pytest.raises(ValueError, match="leaving none to train on"):  # the memo still goes through the checks
        tokenized.check_corpus_documents([corpus], "lines", 8, nsp=False)
    corpus.write_bytes(small_corpus.read_bytes() + b"\none more document\n")
    os.utime(corpus, ns=(1, 2))  # (the size changed too; the key is the file's fingerprint)
    assert tokenized.check_corpus_documents([corpus], "lines", 0, nsp=False) == 9
    assert len(counted) == 3


def test_reads_from_the_files_give_what_the_memory_maps_hold(small_corpus, wordpiece, tmp_path, monkeypatch):
    (store,) = tokenize_corpus([small_corpus], wordpiece, tmp_path, workers=1).parts
    n = store.num_tokens
    every_start = np.array([s for doc in _reference([small_corpus], wordpiece) for _, starts in doc for s in starts])
    rng = np.random.default_rng(0)
    # scattered positions, repeats, far-apart runs and a (2, k) shape, as a batch's rows are
    positions = np.concatenate([rng.integers(0, n, 50), np.arange(5, 40), [n - 1, 0, 0, 7]])
    for shape in [(len(positions),), (2, len(positions) // 2)]:
        got = positions[: np.prod(shape)].reshape(shape)
        ids, starts = store.take(got)
        assert ids.dtype == np.int64 and ids.shape == shape and starts.dtype == bool
        assert np.array_equal(ids, np.asarray(store.ids)[got]) and np.array_equal(starts, every_start[got])
    monkeypatch.setattr(tokenstore, "RUN_GAP", 0)  # every position a run of its own
    monkeypatch.setattr(tokenstore, "READ_BYTES", 3)  # and every read in parts of 3 bytes
    assert np.array_equal(store.take(positions)[0], np.asarray(store.ids)[positions])
    assert np.array_equal(store.read(3, n), np.asarray(store.ids)[3:])
    assert store.take(np.zeros(0, np.int64))[0].shape == (0,)
    store.close()  # its files no longer held open; a read opens them again
    assert not any(key[0].parent == store.dir for key in tokenstore._descriptors)
    assert np.array_equal(store.read(0, 5), np.asarray(store.ids)[:5])
    with pytest.raises(IndexError, match="token positions"):
        store.take(np.array([n]))
    with pytest.raises(IndexError, match="outside its"):
        store.read(0, n + 1)


def test_a_truncated_store_is_reported_not_read_short(small_corpus, wordpiece, tmp_path):
    (store,) = tokenize_corpus([small_corpus], wordpiece, tmp_path, workers=1).parts
    ids = store.dir / "ids.bin"
    ids.write_bytes(ids.read_bytes()[:-4])
    with pytest.raises(ValueError, match="shorter than its meta.json"):
        store.read(0, store.num_tokens)
    ids.unlink()
    ids.write_bytes(b"")  # another file at the same path: not read as the store's
    with pytest.raises(FileNotFoundError, match="replaced since its store was opened"):
        tokenstore._descriptors.clear()  # (as if this process had not read it lately)
        store.read(0, 1)
