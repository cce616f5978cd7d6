"""ELECTRA's pretraining: the masker's choice, the objective's loss and gradients, accumulation, and
the whole job from the CLI (resume, both directories, bad input)."""

import json
from pathlib import Path

import pytest
import torch

import bertology
from bertology.cli import main
from bertology.data.masker import Masker
from bertology.data.recipe import Recipe
from bertology.models import ElectraPair
from bertology.models.config import ElectraConfig
from bertology.nn import set_dropout
from bertology.train.rtd import ReplacedTokenDetectionObjective, sample_tokens

from helpers import single_and_two_ranks, wiki_head

MASK = 4


def _rows(n=6, T=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 99, (n, T), generator=g)
    ids[:, 0], ids[:, -1] = 1, 2
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    return {"input_ids": ids.masked_fill(mask == 0, 0), "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def _masker(p=0.5):
    recipe = Recipe.resolve("electra", max_seq_length=12, mlm_probability=p, max_predictions=None)
    return Masker(recipe, MASK, torch.tensor([0, 1, 2, 3, MASK]), torch.arange(5, 99))


def test_rtd_masking_is_electras_no_random_tokens_and_draws_keyed_by_step():
    rows = _rows(64, 32)
    a = _masker()(rows, seed=0, step=3, instances=None)
    masked = a["labels"] != -100
    changed = a["input_ids"] != rows["input_ids"]
    assert torch.equal(changed, masked & (a["input_ids"] == MASK))  # masked → [MASK] or unchanged, never random
    share = float((a["input_ids"][masked] == MASK).float().mean())
    assert 0.8 < share < 0.9  # 85%
    assert a["replacement_draws"].shape == rows["input_ids"].shape
    b = _masker()(rows, seed=0, step=3, instances=None)
    c = _masker()(rows, seed=0, step=4, instances=None)
    assert torch.equal(a["replacement_draws"], b["replacement_draws"]) and not torch.equal(
        a["input_ids"], c["input_ids"]
    )


def test_sampling_inverts_the_softmax():
    logits = torch.log(torch.tensor([[0.1, 0.6, 0.3]])).expand(30_000, 3)
    draws = torch.rand(30_000, generator=torch.Generator().manual_seed(0))
    counts = torch.bincount(sample_tokens(logits, draws), minlength=3) / 30_000
    assert torch.allclose(counts, torch.tensor([0.1, 0.6, 0.3]), atol=0.01)


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
    return set_dropout(ElectraPair(config, 0.5), 0.0)


def _batch(seed=0):
    return _masker()(_rows(seed=seed), seed=seed, step=0, instances=None)


def test_loss_is_generator_mlm_plus_50_discriminator_bce_and_the_sample_carries_no_gradient():
    pair, batch = _pair(), _batch()
    objective = ReplacedTokenDetectionObjective()
    loss, m = objective(pair, batch, objective.totals(batch))
    assert torch.allclose(loss, m["generator_mlm_loss"] + 50 * m["discriminator_loss"])
    real = batch["attention_mask"].sum()
    assert 0 < float(m["replaced_share"]) <= float((batch["labels"] != -100).sum() / real)
    loss.backward()
    with_disc = {n: p.grad.clone() for n, p in pair.generator.named_parameters() if "embeddings" not in n}
    pair.zero_grad()
    gen_only = ReplacedTokenDetectionObjective(discriminator_weight=0.0)
    gen_only(pair, batch, objective.totals(batch))[0].backward()
    for n, p in pair.generator.named_parameters():  # the generator's own weights learn from its MLM alone
        if "embeddings" not in n:
            assert torch.allclose(with_disc[n], p.grad, atol=1e-6), n
    assert pair.discriminator.backbone.embeddings.word.weight.grad is not None


def test_a_sample_equal_to_the_original_counts_as_original():
    pair, batch = _pair(), _batch()
    with torch.no_grad():  # a generator that is sure of the right answer: nothing is replaced
        pair.generator.mlm.bias.zero_()
        pair.generator.mlm.decoder.weight.mul_(0)
    masked = batch["labels"] != -100
    right = torch.full((99,), -1e4)

    def certain(h, labels=None, sparse=False):
        logits = right.expand(int(masked.sum()), 99).clone()
        logits[torch.arange(len(logits)), batch["labels"][masked]] = 1e4
        return logits, torch.tensor(0.0, requires_grad=True)

    pair.generator.predict_tokens = certain
    objective = ReplacedTokenDetectionObjective()
    _, m = objective(pair, batch, objective.totals(batch))
    assert float(m["replaced_share"]) == 0.0


def test_two_micro_batches_give_the_whole_batch_gradient():
    batch = _batch(1)
    objective = ReplacedTokenDetectionObjective()
    totals = objective.totals(batch)
    whole = _pair()
    objective(whole, batch, totals)[0].backward()
    split = _pair()
    for half in (slice(0, 3), slice(3, 6)):
        objective(split, {k: v[half] for k, v in batch.items()}, totals)[0].backward()
    for (n, p), q in zip(whole.named_parameters(), split.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-5), n


# ---- the job --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return wiki_head(tmp_path_factory.mktemp("corpus") / "wiki-head.txt", 300_000)


def _run(corpus, out, *extra):
    return main(
        [
            "pretrain",
            "--family",
            "electra",
            "--preset",
            "tiny",
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            "--vocab-size",
            "1000",
            "--steps",
            "6",
            "--batch-size",
            "8",
            "--max-length",
            "32",
            "--warmup",
            "2",
            "--log-every",
            "1",
            "--eval-every",
            "3",
            "--heldout",
            "3",
            "--quiet",
            *extra,
        ]
    )


def _metrics(out):
    return [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.integration
def test_pretrain_saves_both_models_transformers_loads_and_resume_is_exact(corpus, tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    assert _run(corpus, tmp_path / "full", "--generator-size", "0.5") == 0
    assert "discriminator accuracy" in capsys.readouterr().out
    lines = _metrics(tmp_path / "full")
    assert {"generator_mlm_accuracy", "discriminator_accuracy", "replaced_share"} <= lines[0].keys()
    disc = transformers.ElectraForPreTraining.from_pretrained(tmp_path / "full")
    gen = transformers.ElectraForMaskedLM.from_pretrained(tmp_path / "full" / "generator")
    assert gen.config.hidden_size == disc.config.hidden_size // 2
    assert torch.equal(gen.electra.embeddings.word_embeddings.weight, disc.electra.embeddings.word_embeddings.weight)
    assert type(bertology.load(tmp_path / "full")).__name__ == "ElectraForPreTraining"

    assert _run(corpus, tmp_path / "split", "--generator-size", "0.5", "--stop-at", "3") == 130
    assert _run(corpus, tmp_path / "split", "--generator-size", "0.5", "--resume") == 0
    assert [r.get("loss") for r in _metrics(tmp_path / "split")] == [r.get("loss") for r in lines]


@pytest.mark.integration
def test_bad_input_is_named_and_writes_nothing(corpus, tmp_path, capsys):
    for args, message in (
        (["--generator-size", "0"], "--generator-size"),
        (["--generator-size", "1.5"], "--generator-size"),
        (["--objective", "mlm+nsp", "--packing", "pairs"], "electra has no mlm+nsp head"),
    ):
        assert _run(corpus, tmp_path / "x", *args) == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / "x").exists()
    assert (
        main(
            [
                "pretrain",
                "--family",
                "bert",
                "--corpus",
                str(corpus),
                "--out",
                str(tmp_path / "y"),
                "--generator-size",
                "0.5",
            ]
        )
        == 2
    )
    assert "ELECTRA option" in capsys.readouterr().err and not (tmp_path / "y").exists()
    assert _run(corpus, tmp_path / "z", "--stop-at", "3") == 130
    checkpoint = sorted((tmp_path / "z" / "checkpoints").iterdir())[-1]
    import shutil

    shutil.rmtree(checkpoint / "generator")
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "z").rglob("*"))
    assert _run(corpus, tmp_path / "z", "--resume") == 2
    assert "generator" in capsys.readouterr().err
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "z").rglob("*")) == before


@pytest.mark.integration
def test_two_processes_equal_one(corpus, tmp_path):
    """torchrun with two ranks: the same losses and final weights as one process (the generator's
    samples are drawn from the global batch's draws, whatever rank holds a row)."""
    args = [
        "pretrain",
        "--family",
        "electra",
        "--preset",
        "tiny",
        "--corpus",
        str(corpus),
        "--vocab-size",
        "600",
        "--steps",
        "3",
        "--batch-size",
        "4",
        "--max-length",
        "32",
        "--warmup",
        "1",
        "--heldout",
        "2",
        "--log-every",
        "1",
        "--dropout",
        "0",
        "--quiet",
    ]
    single_and_two_ranks(args, tmp_path)
    a, b = ([r["loss"] for r in _metrics(tmp_path / d) if "loss" in r] for d in ("single", "ddp"))
    assert len(a) == 3 and a == pytest.approx(b, abs=1e-4)
    for sub in ("", "generator"):
        x, y = (bertology.load(tmp_path / d / sub) for d in ("single", "ddp"))
        for (name, p), q in zip(x.named_parameters(), y.parameters()):
            assert (p - q).abs().max() < 1e-4, name
