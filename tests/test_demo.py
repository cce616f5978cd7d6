"""`bertology demo --quick` runs end to end: every table row and every plot, non-empty."""
import json

from bertology.cli import main

ROWS = ("| bert |", "| roberta |", "| albert |", "| xlnet |", "| bag-of-words baseline |")
PLOTS = ("pretraining.png", "downstream.png", "parameters.png", "attention-bert.png", "attention-roberta.png",
         "attention-albert.png", "attention-xlnet.png")


def test_demo_quick_writes_the_report(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    report = (out / "report.md").read_text()
    for row in ROWS:
        assert row in printed and row in report
    for name in PLOTS:
        assert (out / name).stat().st_size > 5_000, name
        assert f"]({name})" in report
    bert_row = next(line for line in report.splitlines() if line.startswith("| bert |"))
    cells = [c.strip() for c in bert_row.strip("|").split("|")]
    assert cells[5].endswith("(NSP)") and 0.0 <= float(cells[6].split(" ± ")[0]) <= 1.0  # pair accuracy, test accuracy
    results = json.loads((out / "results.json").read_text())
    assert [r["model"] for r in results] == ["bert", "roberta", "albert", "xlnet", "distilbert"]
    student = results.pop()
    assert student["teacher"] == "bert" and student["parameters"] < results[0]["parameters"]
    assert 0.0 <= student["test_accuracy"] <= 1.0 and student["inference_speedup"] > 0
    student_row = next(line for line in report.splitlines() if line.startswith("| distilbert, half depth"))
    assert f"{student['parameters']:,}" in student_row and f"{student['test_accuracy']:.3f}" in student_row
    xlnet = results[3]
    assert xlnet["tokenizer"] == "Unigram" and xlnet["pair_accuracy"] is None and 0.0 <= xlnet["mlm_accuracy"] <= 1.0
    for r in results:
        assert 0.0 <= r["test_accuracy"] <= 1.0 and 0.0 <= r["random_init_test_accuracy"] <= 1.0
        assert r["pretraining_tokens"] == 24 * 16 * 32 and r["pretraining_seconds"] > 0
    assert f"{results[0]['test_accuracy']:.3f}" in bert_row and f"{results[0]['random_init_test_accuracy']:.3f}" in bert_row
    # A second run with --resume reuses every stage and writes the same table.
    assert main(["demo", "--quick", "--out", str(out), "--quiet", "--resume"]) == 0
    assert bert_row in (out / "report.md").read_text() and student_row in (out / "report.md").read_text()
