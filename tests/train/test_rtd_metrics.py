"""ELECTRA's held-out metrics (google-research/electra's metric_fn names): the AUC by the rank formula
against a hand computation and two oracles, precision / recall, and the evaluation's numbers against
what its batches say."""

import math

import pytest
import torch
from sklearn.metrics import roc_auc_score

from bertology.data.masker import Masker
from bertology.data.recipe import Recipe
from bertology.models import ElectraPair
from bertology.models.config import ElectraConfig
from bertology.nn import set_dropout
from bertology.train.rtd import (
    ReplacedTokenDetectionObjective,
    detect_replacements,
    evaluate_replaced_token_detection,
    precision_recall,
    roc_auc,
)

MASK = 4


def test_auc_equals_the_hand_computation_with_ties():
    # positives score 0.9, 0.8, 0.1; negatives 0.8, 0.3. Pairs (positive, negative):
    # 0.9>0.8 1, 0.9>0.3 1, 0.8=0.8 ½, 0.8>0.3 1, 0.1<0.8 0, 0.1<0.3 0 → 3.5 / 6
    scores = torch.tensor([0.9, 0.8, 0.8, 0.3, 0.1])
    labels = torch.tensor([1, 0, 1, 0, 1])
    assert roc_auc(scores, labels) == pytest.approx(3.5 / 6, abs=1e-12)


def test_auc_equals_pair_counting_and_sklearn_on_heavily_tied_scores():
    g = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 7, (300,), generator=g).float()  # 7 values: ties everywhere
    labels = (torch.rand(300, generator=g) < 0.3 + 0.05 * scores).long()
    pos, neg = scores[labels == 1], scores[labels == 0]
    pairs = (pos[:, None] > neg[None, :]).double() + 0.5 * (pos[:, None] == neg[None, :]).double()
    assert roc_auc(scores, labels) == pytest.approx(float(pairs.mean()), abs=1e-12)
    assert roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels.numpy(), scores.numpy()), abs=1e-12)


def test_auc_extremes_and_an_undefined_ranking():
    labels = torch.tensor([0, 0, 1, 1])
    assert roc_auc(torch.tensor([1.0, 2.0, 3.0, 4.0]), labels) == 1.0
    assert roc_auc(torch.tensor([4.0, 3.0, 2.0, 1.0]), labels) == 0.0
    assert roc_auc(torch.zeros(4), labels) == 0.5  # every score tied: chance
    assert math.isnan(roc_auc(torch.tensor([1.0, 2.0]), torch.tensor([0, 0])))


def test_precision_and_recall_of_replaced():
    predicted = torch.tensor([1, 1, 1, 0, 0, 0, 1]).bool()
    labels = torch.tensor([1, 0, 1, 1, 0, 0, 0]).bool()
    assert precision_recall(predicted, labels) == (2 / 4, 2 / 3)
    assert precision_recall(torch.zeros(4, dtype=torch.bool), labels[:4]) == (0.0, 0.0)  # nothing said replaced


# ---- the evaluation ----------------------------------------------------------------------------------


def _pair(seed=0):
    config = ElectraConfig.preset(
        "tiny",
        vocab_size=99,
        hidden_size=32,
        num_attention_heads=2,
        intermediate_size=64,
        embedding_size=16,
        max_position_embeddings=16,
    )
    torch.manual_seed(seed)
    return set_dropout(ElectraPair(config, 0.5), 0.0).eval()


