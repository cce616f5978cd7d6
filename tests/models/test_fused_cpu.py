"""The CPU inference path (nn/fused.py: `FusedLinear`, oneDNN linear layers with fused epilogues, swapped
in at load time; attention per sequence over packed rows) computes what the plain modules compute, and
stays out of the way of training, autocast, traces, in-place weight changes and optimizer steps, with no
state outside the modules; `load(quantize="int8")` quantizes block by block as the weights come in and
gives what quantizing the loaded fp32 model gives."""

import copy
import importlib
import pickle
from contextlib import nullcontext

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import bertology
from bertology.models import FAMILIES, task_class
from bertology.nn import Padding, activation, fused
from bertology.nn.attention import varlen_attention
from bertology.nn.fused import FusedLinear

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
        got = fused.linear(FusedLinear.of(linear), x, a, residual=r)
    assert got.shape == expected.shape and torch.allclose(got, expected, atol=1e-5)


def test_a_weight_changed_in_place_is_packed_again(kernel):
    kernel(True)
    torch.manual_seed(0)
    linear, x = FusedLinear.of(nn.Linear(8, 8)), torch.randn(4, 8)
    with torch.inference_mode():
        before = linear(x)
    with torch.no_grad():
        linear.weight.mul_(2)
    with torch.inference_mode():
        after = linear(x)
    assert torch.allclose(after, F.linear(x, linear.weight, linear.bias).detach(), atol=1e-5)
    assert not torch.allclose(before, after)


def test_the_fused_path_stays_out_of_training_autocast_traces_and_other_dtypes():
    linear, x = FusedLinear.of(nn.Linear(8, 8)), torch.randn(4, 8)
    assert not linear.applies(x)  # an autograd graph to record
    with torch.inference_mode():
        assert linear.applies(x) and fused.takes(x, linear)
        assert not FusedLinear.of(nn.Linear(8, 8).double()).applies(x.double())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert not linear.applies(x)
        assert not fused.takes(x, nn.Linear(8, 8))  # a plain layer is never taken: only what load() swapped in

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = FusedLinear.of(nn.Linear(8, 8))

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
    assert fused.fuse(model) > 0
    with torch.inference_mode():
        fast = model(input_ids=ids, attention_mask=mask).logits
        assert fused.unfuse(model) > 0 and not fused.is_fused(model)
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


ORDERS = {
    "evaluate after the step": ("forward", "backward", "step", "evaluate"),
    "evaluate before the backward": ("forward", "evaluate", "backward", "step", "evaluate"),
    "evaluate before the step": ("forward", "backward", "evaluate", "step", "evaluate"),
}


@pytest.mark.parametrize("order", ORDERS.values(), ids=ORDERS.keys())
def test_a_fused_optimizer_step_is_seen_whenever_the_layer_evaluates(kernel, order):
    """A fused AdamW step writes the weight without bumping its version: the packed copy must not go stale,
    wherever evaluation falls in the step, and with no optimizer hook to say that a step happened."""
    kernel(True)
    torch.manual_seed(0)
    linear, x = FusedLinear.of(nn.Linear(8, 8)), torch.randn(4, 8)
    with torch.inference_mode():
        linear(x)  # packed now
    optimizer = torch.optim.AdamW(linear.parameters(), lr=0.1, fused=True)
    for _ in range(2):
        for op in order:
            if op == "forward":
                loss = linear(x).square().sum()
            elif op == "backward":
                loss.backward()
            elif op == "step":
                version = linear.weight._version
                optimizer.step()
                optimizer.zero_grad()
                assert linear.weight._version == version  # why the version alone cannot tell
            else:
                with torch.inference_mode():
                    got = linear(x)
    with torch.no_grad():
        assert torch.allclose(got, F.linear(x, linear.weight, linear.bias), atol=1e-5)
    fresh = FusedLinear.of(copy.deepcopy(nn.Linear(8, 8)).requires_grad_(False))
    fresh.load_state_dict(linear.state_dict())
    with torch.inference_mode():
        assert torch.equal(linear(x), fresh(x))  # a trained layer computes what its weights loaded afresh do


def test_no_state_outside_the_modules():
    """Importing bertology registers no optimizer hook, and a fused model copies and pickles after it has
    packed its weights (the packed copy stays behind; the copy packs its own)."""
    hooks = getattr(importlib.import_module("torch.optim.optimizer"), "_global_optimizer_post_hooks", {})
    assert not any("bertology" in getattr(h, "__module__", "") for h in hooks.values())
    model = lm("bert")
    fused.fuse(model)
    ids, mask = batch()
    with torch.inference_mode():
        expected = model(input_ids=ids, attention_mask=mask).logits
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert all(m.packed is None for m in other.modules() if isinstance(m, FusedLinear))
        with torch.inference_mode():
            assert torch.equal(other(input_ids=ids, attention_mask=mask).logits, expected)


@pytest.mark.parametrize("family", ["bert", "albert", "xlnet"])
def test_load_swaps_in_fused_layers_for_the_blocks_on_the_cpu_and_nothing_else_changes(tmp_path, family):
    model = lm(family)
    model.save(tmp_path)
    loaded = bertology.load(tmp_path)
    in_blocks = [m for b in fused._blocks(loaded) for m in b.modules() if isinstance(m, nn.Linear)]
    assert in_blocks and all(type(m) is FusedLinear for m in in_blocks)
    assert all(type(m) is nn.Linear for m in loaded.modules() if isinstance(m, nn.Linear) and m not in in_blocks)
    assert list(loaded.state_dict()) == list(model.state_dict())  # the same names: saving sees plain layers
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), model.state_dict().values()))
    ids, mask = batch()
    with torch.inference_mode():
        assert torch.allclose(
            loaded(input_ids=ids, attention_mask=mask).logits,
            model(input_ids=ids, attention_mask=mask).logits,
            atol=1e-4,
        )
    with pytest.warns(RuntimeWarning, match="compile on the CPU: .* slower than the eager path"):
        assert not fused.is_fused(bertology.load(tmp_path, compile=True))  # inductor packs its own
    with pytest.warns(RuntimeWarning, match="not linear layers") if family == "xlnet" else nullcontext():
        assert not fused.is_fused(bertology.load(tmp_path, quantize="int8"))
