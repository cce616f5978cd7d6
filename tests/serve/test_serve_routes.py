"""The route × task table: every route of the server against every head (embedding, fill-mask, classifier,
pair, regression, tagger, QA, multiple choice), for checkpoints saved by bertology and by transformers, over
real HTTP (a uvicorn server on 127.0.0.1) with raw requests and with the clients people use
(huggingface_hub's InferenceClient, openai). Each pair answers 2xx in the shape `/openapi.json` describes,
or the 404 `{"error", "error_type"}` of text-embeddings-inference for a route the head does not serve."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

import pytest
import torch

from bertology.serve.handlers import HANDLERS
from bertology.serve.openapi import ROUTES

pytestmark = pytest.mark.integration

TEXT = "the cat sat on the mat"
OTHER = "a game of the long winter"
QUESTION = {"question": "where did the cat sit?", "context": "the cat sat on the mat in the house"}
CHOICES = {"context": "the cat sat on the", "choices": ["mat", "game", "winter"]}
MASKED = "the cat sat on the [MASK]."  # [MASK]: the loaded model's mask token (with_mask)
HEADS = ("embedding", "fill-mask", "classifier", "pair", "regression", "tagger", "qa", "choice")
PROMPT = "prompt classifier"  # bertology's own head (a masked LM read at a template's blank): no transformers twin
# conftest.CHECKPOINTS' name of each head
BERTOLOGY_NAME = {
    "embedding": "backbone",
    "fill-mask": "mlm",
    "classifier": "classify",
    "pair": "pair",
    "regression": "regress",
    "tagger": "tag",
    "qa": "qa",
    "choice": "choice",
}
# the routes a head adds to those every model serves (the serving page's table)
OWN_ROUTES = {
    "embedding": set(),
    "fill-mask": {"/fill-mask"},
    "classifier": {"/predict"},
    "pair": {"/predict", "/rerank"},
    "regression": {"/predict"},
    "tagger": {"/tag"},
    "qa": {"/qa"},
    "choice": {"/predict"},
    PROMPT: {"/predict"},
}
HEAD_ROUTES = {"/predict", "/rerank", "/fill-mask", "/tag", "/qa"}


def body_for(path: str, head: str):
    """A body the route documents (a pair classifier's /predict takes [text, pair]; multiple choice, its
    context and choices)."""
    own = {
        "embedding": {"inputs": TEXT},
        "fill-mask": {"inputs": MASKED, "parameters": {"top_k": 3}},
        "classifier": {"inputs": TEXT},
        PROMPT: {"inputs": TEXT},
        "pair": {"inputs": [TEXT, OTHER]},
        "regression": {"inputs": TEXT},
        "tagger": {"inputs": TEXT},
        "qa": {"inputs": QUESTION},
        "choice": {"inputs": CHOICES},
    }
    return {
        "/": own[head],
        "/predict": own[head] if head in ("pair", "choice") else {"inputs": [TEXT, OTHER]},
        "/embed": {"inputs": [TEXT, OTHER]},
        "/embed_all": {"inputs": TEXT},
        "/similarity": {"inputs": {"source_sentence": TEXT, "sentences": [OTHER, TEXT]}},
        "/v1/embeddings": {"input": [TEXT, OTHER], "model": "m"},
        "/tokenize": {"inputs": TEXT},
        "/decode": {"ids": [[2, 5, 6, 3]]},
        "/attention": {"inputs": TEXT},
        "/rerank": {"query": TEXT, "texts": [OTHER, TEXT]},
        "/fill-mask": {"inputs": [MASKED, "the [MASK] sat on the [MASK]."], "top_k": 2},
        "/tag": {"inputs": [TEXT, OTHER]},
        "/qa": QUESTION,
    }[path]


# two inputs through POST / in each head's shape
BATCHES = {
    "embedding": {"inputs": [TEXT, OTHER]},
    "fill-mask": {"inputs": [MASKED, "the [MASK] sat on the [MASK]."], "parameters": {"top_k": 3}},
    "classifier": {"inputs": [TEXT, OTHER]},
    PROMPT: {"inputs": [TEXT, OTHER]},
    "regression": {"inputs": [TEXT, OTHER]},
    "pair": {"inputs": [[TEXT, OTHER], [OTHER, TEXT]]},
    "tagger": {"inputs": [TEXT, OTHER]},
    "qa": {"inputs": [QUESTION, {"question": "what sat?", "context": "the cat sat"}]},
    "choice": {"inputs": [CHOICES, CHOICES]},
}


def with_mask(value, mask: str):
    """A body with the loaded model's own mask token where it says [MASK] (RoBERTa's is <mask>)."""
    return json.loads(json.dumps(value).replace("[MASK]", mask))


# ---- a minimal JSON Schema check: the subset openapi.py writes ---------------------------------
TYPES = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


def mismatches(value, schema: dict, at: str = "$") -> list[str]:
    """Where `value` breaks `schema` (type, enum, anyOf, items, properties, required, minimum, maximum).

    >>> mismatches([1, "a"], {"type": "array", "items": {"type": "integer"}})
    ["$[1]: 'a' is not integer"]
    """
    if "anyOf" in schema:
        return [] if any(not mismatches(value, s, at) for s in schema["anyOf"]) else [f"{at}: matches no anyOf"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{at}: {value!r} not in {schema['enum']}"]
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        ok = any(
            isinstance(value, TYPES[k]) and not (isinstance(value, bool) and k in ("integer", "number")) for k in kinds
        )
        if not ok:
            return [f"{at}: {str(value)[:60]!r} is not {' or '.join(kinds)}"]
    out = []
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            out += mismatches(v, schema["items"], f"{at}[{i}]")
    if isinstance(value, dict):
        out += [f"{at}: missing {k!r}" for k in schema.get("required", []) if k not in value]
        for k, s in schema.get("properties", {}).items():
            if k in value:
                out += mismatches(value[k], s, f"{at}.{k}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"] or "maximum" in schema and value > schema["maximum"]:
            out.append(f"{at}: {value} out of range")
    return out


# ---- the checkpoints: bertology's (conftest) and transformers' ------------------------------------
@pytest.fixture(scope="module")
def transformers_checkpoints(tmp_path_factory, checkpoints) -> dict[str, object]:
    """Each head as transformers writes it (save_pretrained, BertTokenizerFast over the same vocabulary); the pair
    classifier carries the task record a bertology fine-tuning writes (transformers has no notion of a pair task)."""
    transformers = pytest.importorskip("transformers")
    from bertology.tasks.finetune import load_tokenizer

    root = tmp_path_factory.mktemp("transformers-checkpoints")
    ours = load_tokenizer(str(checkpoints["backbone"]), None)
    tokenizer = transformers.BertTokenizerFast(vocab=ours.get_vocab())
    tags = ["B-PER", "I-PER", "B-LOC", "I-LOC", "O"]
    heads = {
        "embedding": ("BertModel", {}),
        "fill-mask": ("BertForMaskedLM", {}),
        "classifier": ("BertForSequenceClassification", {"id2label": dict(enumerate(["games", "mail", "net"]))}),
        "pair": ("BertForSequenceClassification", {"id2label": {0: "no", 1: "yes"}, "bertology_task": "pair"}),
        "regression": ("BertForSequenceClassification", {"num_labels": 1}),
        "tagger": ("BertForTokenClassification", {"id2label": dict(enumerate(tags))}),
        "qa": ("BertForQuestionAnswering", {}),
        "choice": ("BertForMultipleChoice", {}),
    }
    out = {}
    for head, (architecture, extra) in heads.items():
        config = transformers.BertConfig(
            vocab_size=ours.vocab_size,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=64,
            pad_token_id=ours.token_to_id("[PAD]"),
            **extra,
        )
        torch.manual_seed(0)
        model = getattr(transformers, architecture)(config).eval()
        out[head] = root / head
        model.save_pretrained(out[head])
        tokenizer.save_pretrained(out[head])
    return out


@pytest.fixture(scope="module")
def prompt_checkpoint(tmp_path_factory, checkpoints):
    """A prompt classifier as `finetune --method prompt` records it: the masked LM's weights, the template and the
    verbalizer in config.json."""
    from bertology.models import ARCHITECTURES, read_config
    from bertology.tasks.finetune import load_tokenizer
    from bertology.tasks.prompt import Prompt

    tok = load_tokenizer(str(checkpoints["mlm"]), None)
    prompt = Prompt.build("{text} It is about [MASK].", {"games": ["game"], "mail": ["the"]}, tok, "mlm")
    config = read_config(checkpoints["mlm"]).with_labels(["games", "mail"])
    config.extra.update(bertology_task="classify", bertology_task_options={"prompt": prompt.to_dict()})
    config.extra["bertology_prompt"] = prompt.to_dict()
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("prompt") / "prompt"
    ARCHITECTURES["BertForPromptClassification"](config).eval().save(out)
    tok.save(out / "tokenizer.json")
    return out


@contextlib.contextmanager
def serving(path):
    """`bertology serve`'s app on a real socket (uvicorn in a thread: the clients speak HTTP to it)."""
    import uvicorn

    from bertology.serve.app import create_app
    from bertology.serve.engine import Engine
    from bertology.serve.options import ServeOptions

    options = ServeOptions(model=str(path))
    app = create_app(Engine.load(options.model), options)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(600):  # bounded: the server says when it listens
        if server.started:
            break
        time.sleep(0.05)
    assert server.started, f"the server over {path} did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(60)
        sock.close()


