"""Unigram model: known answers for the lattice cores, parity with HF tokenizers' Unigram and
with sentencepiece, ties included."""

import bz2
import doctest
import functools
import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from bertology.tokenizers import unigram as U
from bertology.tokenizers.fast.models import UnigramColumns
from bertology.tokenizers.unigram import Unigram

GENSIM_DATA = Path(__import__("gensim").__file__).parent / "test" / "test_data"
ENWIKI = GENSIM_DATA / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


@functools.lru_cache(maxsize=1)
def _wiki() -> tuple[str, ...]:
    with bz2.open(ENWIKI, "rt", encoding="utf-8") as f:
        return tuple(line for line in f.read().splitlines() if line.strip() and not line.lstrip().startswith("<"))


def wiki_lines(start: int, count: int) -> list[str]:
    """Text lines (no XML tags) of gensim's English Wikipedia extract."""
    return list(_wiki()[start : start + count])


# A tiny hand-made vocabulary: log-probabilities chosen so that the answers can be worked by hand.
TINY = [
    ("<unk>", 0.0),
    ("a", math.log(0.2)),
    ("b", math.log(0.2)),
    ("c", math.log(0.1)),
    ("ab", math.log(0.15)),
    ("bc", math.log(0.15)),
    ("abc", math.log(0.02)),
    ("▁", math.log(0.18)),
]


def all_paths(word, model):
    """Every segmentation of `word` into in-vocabulary pieces, by brute force."""
    for cuts in itertools.product([0, 1], repeat=len(word) - 1):
        bounds = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [len(word)]
        parts = [word[a:b] for a, b in zip(bounds, bounds[1:])]
        if all(model.token_to_id(p) is not None for p in parts):
            yield parts, sum(model.vocab[model.token_to_id(p)][1] for p in parts)


def test_viterbi_known_answer():
    m = Unigram(TINY, unk_id=0)
    # abc: a+bc = .2*.15=.03 > ab+c = .015 > abc = .02? no: .03 > .02 > .015 ; a+b+c = .004
    assert [t.value for t in m.tokenize("abc")] == ["a", "bc"]
    assert [t.value for t in m.tokenize("ab")] == ["ab"]  # .15 > .04
    toks = m.tokenize("▁abca")
    assert toks == [U.Token(7, "▁", (0, 1)), U.Token(1, "a", (1, 2)), U.Token(5, "bc", (2, 4)), U.Token(1, "a", (4, 5))]


def test_unknowns_are_fused_and_scored_below_min():
    m = Unigram(TINY, unk_id=0)
    assert m.unk_score == pytest.approx(math.log(0.02) - 10)
    toks = m.tokenize("ax☃yb")
    assert toks == [U.Token(1, "a", (0, 1)), U.Token(0, "x☃y", (1, 4)), U.Token(2, "b", (4, 5))]
    with pytest.raises(ValueError, match="'x'.*no unk_id"):
        Unigram(TINY[1:]).tokenize("ax")


def test_byte_fallback_spells_unknowns_as_bytes():
    vocab = TINY + [("<0xE2>", -20.0), ("<0x98>", -20.0), ("<0x83>", -20.0)]
    m = Unigram(vocab, unk_id=0, byte_fallback=True)
    assert [(t.value, t.offsets) for t in m.tokenize("a☃")] == [
        ("a", (0, 1)),
        ("<0xE2>", (1, 2)),
        ("<0x98>", (1, 2)),
        ("<0x83>", (1, 2)),
    ]
    # a byte missing from the vocabulary: the whole unknown stays <unk>, as tokenizers does
    assert [t.id for t in m.tokenize("aé")] == [1, 0]


def test_bad_vocabularies_are_rejected():
    with pytest.raises(ValueError, match="'a' appears twice"):
        Unigram([("a", -1.0), ("a", -2.0)])
    with pytest.raises(ValueError, match="unk_id 5"):
        Unigram([("a", -1.0)], unk_id=5)
    with pytest.raises(ValueError, match="empty"):
        Unigram([])
    with pytest.raises(ValueError, match="entry 1"):
        Unigram.from_json({"type": "Unigram", "unk_id": None, "vocab": [["a", -1.0], ["b"]]})


def test_marginals_equal_brute_force_enumeration():
    m = Unigram(TINY, unk_id=0)
    for word in ["abc", "▁abcab", "cabbc"]:
        expected, logz = U.marginals(m.lattice(word))
        paths = list(all_paths(word, m))
        z = sum(math.exp(s) for _, s in paths)
        assert logz == pytest.approx(math.log(z))
        brute: dict[int, float] = {}
        for parts, s in paths:
            for p in parts:
                brute[m.token_to_id(p)] = brute.get(m.token_to_id(p), 0.0) + math.exp(s) / z
        assert expected.keys() == brute.keys()
        for k in brute:
            assert expected[k] == pytest.approx(brute[k])


