"""The fine-tuning tasks take XLNet: padding on the left (<cls> stays last, where its summary reads),
the span-QA head with start / end logits, token types 0 / 1 / 2; `bertology attention` draws its
content stream."""

import itertools
import math
from pathlib import Path

import pytest
import torch

from bertology.models import get_family, task_class
from bertology.tasks import TASKS
from bertology.tasks.finetune import load_tokenizer, predict_examples
from bertology.tasks.forward import model_inputs
from bertology.tokenizers import train
from bertology.viz.attention import attention_weights

FIXTURES = Path(__file__).parent / "fixtures"
WIKI = Path(__file__).resolve().parents[2] / "data" / "wiki.txt"


@pytest.fixture(scope="module")
def xlnet_tokenizer(tmp_path_factory):
    """XLNet's Unigram recipe on a Wikipedia slice, loaded as `bertology finetune` loads it."""
    with open(WIKI, encoding="utf-8") as f:
        lines = list(itertools.islice(f, 400))
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    train(lines=lines, family="xlnet", vocab_size=1000, show_progress=False).save(path)
    return load_tokenizer(None, str(path))


def tiny_xlnet(tok, head, labels=None):
    config = get_family("xlnet").preset("tiny", vocab_size=tok.vocab_size, pad_token_id=tok.token_to_id("<pad>"))
    if labels is not None:
        config = config.with_labels(labels)
    torch.manual_seed(0)
    return task_class("xlnet", get_family("xlnet").task_head(head))(config)


CASES = [
    ("classify", FIXTURES / "swag.csv", dict(text_column="sent1", label_column="label")),
    ("tag", FIXTURES / "ner_bio.conll", {}),
    ("qa", FIXTURES / "squad_v1.json", {}),
    ("choice", FIXTURES / "choice.jsonl", {}),
]


@pytest.mark.parametrize("name, path, columns", CASES, ids=[c[0] for c in CASES])
def test_each_task_trains_and_predicts_with_xlnet(xlnet_tokenizer, name, path, columns):
    task = TASKS[name]()
    examples = task.read(str(path), **columns)[:6]
    labels = task.label_set(examples)
    model = tiny_xlnet(xlnet_tokenizer, task.head, labels)
    label2id = model.config.label2id if labels is not None else None
    features = task.featurize(examples, xlnet_tokenizer, 64, label2id, 16)
    batch = model_inputs(model, features.batch(range(len(features))))
    ids, mask = batch["input_ids"], batch["attention_mask"]
    cls = xlnet_tokenizer.token_to_id("<cls>")
    flat_ids, flat_mask = ids.reshape(-1, ids.shape[-1]), mask.reshape(-1, mask.shape[-1])
    assert (flat_ids[:, -1] == cls).all() and flat_mask[:, -1].all()  # <cls> last, padding before it
    assert (flat_mask.diff(dim=1) >= 0).all()  # every row: padding, then tokens
    model.train()
    loss = model(**batch).loss
    assert math.isfinite(float(loss.detach()))
    loss.backward()
    predictions = predict_examples(model.eval(), task, xlnet_tokenizer, examples, 64, 16)
    assert len(predictions) == len(examples)


def test_qa_uses_the_span_head_and_finds_cls_at_the_end(xlnet_tokenizer):
    model = tiny_xlnet(xlnet_tokenizer, "ForQuestionAnswering")
    assert type(model).__name__ == "XLNetForQuestionAnsweringSimple"
    task = TASKS["qa"]()
    examples = task.read(str(FIXTURES / "squad_v1.json"))[:2]
    features = task.featurize(examples, xlnet_tokenizer, 64, None, 16)
    T = features.tensors["input_ids"].shape[1]
    assert set(features.extra["cls_index"]) == {T - 1}


def test_attention_draws_the_content_stream(xlnet_tokenizer):
    model = tiny_xlnet(xlnet_tokenizer, "ForSequenceClassification").eval()
    aw = attention_weights(model, xlnet_tokenizer, "The cat sat on the mat.", "It was warm.")
    T = len(aw.tokens)
    assert aw.weights.shape == (2, 2, T, T) and aw.tokens[-1] == "<cls>"
    assert torch.allclose(aw.weights.sum(-1), torch.ones(2, 2, T), atol=1e-5)
