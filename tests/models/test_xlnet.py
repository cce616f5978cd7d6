"""XLNet against transformers on the same weights, both directions, every head (max abs difference ≤ 1e-5).

Odd sizes (d_model 48, 3 heads, d_inner 37). Variants: padding (on the left, as XLNet pads), token
types, perm_mask + target_mapping (two streams), mems over three consecutive segments, bi_data,
clamp_len, attn_type "uni", tied biases (untie_r false). XLNet does not pack padding away: every
position, padded ones included, is compared. The query stream's attention has one row per
prediction here (transformers computes all T rows and keeps the targets'): compared at the targets.
"""

import pytest
import torch

import bertology
from bertology.models import ARCHITECTURES, CheckpointError, XLNetConfig, XLNetModel, config_from_dict
from bertology.models.params import count
from bertology.models.xlnet import rel_shift, relative_distances

transformers = pytest.importorskip("transformers")

TOL = 1e-5
HEADS = [
    "XLNetModel",
    "XLNetLMHeadModel",
    "XLNetForSequenceClassification",
    "XLNetForTokenClassification",
    "XLNetForMultipleChoice",
    "XLNetForQuestionAnsweringSimple",
    "XLNetForQuestionAnswering",
]
B, T = 2, 9


def hf_config(**overrides):
    c = transformers.XLNetConfig(
        **{
            **dict(vocab_size=99, d_model=48, n_layer=2, n_head=3, d_inner=37, mem_len=6, start_n_top=3, end_n_top=2),
            **overrides,
        }
    )
    c._attn_implementation = "eager"
    return c


def batch(name, seed=0, perm=False):
    g = torch.Generator().manual_seed(seed)
    shape = (B, 3, T) if "MultipleChoice" in name else (B, T)
    ids = torch.randint(6, 99, shape, generator=g)
    mask = torch.ones(shape)
    mask[..., 1, :3] = 0  # the second sequence padded on the left
    types = torch.zeros(shape, dtype=torch.long)
    types[..., 5:] = 1
    types[..., -1] = 2  # <cls>: its own segment
    kw = dict(
        input_ids=ids.masked_fill(mask == 0, 5),
        attention_mask=mask,
        token_type_ids=types,
        output_hidden_states=True,
        output_attentions=True,
    )
    if perm:
        kw["perm_mask"] = (torch.rand(B, T, T, generator=g) < 0.4).float()
        kw["target_mapping"] = one_hot_targets([[2, 6, 7], [4, 3, 8]])
    return kw


def one_hot_targets(positions):
    tm = torch.zeros(len(positions), len(positions[0]), T)
    for b, row in enumerate(positions):
        for k, p in enumerate(row):
            tm[b, k, p] = 1
    return tm


def _flat(x):
    """An output field as a flat list of tensors, tuples within the tuple (two-stream outputs) opened."""
    if not isinstance(x, (tuple, list)):
        return [x]
    return [t for item in x for t in (item if isinstance(item, tuple) else (item,))]


def assert_close(ref, ours, target_mapping=None):
    compared = 0
    for key in ours.keys():
        theirs = getattr(ref, key, None)
        if theirs is None or key == "loss":
            continue
        mine = getattr(ours, key)
        theirs, mine = _flat(theirs), _flat(mine)
        assert len(theirs) == len(mine), f"{key}: {len(theirs)} vs {len(mine)} tensors"
        for i, (a, b) in enumerate(zip(theirs, mine)):
            if key == "attentions" and target_mapping is not None and i % 2:  # query stream: the target rows
                rows = target_mapping.argmax(-1)  # (B, P)
                a = a.gather(2, rows[:, None, :, None].expand(-1, a.shape[1], -1, a.shape[3]))
            assert a.shape == b.shape, f"{key}[{i}]: shape {tuple(a.shape)} vs {tuple(b.shape)}"
            diff = (a.float() - b.float()).abs().max().item()
            assert diff <= TOL, f"{key}[{i}]: max abs difference {diff}"
            compared += 1
    assert compared >= 3


def run_both(reference, ours, kw):
    with torch.no_grad():
        return reference(**kw), ours(**kw)


@pytest.mark.parametrize("name", HEADS)
def test_transformers_checkpoint_loads_with_same_outputs(name, tmp_path):
    torch.manual_seed(0)
    reference = getattr(transformers, name)(hf_config()).eval()
    reference.save_pretrained(tmp_path)
    ours = bertology.load(tmp_path)
    assert type(ours).__name__ == name
    for perm in (False, True) if "MultipleChoice" not in name else (False,):
        kw = batch(name, perm=perm)
        assert_close(*run_both(reference, ours, kw), kw.get("target_mapping"))


