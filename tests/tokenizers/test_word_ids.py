"""Encoding.word_ids for every tokenizer the project builds (train(family=...): BERT's WordPiece,
RoBERTa's byte-level BPE, ALBERT's and XLNet's Unigram behind Metaspace; and train(algorithm=...)
for character BPE and plain Unigram), on the fast encoder and on the general path, against
Hugging Face `tokenizers` loading the same tokenizer.json.

Whole-word masking reads word starts from word_ids, so they must be `tokenizers`' own: a token
starts a word when its word id differs from the token before it.
"""

from __future__ import annotations

import pytest
import tokenizers

from bertology.tokenizers import Tokenizer, train

FAMILIES = ("bert", "roberta", "albert", "xlnet")
ALGORITHMS = ("bpe", "unigram")  # (without a family: character BPE, SentencePiece-style Unigram)
KINDS = FAMILIES + ALGORITHMS

TEXTS = [
    "The quick brown fox, it's said, jumped over 3.14 lazy dogs!",
    "naïve café Ångström",
    "Tabs\tand  double  spaces ",
    "  leading and trailing  ",
    "don't I'll you're",
    "中文字 日本語",
    "emoji 🤗👍🏽 ok",
    "",
    "a",
    "unbelievably unrecognisable words",
]


@pytest.fixture(scope="module")
def family_files(enwiki_lines, tmp_path_factory):
    """A small tokenizer of each family (and of each algorithm without one), trained by our
    train() and saved as tokenizer.json."""
    out = {}
    for kind in KINDS:
        how = {"family": kind} if kind in FAMILIES else {"algorithm": kind}
        tok = train(lines=enwiki_lines[:1500], vocab_size=1200, min_frequency=1, show_progress=False, **how)
        out[kind] = tok.save(tmp_path_factory.mktemp(kind) / "tokenizer.json")
    return out


def _general(tok: Tokenizer) -> Tokenizer:
    tok.fast = None
    return tok


def _word_starts(word_ids) -> list[bool]:
    return [w is not None and (i == 0 or word_ids[i - 1] != w) for i, w in enumerate(word_ids)]


@pytest.mark.parametrize("family", KINDS)
@pytest.mark.parametrize("path", ["fast", "general"])
def test_word_ids_equal_tokenizers(family, path, family_files, enwiki_lines, russian_lines):
    file = family_files[family]
    ours, ref = Tokenizer.load(file), tokenizers.Tokenizer.from_file(str(file))
    if path == "general":
        _general(ours)
    texts = TEXTS + enwiki_lines[1500:1700] + russian_lines[:100]
    batch = ours.encode_batch(texts)
    for text, b, r in zip(texts, batch, ref.encode_batch(texts)):
        assert b.tokens == r.tokens, text
        assert b.word_ids == r.word_ids, f"{family} {path}: word_ids differ on {text!r:.80}"
        assert ours.encode(text).word_ids == ref.encode(text).word_ids  # (a batch pads to its longest)
        assert _word_starts(b.word_ids) == _word_starts(r.word_ids)
    pairs = list(zip(texts[:60], texts[60:120]))
    for (a, b), mine, r in zip(
        pairs, ours.encode_batch([a for a, _ in pairs], [b for _, b in pairs]), ref.encode_batch(pairs)
    ):
        assert mine.word_ids == r.word_ids, f"{family} {path}: pair word_ids differ on {a!r:.60}"


@pytest.mark.parametrize("family", KINDS)
def test_word_ids_with_added_tokens(family, family_files):
    """An added token is a word of its own, and the words after it are numbered on."""
    file = family_files[family]
    ours, ref = Tokenizer.load(file), tokenizers.Tokenizer.from_file(str(file))
    for t in (ours, ref):
        t.add_tokens(["hello world", "zzq"])
    general = _general(Tokenizer.load(file))
    general.add_tokens(["hello world", "zzq"])
    for text in ["say hello world now", "azzqb zzq c", "hello world", "x hello worldzzq y"]:
        r = ref.encode(text).word_ids
        assert ours.encode(text).word_ids == r, f"{family}: {text!r}"
        assert ours.encode_batch([text])[0].word_ids == r
        assert general.encode(text).word_ids == r
