"""`bertology demo --quick` runs end to end: every stage, every table row and plot, the label
curve with its intervals, and a resume that reuses every stage."""
import json

import pytest

from bertology.cli import main

pytestmark = pytest.mark.integration  # whole jobs: `make test-integration`

FAMILIES = ("bert", "roberta", "albert", "xlnet")
MODELS = (*FAMILIES, "bert+word2vec", "minilm→tiny")
REFERENCES = ("bag-of-words", "word2vec average", "MiniLM embeddings (frozen)")
PLOTS = ("pretraining.png", "label-curve.png", "parameters.png", *(f"attention-{f}.png" for f in FAMILIES))


def test_demo_quick_writes_the_report(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    report = (out / "report.md").read_text()
    for name in (*MODELS, *REFERENCES, *(f"{f} (random init)" for f in FAMILIES)):
        assert f"| {name} |" in printed and f"| {name} |" in report, name
    for name in PLOTS:
        assert (out / name).stat().st_size > 5_000, name
        assert f"]({name})" in report
    results = json.loads((out / "results.json").read_text())
    assert [r["model"] for r in results] == [*MODELS, *REFERENCES]
    for r in results:
        curve = r["label_curve"]
        assert [p["labels_per_class"] for p in curve] == [10, None], r["model"]
        for p in curve:
            low, high = p["test_accuracy_ci95"]
            assert 0.0 <= low <= p["test_accuracy"] <= high <= 1.0
            if "gain" in p:  # a start against its twin, paired over the same test items
                assert p["gain"] == pytest.approx(p["test_accuracy"] - p["random_init_test_accuracy"])
                assert p["ci95"][0] <= p["gain"] <= p["ci95"][1]
                assert p["significant"] == (p["ci95"][0] > 0 or p["ci95"][1] < 0)
                assert set(p["vs_bag_of_words"]) == {"diff", "ci95", "significant"}
    for r in results[:5]:
        assert r["pretraining_tokens"] > 0 and r["pretraining_tokens"] % (16 * 32) == 0 and r["pretraining_seconds"] > 0
        assert 0.0 <= r["test_accuracy"] <= 1.0 and 0.0 <= r["random_init_test_accuracy"] <= 1.0
    assert results[4]["init_embeddings"]["copied"] > 0  # word2vec rows went into the embedding
    student = results[5]
    assert student["parameters"] < student["teacher_parameters"] / 10 and student["inference_speedup"] > 1
    # A second run with --resume reuses every stage and writes the same tables.
    tables = printed[printed.index("Pretraining:"):printed.index("report:")]
    assert main(["demo", "--quick", "--out", str(out), "--quiet", "--resume"]) == 0
    again = capsys.readouterr().out
    assert again[again.index("Pretraining:"):again.index("report:")] == tables
