"""WordPiece trainer: the likelihood criterion by hand, against the recount reference
(wordpiece_trainer.reference_wordpiece), and the frequency criterion against Hugging Face's
WordPieceTrainer."""

import collections
import doctest
import json
from pathlib import Path

import pytest

import bertology.tokenizers.wordpiece_trainer as wpt
from bertology.tokenizers.wordpiece_trainer import reference_wordpiece, train_wordpiece

LEE = Path(__import__("gensim").__file__).parent / "test" / "test_data" / "lee_background.cor"


def whitespace_counts(lines):
    wc = collections.Counter()
    for line in lines:
        wc.update(line.lower().split())
    return dict(wc)


def test_docstring_examples():
    result = doctest.testmod(wpt)
    assert result.attempted >= 6 and result.failed == 0


def test_likelihood_prefers_pairs_that_always_cooccur():
    # "x" and "##z" are rare but always adjacent: score 3/(3*3) beats ("a", "##b") 50/(50*50)
    wc = {"ab": 50, "xz": 3, "ba": 10}
    v = train_wordpiece(wc, vocab_size=8)  # a b x z + ##b ##z ##a + one merge
    assert max(v, key=v.get) == "xz"
    v = train_wordpiece(wc, vocab_size=8, criterion="frequency")
    assert max(v, key=v.get) == "ab"


def test_merged_counts_are_updated_so_later_scores_rise():
    # after "##g ##s" the remaining "##g" is rarer, so pairs with "##g" score higher than before
    wc = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    ours = train_wordpiece(wc, vocab_size=16)
    assert ours == reference_wordpiece(wc, 16)


@pytest.mark.parametrize("min_frequency", [0, 2])
def test_likelihood_equals_recount_reference_on_real_text(min_frequency):
    wc = whitespace_counts(LEE.read_text(encoding="utf-8").splitlines()[:20])
    size = 2 * len({c for w in wc for c in w}) + 150
    assert train_wordpiece(wc, vocab_size=size, min_frequency=min_frequency) == reference_wordpiece(
        wc, size, min_frequency
    )


def test_specials_first_and_errors():
    v = train_wordpiece({"ab": 2}, vocab_size=6, special_tokens=["[PAD]", "[UNK]"])
    assert list(v)[:2] == ["[PAD]", "[UNK]"] and "ab" in v
    with pytest.raises(ValueError, match="criterion 'bogus'"):
        train_wordpiece({"ab": 2}, criterion="bogus")
    with pytest.raises(ValueError, match="empty corpus"):
        train_wordpiece({}, vocab_size=10)
    with pytest.raises(ValueError, match="vocab_size=2 is smaller"):
        train_wordpiece({"abc": 2}, vocab_size=2)


def test_frequency_mode_matches_tokenizers_wordpiece_trainer():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    kw = dict(vocab_size=3000, min_frequency=2, special_tokens=["[PAD]", "[UNK]", "[CLS]"])
    tok.train([str(LEE)], trainers.WordPieceTrainer(show_progress=False, **kw))
    theirs = json.loads(tok.to_str())["model"]["vocab"]
    ours = train_wordpiece(whitespace_counts(LEE.open(encoding="utf-8")), criterion="frequency", **kw)
    assert len(ours) == len(theirs) == 3000
    assert list(ours)[:3] == ["[PAD]", "[UNK]", "[CLS]"]
    # same alphabet; the learned tokens agree up to ties, which tokenizers breaks by the
    # hash-map order of its "##" symbols (random per process)
    n_alpha = sum(1 for t in theirs if len(t.removeprefix("##")) == 1)
    assert {t for t in ours if len(t.removeprefix("##")) == 1} == {t for t in theirs if len(t.removeprefix("##")) == 1}
    assert len(set(ours) ^ set(theirs)) <= 0.02 * len(theirs)

    def first(vocab):
        return sorted(vocab, key=vocab.get)[3 + n_alpha :][:30]

    assert first(ours) == first(theirs)


def test_heap_compaction_does_not_change_the_result(monkeypatch):
    wc = whitespace_counts(LEE.read_text(encoding="utf-8").splitlines()[:20])
    size = 2 * len({c for w in wc for c in w}) + 150
    expected = train_wordpiece(wc, vocab_size=size, min_frequency=2)
    monkeypatch.setattr(wpt, "COMPACT_SLACK", 0)  # rebuild the heap as often as possible
    assert train_wordpiece(wc, vocab_size=size, min_frequency=2) == expected


# one bound setting in the fast tier, the loosest and tightest with the whole jobs (each trains Lee's corpus twice)
@pytest.mark.parametrize(
    "few_pairs, rise, top_kept",
    [
        pytest.param(0, 100.0, 1, marks=pytest.mark.integration),
        (0, 1.5, 2),
        pytest.param(3, 1.01, 8, marks=pytest.mark.integration),
    ],
)
def test_deferred_requeueing_gives_the_same_merges(monkeypatch, few_pairs, rise, top_kept):
    """The lazy path (tracked symbols whose pairs wait to be re-queued) forced on every symbol,
    with loose and tight bounds: the vocabulary is the recount reference's, and the default's."""
    wc = whitespace_counts(LEE.read_text(encoding="utf-8").splitlines()[:60])
    size = 2 * len({c for w in wc for c in w}) + 400
    default = train_wordpiece(wc, vocab_size=size, min_frequency=2)
    monkeypatch.setattr(wpt, "FEW_PAIRS", few_pairs)
    monkeypatch.setattr(wpt, "RISE", rise)
    monkeypatch.setattr(wpt, "TOP_KEPT", top_kept)
    lazy = train_wordpiece(wc, vocab_size=size, min_frequency=2)
    assert lazy == default == reference_wordpiece(wc, size, min_frequency=2)
    big = whitespace_counts(LEE.read_text(encoding="utf-8").splitlines())
    assert train_wordpiece(big, vocab_size=3000, min_frequency=2) == _default_train(monkeypatch, big, 3000)


def _default_train(monkeypatch, wc, size):
    monkeypatch.undo()
    return train_wordpiece(wc, vocab_size=size, min_frequency=2)
