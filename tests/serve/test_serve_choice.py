"""/predict for a multiple-choice head (TEI has none: its /predict extended to a context and its choices), and
POST / routed to it; the scores equal the Pipeline's logits, and malformed inputs are refused naming the fault."""

import shutil

import pytest
import torch

from bertology.tasks.base import Example
from bertology.tasks.pipeline import Pipeline
from serve_client import make_client

CONTEXT = "The cat was hungry."
CHOICES = ["It ate its food.", "It flew to the moon.", "It read a long book."]
OTHER = ("A storm came in the night.", ["The roof held.", "The sun was hot.", "Nobody slept."])


@pytest.fixture(scope="module")
def sharp(checkpoints, tmp_path_factory):
    """The tiny choice checkpoint with its scoring vector turned along the difference between its pooled vectors of
    CHOICES, so that they get clearly different scores and the second one wins (a fresh head scores a random
    model's near-identical pooled vectors all but uniformly, which would let a wrong order or index pass)."""

    pipe = Pipeline.load(checkpoints["choice"])
    features = pipe.task.featurize([Example(CONTEXT, CHOICES, None)], pipe.tokenizer, pipe.max_length)
    model = pipe.model
    with torch.no_grad():
        flat = {k: v.flatten(0, 1) for k, v in features.tensors.items()}  # (1, C, T) -> (C, T)
        pooled = model.backbone(**flat).pooler_output  # (C, H)
        away = pooled[1] - pooled.mean(0)
        model.classifier.classifier.weight.copy_(4 * away / away.norm() ** 2)
    path = tmp_path_factory.mktemp("choice") / "sharp"
    model.save(path)
    shutil.copy(checkpoints["choice"] / "tokenizer.json", path / "tokenizer.json")
    return path


@pytest.fixture(scope="module")
def client(sharp):
    with make_client(sharp) as c:
        yield c


def expected(path, items):
    """The head's logits (C,) per item, from a direct Pipeline call on each item alone."""
    pipe = Pipeline.load(path)
    assert pipe.task.name == "choice"
    return [pipe.logits([Example(context, list(choices), None)])[0] for context, choices in items]


def test_predict_scores_every_choice_as_the_pipeline_does(client, sharp):
    logits = expected(sharp, [(CONTEXT, CHOICES), OTHER])
    assert int(logits[0].argmax()) == 1 and logits[0].softmax(-1).max() > 0.6  # scores that tell choices apart
    one = client.post("/predict", json={"inputs": {"context": CONTEXT, "choices": CHOICES}})
    assert one.status_code == 200, one.text
    got = one.json()
    assert torch.allclose(torch.tensor(got["scores"]), logits[0].softmax(-1), atol=1e-5)
    assert got["choice"] == int(logits[0].argmax()) and got["text"] == CHOICES[got["choice"]]
    flat = client.post("/predict", json={"inputs": [CONTEXT, *CHOICES]}).json()  # [context, choice, …]
    assert flat["choice"] == got["choice"] and flat["scores"] == pytest.approx(got["scores"], abs=1e-6)

    many = client.post(
        "/predict", json={"inputs": [[CONTEXT, *CHOICES], {"context": OTHER[0], "choices": OTHER[1]}]}
    ).json()
    assert len(many) == 2
    for answer, row in zip(many, logits):
        assert torch.allclose(torch.tensor(answer["scores"]), row.softmax(-1), atol=1e-5)
        assert answer["choice"] == int(row.argmax())
    raw = client.post("/predict", json={"inputs": [CONTEXT, *CHOICES], "raw_scores": True}).json()
    assert torch.allclose(torch.tensor(raw["scores"]), logits[0], atol=1e-5)
    root = client.post("/", json={"inputs": [CONTEXT, *CHOICES]})  # POST /: the head's own task
    assert root.status_code == 200 and root.json()["scores"] == pytest.approx(got["scores"], abs=1e-6)


def test_a_batch_of_requests_with_other_choice_counts(sharp):
    """Two clients' requests in one batch, two and three choices: scored in a forward pass per count, each
    answer its own (the batching worker's call, made directly so the two surely share it)."""
    from bertology.serve.engine import Engine
    from bertology.serve.schemas import parse_choice

    two = (CONTEXT, CHOICES[:2])
    logits = expected(sharp, [two, OTHER])
    engine = Engine.load(sharp)
    requests = [parse_choice({"inputs": [two[0], *two[1]]}, 32), parse_choice({"inputs": [[OTHER[0], *OTHER[1]]]}, 32)]
    for r in requests:
        engine.prepare("predict", r)
    single, batch = engine.run("predict", requests)
    assert torch.allclose(torch.tensor(single["scores"]), logits[0].softmax(-1), atol=1e-5)
    assert len(batch) == 1 and torch.allclose(torch.tensor(batch[0]["scores"]), logits[1].softmax(-1), atol=1e-5)


@pytest.mark.parametrize(
    "inputs, fault",
    [
        ({"context": CONTEXT, "choices": ["only one"]}, "inputs has 1 choice(s); multiple choice needs at least 2"),
        ([CONTEXT, "only one"], "inputs has 1 choice(s)"),
        ([[CONTEXT, "a", "b"], [CONTEXT, "a", "b", "c"]], "inputs[1] has 3 choices, inputs[0] has 2"),
        ({"context": CONTEXT, "choices": [f"choice {i}" for i in range(40)]}, "40 choices, more than 32"),
        ({"context": CONTEXT, "choices": ["a", 3]}, "inputs.choices[1] should be a string"),
        ({"choices": ["a", "b"]}, "missing field 'context'"),
        ([[CONTEXT, "a", "b"], "loose"], "inputs[1] should be [context, choice, choice, …]"),
        ([CONTEXT, "a", ""], "inputs[2] is empty"),
        ("just a text", "inputs should be [context, choice, choice, …]"),
    ],
)
def test_bad_inputs_are_refused_naming_the_fault(client, inputs, fault):
    got = client.post("/predict", json={"inputs": inputs})
    assert got.status_code == 422, got.text
    assert fault in got.json()["error"]


def test_info_lists_predict_for_a_choice_head(client):
    info = client.get("/info").json()
    assert info["kind"] == "choice" and "predict" in info["endpoints"]
