"""The CPU inference path (nn/fused.py: oneDNN linear layers with fused epilogues; attention per
sequence over packed rows) computes what the plain modules compute, and stays out of the way of
training, autocast, traces and in-place weight changes; `load(quantize="int8")` quantizes block by
block as the weights come in and gives what quantizing the loaded fp32 model gives."""

from contextlib import nullcontext

import pytest
import torch
from torch import nn

import bertology
from bertology.models import FAMILIES, task_class
from bertology.nn import Padding, activation, fused
from bertology.nn.attention import varlen_attention

pytestmark = pytest.mark.skipif(not fused.available(), reason="needs PyTorch built with oneDNN")
ODD = dict(vocab_size=99, hidden_size=48, num_attention_heads=3, intermediate_size=37, num_hidden_layers=2)


def lm(family: str) -> nn.Module:
    torch.manual_seed(0)
    head = "LMHeadModel" if family == "xlnet" else "ForMaskedLM"
    return task_class(family, head)(FAMILIES[family].preset("tiny", **ODD)).eval()


@pytest.fixture
def kernel(monkeypatch):
    """oneDNN's kernel (the default) or PyTorch's, for every shape."""

    def force(onednn: bool):
        monkeypatch.setattr(fused, "ONEDNN", onednn)

    return force


@pytest.mark.parametrize("act", [None, "gelu", "gelu_new", "relu", "silu", "quick_gelu"])
@pytest.mark.parametrize("onednn", [True, False])
@pytest.mark.parametrize("residual", [False, True])
def test_fused_linear_equals_the_modules_one_after_the_other(kernel, act, onednn, residual):
    kernel(onednn)
    torch.manual_seed(0)
    linear, x = nn.Linear(24, 40), torch.randn(3, 7, 24)
    a = activation(act) if act else None
    r = torch.randn(3, 7, 40) if residual else None
    expected = linear(x)
    expected = a(expected) if a else expected
    expected = expected + r if residual else expected
    with torch.inference_mode():
        got = fused.linear(linear, x, a, residual=r)
    assert got.shape == expected.shape and torch.allclose(got, expected, atol=1e-5)


def test_a_weight_changed_in_place_is_packed_again(kernel):
    kernel(True)
    torch.manual_seed(0)
    linear, x = nn.Linear(8, 8), torch.randn(4, 8)
    with torch.inference_mode():
        before = fused.linear(linear, x)
    with torch.no_grad():
        linear.weight.mul_(2)
    with torch.inference_mode():
        after = fused.linear(linear, x)
    assert torch.allclose(after, linear(x).detach(), atol=1e-5) and not torch.allclose(before, after)


def test_the_fused_path_stays_out_of_training_autocast_traces_and_other_dtypes():
    linear, x = nn.Linear(8, 8), torch.randn(4, 8)
    assert not fused.applies(x, linear)  # an autograd graph to record
    with torch.inference_mode():
        assert fused.applies(x, linear)
        assert not fused.applies(x.double(), linear.double())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert not fused.applies(x, linear)
        assert not fused.applies(x, fused.set_enabled(nn.Sequential(linear), False)[0])

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(8, 8)

        def forward(self, t):
            return fused.linear(self.linear, t)

    with torch.no_grad():
        traced = torch.jit.trace(Wrapped(), x)
    assert "mkldnn" not in str(traced.graph) and "linear" in str(traced.graph)


def batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 99, (4, 13), generator=g)
    mask = (torch.arange(13)[None] < torch.tensor([[13], [3], [9], [1]])).long()
    return ids, mask


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("onednn", [True, False])
def test_inference_path_equals_the_plain_path(kernel, family, onednn):
    """Every family's MLM model: fused linear layers and per-sequence attention (inference mode) against
    the same model with both off, at fp32 tolerance, padded positions included."""
    kernel(onednn)
    model = lm(family)
    ids, mask = batch()
    if hasattr(model.backbone, "varlen_attention"):
        model.backbone.varlen_attention = True
    with torch.inference_mode():
        fast = model(input_ids=ids, attention_mask=mask).logits
        fused.set_enabled(model, False)
        if hasattr(model.backbone, "varlen_attention"):
            model.backbone.varlen_attention = False
        plain = model(input_ids=ids, attention_mask=mask).logits
    assert torch.allclose(fast, plain, atol=1e-4)


