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


@pytest.mark.parametrize("family", ["bert", pytest.param("xlnet", marks=pytest.mark.slow)])
def test_time_budget_ends_the_run_on_the_clock(corpus, tmp_path, family):
    """--time-budget: no step count given, the run stops once its minutes are spent (a step and an
    evaluation past them at most) and says how far it got."""
    args = [
        "pretrain",
        "--family",
        family,
        "--preset",
        "tiny",
        "--corpus",
        str(corpus),
        "--out",
        str(tmp_path),
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
        "0.05",
    ]
    assert main(args) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "loss" in r]
    assert summary["steps"] == steps[-1]["step"] >= 2
    assert summary["tokens"] == summary["steps"] * 8 * 32
    assert summary["train_seconds"] >= 3.0  # 0.05 minutes
    # the run ended at the first step (or its evaluation) that found the budget spent: the step before had time left
    assert steps[-2]["elapsed_s"] < 3.0 <= summary["train_seconds"]
    if len(steps) >= 3:  # (a machine busy enough to fit only two steps in 3 s has no decay to show)
        assert steps[-1]["lr"] < max(r["lr"] for r in steps)  # decayed towards 0 as the time ran out
