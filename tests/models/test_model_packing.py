"""Packed batches round their row count up (copies of real tokens) without changing any output."""
import torch

from bertology.models import BertConfig, BertForMaskedLM
from bertology.nn import Padding, round_up_rows


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
