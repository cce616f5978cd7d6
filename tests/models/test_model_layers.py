"""Equivalences inside bertology: attention paths, padding, sharing, sparse MLM; bad input."""

import json

import pytest
import torch

import bertology
from bertology.models import (
    AlbertConfig,
    AlbertForMaskedLM,
    AlbertModel,
    BertConfig,
    BertForMaskedLM,
    BertModel,
    DistilBertConfig,
    DistilBertModel,
    RobertaConfig,
    RobertaModel,
)
from bertology.nn import MultiHeadSelfAttention, Padding

from conftest import set_skip_padding

TINY = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)


def test_sdpa_and_explicit_attention_agree():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(32, 4).eval()
    x = torch.randn(3, 6, 32)
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 1 + [0] * 5])
    for pack in (False, True):
        padding = Padding.build(mask, 3, 6, pack=pack)
        xs = padding.pack(x)
        fast, none = attn(xs, padding)
        slow, probs = attn(xs, padding, need_weights=True)
        assert none is None and probs.shape == (3, 4, 6, 6)
        torch.testing.assert_close(fast, slow, atol=1e-6, rtol=0)
        assert probs[1, :, :, 4:].abs().max() == 0  # nothing attends to padding
        torch.testing.assert_close(probs.sum(-1), torch.ones(3, 4, 6))


@pytest.mark.parametrize("skip_padding", [True, False])
@pytest.mark.parametrize("family", ["bert", "roberta", "albert", "distilbert"])
def test_padding_does_not_change_real_tokens(family, skip_padding):
    torch.manual_seed(0)
    cls = {"bert": BertModel, "roberta": RobertaModel, "albert": AlbertModel, "distilbert": DistilBertModel}[family]
    model = cls(cls.config_class(**TINY)).eval()
    set_skip_padding(model, skip_padding)
    pad = model.config.pad_token_id
    short = torch.tensor([[5, 6, 7, 8]])
    batch = torch.tensor([[5, 6, 7, 8, pad, pad], [9, 10, 11, 12, 13, 14]])
    mask = (batch != pad).long()
    with torch.no_grad():
        alone = model(input_ids=short).last_hidden_state[0]
        padded = model(input_ids=batch, attention_mask=mask).last_hidden_state[0, :4]
    torch.testing.assert_close(alone, padded, atol=1e-5, rtol=0)
    if skip_padding:
        assert model(input_ids=batch, attention_mask=mask).last_hidden_state[0, 4:].abs().max() == 0


def test_output_attentions_uses_explicit_path_with_same_result():
    torch.manual_seed(0)
    model = BertModel(BertConfig(**TINY)).eval()
    ids = torch.randint(0, 99, (2, 7))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    with torch.no_grad():
        a = model(input_ids=ids, attention_mask=mask)
        b = model(input_ids=ids, attention_mask=mask, output_attentions=True)
    torch.testing.assert_close(a.last_hidden_state, b.last_hidden_state, atol=1e-6, rtol=0)
    assert len(b.attentions) == 2 and b.attentions[0].shape == (2, 4, 7, 7)


def test_albert_shared_stack_equals_unshared_stack_with_tied_weights():
    torch.manual_seed(0)
    shared = AlbertModel(AlbertConfig(**{**TINY, "num_hidden_layers": 4}, embedding_size=16)).eval()
    unshared = AlbertModel(AlbertConfig(**{**TINY, "num_hidden_layers": 4}, embedding_size=16, sharing="none")).eval()
    assert len(shared.encoder.attention_blocks) == 1 and len(unshared.encoder.attention_blocks) == 4
    state = {k: v for k, v in shared.state_dict().items() if "_blocks." not in k}
    for k, v in shared.state_dict().items():
        if "_blocks.0." in k:
            for i in range(4):
                state[k.replace("_blocks.0.", f"_blocks.{i}.")] = v
    unshared.load_state_dict(state)
    ids = torch.randint(0, 99, (2, 7))
    with torch.no_grad():
        torch.testing.assert_close(shared(input_ids=ids).last_hidden_state, unshared(input_ids=ids).last_hidden_state)
    assert shared.num_parameters() < unshared.num_parameters()


