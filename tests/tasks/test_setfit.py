"""finetune --method setfit: the pair sampler (lazy, deterministic, balanced), the cosine loss on known
cases, and a tiny run end to end (tuned, early-stopped on dev, saved, reloaded, predicting)."""

import collections
import itertools
import json
import random
import types
from pathlib import Path

import pytest
import torch

from bertology.tasks.finetune import FinetuneOptions, finetune
from bertology.tasks.setfit import cosine_pair_loss, pair_stream, run_pairs

WIKI = Path(__file__).resolve().parents[2] / "data" / "wiki.txt"


# ---- pairs ---------------------------------------------------------------------------------------
def test_pairs_are_a_lazy_generator():
    stream = pair_stream([0, 1] * 500, pairs_per_example=10**12, seed=0)  # 10^15 pairs: only drawn ones exist
    assert isinstance(stream, types.GeneratorType)
    assert len(list(itertools.islice(stream, 5))) == 5


def test_pairs_are_deterministic_from_seed_and_pass():
    labels = [0, 0, 0, 1, 1, 2, 2, 2, 2]
    first = list(pair_stream(labels, 6, seed=7, pass_index=2))
    assert first == list(pair_stream(labels, 6, seed=7, pass_index=2))
    assert first != list(pair_stream(labels, 6, seed=8, pass_index=2))
    assert first != list(pair_stream(labels, 6, seed=7, pass_index=3))


