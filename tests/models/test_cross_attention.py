"""Cross-attention (queries from one sequence, keys and values from a padded source) against
torch.nn.MultiheadAttention, its two paths against each other, and the seed's toy example drawn."""

from __future__ import annotations

import pytest
import torch

from bertology.nn import MultiHeadCrossAttention, set_dropout
from bertology.nn.attention import explicit_attention
from bertology.viz.attention import cross_attention_weights, plot_attention


def reference(ours: MultiHeadCrossAttention, source_size: int) -> torch.nn.MultiheadAttention:
    """torch's module with our weights: separate q, k, v projections when the source's size differs."""
    H = ours.q.out_features
    mha = torch.nn.MultiheadAttention(H, ours.num_heads, batch_first=True, kdim=source_size, vdim=source_size).eval()
    k_w, v_w = ours.kv.weight.split(H)
    with torch.no_grad():
        if mha._qkv_same_embed_dim:
            mha.in_proj_weight.copy_(torch.cat([ours.q.weight, k_w, v_w]))
        else:
            mha.q_proj_weight.copy_(ours.q.weight)
            mha.k_proj_weight.copy_(k_w)
            mha.v_proj_weight.copy_(v_w)
        mha.in_proj_bias.copy_(torch.cat([ours.q.bias, ours.kv.bias]))
        mha.out_proj.weight.copy_(ours.out.weight)
        mha.out_proj.bias.copy_(ours.out.bias)
    return mha


@pytest.mark.parametrize("source_size", [32, 24])
@pytest.mark.parametrize("need_weights", [False, True])
def test_matches_torch_multihead_attention_with_a_padded_source(source_size, need_weights):
    torch.manual_seed(0)
    ours = MultiHeadCrossAttention(32, 4, source_size=source_size).eval()
    mha = reference(ours, source_size)
    x, source = torch.randn(3, 5, 32), torch.randn(3, 9, source_size)  # T = 5 queries, S = 9 source positions
    lengths = torch.tensor([9, 4, 1])
    mask = torch.arange(9)[None, :] < lengths[:, None]  # (B, S) True = real
    y, probs = ours(x, source, mask, need_weights=need_weights)
    expected, expected_probs = mha(
        x, source, source, key_padding_mask=~mask, need_weights=True, average_attn_weights=False
    )
    torch.testing.assert_close(y, expected, atol=1e-5, rtol=1e-4)
    if need_weights:
        torch.testing.assert_close(probs, expected_probs, atol=1e-6, rtol=1e-5)
        assert probs[1, :, :, 4:].abs().max() == 0 and probs[2, :, :, 1:].abs().max() == 0
        torch.testing.assert_close(probs.sum(-1), torch.ones(3, 4, 5))
    else:
        assert probs is None


def test_padding_of_the_source_changes_nothing():
    torch.manual_seed(1)
    attn = MultiHeadCrossAttention(16, 2).eval()
    x, source = torch.randn(1, 3, 16), torch.randn(1, 4, 16)
    alone, _ = attn(x, source)
    padded = torch.cat([source, torch.randn(1, 6, 16) * 100], 1)  # 6 junk positions, masked out
    mask = torch.tensor([[1] * 4 + [0] * 6])
    for need_weights in (False, True):
        torch.testing.assert_close(attn(x, padded, mask, need_weights)[0], alone, atol=1e-5, rtol=1e-5)


def test_bad_source_masks_are_named():
    attn = MultiHeadCrossAttention(8, 2)
    x, source = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match="no real position"):
        attn(x, source, torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0]]))
    with pytest.raises(ValueError, match="expected"):
        attn(x, source, torch.ones(2, 5))
    with pytest.raises(ValueError, match="2 query sequences but 1 sources"):
        attn(x, source[:1])


def test_dropout_is_set_like_self_attention_and_trains():
    attn = set_dropout(torch.nn.Sequential(MultiHeadCrossAttention(8, 2, dropout=0.1)), 0.0)[0]
    assert attn.dropout == 0.0
    x, source = torch.randn(2, 3, 8, requires_grad=True), torch.randn(2, 4, 8)
    attn(x, source)[0].sum().backward()
    assert x.grad is not None and attn.kv.weight.grad.abs().sum() > 0


def test_the_seed_formula_on_a_toy_source_and_its_picture(tmp_path):
    """Attention(query, source) = Σᵢ similarity(query, keyᵢ) · valueᵢ: a query about "cat" over a
    three-word source whose keys are one-hot, so the weight lands where the key matches."""
    source = ["le", "chat", "noir"]
    keys = torch.eye(3) * 4  # (S, D): one direction per word
    values = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    query = keys[1:2] * 1.0  # (T = 1, D): most like "chat"
    out, weights = explicit_attention(query[None, None], keys[None, None], values[None, None], None)
    w = weights[0, 0, 0]
    assert int(w.argmax()) == 1 and w[1] > 0.99
    similarity = torch.softmax(query @ keys.T / keys.shape[1] ** 0.5, -1)
    torch.testing.assert_close(out[0, 0], similarity @ values)
    fig = plot_attention(cross_attention_weights(["cat"], source, weights[0]))
    fig.savefig(tmp_path / "cross.png")
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == source and (tmp_path / "cross.png").stat().st_size > 0