def test_nbest_is_the_sorted_enumeration():
    m = Unigram(TINY, unk_id=0)
    word = "▁abcab"
    paths = sorted(all_paths(word, m), key=lambda p: -p[1])
    got = m.nbest(word, 100)
    assert len(got) == len(paths)
    assert [s for _, s in got] == pytest.approx([s for _, s in paths])
    assert [t.value for t in got[0][0]] == [t.value for t in m.tokenize(word)]
    assert [[t.value for t in toks] for toks, _ in got[:3]] == [p for p, _ in paths[:3]]
    assert len(m.nbest(word, 3)) == 3


@pytest.mark.parametrize(
    "make_gen", [lambda: random.Random(0), lambda: np.random.default_rng(0), lambda: torch.Generator().manual_seed(0)]
)
def test_sampling_matches_exact_path_probabilities(make_gen):
    m = Unigram(TINY, unk_id=0)
    word, alpha, n = "abcab", 0.7, 4000
    paths = list(all_paths(word, m))
    z = sum(math.exp(alpha * s) for _, s in paths)
    exact = {tuple(p): math.exp(alpha * s) / z for p, s in paths}
    gen = make_gen()
    counts: dict[tuple, int] = {}
    for _ in range(n):
        key = tuple(t.value for t in m.sample(word, alpha=alpha, nbest_size=-1, generator=gen))
        counts[key] = counts.get(key, 0) + 1
    assert set(counts) <= set(exact)
    tv = 0.5 * sum(abs(counts.get(k, 0) / n - p) for k, p in exact.items())
    assert tv < 0.03
    # same seed, same samples
    a = [m.sample(word, 0.7, -1, make_gen()) for _ in range(3)]
    b = [m.sample(word, 0.7, -1, make_gen()) for _ in range(3)]
    assert a == b


def test_nbest_sampling_draws_only_among_the_n_best():
    m = Unigram(TINY, unk_id=0)
    word = "abcab"
    top3 = {tuple(t.value for t in toks): s for toks, s in m.nbest(word, 3)}
    rng = random.Random(1)
    counts: dict[tuple, int] = {}
    for _ in range(3000):
        key = tuple(t.value for t in m.sample(word, alpha=1.0, nbest_size=3, generator=rng))
        counts[key] = counts.get(key, 0) + 1
    assert set(counts) == set(top3)
    z = sum(math.exp(s) for s in top3.values())
    for k, s in top3.items():
        assert counts[k] / 3000 == pytest.approx(math.exp(s) / z, abs=0.03)
    assert m.sample(word, alpha=1.0, nbest_size=1) == m.tokenize(word)


@pytest.fixture(scope="module")
def hf_unigram(tmp_path_factory):
    """A Unigram tokenizer trained by HF tokenizers on ~250 KB of Wikipedia, saved and reloaded."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=1500, unk_token="<unk>", special_tokens=["<unk>"], show_progress=False)
    tok.train_from_iterator(wiki_lines(0, 600), trainer)
    path = tmp_path_factory.mktemp("hf_unigram") / "tokenizer.json"
    tok.save(str(path))
    return Tokenizer.from_file(str(path)), json.loads(path.read_text(encoding="utf-8"))


def test_json_round_trip_of_tokenizers_file(hf_unigram):
    _, data = hf_unigram
    m = Unigram.from_json(data["model"])
    assert m.vocab_size == len(data["model"]["vocab"]) and m.unk_id == 0
    assert m.to_json() == data["model"]
    assert json.loads(json.dumps(m.to_json())) == data["model"]


def test_tokenize_equals_tokenizers_on_wikipedia_words(hf_unigram):
    tok, data = hf_unigram
    m = Unigram.from_json(data["model"])
    words = set()
    for line in wiki_lines(5000, 2000) + ["naïve café ☃☃ snow☃man 漢字 Привет ..."]:
        words.update(w for w, _ in tok.pre_tokenizer.pre_tokenize_str(line))
    assert len(words) > 5000
    for w in sorted(words):
        ref = tok.model.tokenize(w)
        got = m.tokenize(w)
        assert [t.id for t in got] == [t.id for t in ref], w
        assert [t.value for t in got] == [t.value for t in ref], w
        # tokenizers' model offsets are in bytes of the word; ours are in characters
        byte_offsets = [(len(w[:a].encode()), len(w[:b].encode())) for a, b in (t.offsets for t in got)]
        assert byte_offsets == [t.offsets for t in ref], w


def test_byte_fallback_equals_tokenizers():
    from tokenizers import models

    vocab = TINY + [(f"<0x{b:02X}>", -30.0) for b in range(256)]
    ref = models.Unigram(vocab, 0, True)
    m = Unigram(vocab, 0, True)
    for w in ["a☃bé", "▁zz", "abc", "é☃"]:
        assert [(t.id, t.value) for t in m.tokenize(w)] == [(t.id, t.value) for t in ref.tokenize(w)]


def test_pipeline_encoding_equals_tokenizers(hf_unigram, tmp_path):
    """The whole tokenizer.json through bertology's Tokenizer: ids, tokens and offsets."""
    from bertology.tokenizers import Tokenizer

    tok, data = hf_unigram
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    ours = Tokenizer.load(path)
    assert isinstance(ours.model, Unigram)
    for line in wiki_lines(7000, 300) + ["naïve  café ☃☃ snow☃man 漢字 Привет ...", ""]:
        a, b = ours.encode(line), tok.encode(line)
        assert (a.ids, a.tokens, a.offsets) == (b.ids, b.tokens, b.offsets), line