def test_every_anchor_gets_half_positive_half_negative_pairs():
    labels = [0] * 5 + [1] * 3 + [2] * 4  # unequal classes
    k = 8
    pairs = list(pair_stream(labels, k, seed=0))
    assert len(pairs) == len(labels) * k
    positives, negatives = collections.Counter(), collections.Counter()
    for i, j, t in pairs:
        assert t == (1.0 if labels[i] == labels[j] else 0.0)
        assert i != j  # no class of one here: a positive partner is never the anchor itself
        (positives if t == 1.0 else negatives)[i] += 1
    assert all(positives[i] == k // 2 and negatives[i] == k // 2 for i in range(len(labels)))
    # positives and negatives alternate: every aligned batch of 4 has 2 of each
    targets = [t for _, _, t in pairs]
    assert all(sum(targets[s : s + 4]) == 2.0 for s in range(0, len(targets), 4))


def test_odd_counts_balance_within_one_and_partners_cover_the_classes():
    labels = [0, 1, 2, 3] * 25
    pairs = list(pair_stream(labels, 3, seed=1))
    positives = sum(t for _, _, t in pairs)
    assert abs(positives - (len(pairs) - positives)) <= 1
    negative_partners = collections.Counter(labels[j] for i, j, t in pairs if t == 0.0 and labels[i] == 0)
    assert set(negative_partners) == {1, 2, 3}  # drawn from every other class, never the anchor's


def test_a_class_of_one_pairs_with_itself_and_one_label_is_refused():
    pairs = list(pair_stream([0, 1, 1], 2, seed=0))
    assert (0, 0, 1.0) in pairs  # example 0's only positive partner
    with pytest.raises(ValueError, match="at least 2 labels"):
        next(pair_stream([3, 3, 3], 2, seed=0))


def test_a_run_continues_into_the_next_pass_and_ends_mid_pass():
    labels = [0, 1, 0, 1]
    run = list(run_pairs(labels, 2, seed=5, total=12))  # 8 pairs per pass: one pass and a half
    assert run[:8] == list(pair_stream(labels, 2, seed=5, pass_index=0))
    assert run[8:] == list(pair_stream(labels, 2, seed=5, pass_index=1))[:4]


# ---- loss ----------------------------------------------------------------------------------------
def test_cosine_pair_loss_known_values():
    u = torch.tensor([[1.0, 0.0], [1.0, 0.0], [3.0, 4.0]])
    v = torch.tensor([[1.0, 1.0], [1.0, 1.0], [-3.0, -4.0]])
    # cosines 1/√2, 1/√2, -1 against targets 1, 0, 0
    expected = ((1 - 2**-0.5) ** 2 + 0.5 + 1.0) / 3
    assert cosine_pair_loss(u, v, torch.tensor([1.0, 0.0, 0.0])).item() == pytest.approx(expected, abs=1e-6)
    assert cosine_pair_loss(u[:1], 2 * u[:1], torch.tensor([1.0])).item() == pytest.approx(0.0, abs=1e-7)


# ---- end to end ----------------------------------------------------------------------------------
TOPICS = {
    "animals": "cat dog horse sheep goat rabbit mouse tiger lion wolf bear fox".split(),
    "money": "stock bond market price bank loan credit share fund trade cash debt".split(),
    "music": "song guitar piano drum singer band album chord melody rhythm opera choir".split(),
}


def _toy(path, n, seed):
    rng = random.Random(seed)
    lines = ["text\tlabel"]
    for i in range(n):
        label = list(TOPICS)[i % len(TOPICS)]
        a, b = rng.sample(TOPICS[label], 2)
        filler = rng.sample("the a of near with and for from into over".split(), 3)
        lines.append(f"{filler[0]} {a} {filler[1]} {filler[2]} {b}\t{label}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A random 2-layer BERT (no task head) saved with a WordPiece trained on a Wikipedia slice and the topics."""
    from bertology.models import BertConfig, BertForPreTraining
    from bertology.tokenizers import train

    with open(WIKI, encoding="utf-8") as f:
        lines = list(itertools.islice(f, 200)) + [" ".join(words) for words in TOPICS.values()] * 5
    tok = train(lines=lines, family="bert", vocab_size=600, show_progress=False)
    directory = tmp_path_factory.mktemp("tiny")
    torch.manual_seed(0)
    config = BertConfig.preset("tiny", vocab_size=tok.vocab_size, pad_token_id=tok.token_to_id("[PAD]"))
    BertForPreTraining(config).save(directory)
    tok.save(directory / "tokenizer.json")
    return directory


def _options(tmp_path, model, **kw):
    tmp_path.mkdir(parents=True, exist_ok=True)
    base = dict(
        model=str(model),
        task="classify",
        train=str(_toy(tmp_path / "train.tsv", 24, 0)),
        dev=str(_toy(tmp_path / "dev.tsv", 30, 1)),
        out_dir=str(tmp_path / "out"),
        method="setfit",
        pooling="mean",
        pairs_per_example=8,
        epochs=4,
        lr=1e-3,
        batch_size=16,
        max_length=32,
        quiet=True,
        seed=0,
    )
    return FinetuneOptions(**{**base, **kw})


@pytest.mark.integration
def test_setfit_tunes_saves_and_the_pipeline_predicts(tmp_path, tiny_model):
    from bertology import load
    from bertology.tasks.pipeline import Pipeline

    o = _options(tmp_path, tiny_model)
    summary = finetune(o)
    record = summary["setfit"]
    assert summary["method"] == "setfit" and summary["architecture"] == "BertForSequenceClassification"
    assert record["pairs_planned"] == 24 * 8 * 4 and record["steps_planned"] == 48
    assert record["pairs_seen"] == min(24 * 8 * 4, 16 * record["stopped_at"])
    assert record["eval_every"] == 3  # 12 steps per pass, probed every quarter pass
    assert summary["dev"]["accuracy"] == pytest.approx(
        record["best_dev"]
    )  # the kept encoder and head are the best evaluation's
    assert summary["steps"] == record["stopped_at"]

    metrics = [json.loads(line) for line in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    evals = [m for m in metrics if "eval/probe_accuracy" in m]
    assert evals[0]["step"] == 0 and max(e["eval/probe_accuracy"] for e in evals) == record["best_dev"]
    assert record["best_dev"] > evals[0]["eval/probe_accuracy"]  # the pairs taught the random encoder the topics

    pipe = Pipeline.load(tmp_path / "out")
    dev = [line.split("\t") for line in Path(o.dev).read_text().splitlines()[1:]]
    predicted = [p.label for p in pipe([text for text, _ in dev])]
    assert sum(p == gold for p, (_, gold) in zip(predicted, dev)) / len(dev) == pytest.approx(
        summary["dev"]["accuracy"]
    )

    tuned, before = load(tmp_path / "out"), load(tiny_model)
    assert not torch.equal(
        tuned.backbone.encoder.layers[0].ffn.up.weight, before.backbone.encoder.layers[0].ffn.up.weight
    )


@pytest.mark.integration
def test_same_seed_same_model_and_the_summary_has_the_probes_fields(tmp_path, tiny_model):
    from safetensors.torch import load_file

    first = finetune(_options(tmp_path / "a", tiny_model, epochs=1, dev=None))
    second = finetune(_options(tmp_path / "b", tiny_model, epochs=1, dev=None))
    a, b = (load_file(tmp_path / d / "out" / "model.safetensors") for d in ("a", "b"))
    assert all(torch.equal(a[name], b[name]) for name in a)
    assert first["setfit"] == second["setfit"] and first["setfit"]["pairs_seen"] == 24 * 8
    assert first["setfit"]["early_stopped"] is False and first["setfit"]["best_dev"] is None

    probe = finetune(
        _options(tmp_path / "c", tiny_model, method="probe", dev=None, pairs_per_example=20)
    )  # its default: no pairs
    assert set(first) - set(probe) == {"setfit", "best_step"} and set(probe) <= set(first)


def test_setfit_needs_mean_pooling_and_takes_no_head_rate(tmp_path, tiny_model):
    with pytest.raises(ValueError, match="--method setfit .* --pooling mean"):
        finetune(_options(tmp_path, tiny_model, pooling="cls"))
    with pytest.raises(ValueError, match="--head-lr"):
        finetune(_options(tmp_path, tiny_model, head_lr=1e-3))
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_the_cli_takes_pairs_per_example(tmp_path, tiny_model):
    from bertology.cli import main

    o = _options(tmp_path, tiny_model, epochs=0.5, dev=None)
    args = ["finetune", "--model", o.model, "--task", "classify", "--train", o.train, "--out", o.out_dir]
    args += ["--method", "setfit", "--pooling", "mean", "--pairs-per-example", "4", "--epochs", "0.5", "--quiet"]
    assert main(args) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["setfit"]["pairs_seen"] == 24 * 4 // 2
