"""Packed batches round their row count up (copies of real tokens) without changing any output."""

import pytest
import torch

from bertology.models import BertConfig, BertForMaskedLM, get_family, task_class
from bertology.nn import Padding, round_up_rows, set_dropout


def test_packed_rows_are_rounded_with_copies_of_real_tokens():
    mask = torch.tensor([[1] * 7 + [0] * 3, [1] * 2 + [0] * 8])
    p = Padding.build(mask, 2, 10, pack=True)
    assert p.real == 9 and len(p.indices) == round_up_rows(9) == 64
    real = mask.flatten().nonzero().squeeze(1)
    assert torch.equal(p.indices[:9], real) and bool(torch.isin(p.indices[9:], real).all())
    x = torch.randn(2, 10, 3)
    back = p.unpack(p.pack(x))
    assert torch.equal(back[mask.bool()], x[mask.bool()]) and bool((back[~mask.bool()] == 0).all())


def test_rounding_changes_no_output_or_gradient():
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig.preset("tiny", vocab_size=120)).eval()
    ids = torch.randint(5, 120, (3, 11))
    mask = (torch.arange(11)[None] < torch.tensor([[11], [4], [7]])).long()
    labels = torch.where((torch.rand(3, 11) < 0.4) & mask.bool(), ids, -100)
    packed = model(input_ids=ids, attention_mask=mask, labels=labels, sparse_prediction=True)
    packed.loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model.backbone.skip_padding = False  # the plain padded path, no packing, no rounding
    plain = model(input_ids=ids, attention_mask=mask, labels=labels, sparse_prediction=True)
    plain.loss.backward()
    assert packed.logits.shape == plain.logits.shape == (int((labels != -100).sum()), 120)
    assert torch.allclose(packed.logits, plain.logits, atol=1e-5) and torch.allclose(packed.loss, plain.loss, atol=1e-6)
    for g, p in zip(grads, model.parameters()):
        assert torch.allclose(g, p.grad, atol=1e-6)


def _batch(vocab: int = 120):
    ids = torch.randint(5, vocab, (3, 11), generator=torch.Generator().manual_seed(1))
    mask = (torch.arange(11)[None] < torch.tensor([[11], [4], [7]])).long()
    return ids, mask


def test_varlen_padding_marks_each_sequence_and_the_copies():
    mask = torch.tensor([[1] * 7 + [0] * 3, [1] * 2 + [0] * 8])
    p = Padding.build(mask, 2, 10, pack=True, varlen=True)
    assert p.offsets.tolist() == [0, 7, 9, 64] and p.offsets.dtype == torch.int32 and p.longest == 55
    assert Padding.build(mask, 2, 10, pack=True).offsets is None  # on the CPU by default: the padded SDPA
    assert Padding.build(mask, 2, 10, pack=False, varlen=True).offsets is None  # nothing packed, nothing to split


@pytest.mark.parametrize("family", ["bert", "albert"])
def test_varlen_attention_equals_the_padded_path_outputs_and_gradients(family):
    """The jagged SDPA over packed rows (CUDA's default, forced here on the CPU) gives the padded path's
    logits and gradients at fp32 tolerance."""
    torch.manual_seed(0)
    model = task_class(family, "ForMaskedLM")(get_family(family).preset("tiny", vocab_size=120))
    set_dropout(model, 0.0)
    ids, mask = _batch()
    labels = torch.where((torch.rand(3, 11) < 0.4) & mask.bool(), ids, -100)
    results = []
    for varlen in (False, True):
        model.backbone.varlen_attention = varlen
        model.zero_grad()
        out = model(input_ids=ids, attention_mask=mask, labels=labels)
        out.loss.backward()
        results.append((out.logits[mask.bool()].detach(), [p.grad.clone() for p in model.parameters()]))
    (padded, padded_grads), (varlen, varlen_grads) = results
    assert torch.allclose(padded, varlen, atol=1e-5)
    for a, b in zip(padded_grads, varlen_grads):
        assert torch.allclose(a, b, atol=1e-5)


def test_attention_weights_asked_take_the_explicit_path_under_varlen():
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig.preset("tiny", vocab_size=120)).eval()
    model.backbone.varlen_attention = True
    ids, mask = _batch()
    out = model(input_ids=ids, attention_mask=mask, output_attentions=True)
    assert out.attentions[0].shape == (3, 2, 11, 11)
    assert torch.allclose(out.attentions[0].sum(-1), torch.ones(3, 2, 11))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_varlen_attention_on_cuda_equals_padded_attention(dtype, dropout):
    """CUDA's variable-length kernels (flash `varlen_attn` without dropout, jagged SDPA with it, no dropout
    drawn in eval) against the padded SDPA, at half-precision tolerance."""
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig.preset("mini", vocab_size=120)).cuda().eval()
    set_dropout(model, dropout)
    ids, mask = (t.cuda() for t in _batch())
    outputs = []
    for varlen in (False, True):
        model.backbone.varlen_attention = varlen
        with torch.no_grad(), torch.autocast("cuda", dtype=dtype):
            outputs.append(model(input_ids=ids, attention_mask=mask).logits[mask.bool()].float())
    assert torch.allclose(outputs[0], outputs[1], atol=5e-2, rtol=2e-2)