def close(a, b, tol: float = 1e-5) -> bool:
    """Equal JSON values, numbers within `tol` (the same answer through another route and another batch)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= tol
    return a == b


def is_tei_error(response, status: int) -> bool:
    body = response.json()
    return response.status_code == status and set(body) == {"error", "error_type"} and body["error"]


def check_routes(url: str, head: str, saver: str) -> None:
    import httpx

    description = httpx.get(url + "/openapi.json").json()
    mask = httpx.get(url + "/info").json()["mask_token"] or "[MASK]"
    with httpx.Client(base_url=url, timeout=60) as http:
        answers = {}
        for route in ROUTES:
            where = f"{saver} {head}: {route.method} {route.path}"
            described = description["paths"][route.path][route.method.lower()]
            if route.method == "GET":
                response = http.get(route.path)
            else:
                body = with_mask(body_for(route.path, head), mask)
                assert not mismatches(body, route.body), f"{where}: the test's body is not the described one"
                response = http.post(route.path, json=body)
            if route.path in HEAD_ROUTES and route.path not in OWN_ROUTES[head]:
                assert is_tei_error(response, 404), f"{where}: {response.status_code} {response.text[:300]}"
                assert response.json()["error_type"] == "NotFound", where
                continue
            assert response.status_code == 200, f"{where}: {response.status_code} {response.text[:300]}"
            media = response.headers["content-type"].split(";")[0]
            content = described["responses"]["200"]["content"]
            assert media in content, f"{where}: answered {media}, described {list(content)}"
            if media == "application/json":
                answers[route.path] = response.json()
                problems = mismatches(answers[route.path], content[media]["schema"])
                assert not problems, f"{where}: {problems[:5]}"
            examples = (
                described.get("requestBody", {}).get("content", {}).get("application/json", {}).get("examples", {})
            )
            example = examples.get(head, examples.get("any", {})).get("value")
            if example is not None:
                assert not mismatches(example, route.body), f"{where}: the example is not the described body"
                example = http.post(route.path, json=example)
                assert example.status_code == 200, f"{where}: the description's example: {example.text[:300]}"
                assert not mismatches(example.json(), content[media]["schema"]), f"{where}: the example's answer"
        assert {t["text"] for t in answers["/tokenize"][0]} != {"[CLS]", "[UNK]", "[SEP]"}, f"{saver}: no vocabulary"
        info = answers["/info"]
        assert info["kind"] == HANDLERS[info_key(head)].kind, f"{saver} {head}: /info says {info['kind']}"
        assert {"/" + e for e in info["endpoints"]} & HEAD_ROUTES == OWN_ROUTES[head], f"{saver} {head}: {info}"
        # POST / is the head's own route in the Inference API's shape
        own = answers["/"]
        single = http.post(
            {"embedding": "/embed", "fill-mask": "/fill-mask", "tagger": "/tag", "qa": "/qa"}.get(head, "/predict"),
            json=with_mask(body_for("/", head), mask),
        ).json()
        per_input = ("classifier", "regression", "pair", PROMPT)  # text classification: a list per input
        expect = [single] if head in per_input else single[0] if head == "fill-mask" else single
        assert close(own, expect), f"{saver} {head}: POST / {own} vs {single}"
        similar = http.post("/", json=body_for("/similarity", head)).json()
        assert close(similar, answers["/similarity"]), f"{saver} {head}: POST / similarity"
        # a batch through POST /: one answer per input, the first the single one's
        batch = http.post("/", json=with_mask(BATCHES[head], mask))
        root_schema = description["paths"]["/"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert batch.status_code == 200, f"{saver} {head}: POST / batch: {batch.text[:300]}"
        assert len(batch.json()) == 2 and not mismatches(batch.json(), root_schema), f"{saver} {head}: {batch.text}"
        assert close(batch.json()[0], own[0] if head in per_input or head == "embedding" else own, 1e-4), head
        # a route asked with the method it does not take: TEI's error shape, 405
        for route in ROUTES:
            if route.path != "/":
                wrong = http.post(route.path, json={}) if route.method == "GET" else http.get(route.path)
                assert is_tei_error(wrong, 405), f"{saver} {head}: {route.path}: {wrong.text[:200]}"


def info_key(head: str) -> str:
    return {"classifier": "classify", "regression": "regress", "tagger": "tag", PROMPT: "prompt"}.get(head, head)


def check_clients(url: str, head: str, saver: str) -> None:
    """The clients' calls each head answers: its own task through POST / (base_url), vectors through
    /embed and /v1/embeddings, similarity through POST /; a task's route the head lacks is a TEI 404."""
    import httpx
    from huggingface_hub import InferenceClient
    from huggingface_hub.errors import HfHubHTTPError
    from openai import OpenAI

    where = f"{saver} {head}"
    mask = httpx.get(url + "/info").json()["mask_token"] or "[MASK]"
    vectors = httpx.post(url + "/embed", json={"inputs": [TEXT, OTHER]}).json()
    reply = OpenAI(base_url=url + "/v1", api_key="unused").embeddings.create(model="m", input=[TEXT, OTHER])
    assert torch.allclose(torch.tensor([d.embedding for d in reply.data]), torch.tensor(vectors), atol=1e-5), where
    got = InferenceClient(model=url + "/embed").feature_extraction(TEXT)
    assert torch.allclose(torch.tensor(got), torch.tensor(vectors[:1]), atol=1e-5), where
    client = InferenceClient(base_url=url)
    similar = client.sentence_similarity(TEXT, other_sentences=[OTHER, TEXT])
    assert similar[1] == pytest.approx(1.0, abs=1e-5) and len(similar) == 2, where
    own = httpx.post(url + "/", json=with_mask(body_for("/", head), mask)).json()
    if head == "embedding":
        assert torch.allclose(torch.tensor(client.feature_extraction(TEXT)), torch.tensor(own), atol=1e-5), where
    elif head == "fill-mask":
        assert [f.token for f in client.fill_mask(with_mask(MASKED, mask), top_k=3)] == [c["token"] for c in own], where
    elif head in ("classifier", "regression", PROMPT):
        scores = client.text_classification(TEXT, top_k=2)  # the best two of the classifier's three labels
        assert [(s.label, round(s.score, 5)) for s in scores] == [
            (d["label"], round(d["score"], 5)) for d in own[0][:2]
        ]
    elif head == "tagger":
        assert [e.word for e in client.token_classification(TEXT)] == [e["word"] for e in own], where
    elif head == "qa":
        answer = client.question_answering(**QUESTION)
        assert (answer.answer, answer.start, answer.end) == (own["answer"], own["start"], own["end"]), where
    elif head == "pair":  # the Inference API's text classification sends one text: a pair classifier refuses it
        with pytest.raises(HfHubHTTPError) as refused:
            client.text_classification(TEXT)
        assert is_tei_error(refused.value.response, 422), where
    for route, call in (
        ("/fill-mask", lambda c: c.fill_mask(with_mask(MASKED, mask))),
        ("/tag", lambda c: c.token_classification(TEXT)),
        ("/qa", lambda c: c.question_answering(**QUESTION)),
        ("/predict", lambda c: c.text_classification(TEXT)),
    ):
        if route in OWN_ROUTES[head]:
            continue
        with pytest.raises(HfHubHTTPError) as refused:
            call(InferenceClient(model=url + route))
        assert is_tei_error(refused.value.response, 404), f"{where}: {route}"


