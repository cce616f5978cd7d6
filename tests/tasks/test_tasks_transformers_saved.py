"""A task model saved by transformers (no bertology_task in config.json) is read by predict and evaluate as
serve reads it: one rule (tasks.task_of) for all three."""

import itertools
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from bertology import load  # noqa: E402
from bertology.cli import main  # noqa: E402
from bertology.tasks.finetune import load_tokenizer  # noqa: E402
from bertology.tasks.pipeline import Pipeline  # noqa: E402

WIKI = Path(__file__).resolve().parents[2] / "data" / "wiki.txt"
TEXTS = ["the cat and the dog", "market price of a share", "a bank loan", "the wolf near a bear"]
LABELS = ["animals", "money", "money", "animals"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from bertology.tokenizers import train

    with open(WIKI, encoding="utf-8") as f:
        lines = list(itertools.islice(f, 400))
    path = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    train(lines=lines, family="bert", vocab_size=600, show_progress=False).save(path)
    return path


def saved_by_transformers(directory: Path, tokenizer: Path, labels: list[str]) -> Path:
    tok = load_tokenizer(None, str(tokenizer))
    config = transformers.BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={n: i for i, n in enumerate(labels)},
    )
    torch.manual_seed(3)
    transformers.BertForSequenceClassification(config).eval().save_pretrained(directory)
    (directory / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    assert "bertology_task" not in (directory / "config.json").read_text()
    return directory


def their_logits(directory: Path, texts: list[str]) -> torch.Tensor:
    theirs = transformers.BertForSequenceClassification.from_pretrained(directory).eval()
    batch = load_tokenizer(str(directory), None).encode_batch(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        return theirs(**{k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}).logits


def test_predict_reads_a_transformers_classifier_as_serve_does(tmp_path, tokenizer, capsys):
    model_dir = saved_by_transformers(tmp_path / "clf", tokenizer, ["animals", "money"])
    assert main(["predict", "--model", str(model_dir), *TEXTS]) == 0
    lines = capsys.readouterr().out.splitlines()
    probabilities = their_logits(model_dir, TEXTS).softmax(-1)
    assert len(lines) == len(TEXTS)
    for line, text, p in zip(lines, TEXTS, probabilities):
        label, probability = line.split("\t")[0].split()
        assert label == ["animals", "money"][int(p.argmax())], text
        assert abs(float(probability) - float(p.max())) <= 0.006, text
    # serve's Pipeline over the same directory serves the same task with the same settings
    served = Pipeline.for_model(load(model_dir), load_tokenizer(str(model_dir), None))
    loaded = Pipeline.load(model_dir)
    assert (served.task.name, served.max_length) == (loaded.task.name, loaded.max_length) == ("classify", 64)


def test_evaluate_scores_a_transformers_classifier(tmp_path, tokenizer, capsys):
    model_dir = saved_by_transformers(tmp_path / "clf", tokenizer, ["animals", "money"])
    data = tmp_path / "test.tsv"
    data.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in zip(TEXTS, LABELS)), encoding="utf-8")
    assert main(["evaluate", "--model", str(model_dir), "--data", str(data)]) == 0
    scores = dict(line.split() for line in capsys.readouterr().out.splitlines())
    predicted = [["animals", "money"][int(i)] for i in their_logits(model_dir, TEXTS).argmax(-1)]
    expected = sum(p == y for p, y in zip(predicted, LABELS)) / len(LABELS)
    assert float(scores["accuracy"]) == pytest.approx(expected, abs=1e-4)


def test_a_one_label_transformers_classifier_is_a_regressor(tmp_path, tokenizer, capsys):
    model_dir = saved_by_transformers(tmp_path / "reg", tokenizer, ["score"])
    assert main(["predict", "--model", str(model_dir), TEXTS[0]]) == 0
    value = float(capsys.readouterr().out.split("\t")[0])
    assert value == pytest.approx(float(their_logits(model_dir, TEXTS[:1])[0, 0]), abs=1e-3)


def test_a_model_without_a_task_head_is_refused_naming_its_config(tmp_path, tokenizer, capsys):
    tok = load_tokenizer(None, str(tokenizer))
    config = transformers.BertConfig(
        vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64
    )
    transformers.BertForMaskedLM(config).save_pretrained(tmp_path / "mlm")
    (tmp_path / "mlm" / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    assert main(["predict", "--model", str(tmp_path / "mlm"), "a text"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'mlm' / 'config.json'}: BertForMaskedLM has no task head" in err
    assert "ForSequenceClassification" in err


def test_predict_reads_stdin_and_writes_json_lines(tmp_path, tokenizer, capsys, monkeypatch):
    import io
    import json
    import sys

    model_dir = saved_by_transformers(tmp_path / "clf", tokenizer, ["animals", "money"])
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(TEXTS) + "\n\n"))  # a blank line is no text
    assert main(["predict", "--model", str(model_dir), "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    probabilities = their_logits(model_dir, TEXTS).softmax(-1)
    assert [r["text"] for r in records] == TEXTS
    for record, p in zip(records, probabilities):
        assert record["label"] == ["animals", "money"][int(p.argmax())]
        assert record["probabilities"]["animals"] == pytest.approx(float(p[0]), abs=0.006)


def test_predict_on_a_grid_directory_answers_with_its_best_run_and_says_which(tmp_path, tokenizer, capsys):
    import json

    grid = tmp_path / "grid"
    best = saved_by_transformers(grid / "lr-0.001-seed-1", tokenizer, ["animals", "money"])
    runs = [{"lr": 1e-3, "seed": 1, "dev": 0.75, "test": 0.7, "dir": str(best)}]
    (grid / "grid.json").write_text(json.dumps({"lr": 1e-3, "metric": "accuracy", "best_dir": str(best), "runs": runs}))
    assert main(["predict", "--model", str(grid), TEXTS[0]]) == 0
    out = capsys.readouterr()
    assert f"its best run answers: {best} (lr 0.001, seed 1, dev accuracy 0.7500)" in out.err
    assert main(["predict", "--model", str(best), TEXTS[0]]) == 0
    assert out.out == capsys.readouterr().out  # the very answer of the run itself


def test_tokenizer_encode_prints_no_padding_it_did_not_need_and_reads_stdin(tokenizer, capsys, monkeypatch):
    import io
    import json
    import sys

    padded = json.loads(tokenizer.read_text())
    padded["padding"] = {"strategy": {"Fixed": 32}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
                         "pad_type_id": 0, "pad_token": "[PAD]"}  # fmt: skip
    path = tokenizer.parent / "padded.json"
    path.write_text(json.dumps(padded))
    monkeypatch.setattr(sys, "stdin", io.StringIO("the cat\nsome money\n"))
    assert main(["tokenizer", "encode", "--tokenizer", str(path), "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in records] == ["the cat", "some money"]
    assert all("[PAD]" not in r["tokens"] and len(r["ids"]) == len(r["offsets"]) < 32 for r in records)