def test_doctests():
    from bertology.tokenizers import unigram_trainer

    for module in (U, unigram_trainer):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_json_f64_reads_scores_as_tokenizers_does(tmp_path):
    """tokenizers' JSON reader (serde_json's fast path) is one ulp off on many 17-digit floats;
    json_f64 must land on its value every time (read back through tokenizers' own writer)."""
    import tokenizers

    rng = random.Random(0)
    scores = (
        [-rng.random() * 20 for _ in range(3000)]
        + [-rng.random() * 1e-6 for _ in range(300)]
        + [-math.exp(-rng.random() * 700) for _ in range(300)]
        + [rng.uniform(-1e20, 1e20) for _ in range(300)]
    )
    model = {"type": "Unigram", "unk_id": None, "vocab": [[f"p{i}", v] for i, v in enumerate(scores)]}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"version": "1.0", "model": model}), encoding="utf-8")
    back = [v for _, v in json.loads(tokenizers.Tokenizer.from_file(str(path)).to_str())["model"]["vocab"]]
    assert sum(a != b for a, b in zip(scores, back)) > 100  # the reader really is off, often
    assert [U.json_f64(v) for v in scores] == back


# -- ties: runs of one character, where several segmentations score the same -------------------

RUN_CHARS = "=-~^*#_.a"


def rst_corpus(start: int = 0, count: int = 800) -> list[str]:
    """Wikipedia lines (whose headings are "== ... ==") laid out as reStructuredText: every
    fourth is followed by a heading (a title, then an underline of one character as long as the
    title), every sixth is an indented literal block."""
    lines = []
    for k, line in enumerate(wiki_lines(start, count)):
        lines.append("    " + line if k % 6 == 1 else line)
        if k % 4 == 0:
            title = " ".join(line.split()[: 1 + k % 7])
            lines += ["", title, RUN_CHARS[k % 5] * len(title), ""]
    return lines


def run_texts() -> list[str]:
    """Every run of 1-80 of each character, alone and inside a line."""
    runs = [c * n for c in RUN_CHARS for n in range(1, 81)]
    return runs + [f"Title {r} and {r[: len(r) // 2]}" for r in runs[::3]]


tie_text = st.lists(
    st.one_of(
        st.sampled_from(sorted({w for line in wiki_lines(0, 200) for w in line.split()})),
        st.builds(lambda c, n: c * n, st.sampled_from(RUN_CHARS), st.integers(1, 90)),
        st.text(st.sampled_from(" =-~ab"), min_size=1, max_size=12),
    ),
    min_size=1,
    max_size=10,
).map(" ".join)


@pytest.fixture(scope="module")
def rst_sentencepiece(tmp_path_factory):
    import sentencepiece as spm

    d = tmp_path_factory.mktemp("rst_spm")
    (d / "corpus.txt").write_text("\n".join(rst_corpus()), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(d / "corpus.txt"),
        model_prefix=str(d / "sp"),
        vocab_size=2000,
        model_type="unigram",
        character_coverage=1.0,
        minloglevel=2,
        num_threads=2,
    )
    return d / "sp.model"


@pytest.fixture(scope="module")
def rst_ours_json(tmp_path_factory):
    """A Unigram tokenizer.json trained by bertology's own trainer."""
    from bertology.tokenizers import train

    tok = train(lines=rst_corpus(), algorithm="unigram", vocab_size=2000, show_progress=False)
    path = tmp_path_factory.mktemp("rst_ours") / "tokenizer.json"
    tok.save(path)
    return path


