"""EncoderBaseline: a frozen encoder's unit-length mean-pooled embeddings + the shared logistic regression."""

import pytest
import torch

from bertology.models import BertConfig, BertModel
from bertology.tasks.base import Example
from bertology.tasks.baseline import EncoderBaseline


@pytest.fixture(scope="module")
def encoder(minilm_tokenizer):
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=minilm_tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    return BertModel(config).eval()


def test_embeddings_are_the_unit_mean_over_real_tokens(encoder, minilm_tokenizer):
    texts = ["a free strategy game", "a library for parsing xml documents in c with bindings"]
    baseline = EncoderBaseline(encoder, minilm_tokenizer, batch_size=2)
    got = baseline.embed(texts)
    for text, row in zip(texts, got):  # each text alone, no padding: the plain mean of its states
        ids = torch.tensor([minilm_tokenizer.encode(text).ids])
        with torch.no_grad():
            h = encoder(input_ids=ids).last_hidden_state[0]
        mean = h.mean(0)
        assert torch.allclose(row, mean / mean.norm(), atol=1e-5)
    assert set(baseline.cache) == set(texts)
    assert torch.equal(baseline.embed(texts[::-1]), got.flip(0))  # from the cache, in the order asked


def test_fits_subsets_and_refuses_pairs(encoder, minilm_tokenizer):
    train = [
        Example(t, label=label)
        for t, label in [
            ("game", "games"),
            ("strategy game", "games"),
            ("xml parser", "libs"),
            ("parsing library", "libs"),
        ]
    ]
    baseline = EncoderBaseline(encoder, minilm_tokenizer, l2=1e-4).fit(train)
    assert baseline.score(train)["accuracy"] == 1.0  # four points in 32 dimensions are separable
    with pytest.raises(ValueError, match="pairs"):
        baseline.fit([Example("a", "b", label="x"), Example("c", "d", label="y")])
