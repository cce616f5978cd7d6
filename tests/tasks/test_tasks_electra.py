"""Every fine-tuning task trains and predicts with an ELECTRA discriminator (E ≠ H, no pooler)."""

import math
from pathlib import Path

import pytest
import torch

from bertology.models import get_family, task_class
from bertology.tasks import TASKS
from bertology.tasks.finetune import predict_examples
from bertology.tasks.forward import model_inputs

FIXTURES = Path(__file__).parent / "fixtures"
CASES = [
    (
        "classify",
        FIXTURES / "swag.csv",
        dict(text_column="sent1", label_column="label"),
        "ElectraForSequenceClassification",
    ),
    ("tag", FIXTURES / "ner_bio.conll", {}, "ElectraForTokenClassification"),
    ("qa", FIXTURES / "squad_v1.json", {}, "ElectraForQuestionAnswering"),
    ("choice", FIXTURES / "choice.jsonl", {}, "ElectraForMultipleChoice"),
]


@pytest.mark.parametrize("name, path, columns, architecture", CASES, ids=[c[0] for c in CASES])
def test_each_task_trains_and_predicts_with_electra(minilm_tokenizer, name, path, columns, architecture):
    task = TASKS[name]()
    examples = task.read(str(path), **columns)[:6]
    labels = task.label_set(examples)
    config = get_family("electra").preset("tiny", vocab_size=minilm_tokenizer.vocab_size, embedding_size=64)
    if labels is not None:
        config = config.with_labels(labels)
    torch.manual_seed(0)
    model = task_class("electra", task.head)(config)
    assert type(model).__name__ == architecture
    label2id = model.config.label2id if labels is not None else None
    features = task.featurize(examples, minilm_tokenizer, 64, label2id, 16)
    batch = model_inputs(model, features.batch(range(len(features))))
    model.train()
    loss = model(**batch).loss
    assert math.isfinite(float(loss.detach()))
    loss.backward()
    assert all(p.grad is not None for n, p in model.named_parameters() if not n.endswith("position.weight"))
    predictions = predict_examples(model.eval(), task, minilm_tokenizer, examples, 64, 16)
    assert len(predictions) == len(examples)
