"""The training step's own kernels against torch's: blockwise cross-entropy, 16-bit-draw dropout, and
attention's dropout path."""

import math

import pytest
import torch
import torch.nn.functional as F

from bertology.nn import Dropout, MultiHeadSelfAttention, Padding, set_dropout
from bertology.nn import cross_entropy as blockwise
from bertology.nn.dropout import dropout, keep_scale


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("block", [1 << 21, 3 * 50])  # one block; several blocks of 3 rows and a short last one
def test_cross_entropy_matches_torch(dtype, block, monkeypatch):
    monkeypatch.setattr(blockwise, "_BLOCK", block)
    torch.manual_seed(0)
    logits = (torch.randn(11, 50) * 4).to(dtype)
    labels = torch.randint(0, 50, (11,))
    labels[[2, 7]] = blockwise.IGNORE_INDEX
    ours = logits.clone().requires_grad_()
    theirs = logits.clone().requires_grad_()
    loss = blockwise.cross_entropy(ours, labels)
    expected = F.cross_entropy(theirs.float(), labels, ignore_index=blockwise.IGNORE_INDEX)
    (loss * 3).backward()
    (expected * 3).backward()
    torch.testing.assert_close(loss, expected, atol=1e-6, rtol=1e-6)
    assert ours.grad.dtype == dtype
    torch.testing.assert_close(ours.grad, theirs.grad, atol=1e-6 if dtype == torch.float32 else 4e-3, rtol=0)
    assert ours.grad[2].abs().max() == 0
    assert torch.equal(logits, ours.detach())  # the logits are read, never written


def test_cross_entropy_with_every_row_ignored_is_nan_like_torch():
    logits = torch.randn(3, 5, requires_grad=True)
    assert math.isnan(blockwise.cross_entropy(logits, torch.full((3,), blockwise.IGNORE_INDEX)).item())


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_rate_and_scale(p):
    torch.manual_seed(0)
    x = torch.ones(1 << 20)
    y = dropout(x, p)
    dropped = (y == 0).double().mean().item()
    assert abs(dropped - p) < 5 * math.sqrt(p * (1 - p) / x.numel())  # five standard errors
    kept = y[y != 0]
    torch.testing.assert_close(kept, torch.full_like(kept, 65536 / (65536 - round(p * 65536))))
    assert abs(y.double().mean().item() - 1) < 5 * math.sqrt(p / (1 - p) / x.numel())  # E[y] = x


def test_dropout_gradient_is_the_same_mask_and_the_seed_decides_it():
    x = torch.randn(4, 7, 9, dtype=torch.bfloat16, requires_grad=True)
    torch.manual_seed(1)
    y = dropout(x, 0.3)
    y.backward(torch.ones_like(y))
    torch.manual_seed(1)
    mask = keep_scale(x.shape, 0.3, x.dtype)
    assert torch.equal(y, x.detach() * mask)
    assert torch.equal(x.grad, mask)


def test_dropout_module_is_identity_in_eval_and_obeys_set_dropout():
    module = Dropout(0.5)
    x = torch.randn(100)
    assert torch.equal(module.eval()(x), x)
    module.train()
    assert (module(x) == 0).any()
    set_dropout(module, 0.0)
    assert torch.equal(module(x), x)
    with pytest.raises(ValueError, match="dropout probability"):
        keep_scale(torch.Size([3]), 1.0, torch.float32)


def test_attention_dropout_drops_probabilities_and_matches_the_written_out_product():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(32, 4, dropout=0.25).train()
    x = torch.randn(3, 6, 32)
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4])
    padding = Padding.build(mask, 3, 6, pack=False)
    torch.manual_seed(5)
    y, probs = attn(x, padding)
    assert probs is None
    torch.manual_seed(5)
    q, k, v = attn.qkv(x).view(3, 6, 3, 4, 8).permute(2, 0, 3, 1, 4).unbind(0)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(8)).masked_fill(~padding.key_mask, -math.inf)
    dropped = scores.softmax(-1) * keep_scale(torch.Size([3, 4, 6, 6]), 0.25, torch.float32)
    expected = attn.out((dropped @ v).transpose(1, 2).reshape(3, 6, 32))
    torch.testing.assert_close(y, expected, atol=1e-5, rtol=1e-5)
    attn.eval()
    torch.testing.assert_close(attn(x, padding)[0], attn(x, padding, need_weights=True)[0], atol=1e-6, rtol=0)