@pytest.mark.parametrize("name", HEADS)
def test_our_checkpoint_loads_in_transformers_with_same_outputs(name, tmp_path):
    torch.manual_seed(1)
    ours = ARCHITECTURES[name](config_from_dict(hf_config().to_dict())).eval()
    ours.save(tmp_path)
    reference, info = getattr(transformers, name).from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    reference.config._attn_implementation = "eager"
    kw = batch(name, seed=1)
    assert_close(*run_both(reference.eval(), ours, kw))


@pytest.mark.parametrize(
    "variant",
    [
        dict(bi_data=True),
        dict(clamp_len=3),
        dict(attn_type="uni"),
        dict(attn_type="uni", same_length=True),
        dict(reuse_len=4, mem_len=5),
        dict(untie_r=False),
    ],
    ids=["bi_data", "clamp_len", "uni", "uni-same_length", "reuse_len", "tied-biases"],
)
def test_variants_and_memory_over_three_segments(variant, tmp_path):
    torch.manual_seed(2)
    config = config_from_dict(hf_config(**variant).to_dict())
    ours = ARCHITECTURES["XLNetLMHeadModel"](config).eval()
    ours.save(tmp_path)
    reference = transformers.XLNetLMHeadModel.from_pretrained(tmp_path).eval()
    reference.config._attn_implementation = "eager"
    mems_ref = mems_ours = None
    for segment in range(3):  # each segment attends to the memory of the ones before
        uni = config.attn_type == "uni"  # transformers fails on "uni" with padding or a perm_mask (in-place broadcast)
        kw = batch("XLNetLMHeadModel", seed=segment, perm=segment == 1 and not uni)
        if uni:
            del kw["attention_mask"]
        ref, mine = run_both(
            reference, ours, dict(kw, mems=mems_ref, use_mems=True) if mems_ref else dict(kw, use_mems=True)
        )
        assert_close(ref, mine, kw.get("target_mapping"))
        mems_ref, mems_ours = ref.mems, mine.mems
        ref, mine = run_both(reference, ours, dict(kw, mems=mems_ref, use_mems=True))
        assert_close(ref, mine, kw.get("target_mapping"))
    assert mems_ours[0].shape[0] == min(config.mem_len, 3 * (config.reuse_len or T))


def test_tied_biases_refuse_a_checkpoint_with_different_ones(tmp_path):
    transformers.XLNetModel(hf_config()).save_pretrained(tmp_path)
    config = bertology.models.read_config(tmp_path)
    config.untie_r = False
    model = XLNetModel(config)
    tensors, source = bertology.models.read_weights(tmp_path)
    with pytest.raises(CheckpointError, match="r_w_bias differs between layers.*untie_r"):
        bertology.models.checkpoint.load_state(model, tensors, source)


def test_losses_equal_transformers(tmp_path):
    torch.manual_seed(3)
    reference = transformers.XLNetLMHeadModel(hf_config()).eval()
    reference.save_pretrained(tmp_path)
    ours = bertology.load(tmp_path)
    kw = batch("XLNetLMHeadModel", perm=True)
    kw["labels"] = torch.randint(0, 99, (B, 3))
    ref, mine = run_both(reference, ours, kw)
    assert abs(ref.loss.item() - mine.loss.item()) < TOL


def test_two_streams_coincide_where_the_permutation_lets_them():
    """The query stream starts from mask_emb and sees what perm_mask allows; the content stream starts
    from the token and sees everything, itself included. When the permutation lets a target see
    itself and mask_emb is that token's embedding, the two streams are the same computation."""
    torch.manual_seed(4)
    config = XLNetConfig(
        vocab_size=99, hidden_size=48, num_hidden_layers=2, num_attention_heads=3, intermediate_size=37
    )
    model = XLNetModel(config).eval()
    ids = torch.randint(6, 99, (1, T))
    ids[0, [0, 4, 8]] = 7
    tm = one_hot_targets([[0, 4, 8]])
    with torch.no_grad():
        model.mask_emb.copy_(model.word.weight[7])
        content = model(ids).last_hidden_state[:, [0, 4, 8]]
        sees_itself = model(ids, perm_mask=torch.zeros(1, T, T), target_mapping=tm).last_hidden_state
        blind_to_itself = model(ids, perm_mask=torch.eye(T)[None], target_mapping=tm).last_hidden_state
    torch.testing.assert_close(sees_itself, content, atol=1e-5, rtol=0)
    assert (blind_to_itself - content).abs().max() > 1e-3  # hiding its own token changes the target's vector


def test_relative_shift_and_distances_agree_with_transformers():
    x = torch.randn(2, 3, 4, 11)  # T 4, K 7, R 11
    theirs = transformers.models.xlnet.modeling_xlnet.XLNetRelativeAttention.rel_shift_bnij(x, klen=7)
    assert torch.equal(rel_shift(x, 7), theirs)
    assert relative_distances(4, 7).tolist() == list(range(7, -4, -1))