def test_packed_attention_on_the_cpu_in_inference_and_where_asked_and_carries_its_bounds():
    mask = torch.tensor([[1] * 7 + [0] * 3, [1] * 2 + [0] * 8])
    assert Padding.build(mask, 2, 10, pack=True).offsets is None  # training: the padded call, one backward kernel
    with torch.no_grad():
        p = Padding.build(mask, 2, 10, pack=True)
        assert Padding.build(mask, 2, 10, pack=True, varlen=False).offsets is None
    assert p.offsets.tolist() == [0, 7, 9, 64] and p.bounds == [0, 7, 9, 64]
    assert Padding.build(mask, 2, 10, pack=True, varlen=True).bounds == [0, 7, 9, 64]


def test_per_sequence_attention_gives_each_sequence_its_own_softmax():
    torch.manual_seed(0)
    q, k, v = (torch.randn(10, 2, 4) for _ in range(3))
    out = varlen_attention(q, k, v, torch.tensor([0, 3, 10], dtype=torch.int32), 7)
    for a, b in ((0, 3), (3, 10)):
        one = [t[a:b].transpose(0, 1) for t in (q, k, v)]
        expected = torch.softmax(one[0] @ one[1].transpose(-1, -2) / 2, -1) @ one[2]
        assert torch.allclose(out[a:b], expected.transpose(0, 1), atol=1e-5)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_int8_load_quantizes_as_it_loads_and_equals_quantizing_after(tmp_path, family):
    """load(quantize="int8") builds the model without memory and quantizes each block once its weights are
    in: the same int8 model as quantizing the loaded fp32 one, and the MLM decoder still tied to the embeddings."""
    model = lm(family)
    for p in model.parameters():
        p.data.add_(torch.randn_like(p) * 0.05)
    model.save(tmp_path)
    ids, mask = batch()
    with pytest.warns(RuntimeWarning, match="not linear layers") if family == "xlnet" else nullcontext():
        after = bertology.load(tmp_path)
        after.quantize_int8()
        said = []
        loaded = bertology.load(tmp_path, quantize="int8", say=said.append)
    assert said and said[0].startswith("int8:")
    with torch.inference_mode():
        a = after(input_ids=ids, attention_mask=mask).logits
        b = loaded(input_ids=ids, attention_mask=mask).logits
    assert torch.equal(a, b)
    assert not any(
        type(m) is nn.Linear for b in loaded.modules() if getattr(type(b), "compile_unit", False) for m in b.modules()
    )
    tied = {(n, id(p)) for n, p in after.named_parameters(remove_duplicate=False)}
    assert {n for n, p in loaded.named_parameters(remove_duplicate=False)} == {n for n, _ in tied}
    ids_of = {}
    for n, p in loaded.named_parameters(remove_duplicate=False):
        ids_of.setdefault(id(p), set()).add(n)
    expected = {}
    for n, i in tied:
        expected.setdefault(i, set()).add(n)
    assert sorted(map(sorted, ids_of.values())) == sorted(map(sorted, expected.values()))  # the same sharing


def test_a_fused_optimizer_step_repacks_the_weight(kernel):
    """A fused AdamW step writes the weight without bumping its version: the packed copy must not go stale."""
    kernel(True)
    torch.manual_seed(0)
    linear, x = nn.Linear(8, 8), torch.randn(4, 8)
    with torch.inference_mode():
        fused.linear(linear, x)  # packed now
    optimizer = torch.optim.AdamW(linear.parameters(), lr=0.1, fused=True)
    linear(x).sum().backward()
    version = linear.weight._version
    optimizer.step()
    assert linear.weight._version == version  # why the version alone cannot tell
    with torch.inference_mode():
        assert torch.allclose(fused.linear(linear, x), linear(x), atol=1e-5)
