"""`bertology pretrain` end to end for the three recipes, on a slice of the shipped corpus."""

import json
from pathlib import Path

import pytest
import torch
import transformers

import bertology
from bertology.cli import main

pytestmark = pytest.mark.integration  # whole jobs: `make test-integration`

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The first ~600 kB of data/wiki.txt, cut at a document boundary."""
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    cut = text.index("\n\n", 600_000)
    path = tmp_path_factory.mktemp("corpus") / "wiki-head.txt"
    path.write_text(text[: cut + 1], encoding="utf-8")
    return path


def _run(corpus, out, family, *extra):
    args = [
        "pretrain",
        "--family",
        family,
        "--preset",
        "tiny",
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--vocab-size",
        "1500",
        "--steps",
        "6",
        "--batch-size",
        "8",
        "--max-length",
        "64",
        "--warmup",
        "2",
        "--log-every",
        "1",
        "--eval-every",
        "3",
        "--heldout",
        "3",
        *(["--dupe-factor", "2"] if family != "xlnet" else []),  # XLNet reads its streams once a pass
        "--quiet",
        *extra,
    ]
    return main(args)


def _losses(out):
    records = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    return [r["loss"] for r in records if "loss" in r]


@pytest.mark.parametrize(
    "family,auto",
    [("bert", "AutoModelForPreTraining"), ("roberta", "AutoModelForMaskedLM"), ("albert", "AutoModelForPreTraining")],
)
def test_pretrain_writes_a_model_both_libraries_load(corpus, tmp_path, family, auto, capsys):
    assert _run(corpus, tmp_path, family) == 0
    assert "held-out MLM accuracy" in capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["objective"] == {"bert": "mlm+nsp", "roberta": "mlm", "albert": "mlm+sop"}[family]
    assert len(_losses(tmp_path)) == 6
    evals = [
        json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines() if "eval/perplexity" in line
    ]
    assert [e["step"] for e in evals] == [3, 6]

    ours = bertology.load(tmp_path)
    theirs = getattr(transformers, auto).from_pretrained(tmp_path).eval()
    tok = bertology.Tokenizer.load(tmp_path / "tokenizer.json")
    import tokenizers

    reference_tok = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    text = "Anarchism is a political philosophy."
    assert tok.encode(text).ids == reference_tok.encode(text).ids
    batch = tok.encode_batch([text, "The state is undesirable."], padding=True, return_tensors="pt")
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    with torch.no_grad():
        a = ours(**inputs)
        b = theirs(**inputs)
    logits = "prediction_logits" if auto == "AutoModelForPreTraining" else "logits"
    keep = inputs["attention_mask"].bool()
    assert (getattr(a, logits)[keep] - getattr(b, logits)[keep]).abs().max() < 1e-4


def test_resume_continues_exactly(corpus, tmp_path):
    assert _run(corpus, tmp_path / "full", "bert") == 0
    assert _run(corpus, tmp_path / "split", "bert", "--stop-at", "3") == 130
    assert _run(corpus, tmp_path / "split", "bert", "--resume") == 0
    assert _losses(tmp_path / "split") == _losses(tmp_path / "full")


def test_bad_input(corpus, tmp_path, capsys):
    assert _run(tmp_path / "missing.txt", tmp_path / "x", "bert") == 2
    assert "missing.txt: no such file" in capsys.readouterr().err
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("One sentence.\nTwo sentences.\n\nAnother document here.\nAnd more.\n\n" * 3)
    assert _run(tiny, tmp_path / "y", "bert", "--tokenizer", str(ROOT / "tests" / "missing")) == 2
    assert _run(corpus, tmp_path / "z", "bert", "--objective", "mlm+sop") == 2
    assert "no mlm+sop head" in capsys.readouterr().err


@pytest.mark.slow
def test_compiled_blocks_train_like_eager_ones(corpus, tmp_path):
    """--compile: the same losses as eager within float noise (no dropout, so no random streams differ)."""
    assert _run(corpus, tmp_path / "eager", "roberta", "--dropout", "0", "--steps", "3") == 0
    assert _run(corpus, tmp_path / "compiled", "roberta", "--dropout", "0", "--steps", "3", "--compile") == 0
    assert _losses(tmp_path / "compiled") == pytest.approx(_losses(tmp_path / "eager"), rel=1e-3)
    assert (
        bertology.load(tmp_path / "compiled").state_dict().keys()
        == bertology.load(tmp_path / "eager").state_dict().keys()
    )


def _budgeted_args(corpus, out, family, minutes):
    return [
        "pretrain",
        "--family",
        family,
        "--preset",
        "tiny",
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--vocab-size",
        "1500",
        "--batch-size",
        "8",
        "--max-length",
        "32",
        "--log-every",
        "1",
        "--eval-every",
        "5",
        "--heldout",
        "3",
        *(["--dupe-factor", "1"] if family != "xlnet" else []),
        "--quiet",
        "--time-budget",
        str(minutes),
    ]


@pytest.mark.parametrize("family", ["bert", pytest.param("xlnet", marks=pytest.mark.slow)])
def test_time_budget_ends_the_run_on_the_clock(corpus, tmp_path, family):
    """--time-budget bounds the whole command: no step count given, the Trainer trains what setup left, less
    the end's measured reserve (the final evaluation, checkpoint and model), and the schedule ends with it."""
    assert main(_budgeted_args(corpus, tmp_path, family, 0.2)) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "loss" in r]
    assert summary["steps"] == steps[-1]["step"] >= 2
    assert summary["tokens"] == summary["steps"] * 8 * 32
    # the Trainer's seconds are what setup left of the 12, less the final checkpoint and model kept for the end
    assert 0 < summary["setup_seconds"] and summary["train_seconds"] < 12.0 - summary["setup_seconds"]
    assert summary["command_seconds"] >= summary["setup_seconds"] + summary["train_seconds"]
    first = records[0]  # the evaluation timed before the first step
    assert first["step"] == 0 and any(k.startswith("eval/") for k in first) and "loss" not in first
    if len(steps) >= 3:  # (a machine busy enough to fit only two steps has no decay to show)
        assert steps[-1]["lr"] < max(r["lr"] for r in steps)  # decayed towards 0 as the time ran out


def test_a_time_budget_setup_spends_is_refused_before_training(corpus, tmp_path, capsys):
    """Setup (reading, the tokenizer, the instances) spent the 0.06 s: nothing is trained, and no model is
    written as if it had been; the message says so and how to go on."""
    assert main(_budgeted_args(corpus, tmp_path, "bert", 0.001)) == 2
    err = capsys.readouterr().err
    assert "the time budget (0.1 s) was spent before training began" in err and "Raise --time-budget" in err
    assert not (tmp_path / "model.safetensors").exists() and not (tmp_path / "summary.json").exists()
