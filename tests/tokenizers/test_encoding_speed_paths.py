"""The encoding fast paths give exactly the general path's result (and `tokenizers`' result).

Fast paths under test: the word split (one `pattern.split`, stdlib `re` on ASCII text), the
per-word cache with C-level list building (fast.words.WordCache.encode), the single-sequence
template concatenation, pickling Encodings flat, and encode_batch over worker processes.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import tokenizers
from hypothesis import given, settings, strategies as st

from bertology.tokenizers import Tokenizer, post_processors, pre_tokenizers
from bertology.tokenizers.encoding import Encoding
from bertology.tokenizers.fast import splits, workers as batching
from bertology.tokenizers.fast.splits import word_split
from bertology.tokenizers.fast.words import WordCache

GENSIM_DATA = Path(__import__("gensim").__file__).parent / "test" / "test_data"
LEE, RUSSIAN = GENSIM_DATA / "lee_background.cor", GENSIM_DATA / "crime-and-punishment.txt"

EXTRA = [
    "naïve café Ångström ÀÉÎ",
    "中文字 日本語 한국어",
    "emoji 🤗👍🏽 👨‍👩‍👧 ok",
    "ΟΔΟΣ Σίσυφος",
    "tabs\t\tand\n\nnewlines\r\n",
    "x\x1cy\x1fz \x0b\x0c",
    "don't I'll you're 3.14 $5,000 --- ok?!",
    "  leading   and trailing  ",
    "[MASK] hello[SEP]x <s> a</s>",
    "a" * 150,
    "",
    " ",
]

SPLITS = {
    "bert": pre_tokenizers.BertPreTokenizer(),
    "whitespace": pre_tokenizers.Whitespace(),
    "whitespace_split": pre_tokenizers.WhitespaceSplit(),
}


def _words_by_split(split, s: str) -> list[tuple[str, int]]:
    """(word, start) from WordSplit's pattern.split, as the hot path computes them."""
    parts = (split.ascii if s.isascii() else split.unicode).split(s)
    out, pos = [], 0
    for i, part in enumerate(parts):
        if i % 2:
            out.append((part, pos))
        pos += len(part)
    return out


def _words_by_finditer(pattern, s: str) -> list[tuple[str, int]]:
    return [(m.group(), m.start()) for m in pattern.finditer(s)]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from([chr(c) for c in range(128)]), max_size=40))
def test_ascii_word_splits_equal_the_unicode_patterns_on_any_ascii_text(s):
    from bertology.tokenizers.byte_level import GPT2_PATTERN

    for pre in SPLITS.values():
        assert _words_by_split(word_split(pre), s) == _words_by_finditer(pre.pattern, s)
    assert _words_by_split(word_split(pre_tokenizers.ByteLevel(add_prefix_space=False)), s) == _words_by_finditer(
        GPT2_PATTERN, s
    )
    assert "".join(splits.GPT2_SPLIT.ascii.findall(s)) == s  # its words tile the text (split.tiles)


def test_word_splits_on_real_text(enwiki_lines, russian_lines):
    from bertology.tokenizers.byte_level import GPT2_PATTERN

    texts = enwiki_lines[:500] + russian_lines[:300] + EXTRA
    for s in texts:
        for pre in SPLITS.values():
            assert _words_by_split(word_split(pre), s) == _words_by_finditer(pre.pattern, s)
        assert _words_by_split(splits.GPT2_SPLIT, s) == _words_by_finditer(GPT2_PATTERN, s)
        assert "".join(splits.GPT2_SPLIT.unicode.findall(s)) == s
    assert [word_split(p).tiles for p in SPLITS.values()] == [False] * len(SPLITS)


def test_only_pure_match_pre_tokenizers_offer_a_word_split():
    assert word_split(pre_tokenizers.ByteLevel(add_prefix_space=True)) is None  # adds a char
    assert word_split(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)) is None
    assert word_split(pre_tokenizers.Metaspace()) is None
    assert word_split(pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit()])) is None