def _same_ids_as_sentencepiece(model_path, texts):
    import sentencepiece as spm
    from bertology.tokenizers import Tokenizer

    sp = spm.SentencePieceProcessor(model_file=str(model_path))
    ours = Tokenizer.load(model_path)
    for t in texts:
        assert ours.encode(t, add_special_tokens=False).ids == sp.encode(t), t


def _same_ids_as_tokenizers(json_path, texts):
    import tokenizers
    from bertology.tokenizers import Tokenizer

    ref, ours = tokenizers.Tokenizer.from_file(str(json_path)), Tokenizer.load(json_path)
    for t in texts:
        assert ours.encode(t).ids == ref.encode(t).ids, t


def test_runs_break_ties_as_sentencepiece_does(rst_sentencepiece):
    _same_ids_as_sentencepiece(rst_sentencepiece, run_texts())


def test_runs_break_ties_as_tokenizers_does(rst_ours_json):
    _same_ids_as_tokenizers(rst_ours_json, run_texts())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(tie_text, min_size=1, max_size=5))
def test_property_ids_equal_sentencepiece_and_tokenizers(rst_sentencepiece, rst_ours_json, texts):
    """For every input: our ids equal sentencepiece's on a .model, tokenizers' on our tokenizer.json."""
    _same_ids_as_sentencepiece(rst_sentencepiece, texts)
    _same_ids_as_tokenizers(rst_ours_json, texts)


# -- the fast Viterbi (fast.models.UnigramColumns) against the reference lattice + viterbi --------

TIES = [
    ("<unk>", 0.0),
    ("=", -1.0),
    ("==", -2.0),
    ("===", -3.0),
    ("====", -4.0),
    ("-", -1.5),
    ("--", -3.0),
    ("=-", -2.5),
    ("-=", -2.5),
    ("▁", -1.0),
    ("▁=", -2.0),
    ("a", -2.0),
    ("ab", -2.0),
    ("b", -2.0),
]
FAST_MODELS = {
    "tiny": Unigram(TINY, 0),
    "byte_fallback": Unigram(TINY + [(f"<0x{b:02X}>", -30.0) for b in range(256)], 0, True),
    "ties": Unigram(TIES, 0),
    "unk_piece_matchable": Unigram(TINY + [(c, -3.0) for c in "<unk>"], 0),  # ("<unk>" is a piece)
    "unk_last_id": Unigram(TINY[1:] + [("<unk>", 0.0)], len(TINY) - 1),
}


def _token_columns(m, word):
    toks = m.tokenize(word)
    return [t.id for t in toks], [t.value for t in toks], [t.offsets[0] for t in toks], [t.offsets[1] for t in toks]


def _reference_columns(m, word):
    """The lattice Viterbi's columns (no cache)."""
    toks = m._to_tokens(word, U.viterbi(m.lattice(word), m.float32))
    return [t.id for t in toks], [t.value for t in toks], [t.offsets[0] for t in toks], [t.offsets[1] for t in toks]


@settings(max_examples=400, deadline=None)
@given(word=st.text(st.sampled_from("abc=-▁☃é<unk>"), max_size=40))
def test_fast_viterbi_equals_the_reference_on_any_word(word):
    """Same ids, tokens and offsets, ties and fused / byte-spelled unknowns included."""
    for name, m in FAST_MODELS.items():
        columns = UnigramColumns(m)
        assert columns.fast
        assert columns(word) == _reference_columns(m, word) == _token_columns(m, word), (name, word)


def test_fast_viterbi_without_unk_raises_as_the_reference_does():
    m = Unigram(TINY[1:])
    assert UnigramColumns(m)("abc") == _reference_columns(m, "abc")
    with pytest.raises(ValueError, match="no unk_id"):
        UnigramColumns(m)("abz")


def test_float32_models_take_the_reference():
    m = Unigram(TIES, 0, float32=True)
    assert not UnigramColumns(m).fast
    for w in ["=" * k for k in range(1, 30)] + ["▁==-=-==", "ab☃b"]:
        assert UnigramColumns(m)(w) == _reference_columns(m, w)


def test_fast_viterbi_equals_the_reference_on_wikipedia_words(hf_unigram):
    _, data = hf_unigram
    m = Unigram.from_json(data["model"])
    columns = UnigramColumns(m)
    assert columns.fast
    words = {"▁" + w for line in wiki_lines(3000, 2000) for w in line.split()}
    words |= {"▁" + c * k for c in RUN_CHARS for k in range(1, 60)}
    for w in sorted(words):
        assert columns(w) == _reference_columns(m, w), w
