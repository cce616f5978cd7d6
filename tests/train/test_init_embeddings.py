"""`pretrain --init-embeddings`: word vectors keyed by pieces copied into the token embedding
(as they are, or scaled to the init's σ), pieces without a vector counted, bad files rejected before any write."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import bertology
from bertology.cli import main
from bertology.models import get_family, task_class
from bertology.models.init_embeddings import init_token_embeddings, read_init_vectors, token_embedding
from bertology.tokenizers.training import train as train_tokenizer
from bertology.wordvec.vectors import KeyedVectors

ROOT = Path(__file__).resolve().parents[2]


class Vocab:
    """The two look-ups init_token_embeddings asks of a tokenizer."""

    def __init__(self, pieces):
        self.pieces = pieces

    def token_to_id(self, piece):
        return self.pieces.index(piece) if piece in self.pieces else None

    def id_to_token(self, i):
        return self.pieces[i]


PIECES = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "dog", "run"]


def model(family="bert", **overrides):
    config = get_family(family).preset("tiny", vocab_size=len(PIECES), pad_token_id=0, **overrides)
    torch.manual_seed(0)
    return task_class(family, "ForMaskedLM")(config)


def vectors(size, keys=("the", "cat", "##s", "dog", "zebra"), seed=0):
    rng = np.random.default_rng(seed)
    return KeyedVectors(list(keys), rng.normal(0, 0.4, (len(keys), size)).astype(np.float32))


def test_rows_copied_after_scaling_to_the_init_std_the_rest_untouched():
    m = model()
    before = token_embedding(m).weight.detach().clone()
    kv = vectors(128)
    result = init_token_embeddings(m, Vocab(PIECES), kv, "v.txt", rescale=True)
    after = token_embedding(m).weight.detach()
    rows = [PIECES.index(p) for p in ("the", "cat", "##s", "dog")]
    taken = kv.vectors[:4].astype(np.float64)
    scale = 0.02 / taken.std()  # the config's initializer_range over the copied values' std
    assert result.scale == pytest.approx(scale)
    assert torch.allclose(after[rows], torch.from_numpy(taken * scale).float(), atol=1e-7)
    assert after[rows].double().std(correction=0).item() == pytest.approx(0.02, rel=1e-4)
    others = [i for i in range(len(PIECES)) if i not in rows]
    assert torch.equal(after[others], before[others])  # the padding row included: never written
    assert result.copied == 4 and result.missing == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "run"]
    assert result.unused == 1 and result.missing_fraction == pytest.approx(0.6)
    assert m.mlm.decoder.weight is token_embedding(m).weight  # the tied MLM decoder starts from them too


def test_by_default_the_vectors_are_copied_as_they_are():
    m = model()
    kv = vectors(128)
    assert init_token_embeddings(m, Vocab(PIECES), kv).scale == 1.0
    assert torch.equal(token_embedding(m).weight.detach()[[5, 6, 7, 8]], torch.from_numpy(kv.vectors[:4]))


def test_many_missing_pieces_warn_few_do_not():
    with pytest.warns(UserWarning, match="9 of 10 pieces .* have no vector"):
        init_token_embeddings(model(), Vocab(PIECES), vectors(128, keys=("the",)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init_token_embeddings(model(), Vocab(PIECES), vectors(128, keys=PIECES[1:]))


def test_albert_wants_embedding_size_not_hidden(tmp_path):
    config = get_family("albert").preset("tiny", vocab_size=len(PIECES), pad_token_id=0, embedding_size=64)
    path = tmp_path / "v.txt"
    vectors(config.hidden_size).save(path)
    with pytest.raises(
        ValueError,
        match=r"v.txt: its vectors have 128 dimensions but the albert token embedding "
        r"has 64 \(embedding_size\)",
    ):
        read_init_vectors(path, config)
    vectors(64).save(path)
    assert read_init_vectors(path, config).vector_size == 64
    result = init_token_embeddings(model("albert", embedding_size=64), Vocab(PIECES), read_init_vectors(path, config))
    assert result.copied == 4


def test_unknown_file_rejected(tmp_path):
    config = get_family("bert").preset("tiny")
    with pytest.raises(FileNotFoundError, match="nothere.txt: no such file"):
        read_init_vectors(tmp_path / "nothere.txt", config)


# -- through `bertology pretrain` ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("init")
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    corpus = d / "wiki-head.txt"
    corpus.write_text(text[: text.index("\n\n", 150_000) + 1], encoding="utf-8")
    tok = train_tokenizer([corpus], family="bert", vocab_size=600, show_progress=False, criterion="frequency")
    tok_path = tok.save(d / "tokenizer.json")
    pieces = [p for p, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])][5:500]  # no specials
    kv = vectors(128, keys=pieces, seed=1)
    kv.save(d / "pieces.txt")
    vectors(64, keys=pieces).save(d / "narrow.txt")
    return {"corpus": corpus, "tokenizer": tok_path, "vectors": d / "pieces.txt", "narrow": d / "narrow.txt", "kv": kv}


def _args(setup, out, *extra):
    return [
        "pretrain",
        "--family",
        "bert",
        "--preset",
        "tiny",
        "--corpus",
        str(setup["corpus"]),
        "--out",
        str(out),
        "--tokenizer",
        str(setup["tokenizer"]),
        "--steps",
        "1",
        "--batch-size",
        "8",
        "--max-length",
        "32",
        "--warmup",
        "0",
        "--lr",
        "1e-9",
        "--heldout",
        "3",
        "--dupe-factor",
        "1",
        "--quiet",
        *extra,
    ]


@pytest.mark.slow
def test_pretrain_starts_from_the_vectors(setup, tmp_path):
    out = tmp_path / "run"
    assert main(_args(setup, out, "--init-embeddings", str(setup["vectors"]))) == 0
    summary = json.loads((out / "summary.json").read_text())["init_embeddings"]
    assert summary["copied"] == 495 and summary["missing"] == 600 - 495 and summary["unused_vectors"] == 0
    kv, scale = setup["kv"], summary["scale"]
    assert scale == 1.0  # copied as they are (the default)
    tok = bertology.Tokenizer.load(out / "tokenizer.json")
    weight = token_embedding(bertology.load(out)).weight.detach()
    rows = [tok.token_to_id(p) for p in kv.index_to_key]
    # one optimizer step at lr 1e-9 moves no weight by more than ~1e-9
    assert torch.allclose(weight[rows], torch.from_numpy(kv.vectors.astype(np.float64) * scale).float(), atol=1e-6)


def test_pretrain_rejects_a_wrong_width_before_any_write(setup, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_args(setup, out, "--init-embeddings", str(setup["narrow"]))) == 2
    err = capsys.readouterr().err
    assert "narrow.txt: its vectors have 64 dimensions but the bert token embedding has 128 (hidden_size)" in err
    assert not out.exists()
    assert main(_args(setup, out, "--init-embeddings", str(tmp_path / "missing.txt"))) == 2
    assert "missing.txt: no such file" in capsys.readouterr().err and not out.exists()


@pytest.mark.slow
def test_resume_keeps_the_checkpoints_embedding(setup, tmp_path):
    out = tmp_path / "run"
    other = tmp_path / "other.txt"
    vectors(128, keys=setup["kv"].index_to_key, seed=7).save(other)
    assert main(_args(setup, out, "--steps", "2", "--stop-at", "1", "--init-embeddings", str(setup["vectors"]))) == 130
    assert main(_args(setup, out, "--steps", "2", "--init-embeddings", str(other), "--resume")) == 0
    assert json.loads((out / "summary.json").read_text())["init_embeddings"] is None
    tok = bertology.Tokenizer.load(out / "tokenizer.json")
    weight = token_embedding(bertology.load(out)).weight.detach()
    rows = [tok.token_to_id(p) for p in setup["kv"].index_to_key]
    assert torch.allclose(weight[rows], torch.from_numpy(setup["kv"].vectors), atol=1e-6)  # the first run's vectors


def test_xlnet_token_embedding_takes_the_vectors(tmp_path):
    """XLNet keeps its token embedding at backbone.word (no embeddings module); `pretrain` copies the
    vectors there before the permutation LM trains."""
    config = get_family("xlnet").preset("tiny", vocab_size=len(PIECES), pad_token_id=0)
    torch.manual_seed(0)
    m = task_class("xlnet", "LMHeadModel")(config)
    assert token_embedding(m) is m.backbone.word
    kv = vectors(config.hidden_size)
    path = tmp_path / "v.txt"
    kv.save(str(path))
    result = init_token_embeddings(m, Vocab(PIECES), read_init_vectors(path, config), path)
    assert result.copied == 4
    assert torch.equal(m.backbone.word.weight[PIECES.index("cat")], torch.from_numpy(kv.vectors[1]))