def test_parameter_counts_are_transformers():
    assert count(XLNetConfig.preset("base")).total == 116_718_336
    assert count(XLNetConfig.preset("large")).total == 360_268_800
    tied = XLNetConfig.preset("base", untie_r=False)
    assert count(tied).total == 116_718_336 - 11 * 3 * 768  # one set of biases instead of twelve


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(target_mapping=torch.full((B, 2, T), 0.5)), r"target_mapping row \[0, 0\] is not one-hot"),
        (dict(target_mapping=torch.zeros(B, 2, T + 1)), r"target_mapping must have shape \(batch, num_predict, 9\)"),
        (dict(target_mapping=one_hot_targets([[1, 1], [2, 3]])), "predicts one position twice"),
        (dict(perm_mask=torch.zeros(B, T, T - 1)), r"perm_mask must have shape .*\(2, 9, 9\), got \(2, 9, 8\)"),
        (dict(mems=[torch.zeros(4, B, 48)]), "mems holds 1 tensors; this model has 2 layers"),
        (dict(mems=[torch.zeros(4, B, 32)] * 2), r"mems\[0\] has shape \(4, 2, 32\)"),
        (dict(token_type_ids=torch.zeros(B, T + 1, dtype=torch.long)), "token_type_ids shape"),
    ],
)
def test_bad_input_names_the_argument(change, message):
    model = XLNetModel(
        XLNetConfig(vocab_size=99, hidden_size=48, num_hidden_layers=2, num_attention_heads=3, intermediate_size=37)
    )
    with pytest.raises(ValueError, match=message):
        model(torch.randint(0, 99, (B, T)), **change)


def test_bi_data_needs_an_even_batch():
    model = XLNetModel(
        XLNetConfig(
            vocab_size=99,
            hidden_size=48,
            num_hidden_layers=1,
            num_attention_heads=3,
            intermediate_size=37,
            bi_data=True,
        )
    )
    with pytest.raises(ValueError, match="batch size must be even, got 3"):
        model(torch.randint(0, 99, (3, T)))


def test_relative_inputs_are_built_once_and_read_by_every_layer():
    """The distances' encodings (with their dropout mask), masks and segments are made once per forward:
    every layer gets the same `Relative` record, not its own copy of nine arguments."""
    model = XLNetModel(
        XLNetConfig(vocab_size=99, hidden_size=48, num_hidden_layers=3, num_attention_heads=3, intermediate_size=37)
    ).train()
    seen = []
    for layer in model.layers:
        layer.register_forward_pre_hook(lambda module, args: seen.append(args[3]))
    kw = batch("XLNetModel", perm=True)
    model(**{k: kw[k] for k in ("input_ids", "attention_mask", "token_type_ids", "perm_mask", "target_mapping")})
    assert len(seen) == 3 and all(rel is seen[0] for rel in seen)
    assert seen[0].query.rows.tolist() == [[2, 6, 7], [4, 3, 8]]


def test_heads_run_the_shared_forwards():
    """XLNet's heads differ from heads.py's only in their modules (transformers' names) and the hook
    that reads them; the forward and the loss are the shared ones."""
    from bertology.models import heads

    for name, shared in [
        ("XLNetLMHeadModel", heads.ForMaskedLM),
        ("XLNetForSequenceClassification", heads.ForSequenceClassification),
        ("XLNetForTokenClassification", heads.ForTokenClassification),
        ("XLNetForMultipleChoice", heads.ForMultipleChoice),
        ("XLNetForQuestionAnsweringSimple", heads.ForQuestionAnswering),
    ]:
        assert ARCHITECTURES[name].forward is shared.forward, name


@pytest.mark.parametrize("name", HEADS[2:])
def test_every_heads_loss_equals_transformers(name, tmp_path):
    """The shared losses of heads.py give transformers' loss on each XLNet head."""
    torch.manual_seed(5)
    reference = getattr(transformers, name)(hf_config()).eval()
    reference.save_pretrained(tmp_path)
    ours = bertology.load(tmp_path)
    kw = batch(name)
    g = torch.Generator().manual_seed(5)
    if "QuestionAnswering" in name:
        kw.update(start_positions=torch.tensor([3, 5]), end_positions=torch.tensor([4, 7]))
        if name == "XLNetForQuestionAnswering":
            kw.update(cls_index=torch.tensor([T - 1, T - 1]), is_impossible=torch.tensor([0.0, 1.0]))
    elif name == "XLNetForTokenClassification":
        kw["labels"] = torch.randint(0, 2, (B, T), generator=g).masked_fill(kw["attention_mask"] == 0, -100)
    else:
        kw["labels"] = torch.randint(0, 2 if "Sequence" in name else 3, (B,), generator=g)
    ref, mine = run_both(reference, ours, kw)
    assert abs(ref.loss.item() - mine.loss.item()) < TOL