@pytest.fixture
def online_client(monkeypatch):
    """huggingface_hub refuses every URL, ours included, while HF_HUB_OFFLINE is set (read at its import)."""
    import huggingface_hub.constants as hub_constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)


@pytest.mark.parametrize("saver", ["bertology", "transformers"])
@pytest.mark.parametrize("head", HEADS)
def test_every_route_against_every_head(head, saver, checkpoints, transformers_checkpoints, online_client):
    path = checkpoints[BERTOLOGY_NAME[head]] if saver == "bertology" else transformers_checkpoints[head]
    with serving(path) as url:
        check_routes(url, head, saver)
        check_clients(url, head, saver)


def test_every_route_against_a_prompt_classifier(prompt_checkpoint, online_client):
    with serving(prompt_checkpoint) as url:
        check_routes(url, PROMPT, "bertology")
        check_clients(url, PROMPT, "bertology")


@pytest.fixture(scope="module")
def transformers_families(tmp_path_factory, checkpoints) -> dict[str, object]:
    """Two heads of other families as transformers writes them, with a tokenizer.json of the family: RoBERTa's
    masked LM (byte-level BPE, <mask>, positions offset by the padding index) and DistilBERT's classifier (no
    token types, no pooler: its own pre-classifier)."""
    transformers = pytest.importorskip("transformers")
    from bertology.tasks.finetune import load_tokenizer

    root = tmp_path_factory.mktemp("transformers-families")
    out = {}
    for name, source, build in (
        (
            "roberta fill-mask",
            "roberta-mlm",
            lambda tok: transformers.RobertaForMaskedLM(
                transformers.RobertaConfig(
                    vocab_size=tok.vocab_size,
                    hidden_size=32,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    intermediate_size=64,
                    max_position_embeddings=66,
                    pad_token_id=tok.token_to_id("<pad>"),
                    bos_token_id=tok.token_to_id("<s>"),
                    eos_token_id=tok.token_to_id("</s>"),
                )
            ),
        ),
        (
            "distilbert classifier",
            "distilbert-mlm",
            lambda tok: transformers.DistilBertForSequenceClassification(
                transformers.DistilBertConfig(
                    vocab_size=tok.vocab_size,
                    dim=32,
                    n_layers=2,
                    n_heads=4,
                    hidden_dim=64,
                    max_position_embeddings=64,
                    pad_token_id=tok.token_to_id("[PAD]"),
                    id2label=dict(enumerate(["games", "mail", "net"])),
                )
            ),
        ),
    ):
        tok = load_tokenizer(str(checkpoints[source]), None)
        torch.manual_seed(0)
        out[name] = root / name.replace(" ", "-")
        build(tok).eval().save_pretrained(out[name])
        (out[name] / "tokenizer.json").write_bytes((checkpoints[source] / "tokenizer.json").read_bytes())
    return out


@pytest.mark.parametrize("name", ["roberta fill-mask", "distilbert classifier"])
def test_every_route_against_other_families_saved_by_transformers(name, transformers_families, online_client):
    with serving(transformers_families[name]) as url:
        check_routes(url, name.split()[1], f"transformers {name.split()[0]}")
        check_clients(url, name.split()[1], f"transformers {name.split()[0]}")
