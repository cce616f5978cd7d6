"""Every family × head against transformers itself, in both directions (max abs difference ≤ 1e-5)."""

import pytest
import torch
import transformers

import bertology
from bertology.models import ARCHITECTURES

from conftest import hf_config, padded_batch, set_skip_padding

TOL = 1e-5
ALL = sorted(n for n in ARCHITECTURES if not n.startswith("XLNet") and hasattr(transformers, n))  # XLNet: test_xlnet.py


def _inputs(name, pad_id):
    shape = (2, 3, 9) if "MultipleChoice" in name else (2, 9)
    ids, mask = padded_batch(shape, pad_id)
    return dict(input_ids=ids, attention_mask=mask, output_hidden_states=True, output_attentions=True)


def _assert_close(ref, ours, mask=None):
    """Compare every output field; with `mask`, token-level tensors only at real tokens."""
    compared = 0
    for key in ours.keys():
        theirs = getattr(ref, key, None)
        if theirs is None or key == "loss":
            continue
        mine = getattr(ours, key)
        pairs = zip(theirs, mine) if isinstance(mine, tuple) else [(theirs, mine)]
        if isinstance(mine, tuple):
            assert len(theirs) == len(mine), f"{key}: {len(theirs)} vs {len(mine)} tensors"
        for a, b in pairs:
            assert a.shape == b.shape, f"{key}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
            if mask is not None:  # padded positions are zeros when packed: compare real tokens (and query rows)
                keep = mask.reshape(-1, mask.shape[-1]).bool()  # (B, T)
                if key == "attentions":
                    a, b = a.transpose(1, 2)[keep], b.transpose(1, 2)[keep]  # (M, N, T)
                elif a.dim() >= 2 and a.shape[:2] == keep.shape:
                    a, b = a[keep], b[keep]
            diff = (a - b).abs().max().item()
            assert diff <= TOL, f"{key}: max abs difference {diff}"
            compared += 1
    assert compared >= 3


def _family(name):
    return ARCHITECTURES[name].config_class.model_type


@pytest.mark.parametrize("skip_padding", [False, True], ids=["dense", "packed"])
@pytest.mark.parametrize("name", ALL)
def test_transformers_checkpoint_loads_with_same_outputs(name, skip_padding, tmp_path):
    torch.manual_seed(0)
    config = hf_config(_family(name))
    reference = getattr(transformers, name)(config).eval()
    reference.save_pretrained(tmp_path)
    ours = bertology.load(tmp_path)
    assert type(ours).__name__ == name
    set_skip_padding(ours, skip_padding)
    kwargs = _inputs(name, config.pad_token_id)
    with torch.no_grad():
        _assert_close(reference(**kwargs), ours(**kwargs), mask=kwargs["attention_mask"] if skip_padding else None)


@pytest.mark.parametrize("name", ALL)
def test_our_checkpoint_loads_in_transformers_with_same_outputs(name, tmp_path):
    torch.manual_seed(1)
    config = bertology.models.config_from_dict(hf_config(_family(name)).to_dict())
    ours = ARCHITECTURES[name](config).eval()
    ours.save(tmp_path)
    reference, info = getattr(transformers, name).from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    reference.config._attn_implementation = "eager"
    set_skip_padding(ours, False)
    kwargs = _inputs(name, config.pad_token_id)
    with torch.no_grad():
        _assert_close(reference.eval()(**kwargs), ours(**kwargs))


@pytest.mark.parametrize("groups,inner,layers", [(1, 1, 3), (1, 3, 2), (2, 2, 4), (4, 1, 4), (3, 2, 6)])
def test_albert_group_layouts(groups, inner, layers, tmp_path):
    torch.manual_seed(2)
    config = hf_config("albert", num_hidden_groups=groups, inner_group_num=inner, num_hidden_layers=layers)
    reference = transformers.AlbertForMaskedLM(config).eval()
    reference.save_pretrained(tmp_path)
    ours = bertology.load(tmp_path)
    set_skip_padding(ours, False)
    kwargs = _inputs("AlbertForMaskedLM", 0)
    with torch.no_grad():
        _assert_close(reference(**kwargs), ours(**kwargs))
    ours.save(tmp_path / "again")
    again, info = transformers.AlbertForMaskedLM.from_pretrained(tmp_path / "again", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]


def test_losses_match_transformers(tmp_path):
    torch.manual_seed(3)
    config = hf_config("bert")
    reference = transformers.BertForPreTraining(config).eval()
    reference.save_pretrained(tmp_path)
    ours = bertology.load(tmp_path)
    ids, mask = padded_batch((2, 9), 0)
    labels = torch.full_like(ids, -100)
    labels[:, 2] = ids[:, 2]
    labels[0, 5] = ids[0, 5]
    nsp = torch.tensor([0, 1])
    with torch.no_grad():
        a = reference(input_ids=ids, attention_mask=mask, labels=labels, next_sentence_label=nsp)
        b = ours(input_ids=ids, attention_mask=mask, labels=labels, next_sentence_label=nsp)
        c = ours(input_ids=ids, attention_mask=mask, labels=labels, next_sentence_label=nsp, sparse_prediction=True)
    assert abs(a.loss.item() - b.loss.item()) < TOL
    assert abs(b.loss.item() - c.loss.item()) < 1e-6
    assert c.prediction_logits.shape == (3, 99)  # only the three labelled positions