# -- hot path vs general path, and vs tokenizers --------------------------------------------------


def _general(tok: Tokenizer) -> Tokenizer:
    """The same tokenizer with the fast encoder switched off: the general path."""
    slow = Tokenizer.from_str(tok.to_str())
    slow.fast = None
    return slow


@pytest.fixture(scope="module")
def roberta_json(tmp_path_factory):
    """RoBERTa's pipeline as roberta-base has it (no prefix space), trained by `tokenizers` on
    English and Russian text, so that multi-byte words are in the vocabulary."""
    from tokenizers import decoders, models, processors, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=3000,
        show_progress=False,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(
        LEE.read_text(encoding="utf-8").splitlines() + RUSSIAN.read_text(encoding="utf-8").splitlines(), trainer
    )
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")), add_prefix_space=False
    )
    path = tmp_path_factory.mktemp("roberta") / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def texts(enwiki_lines, russian_lines, tricky_texts):
    return enwiki_lines[:400] + russian_lines[:200] + tricky_texts + EXTRA


@pytest.fixture
def hot_path_words(monkeypatch):
    """Counts the words the hot paths encode (WordCache.encode: one text; encode_texts: a batch)."""
    seen = [0]
    encode, encode_texts = WordCache.encode, WordCache.encode_texts

    def counting(self, *args):
        n = encode(self, *args)
        seen[0] += n
        return n

    def counting_batch(self, texts, split, trim=None):
        flat = encode_texts(self, texts, split, trim)
        seen[0] += sum(len(set(flat.words[a:b])) for a, b in zip(flat.bounds, flat.bounds[1:]))
        return flat

    monkeypatch.setattr(WordCache, "encode", counting)
    monkeypatch.setattr(WordCache, "encode_texts", counting_batch)
    return seen


def _check(tok: Tokenizer, ref, texts, same_encoding, hot_path_words):
    slow = _general(tok)
    fast_batch = tok.encode_batch(texts, workers=1)
    assert hot_path_words[0] > 1000, "the hot path did not run"
    for text, fast, r in zip(texts, fast_batch, ref.encode_batch(texts)):
        assert fast == slow.encode(text), f"hot path differs from the general path on {text!r:.80}"
        same_encoding(fast, r, text)
        assert tok.encode(text) == fast


def test_wordpiece_hot_path(minilm_json, texts, same_encoding, hot_path_words):
    tok, ref = Tokenizer.load(minilm_json), tokenizers.Tokenizer.from_file(str(minilm_json))
    _check(tok, ref, texts, same_encoding, hot_path_words)  # the file's own truncation (128) and padding


def test_wordpiece_hot_path_pairs_and_added_tokens(minilm_json, texts, same_encoding):
    tok, ref = Tokenizer.load(minilm_json), tokenizers.Tokenizer.from_file(str(minilm_json))
    for t in (tok, ref):
        t.no_padding(), t.no_truncation()
        t.add_tokens(["hello world", "ünï"])
    slow = _general(tok)
    pairs = list(zip(texts[:300], texts[300:600]))
    for (a, b), fast, r in zip(
        pairs, tok.encode_batch([a for a, _ in pairs], [b for _, b in pairs]), ref.encode_batch(pairs)
    ):
        assert fast == slow.encode(a, b)
        same_encoding(fast, r, a)
    for text in ["say hello world [MASK] now", "Ünï ünïcode"] + texts[:50]:
        assert tok.encode(text) == slow.encode(text)
        same_encoding(tok.encode(text), ref.encode(text), text)


@pytest.mark.parametrize("which", ["roberta", "gpt2"])
def test_byte_level_hot_path(which, roberta_json, gpt2_bpe_json, texts, same_encoding, hot_path_words):
    path = roberta_json if which == "roberta" else gpt2_bpe_json
    tok, ref = Tokenizer.load(path), tokenizers.Tokenizer.from_file(str(path))
    _check(tok, ref, texts, same_encoding, hot_path_words)