def _batch(seed=0, n=8, T=12):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 99, (n, T), generator=g)
    ids[:, 0], ids[:, -1] = 1, 2
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    rows = {"input_ids": ids.masked_fill(mask == 0, 0), "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}
    recipe = Recipe.resolve("electra", max_seq_length=T, mlm_probability=0.5, max_predictions=None)
    masker = Masker(recipe, MASK, torch.tensor([0, 1, 2, 3, MASK]), torch.arange(5, 99))
    return masker(rows, seed=seed, step=0, instances=None)


def test_evaluation_equals_the_metrics_of_its_batches_taken_together():
    pair, batches = _pair(), [_batch(0), _batch(1)]
    got = evaluate_replaced_token_detection(pair, batches)
    with torch.no_grad():
        d = [detect_replacements(pair, b) for b in batches]
    logits = torch.cat([x.disc_logits[x.real] for x in d])
    replaced = torch.cat([x.replaced[x.real] for x in d])
    sampled, targets = torch.cat([x.sampled for x in d]), torch.cat([x.targets for x in d])
    argmax = torch.cat([x.gen_logits.argmax(-1) for x in d])
    said = logits > 0
    assert got["disc_auc"] == pytest.approx(roc_auc_score(replaced.numpy(), logits.numpy()), abs=1e-9)
    assert got["disc_accuracy"] == pytest.approx(float((said == replaced).double().mean()), abs=1e-12)
    assert got["disc_precision"] == pytest.approx(int((said & replaced).sum()) / max(1, int(said.sum())), abs=1e-12)
    assert got["disc_recall"] == pytest.approx(int((said & replaced).sum()) / int(replaced.sum()), abs=1e-12)
    assert got["sampled_masked_lm_accuracy"] == pytest.approx(float((sampled == targets).double().mean()), abs=1e-12)
    assert got["masked_lm_accuracy"] == pytest.approx(float((argmax == targets).double().mean()), abs=1e-12)
    assert got["replaced_share"] == pytest.approx(float(replaced.double().mean()), abs=1e-12)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, replaced.float())
    assert got["disc_loss"] == pytest.approx(float(bce), rel=1e-5)
    assert 0 < got["replaced_share"] < 1 and 0 < got["disc_auc"] < 1


def test_a_generator_sure_of_the_right_token_is_always_right_when_sampled():
    pair, batch = _pair(), _batch(2)
    masked = batch["labels"] != -100

    def certain(h, labels=None, sparse=False):  # the generator's head, replaced by one that knows the answer
        logits = torch.full((int(masked.sum()), 99), -1e4)
        logits[torch.arange(len(logits)), batch["labels"][masked]] = 1e4
        return logits, torch.tensor(0.0)

    pair.generator.predict_tokens = certain
    got = evaluate_replaced_token_detection(pair, [batch])
    assert got["masked_lm_accuracy"] == got["sampled_masked_lm_accuracy"] == 1.0
    assert got["replaced_share"] == 0.0 and got["disc_recall"] == 0.0
    assert math.isnan(got["disc_auc"])  # nothing replaced: no ranking to score
    # at a temperature that flattens the gap of 2e4 to 0.2, the samples are nearly uniform over 99 tokens
    hot = evaluate_replaced_token_detection(pair, [batch], temperature=1e5)
    assert hot["sampled_masked_lm_accuracy"] < 0.2 and hot["replaced_share"] > 0.3


def test_the_objective_samples_at_its_temperature_and_refuses_a_bad_one():
    pair, batch = _pair(), _batch(3)
    objective = ReplacedTokenDetectionObjective(temperature=1e-4)  # nearly the argmax
    with torch.no_grad():
        d = detect_replacements(pair, batch, temperature=1e-4)
    assert torch.equal(d.sampled, d.gen_logits.argmax(-1))
    objective(pair, batch, objective.totals(batch))  # runs at that temperature
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="temperature"):
            ReplacedTokenDetectionObjective(temperature=bad)


@pytest.mark.parametrize("cut", [1, 3, 7])
def test_evaluation_does_not_depend_on_how_the_rows_are_batched(cut):
    pair, batch = _pair(), _batch(4)
    whole = evaluate_replaced_token_detection(pair, [batch])
    parts = evaluate_replaced_token_detection(
        pair, [{k: v[:cut] for k, v in batch.items()}, {k: v[cut:] for k, v in batch.items()}]
    )
    for key in ("disc_auc", "disc_accuracy", "disc_loss", "sampled_masked_lm_accuracy", "masked_lm_loss"):
        assert parts[key] == pytest.approx(whole[key], abs=1e-5), key


@pytest.mark.parametrize("flag", ["discriminator_weight", "sampling_temperature"])
def test_electra_options_are_refused_for_another_objective_before_anything_is_written(flag, tmp_path):
    from bertology.train.pretrain import PretrainOptions, pretrain

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one line of text\nanother line\n\nand a second document\n", encoding="utf-8")
    options = PretrainOptions(family="bert", corpus=[str(corpus)], out_dir=str(tmp_path / "run"), **{flag: 2.0})
    with pytest.raises(ValueError, match=f"--{flag.replace('_', '-')} is an ELECTRA option"):
        pretrain(options)
    assert not (tmp_path / "run").exists()