@pytest.mark.parametrize("sharing,n_attention,n_ffn", [("attention", 1, 4), ("ffn", 4, 1)])
def test_albert_partial_sharing_round_trips_in_native_layout(sharing, n_attention, n_ffn, tmp_path):
    torch.manual_seed(0)
    config = AlbertConfig(**{**TINY, "num_hidden_layers": 4}, embedding_size=16, sharing=sharing)
    model = AlbertForMaskedLM(config).eval()
    assert (len(model.backbone.encoder.attention_blocks), len(model.backbone.encoder.ffn_blocks)) == (
        n_attention,
        n_ffn,
    )
    with pytest.warns(UserWarning, match="no transformers equivalent"):
        model.save(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["sharing"] == sharing and saved["bertology_layout"] == "native"
    again = bertology.load(tmp_path)
    ids = torch.randint(0, 99, (2, 7))
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids).logits, again(input_ids=ids).logits)


def test_sparse_mlm_gives_the_dense_loss_and_gradients():
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(**TINY)).eval()
    ids = torch.randint(0, 99, (3, 8))
    labels = torch.full_like(ids, -100)
    labels[0, 1], labels[1, 4], labels[2, 7], labels[2, 0] = 5, 6, 7, 8
    grads = []
    for sparse in (False, True):
        model.zero_grad()
        out = model(input_ids=ids, labels=labels, sparse_prediction=sparse)
        out.loss.backward()
        grads.append((out.loss.item(), model.backbone.embeddings.word.weight.grad.clone()))
    assert abs(grads[0][0] - grads[1][0]) < 1e-6
    torch.testing.assert_close(grads[0][1], grads[1][1], atol=1e-7, rtol=0)


def test_mlm_decoder_is_tied_to_word_embeddings():
    model = BertForMaskedLM(BertConfig(**TINY))
    assert model.mlm.decoder.weight is model.backbone.embeddings.word.weight


def test_roberta_position_ids_skip_padding():
    model = RobertaModel(RobertaConfig(**TINY))
    ids = torch.tensor([[0, 7, 8, 2, 1, 1]])
    assert model.default_position_ids(ids).tolist() == [[2, 3, 4, 5, 1, 1]]


def test_distilbert_sinusoidal_positions_are_fixed():
    model = DistilBertModel(DistilBertConfig(**TINY, sinusoidal_pos_embds=True))
    table = model.embeddings.position.weight
    assert not table.requires_grad
    assert torch.allclose(table[0, 0::2], torch.zeros(16)) and torch.allclose(table[0, 1::2], torch.ones(16))


@pytest.mark.parametrize("cls", [BertConfig, RobertaConfig, AlbertConfig, DistilBertConfig])
def test_config_json_round_trip(cls, tmp_path):
    config = cls.preset("mini").with_labels(["neg", "pos", "neutral"])
    config.save(tmp_path / "config.json")
    again = type(config).load(tmp_path / "config.json")
    assert again == config and again.num_labels == 3 and again.label2id["pos"] == 1


def test_presets_are_the_paper_sizes():
    assert BertConfig.preset("base").hidden_size == 768 and BertConfig.preset("large").num_hidden_layers == 24
    assert AlbertConfig.preset("xxlarge").hidden_size == 4096 and AlbertConfig().embedding_size == 128
    assert DistilBertConfig.preset("base").num_hidden_layers == 6
    with pytest.raises(ValueError, match="unknown bert preset 'huge'"):
        BertConfig.preset("huge")


# ---- bad input ---------------------------------------------------------------------------------


@pytest.fixture
def bert():
    return BertForMaskedLM(BertConfig(**TINY, max_position_embeddings=16)).eval()


