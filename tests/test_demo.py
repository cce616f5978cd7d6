"""`bertology demo --quick` runs end to end: every stage, every table row and plot, the label
curve with its intervals, and a resume that reuses every stage."""

import json
import re
from pathlib import Path

import pytest

from bertology.cli import main
from bertology.demo.curve import slug, twin
from bertology.tasks.grid import GridResult

pytestmark = pytest.mark.integration  # whole jobs: `make test-integration`

TEST = Path(__file__).parents[1] / "data" / "debian-sections" / "test.tsv"
FAMILIES = ("bert", "roberta", "albert", "xlnet", "electra")
MODELS = (*FAMILIES, "minilm→tiny")
REFERENCES = ("bag-of-words", "word2vec average", "MiniLM embeddings (frozen)")
PLOTS = ("pretraining.png", "label-curve.png", "parameters.png", *(f"attention-{f}.png" for f in FAMILIES))


def test_demo_quick_writes_the_report(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    report = (out / "report.md").read_text()
    for name in (*MODELS, *REFERENCES[:2], *(f"{f} (random init)" for f in FAMILIES)):
        assert f"| {name} |" in printed and f"| {name} |" in report, name
    for name in PLOTS:
        assert (out / name).stat().st_size > 5_000, name
        assert f"]({name})" in report
    results = json.loads((out / "results.json").read_text())
    # the clock may cut the larger count (never the first) and the encoder's reference line on a busy
    # machine: the report then says so
    state = json.loads((out / "demo_budget.json").read_text())
    for cut in state["cuts"]:
        assert f"- {cut}" in report and f"cut {cut}" in printed
    skipped = any(c.startswith("all labels per class") for c in state["cuts"])
    encoder = not any(c.startswith("the MiniLM embeddings") for c in state["cuts"])
    assert [r["model"] for r in results] == [*MODELS, *(REFERENCES if encoder else REFERENCES[:2])]
    for r in results:
        curve = r["label_curve"]
        assert [p["labels_per_class"] for p in curve] == ([10] if skipped else [10, None]), r["model"]
        for p in curve:
            low, high = p["test_accuracy_ci95"]
            assert 0.0 <= low <= p["test_accuracy"] <= high <= 1.0
            if "gain" in p:  # a start against its twin, paired over the same test items
                assert p["gain"] == pytest.approx(p["test_accuracy"] - p["random_init_test_accuracy"])
                assert p["ci95"][0] <= p["gain"] <= p["ci95"][1]
                assert p["significant"] == (p["ci95"][0] > 0 or p["ci95"][1] < 0)
                assert set(p["vs_bag_of_words"]) == {"diff", "ci95", "significant"}
    by_name = {r["model"]: r for r in results}
    for r in results[:5]:
        assert r["init_embeddings"]["copied"] > 0, r["model"]  # every family started from word2vec over its pieces
        assert r["method"] in ("head", "prompt", "probe") and r["random_init_method"] in ("head", "prompt", "probe")
        assert f"| {r['model']} | {r['method']}" in report  # the method dev chose, in the table
        assert r["pretraining_tokens"] > 0 and r["pretraining_tokens"] % (16 * 32) == 0 and r["pretraining_seconds"] > 0
        # every family was evaluated on held-out text, against the unigram baseline of the same tokens
        assert 0.0 < r["mlm_accuracy"] < 1.0 and 0.0 <= r["unigram_accuracy"] < 1.0, r["model"]
    # The reference lines do not depend on the budget: logistic regressions on the same seed-0 subsets
    # (known answers of a 500-item test set; the tolerance is three items, for the CPU's rounding).
    reference = {r["model"]: {p["labels_per_class"]: p["test_accuracy"] for p in r["label_curve"]} for r in results}
    known = {"bag-of-words": {10: 0.42, None: 0.692}, "MiniLM embeddings (frozen)": {10: 0.662, None: 0.744}}
    for name, points in known.items() if encoder else list(known.items())[:1]:
        assert reference[name] == {c: pytest.approx(a, abs=0.006) for c, a in points.items() if c in reference[name]}
    # Every accuracy in the report is recomputed from the predictions each fine-tuning kept.
    gold = [line.split("\t")[-1] for line in TEST.read_text(encoding="utf-8").splitlines()[1:]]
    for r in results[:6]:
        twin_of = r["model"] if r["model"] in FAMILIES else "bert"  # the other starts share BERT's twin
        for name, prefix in ((r["model"], ""), (twin(twin_of), "random_init_")):
            accuracy = prefix + "test_accuracy"
            for point in r["label_curve"]:
                count = "all" if point["labels_per_class"] is None else str(point["labels_per_class"])
                method = point[prefix + "method"]  # chosen on dev at the first count, kept for the next
                grid = GridResult.load(out / "finetune" / slug(name) / count / method)
                assert grid.method == method == r["label_curve"][0][prefix + "method"]
                assert [grid.labels[g] for g in grid.test_gold] == gold, name
                assert point[accuracy] == pytest.approx(sum(grid.correct()) / len(gold)), (name, count)
                if not prefix:  # the seeds the ensemble averaged, in results.json and in the table's header
                    assert point["seeds"] == sorted(run["seed"] for run in grid.runs if run["lr"] == grid.lr)
                    assert f"{count} labels/class ({len(point['seeds'])} seed" in report
                for run in grid.runs:
                    hits = sum(grid.labels[p] == g for p, g in zip(run["test_predictions"], gold))
                    assert run["test"] == pytest.approx(hits / len(gold)), (name, count, run["seed"])
    # ELECTRA-tiny raced BERT-tiny on the same Trainer seconds (not the same steps), with BERT's WordPiece
    electra, bert = by_name["electra"], by_name["bert"]
    assert (electra["tokenizer"], electra["vocab_size"]) == (bert["tokenizer"], bert["vocab_size"])
    assert 0.0 < electra["pair_accuracy"] < 1.0  # the discriminator's held-out accuracy
    assert (out / "tokenizers" / "electra" / "tokenizer.json").read_text() == (
        out / "tokenizers" / "bert" / "tokenizer.json"
    ).read_text()
    budgets = [
        json.loads(summary)["options"]["time_budget"]
        for summary in [(out / "pretrain" / f / "summary.json").read_text() for f in ("bert", "electra")]
    ]
    assert budgets[0] == budgets[1]
    student = by_name["minilm→tiny"]
    assert student["parameters"] < student["teacher_parameters"] / 10 and student["inference_speedup"] > 1
    wall = float(re.search(r"total wall time ([\d.]+) min of 1\.5\.", report).group(1))
    assert wall == pytest.approx(state["spent_s"] / 60, abs=0.11)  # the state is written last, at the exit
    # A second run with --resume reuses every stage, writes the same tables, and counts the first run's time.
    tables = printed[printed.index("Pretraining:") : printed.index("report:")]
    assert main(["demo", "--quick", "--out", str(out), "--quiet", "--resume"]) == 0
    again = capsys.readouterr().out
    assert again[again.index("Pretraining:") : again.index("report:")] == tables
    total = json.loads((out / "demo_budget.json").read_text())["spent_s"]
    assert total > state["spent_s"] and f"({state['spent_s'] / 60:.1f} before --resume)" in again
    before = re.escape(f"({state['spent_s'] / 60:.1f} before --resume).")
    assert re.search(rf"total wall time [\d.]+ min of 1\.5 {before}", (out / "report.md").read_text())
