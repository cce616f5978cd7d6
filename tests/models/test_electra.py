"""ELECTRA: every head against transformers with token types and E ≠ H, the pretraining pair's
sharing and its two directories, and the errors a user meets."""

import pytest
import torch
import transformers

import bertology
from bertology.models import ARCHITECTURES, CheckpointError, ElectraPair, config_from_dict, load
from bertology.models.config import ElectraConfig
from bertology.models.electra import generator_config

from conftest import hf_config, padded_batch

HEADS = sorted(n for n in ARCHITECTURES if n.startswith("Electra") and hasattr(transformers, n))


def _inputs(name, pad_id):
    shape = (2, 3, 9) if "MultipleChoice" in name else (2, 9)
    ids, mask = padded_batch(shape, pad_id)
    types = torch.zeros_like(ids)
    types[..., 4:] = 1  # a second segment
    return dict(input_ids=ids, attention_mask=mask, token_type_ids=types, output_hidden_states=True)


@pytest.mark.parametrize("embedding_size", [20, 48, 64], ids=["E<H", "E=H", "E>H"])
@pytest.mark.parametrize("name", HEADS)
def test_every_head_equals_transformers_with_token_types(name, embedding_size, tmp_path):
    torch.manual_seed(0)
    config = hf_config("electra", embedding_size=embedding_size)
    if "QuestionAnswering" not in name:  # transformers' span head has num_labels outputs: 2
        config.num_labels = 3
    reference = getattr(transformers, name)(config).eval()
    reference.save_pretrained(tmp_path)
    ours = load(tmp_path)
    getattr(ours, "backbone", ours).skip_padding = False  # padded positions computed, as transformers does
    assert (getattr(ours, "backbone", ours).encoder.project is None) == (embedding_size == 48)
    kwargs = _inputs(name, config.pad_token_id)
    with torch.no_grad():
        a, b = reference(**kwargs), ours(**kwargs)
    fields = ["logits"] if hasattr(b, "logits") and b.logits is not None else ["start_logits", "end_logits"]
    if name == "ElectraModel":
        fields = ["last_hidden_state"]
    for f in fields:
        assert (getattr(a, f) - getattr(b, f)).abs().max() <= 1e-5, f
    for x, y in zip(a.hidden_states, b.hidden_states):
        assert (x - y).abs().max() <= 1e-5


def test_discriminator_loss_is_transformers_bce_over_real_tokens(tmp_path):
    torch.manual_seed(0)
    reference = transformers.ElectraForPreTraining(hf_config("electra")).eval()
    reference.save_pretrained(tmp_path)
    ours = load(tmp_path)
    kwargs = _inputs("ElectraForPreTraining", 0)
    del kwargs["output_hidden_states"]
    labels = torch.randint(0, 2, kwargs["input_ids"].shape, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert torch.allclose(reference(**kwargs, labels=labels).loss, ours(**kwargs, labels=labels).loss, atol=1e-6)


def test_presets_are_googles_discriminators():
    small = ElectraConfig.preset("small")
    assert (small.embedding_size, small.hidden_size, small.num_hidden_layers, small.num_attention_heads) == (
        128,
        256,
        12,
        4,
    )
    tiny, bert_tiny = ElectraConfig.preset("tiny"), bertology.models.BertConfig.preset("tiny")
    assert (tiny.hidden_size, tiny.num_hidden_layers, tiny.embedding_size) == (
        bert_tiny.hidden_size,
        bert_tiny.num_hidden_layers,
        128,
    )


def test_generator_is_scaled_as_google_research_electra():
    g = generator_config(ElectraConfig.preset("small"), 0.25)
    assert (g.hidden_size, g.num_attention_heads, g.intermediate_size, g.embedding_size, g.num_hidden_layers) == (
        64,
        1,
        256,
        128,
        12,
    )
    for bad in (0, 1.5, -0.1, True):
        with pytest.raises(ValueError, match="--generator-size"):
            generator_config(ElectraConfig.preset("small"), bad)


def _pair(size=0.5):
    config = ElectraConfig.preset("tiny", vocab_size=99, embedding_size=32, max_position_embeddings=16)
    torch.manual_seed(0)
    return ElectraPair(config, size)


def test_pair_shares_embeddings_and_saves_two_transformers_directories(tmp_path):
    pair = _pair()
    d, g = pair.discriminator.backbone, pair.generator.backbone
    assert d.embeddings is g.embeddings and pair.generator.mlm.decoder.weight is d.embeddings.word.weight
    assert g.encoder.project is not None and d.encoder.project is not None  # 32 → 64 and 32 → 128
    pair.save(tmp_path)
    disc = transformers.ElectraForPreTraining.from_pretrained(tmp_path).eval()
    gen, info = transformers.ElectraForMaskedLM.from_pretrained(tmp_path / "generator", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert transformers.AutoModel.from_pretrained(tmp_path).config.hidden_size == 128
    ids, mask = padded_batch((2, 9), 0)
    pair.eval()
    with torch.no_grad():
        assert (disc(ids, attention_mask=mask).logits - pair.discriminator(ids, mask).logits)[
            mask.bool()
        ].abs().max() < 1e-5
        assert (gen.eval()(ids, attention_mask=mask).logits - pair.generator(ids, mask).logits)[
            mask.bool()
        ].abs().max() < 1e-5
    again = _pair()
    again.load_checkpoint(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(pair.state_dict().values(), again.state_dict().values()))


def test_checkpoint_without_generator_and_discriminator_as_mlm_are_named(tmp_path):
    pair = _pair()
    pair.discriminator.save(tmp_path)
    with pytest.raises(FileNotFoundError, match="generator"):
        _pair().load_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="discriminator.*generator/"):
        load(tmp_path, architecture="ElectraForMaskedLM")
    pair.save(tmp_path)
    with pytest.raises(ValueError, match="--generator-size 0.25"):
        _pair(0.25).load_checkpoint(tmp_path)


def test_config_round_trips_through_transformers():
    config = ElectraConfig.preset("small")
    theirs = transformers.ElectraConfig(**{k: v for k, v in config.to_dict().items() if k not in ("model_type",)})
    assert config_from_dict(theirs.to_dict()).embedding_size == 128
