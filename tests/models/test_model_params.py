"""Parameter counts: the published numbers, transformers' own count, ALBERT's factorization."""

import pytest
import torch
import transformers

from bertology.cli import main
from bertology.models import AlbertConfig, BertConfig
from bertology.models.params import count, resolve_config

PUBLISHED = {
    "bert-base": 109_482_240,
    "bert-large": 335_141_888,
    "roberta-base": 124_645_632,
    "roberta-large": 355_359_744,
    "albert-base": 11_683_584,
    "albert-large": 17_683_968,
    "albert-xlarge": 58_724_864,
    "albert-xxlarge": 222_595_584,
    "distilbert-base": 66_362_880,
    "electra-small": 13_483_008,
    "electra-base": 108_891_648,
    "electra-large": 334_092_288,
}


@pytest.mark.parametrize("preset", sorted(PUBLISHED))
def test_backbone_counts_equal_published_and_transformers(preset):
    _, config = resolve_config(preset)
    ours = count(config, preset).total
    assert ours == PUBLISHED[preset]
    hf_config = transformers.AutoConfig.for_model(
        config.model_type,
        **{k: v for k, v in config.to_dict().items() if k not in ("model_type", "id2label", "label2id")},
    )
    with torch.device("meta"):
        reference = transformers.AutoModel.from_config(hf_config)
    assert sum(p.numel() for p in reference.parameters()) == ours


def test_albert_factorization_example():
    bert = count(BertConfig(vocab_size=30_000, hidden_size=1024, num_attention_heads=16))
    albert = count(AlbertConfig(vocab_size=30_000, hidden_size=1024, num_attention_heads=16, embedding_size=128))
    assert bert.embeddings["word"] == 30_720_000
    projection_weight = 128 * 1024  # the E→H matrix, without its bias
    assert albert.embeddings["word"] + projection_weight == 3_971_072


def test_sharing_saves_parameters_not_compute():
    albert_large, bert_base = count(resolve_config("albert-large")[1]), count(resolve_config("bert-base")[1])
    assert albert_large.total < bert_base.total / 6
    assert albert_large.flops_per_token["total"] > 2.5 * bert_base.flops_per_token["total"]
    assert len(albert_large.layer_sizes) == 1 and albert_large.applied_layers == 24


def test_flops_grow_with_sequence_length():
    config = resolve_config("bert-base")[1]
    short, long = count(config, seq_length=128), count(config, seq_length=512)
    assert long.flops_per_token["encoder"] - short.flops_per_token["encoder"] == 12 * 4 * 384 * 768


def test_params_command(capsys, tmp_path):
    assert main(["params", "albert-base", "bert-base"]) == 0
    out = capsys.readouterr().out
    assert "11,683,584" in out and "109,482,240" in out and "projection E→H" in out and "FLOPs per token" in out
    BertConfig.preset("tiny").save(tmp_path / "config.json")
    assert main(["params", str(tmp_path)]) == 0
    assert main(["params", "bert-enormous"]) == 2
    assert "unknown bert preset 'enormous'" in capsys.readouterr().err