def _roberta_variant(path: Path, post_processor: dict | None, tmp_path: Path) -> Path:
    """The tokenizer.json at path with another post_processor."""
    import json

    data = json.loads(path.read_text(encoding="utf-8"))
    data["post_processor"] = post_processor
    out = tmp_path / "variant.json"
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


BATCH_SETTINGS = {  # (padding, truncation) as enable_padding / enable_truncation keywords
    "file": (None, None),
    "longest": ({}, None),
    "fixed, multiple of 8": ({"length": 20, "pad_to_multiple_of": 8}, None),
    "longest, multiple of 8, truncated": ({"pad_to_multiple_of": 8}, {"max_length": 24}),
    "left": ({"direction": "left"}, {"max_length": 16, "stride": 3}),
    "truncated only": (None, {"max_length": 10}),
}


@pytest.mark.parametrize("setting", list(BATCH_SETTINGS))
@pytest.mark.parametrize(
    "which", ["minilm", "roberta", "roberta prefix space", "roberta untrimmed", "bytelevel processor", "no processor"]
)
def test_batch_hot_path_equals_the_general_path_and_tokenizers(
    which, setting, minilm_json, roberta_json, texts, same_encoding, hot_path_words, tmp_path
):
    """encode_batch's one-step build of whole batches (WordCache.encode_texts, framed_encodings)
    under every padding / truncation shape, on a batch that mixes hot and general texts (added
    tokens, non-ASCII, empty, too long), against the general path and `tokenizers`."""
    path = minilm_json if which == "minilm" else roberta_json
    # (every field spelled out: `tokenizers` reads a RobertaProcessing without them as BertProcessing)
    rob = {
        "type": "RobertaProcessing",
        "sep": ["</s>", 2],
        "cls": ["<s>", 0],
        "trim_offsets": True,
        "add_prefix_space": False,
    }
    path = {
        "roberta prefix space": lambda: _roberta_variant(path, {**rob, "add_prefix_space": True}, tmp_path),
        "roberta untrimmed": lambda: _roberta_variant(path, {**rob, "trim_offsets": False}, tmp_path),
        "bytelevel processor": lambda: _roberta_variant(
            path, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}, tmp_path
        ),
        "no processor": lambda: _roberta_variant(path, None, tmp_path),
    }.get(which, lambda: path)()
    tok, ref = Tokenizer.load(path), tokenizers.Tokenizer.from_file(str(path))
    padding, truncation = BATCH_SETTINGS[setting]
    for t in (tok, ref):
        if setting != "file":
            t.no_padding(), t.no_truncation()
        if padding is not None:
            t.enable_padding(pad_id=1, pad_token="<pad>", **padding)
        if truncation is not None:
            t.enable_truncation(**truncation)
    batch = texts[:150] + texts[-40:] + [" <s> x", "a <mask> b", "", " lead", "x" * 300]
    fast = tok.encode_batch(batch)
    assert hot_path_words[0] > 500, "the batch hot path did not run"
    assert fast == _general(tok).encode_batch(batch)
    for text, ours, r in zip(batch, fast, ref.encode_batch(batch)):
        same_encoding(ours, r, text)
    assert tok.encode_batch(batch, add_special_tokens=False) == _general(tok).encode_batch(
        batch, add_special_tokens=False
    )
    for ours, one in zip(fast[::7], batch[::7]):  # the lists are the Encoding's own
        ours.ids.append(-1)
        assert tok.encode(one).ids[-1] != -1


def test_prefix_space_byte_level_takes_the_general_path(bytelevel_bpe_json, texts, same_encoding, hot_path_words):
    tok, ref = Tokenizer.load(bytelevel_bpe_json), tokenizers.Tokenizer.from_file(str(bytelevel_bpe_json))
    for text, r in zip(texts[:200], ref.encode_batch(texts[:200])):
        same_encoding(tok.encode(text), r, text)
    assert hot_path_words[0] == 0
    assert tok.fast.words, "the fast encoder memoizes the model's words on this path too"


