"""Mean pooling of sequence classification: the real tokens only, saved and reloaded exactly, the
backbone still transformers' own."""

import pytest
import torch

from bertology.models import get_family, load, task_class
from bertology.models.heads import MeanPooledHead, mean_pool
from bertology.nn.fused import unfuse

FAMILIES = ("bert", "roberta", "albert", "distilbert")


def _model(family: str, pooling: str = "mean"):
    cfg = get_family(family).preset("tiny", vocab_size=99).with_labels(["a", "b", "c"])
    cfg.extra["bertology_pooling"] = pooling
    torch.manual_seed(0)
    return task_class(family, "ForSequenceClassification")(cfg).eval()


def test_mean_pool_counts_real_tokens_only():
    h = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [50.0, 60.0]], [[5.0, 7.0], [0.0, 0.0], [0.0, 0.0]]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert torch.equal(mean_pool(h, mask), torch.tensor([[2.0, 3.0], [5.0, 7.0]]))


@pytest.mark.parametrize("family", FAMILIES)
def test_logits_do_not_depend_on_padding(family):
    model = _model(family)
    assert isinstance(model.classifier, MeanPooledHead) and getattr(model.backbone, "pooler", None) is None
    g = torch.Generator().manual_seed(1)
    short, long = torch.randint(5, 99, (1, 5), generator=g), torch.randint(5, 99, (1, 9), generator=g)
    batch = torch.full((2, 9), 1)  # padded with an ordinary token id: the mask alone must hide it
    batch[0, :5], batch[1] = short[0], long[0]
    mask = torch.zeros(2, 9, dtype=torch.long)
    mask[0, :5], mask[1] = 1, 1
    with torch.no_grad():
        alone = model(short, torch.ones_like(short)).logits
        padded = model(batch, mask).logits
        model.backbone.skip_padding = False  # transformers' way: padded positions computed, nonzero
        padded_full = model(batch, mask).logits
    assert torch.allclose(padded[0], alone[0], atol=1e-5)
    assert torch.allclose(padded_full[0], alone[0], atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_saved_and_reloaded_exactly_and_transformers_loads_the_backbone(family, tmp_path):
    transformers = pytest.importorskip("transformers")
    model = _model(family)
    model.save(tmp_path)
    again = load(tmp_path)
    unfuse(again)  # load() swaps in the fused fp32 layers: the built model's kernels, for equality
    assert again.pooling == "mean" and isinstance(again.classifier, MeanPooledHead)
    ids = torch.randint(5, 99, (2, 7), generator=torch.Generator().manual_seed(2))
    mask = torch.ones_like(ids)
    mask[1, 4:] = 0
    with torch.no_grad():
        assert torch.equal(model(ids, mask).logits, again(ids, mask).logits)
        theirs = transformers.AutoModel.from_pretrained(tmp_path).eval()(input_ids=ids, attention_mask=mask)
        ours = model.backbone(ids, mask).last_hidden_state
    real = mask.bool()
    assert (theirs.last_hidden_state[real] - ours[real]).abs().max() < 1e-5


def test_cls_pooling_is_the_default_and_unchanged():
    plain = _model("bert", "cls")
    cfg = get_family("bert").preset("tiny", vocab_size=99).with_labels(["a", "b", "c"])
    torch.manual_seed(0)
    default = task_class("bert", "ForSequenceClassification")(cfg).eval()
    assert default.pooling == "cls" and default.backbone.pooler is not None
    assert {k: v.shape for k, v in default.state_dict().items()} == {k: v.shape for k, v in plain.state_dict().items()}


def test_an_unknown_pooling_is_named():
    with pytest.raises(ValueError, match="bertology_pooling 'max'"):
        _model("bert", "max")
