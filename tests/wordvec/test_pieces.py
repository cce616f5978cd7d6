"""Word vectors over a tokenizer's pieces (`wordvec train --tokenizer`): the sentences are the
tokenizer's own encodings, and every vector is keyed by a vocabulary piece."""

import lzma
from pathlib import Path

import pytest

from bertology.cli import main
from bertology.tokenizers import Tokenizer
from bertology.tokenizers.training import train as train_tokenizer
from bertology.wordvec.corpus import PieceSentences
from bertology.wordvec.options import TrainOptions
from bertology.wordvec.train import train
from bertology.wordvec.vectors import KeyedVectors

DESCRIPTIONS = Path(__file__).resolve().parents[2] / "data" / "debian-descriptions" / "descriptions.txt.xz"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The first 3,000 lines of the Debian descriptions, blank lines included."""
    with lzma.open(DESCRIPTIONS, "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(3000)]
    path = tmp_path_factory.mktemp("pieces") / "descriptions.txt"
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tokenizer_path(corpus, tmp_path_factory):
    tok = train_tokenizer([corpus], family="bert", vocab_size=1000, show_progress=False, criterion="frequency")
    return tok.save(tmp_path_factory.mktemp("tok") / "tokenizer.json")


def test_piece_sentences_are_the_tokenizers_encodings_and_replay(corpus, tokenizer_path):
    tok = Tokenizer.load(tokenizer_path)
    lines = [line for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    expected = [tok.encode(line, add_special_tokens=False).tokens for line in lines]
    sentences = PieceSentences([corpus], tok)
    first = list(sentences)
    assert first == expected and "[CLS]" not in {p for s in first for p in s}
    assert any(p.startswith("##") for s in first for p in s)  # pieces, not whitespace words
    assert list(sentences) == expected  # the second pass replays the ids of the first


def test_pieces_are_tokenized_into_the_shared_token_store(corpus, tokenizer_path, tmp_path, monkeypatch):
    """With $BERTOLOGY_TOKEN_CACHE set, the pieces come from (and stay in) the store pretraining reads:
    a second reader, or a pretraining run with the same tokenizer, tokenizes nothing again."""
    from bertology.data.tokenstore import CACHE_ENV, FileTokens, build_token_stores, sentence_ids, tokenizer_hash

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    tok = Tokenizer.load(tokenizer_path)
    first = list(PieceSentences([corpus], tok, sentence_ids=sentence_ids))
    assert first == list(PieceSentences([corpus], tok))  # the same pieces as encoding each line here
    (kept,) = (tmp_path / "cache" / f"tokens-{tokenizer_hash(tok)}").iterdir()
    (store,) = build_token_stores([str(corpus)], tok, tmp_path / "cache", "lines")
    assert store.dir == kept and isinstance(store, FileTokens)
    assert sum(map(len, first)) == store.num_tokens


def test_a_tokenizer_that_pads_and_truncates_reads_whole_sentences_from_the_same_store(
    corpus, tokenizer_path, tmp_path, monkeypatch
):
    """A tokenizer.json may carry padding and truncation (XLNet's pads on the left): word2vec's pieces and
    pretraining's corpus read one store of whole sentences, keyed by the tokenizer without them."""
    from bertology.data.tokenized import tokenize_corpus
    from bertology.data.tokenstore import CACHE_ENV, sentence_ids, tokenizer_hash

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    plain = Tokenizer.load(tokenizer_path)
    tok = Tokenizer.load(tokenizer_path)
    tok.enable_padding(direction="left", pad_id=0, pad_token="[PAD]")
    tok.enable_truncation(4)
    pieces = list(PieceSentences([corpus], tok, sentence_ids=sentence_ids))
    assert pieces == list(PieceSentences([corpus], plain)) and max(map(len, pieces)) > 4
    stores = list((tmp_path / "cache").glob("tokens-*"))
    tokenize_corpus([str(corpus)], tok, tmp_path / "unused")
    assert stores == [tmp_path / "cache" / f"tokens-{tokenizer_hash(plain)}"]
    assert list((tmp_path / "cache").glob("tokens-*")) == stores
    assert tok.padding is not None and tok.truncation is not None  # the caller's tokenizer is left as it was


def test_every_vector_is_keyed_by_a_piece(corpus, tokenizer_path):
    tok = Tokenizer.load(tokenizer_path)
    options = TrainOptions(
        corpus=[str(corpus)],
        tokenizer=str(tokenizer_path),
        algorithm="skipgram",
        vector_size=16,
        min_count=1,
        epochs=1,
        workers=1,
        quiet=True,
    )
    vectors, summary = train(options)
    seen = {p for s in PieceSentences([corpus], tok) for p in s}
    assert set(vectors.index_to_key) == seen  # min_count 1: every piece of the corpus, nothing else
    assert all(tok.token_to_id(k) is not None for k in vectors.index_to_key)
    assert summary["tokenizer"] == str(tokenizer_path) and summary["corpus_words"] == sum(
        len(s) for s in PieceSentences([corpus], tok)
    )


def test_cli_writes_piece_vectors(corpus, tokenizer_path, tmp_path, capsys):
    out = tmp_path / "pieces.txt"
    assert (
        main(
            [
                "wordvec",
                "train",
                "--tokenizer",
                str(tokenizer_path),
                "--vector-size",
                "12",
                "--epochs",
                "1",
                "--workers",
                "1",
                "--out",
                str(out),
                str(corpus),
            ]
        )
        == 0
    )
    assert "pieces in the vocabulary" in capsys.readouterr().out
    kv = KeyedVectors.load(out)
    vocab = Tokenizer.load(tokenizer_path).get_vocab()
    assert kv.vector_size == 12 and len(kv) > 100 and all(k in vocab for k in kv.index_to_key)


def test_lowercase_is_the_tokenizers_business(corpus, tokenizer_path, tmp_path, capsys):
    out = tmp_path / "v.txt"
    assert (
        main(["wordvec", "train", "--tokenizer", str(tokenizer_path), "--lowercase", "--out", str(out), str(corpus)])
        == 2
    )
    assert "--lowercase with --tokenizer" in capsys.readouterr().err and not out.exists()


def test_a_missing_tokenizer_is_named(corpus, tmp_path, capsys):
    out = tmp_path / "v.txt"
    assert (
        main(["wordvec", "train", "--tokenizer", str(tmp_path / "no-tokenizer.json"), "--out", str(out), str(corpus)])
        == 2
    )
    assert "no-tokenizer.json: no such file" in capsys.readouterr().err and not out.exists()