def test_word_cache_follows_a_new_model(minilm_json):
    tok = Tokenizer.load(minilm_json)
    tok.no_padding()
    before = tok.encode("hello there").ids
    other = Tokenizer.from_str(tok.to_str())
    other.model.vocab = {k: v + 1 for k, v in other.model.vocab.items()}
    other.model.vocab_r = {v: k for k, v in other.model.vocab.items()}
    tok.model = other.model  # swapping the model must not reuse cached words
    assert tok.encode("hello there").ids[1:-1] == [i + 1 for i in before[1:-1]]


# -- post-processing and pickling ------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: post_processors.bert_processing(101, 102),
        lambda: post_processors.roberta_processing(0, 2),
        lambda: post_processors.xlnet_processing(4, 3),
        lambda: post_processors.TemplateProcessing("[X] [Y]:1 $A:2 [Y]", None, [("[X]", 7), ("[Y]", 8)]),
    ],
)
def test_single_template_fast_path_equals_merging(make):
    enc = Encoding(
        [5, 6, 7], ["Ġa", "b", "Ġc"], [(0, 2), (2, 3), (3, 5)], [0, 0, 1], [0] * 3, [0] * 3, [1] * 3, [0] * 3
    )
    fast = make().process(enc.copy())
    general = post_processors.PostProcessor.process(make(), enc.copy())  # merge Encoding objects
    assert fast == general
    truncated = enc.copy()
    truncated.truncate(2)  # overflowing: the general path
    assert make().process(truncated.copy()) == post_processors.PostProcessor.process(make(), truncated.copy())


def test_template_fast_path_sees_changed_special_tokens():
    tp = post_processors.bert_processing(101, 102)
    enc = Encoding([5], ["a"], [(0, 1)], [0], [0], [0], [1], [0])
    assert tp.process(enc.copy()).ids == [101, 5, 102]
    tp.special_tokens["[CLS]"]["ids"] = [99]
    assert tp.process(enc.copy()).ids == [99, 5, 102]


def test_encoding_pickles_flat_and_back():
    e = Encoding(
        [1, 2],
        ["a", "b"],
        [(0, 1), (1, 3)],
        [0, None],
        [0, 1],
        [0, 1],
        [1, 1],
        [0, None],
        [Encoding([3], ["c"], [(4, 5)], [2], [0], [0], [1], [0])],
    )
    back = pickle.loads(pickle.dumps(e, pickle.HIGHEST_PROTOCOL))
    assert back == e and back.offsets == [(0, 1), (1, 3)] and isinstance(back.offsets[0], tuple)


# -- worker processes ----------------------------------------------------------------------------------


def test_chunks_cover_the_batch_in_order():
    texts = ["x" * n for n in [5, 1, 1, 1, 50, 2, 2, 30, 0, 0, 1]]
    for n in range(1, 6):
        chunks = batching._chunks(texts, n)
        assert chunks[0][0] == 0 and chunks[-1][1] == len(texts)
        assert all(b > a for a, b in chunks) and all(b == c for (_, b), (c, _) in zip(chunks, chunks[1:]))


def test_workers_setting(monkeypatch):
    big = ["a b"] * batching._PARALLEL_MIN_TEXTS
    assert batching.workers_for(big[:10], 4) == 1  # small batch: one process
    assert batching.workers_for(big, 3) == 3
    assert batching.workers_for(big, 1) == 1
    with pytest.raises(TypeError, match="workers"):
        batching.workers_for(big, "two")
    assert batching.workers_for(big, 2) == 2
    monkeypatch.setenv("BERTOLOGY_ENCODE_WORKERS", "2")  # (no longer read: workers= is the one setting)
    assert batching.workers_for(big, None) == 1  # the default: one process