def test_ids_outside_the_vocabulary(bert):
    with pytest.raises(ValueError, match=r"input_ids contains 99, outside \[0, 99\)"):
        bert(input_ids=torch.tensor([[1, 99]]))
    with pytest.raises(ValueError, match="contains -1"):
        bert(input_ids=torch.tensor([[1, -1]]))


def test_sequence_longer_than_position_table(bert):
    with pytest.raises(ValueError, match="longer than the position table"):
        bert(input_ids=torch.ones(1, 17, dtype=torch.long))


def test_mask_of_the_wrong_shape(bert):
    with pytest.raises(ValueError, match=r"attention_mask shape \(1, 3\) does not match input_ids \(1, 4\)"):
        bert(input_ids=torch.ones(1, 4, dtype=torch.long), attention_mask=torch.ones(1, 3))
    with pytest.raises(ValueError, match=r"rows \[0\] have no tokens"):
        bert(input_ids=torch.ones(1, 4, dtype=torch.long), attention_mask=torch.zeros(1, 4))


def test_token_types_on_distilbert():
    model = DistilBertModel(DistilBertConfig(**TINY))
    with pytest.raises(ValueError, match="no token-type embeddings"):
        model(input_ids=torch.ones(1, 4, dtype=torch.long), token_type_ids=torch.zeros(1, 4, dtype=torch.long))


def test_load_errors_name_the_file_and_key(bert, tmp_path):
    with pytest.raises(FileNotFoundError, match="not a model directory"):
        bertology.load(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        bertology.load(tmp_path)
    bert.save(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "model_type": "gpt7"}))
    with pytest.raises(ValueError, match="unknown model_type 'gpt7'"):
        bertology.load(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "architectures": ["BertForTelepathy"]}))
    with pytest.raises(ValueError, match="unknown architecture 'BertForTelepathy'"):
        bertology.load(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "intermediate_size": 50}))
    with pytest.raises(
        ValueError,
        match=r"model.safetensors: bert.encoder.layer.0.intermediate.dense.weight has shape \(64, 32\), the config implies \(50, 32\)",
    ):
        bertology.load(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "architectures": ["BertForPreTraining"]}))
    with pytest.raises(bertology.CheckpointError, match=r"missing keys \['bert.pooler.dense.weight'"):
        bertology.load(tmp_path / "m")
    with pytest.warns(UserWarning, match="missing keys"):
        bertology.load(tmp_path / "m", strict=False)
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "architectures": ["BertModel"]}))
    with pytest.raises(bertology.CheckpointError, match=r"unexpected keys \['cls.predictions.bias'"):
        bertology.load(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="no model.safetensors"):
        bertology.load(tmp_path / "m")


def test_pytorch_model_bin_is_read_with_weights_only(bert, tmp_path):
    from safetensors.torch import load_file

    bert.save(tmp_path)
    torch.save(load_file(str(tmp_path / "model.safetensors")), tmp_path / "pytorch_model.bin")
    (tmp_path / "model.safetensors").unlink()
    again = bertology.load(tmp_path)
    ids = torch.randint(0, 99, (1, 6))
    with torch.no_grad():
        torch.testing.assert_close(again(input_ids=ids).logits, bert(input_ids=ids).logits)


@pytest.mark.parametrize("cls", [BertForMaskedLM, AlbertForMaskedLM, RobertaModel, DistilBertModel])
def test_linear_weights_stored_in_bf16_give_autocast_outputs_bit_for_bit(cls):
    torch.manual_seed(0)
    model = cls(cls.config_class(**TINY)).eval()
    ids = torch.randint(5, 99, (2, 7))
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])

    def run():
        out = model(input_ids=ids, attention_mask=mask)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state

    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        before = run()
        model.store_linear_weights()
        after = run()
    assert torch.equal(before, after)
    dtypes = {n: p.dtype for n, p in model.named_parameters()}
    assert any(d == torch.bfloat16 for n, d in dtypes.items() if "embed" not in n and "word" not in n)
    assert all(d == torch.float32 for n, d in dtypes.items() if "norm" in n or "LayerNorm" in n or "word" in n)