@pytest.mark.integration  # starts worker processes
def test_workers_give_the_serial_result(minilm_json, enwiki_lines, russian_lines):
    tok = Tokenizer.load(minilm_json)
    texts = (enwiki_lines + russian_lines)[:2500]
    pairs = texts[::-1]
    serial = tok.encode_batch(texts, pairs, workers=1, truncation=True, max_length=48, stride=4)
    parallel = tok.encode_batch(texts, pairs, workers=3, truncation=True, max_length=48, stride=4)
    assert parallel == serial and any(e.overflowing for e in parallel)
    assert tok.encode_batch(texts, workers=2, padding=True) == tok.encode_batch(texts, workers=1, padding=True)


def test_a_worker_error_is_raised_as_the_serial_path_raises_it(minilm_json):
    tok = Tokenizer.load(minilm_json)
    texts = ["fine text"] * 2500 + [42]  # the bad input is in the last worker's chunk
    with pytest.raises(TypeError, match="encode expects str, got int"):
        tok.encode_batch(texts, workers=2)


def _trim_one_by_one(enc: Encoding, add_prefix_space: bool) -> None:
    """trim_byte_level_offsets written as a plain loop over the tokens (the reference)."""
    for i, (tok, (a, b)) in enumerate(zip(enc.tokens, enc.offsets)):
        lead = len(tok) - len(tok.lstrip("Ġ \t\n"))
        trail = len(tok) - len(tok.rstrip("Ġ \t\n"))
        if lead and (i == 0 or a == 0) and add_prefix_space and lead == 1:
            lead = 0
        a = min(a + lead, b)
        if trail and b >= trail:
            b = max(b - trail, a)
        enc.offsets[i] = (a, b)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(alphabet="Ġab ", min_size=1, max_size=4), st.integers(0, 6), st.integers(0, 4)), max_size=8
    ),
    st.booleans(),
)
def test_byte_level_trim_equals_the_token_by_token_rule(items, add_prefix_space):
    tokens = [t for t, _, _ in items]
    offsets = [(a, a + n) for _, a, n in items]
    n = len(tokens)
    fast = Encoding([0] * n, tokens, list(offsets), [0] * n, [0] * n, [0] * n, [1] * n, [0] * n)
    ref = fast.copy()
    post_processors.trim_byte_level_offsets(fast, add_prefix_space)
    _trim_one_by_one(ref, add_prefix_space)
    assert fast.offsets == ref.offsets


def test_deferred_encodings_behave_as_plain_ones(minilm_json, texts):
    """The batch hot path's encodings make their columns when first read: the same lists as
    the general path's, each read of a column the same list, changes kept, pickled whole."""
    tok = Tokenizer.load(minilm_json)
    batch = texts[:40]
    fast, slow = tok.encode_batch(batch), _general(tok).encode_batch(batch)
    assert any(e._ids is None for e in fast), "no deferred encoding to test"
    for e, ref in zip(fast, slow):
        assert len(e) == len(ref)  # (before any column is read)
        assert e.attention_mask is e.attention_mask
        e.ids.append(-1)
        assert e.ids[-1] == -1 and e != ref
        e.ids.pop()
        assert e == ref and repr(e) == repr(ref)
        assert pickle.loads(pickle.dumps(e, pickle.HIGHEST_PROTOCOL)) == ref
    a, b = tok.encode_batch(["same text", "same text"])
    assert a == b and a.ids is not b.ids and a.type_ids is not b.type_ids
    e = tok.encode_batch(["a short one"])[0]
    n = len(e)
    e.pad(n + 3, pad_id=7, direction="left")
    assert len(e) == n + 3 and e.ids[:3] == [7, 7, 7] and e.attention_mask[:3] == [0, 0, 0]


# -- Unigram behind Metaspace: the batch hot path (WordCache.encode_metaspace) -------------------


@pytest.fixture(scope="module")
def unigram_json(tmp_path_factory):
    """NFKC + Metaspace + Unigram (as bench/encode_speed.py trains it), trained by `tokenizers`
    on English and Russian text."""
    from tokenizers import decoders, models, normalizers, trainers

    tok = tokenizers.Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=3000, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(
        LEE.read_text(encoding="utf-8").splitlines() + RUSSIAN.read_text(encoding="utf-8").splitlines()[:3000], trainer
    )
    path = tmp_path_factory.mktemp("unigram") / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.mark.parametrize(
    "prepend_scheme,split", [("always", True), ("first", True), ("never", True), ("always", False)]
)
def test_unigram_metaspace_hot_path(unigram_json, prepend_scheme, split, texts, same_encoding, monkeypatch, tmp_path):
    data = json.loads(unigram_json.read_text(encoding="utf-8"))
    data["pre_tokenizer"].update(prepend_scheme=prepend_scheme, split=split)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    tok, ref = Tokenizer.load(path), tokenizers.Tokenizer.from_file(str(path))
    seen = [0]
    encode_metaspace = WordCache.encode_metaspace

    def counting(self, batch, pre):
        seen[0] += len(batch)
        return encode_metaspace(self, batch, pre)

    monkeypatch.setattr(WordCache, "encode_metaspace", counting)
    all_texts = texts + ["▁a ▁", "▁▁x", " ▁", "ﬁ ① ＡＢ", "<unk> a<unk>b", "== ==== -- ===="]
    fast_batch = tok.encode_batch(all_texts, workers=1)
    assert (seen[0] > 250) == split, "the hot path should run exactly when Metaspace splits"
    slow = _general(tok)
    for text, fast, r in zip(all_texts, fast_batch, ref.encode_batch(all_texts)):
        assert fast == slow.encode(text), f"hot path differs from the general path on {text!r:.80}"
        same_encoding(fast, r, text)
        assert tok.encode(text) == fast


# -- ids alone (Tokenizer.encode_batch_ids): what the token store keeps ------------------------------


def _ids_and_word_sizes(encodings) -> tuple[list[int], list[int], list[int]]:
    """encode_batch_ids' three lists, read off Encodings of encode_sequence's tokens."""
    from itertools import groupby

    ids, lengths, sizes = [], [], []
    for e in encodings:
        ids += e.ids
        lengths.append(len(e.ids))
        sizes += [len(list(g)) for _, g in groupby(e.word_ids)]
    return ids, lengths, sizes


@pytest.mark.parametrize("which", ["minilm", "roberta", "bytelevel", "unigram", "unigram-nosplit", "added"])
def test_encode_batch_ids_equals_the_sequences_ids_and_words(
    which, minilm_json, roberta_json, bytelevel_bpe_json, unigram_json, texts, tmp_path
):
    path = {"minilm": minilm_json, "roberta": roberta_json, "bytelevel": bytelevel_bpe_json, "added": minilm_json}
    if which.startswith("unigram"):
        data = json.loads(unigram_json.read_text(encoding="utf-8"))
        data["pre_tokenizer"].update(split=which == "unigram")
        path[which] = tmp_path / "tokenizer.json"
        path[which].write_text(json.dumps(data), encoding="utf-8")
    tok = Tokenizer.load(path[which])
    all_texts = texts + ["say hello world [MASK] now", "Ünï ünïcode", "", "a", "\x00"]
    if which == "added":  # texts with added tokens take encode_one between the hot path's
        tok.add_tokens(["hello world", "ünï"])
    slow = _general(tok)
    expected = _ids_and_word_sizes([slow.encode_sequence(t) for t in all_texts])
    got = tok.encode_batch_ids(all_texts)
    assert (got.ids, got.lengths, got.word_sizes) == expected
    assert tuple(slow.encode_batch_ids(all_texts)) == expected  # the general path's own
    assert sum(got.lengths) == sum(got.word_sizes) == len(got.ids) > 5000
    if which == "added":
        assert 0 < sum(1 for t in all_texts if "hello world" in t.lower()) and tok.token_to_id("hello world") in got.ids
