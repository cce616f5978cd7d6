"""Every endpoint on a tiny checkpoint of each head, answers equal to calling Pipeline / the models directly."""

import base64
import struct

import pytest
import torch

import bertology
from bertology.tasks.finetune import load_tokenizer
from bertology.tasks.inference import embed, fill_mask
from bertology.tasks.pipeline import Pipeline
from bertology.viz import attention_weights
from serve_client import make_client

TEXTS = ["The cat sat on the mat.", "A game with falling blocks", "It was tired of the long winter."]


def direct(path):
    return bertology.load(path), load_tokenizer(str(path), None)


def test_embed_equals_mean_pooled_encoder(clients, checkpoints):
    model, tok = direct(checkpoints["backbone"])
    got = clients["backbone"].post("/embed", json={"inputs": TEXTS, "normalize": False})
    assert got.status_code == 200
    vectors = torch.tensor(got.json())
    with torch.no_grad():  # by hand: the encoder on each text alone, mean over its tokens
        for i, text in enumerate(TEXTS):
            ids = torch.tensor([tok.encode(text).ids])
            expect = model(input_ids=ids).last_hidden_state[0].mean(0)
            assert torch.allclose(vectors[i], expect, atol=1e-5)
    single = clients["backbone"].post("/embed", json={"inputs": TEXTS[0]}).json()  # normalize defaults to true
    assert len(single) == 1 and torch.allclose(
        torch.tensor(single[0]), torch.nn.functional.normalize(vectors[0], dim=0), atol=1e-5
    )


@pytest.mark.parametrize("name", ["classify", "roberta-mlm", "albert-mlm", "distilbert-mlm"])
def test_every_head_and_family_serves_embed_from_its_encoder(clients, checkpoints, name):
    model, tok = direct(checkpoints[name])
    got = torch.tensor(clients[name].post("/embed", json={"inputs": TEXTS, "normalize": False}).json())
    with torch.no_grad():  # the encoder under the head, on each text alone, mean over its tokens
        for i, text in enumerate(TEXTS):
            hidden = model.backbone(input_ids=torch.tensor([tok.encode(text).ids])).last_hidden_state[0]
            assert torch.allclose(got[i], hidden.mean(0), atol=1e-5)


def test_openai_embeddings(clients, checkpoints):
    model, tok = direct(checkpoints["backbone"])
    body = clients["backbone"].post("/v1/embeddings", json={"input": TEXTS[:2], "model": "x"}).json()
    assert body["object"] == "list" and [d["index"] for d in body["data"]] == [0, 1]
    expect = embed(model, tok, TEXTS[:2], normalize=True)
    assert torch.allclose(torch.tensor([d["embedding"] for d in body["data"]]), expect, atol=1e-5)
    assert body["usage"]["prompt_tokens"] == sum(len(tok.encode(t)) for t in TEXTS[:2])
    packed = clients["backbone"].post("/v1/embeddings", json={"input": TEXTS[0], "encoding_format": "base64"}).json()
    raw = base64.b64decode(packed["data"][0]["embedding"])
    assert torch.allclose(torch.tensor(struct.unpack(f"<{len(raw) // 4}f", raw)), expect[0], atol=1e-5)


def test_cls_pooling(checkpoints):

    model, tok = direct(checkpoints["backbone"])
    with make_client(checkpoints["backbone"], pooling="cls") as client:
        got = torch.tensor(client.post("/embed", json={"inputs": TEXTS, "normalize": False}).json())
        assert client.get("/info").json()["model_type"] == {"embedding": {"pooling": "cls"}}
    assert torch.allclose(got, embed(model, tok, TEXTS, pooling="cls"), atol=1e-5)


@pytest.mark.parametrize(
    "name,text",
    [
        ("mlm", "The cat [MASK] on the [MASK]."),
        ("roberta-mlm", "The cat<mask> on the mat."),
        ("albert-mlm", "The cat [MASK] on the mat."),
        ("distilbert-mlm", "The [MASK] sat on the [MASK]."),
    ],
)
def test_fill_mask_equals_the_mlm_head(clients, checkpoints, name, text):
    model, tok = direct(checkpoints[name])
    got = clients[name].post("/fill-mask", json={"inputs": text, "top_k": 3}).json()
    masks = text.count("[MASK]") + text.count("<mask>")
    assert len(got) == masks and all(len(c) == 3 for c in got)
    enc = tok.encode(text)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([enc.ids])).logits[0]
    mask_id = tok.token_to_id("<mask>" if name == "roberta-mlm" else "[MASK]")
    for cands, position in zip(got, [t for t, i in enumerate(enc.ids) if i == mask_id]):
        probs = logits[position].softmax(-1)
        top = probs.topk(3)
        assert [c["token"] for c in cands] == top.indices.tolist()
        assert [c["score"] for c in cands] == pytest.approx(top.values.tolist(), abs=1e-6)
        a, b = enc.offsets[position]
        for c in cands:  # the sequence is the input with this mask replaced, the other masks kept
            assert c["sequence"].startswith(text[:a].rstrip()) and c["sequence"].endswith(text[b:])
            assert c["token_str"] in c["sequence"]
    batch = clients[name].post("/fill-mask", json={"inputs": [text, text], "top_k": 3}).json()
    assert batch == [got, got]
    assert got == [[c._asdict() for c in m] for m in fill_mask(model, tok, [text], top_k=3)[0]]


def test_predict_equals_pipeline(clients, checkpoints):
    pipe = Pipeline.load(checkpoints["classify"])
    got = clients["classify"].post("/predict", json={"inputs": TEXTS}).json()
    for ranked, prediction in zip(got, pipe(TEXTS)):
        assert ranked[0]["label"] == prediction.label
        assert {r["label"]: r["score"] for r in ranked} == pytest.approx(prediction.probabilities, abs=1e-6)
        assert [r["score"] for r in ranked] == sorted((r["score"] for r in ranked), reverse=True)
    single = clients["classify"].post("/predict", json={"inputs": TEXTS[0]}).json()
    assert single == got[0]
    raw = clients["classify"].post("/predict", json={"inputs": TEXTS[0], "raw_scores": True}).json()
    logits = torch.tensor([r["score"] for r in sorted(raw, key=lambda r: ["games", "mail", "net"].index(r["label"]))])
    probs = logits.softmax(-1).tolist()
    assert probs == pytest.approx([pipe(TEXTS[0]).probabilities[n] for n in ("games", "mail", "net")], abs=1e-6)


def test_predict_pairs_equals_pipeline(clients, checkpoints):
    pipe = Pipeline.load(checkpoints["pair"])
    pairs = [("The cat sat.", "It was tired."), ("A game", "Falling blocks")]
    one = clients["pair"].post("/predict", json={"inputs": list(pairs[0])}).json()  # TEI: two strings are a pair
    both = clients["pair"].post("/predict", json={"inputs": [list(p) for p in pairs]}).json()
    assert both[0] == one
    for ranked, prediction in zip(both, pipe(pairs)):
        assert {r["label"]: r["score"] for r in ranked} == pytest.approx(prediction.probabilities, abs=1e-6)


def test_regression_head_without_a_recorded_task(clients, checkpoints):
    model, tok = direct(checkpoints["regress"])
    pipe = Pipeline.for_model(model, tok)
    assert pipe.task.name == "regress"
    got = clients["regress"].post("/predict", json={"inputs": TEXTS[:2]}).json()
    assert [g[0]["score"] for g in got] == pytest.approx(pipe(TEXTS[:2]), abs=1e-6)


def test_tag_entities_from_the_pipelines_tags(clients, checkpoints):
    model, tok = direct(checkpoints["tag"])
    pipe = Pipeline.for_model(model, tok)
    text = "John  Smith lives in New York City with Mary Jones"
    got = clients["tag"].post("/tag", json={"inputs": text}).json()
    prediction = pipe(text)
    from bertology.tasks.conll import chunks

    words = [(m.start(), m.end()) for m in __import__("re").finditer(r"\S+", text)]
    expect = [
        (kind, words[a][0], words[b][1], sum(prediction["scores"][a : b + 1]) / (b - a + 1))
        for kind, a, b in chunks(prediction["tags"])
    ]
    assert expect, "the seeded tiny tagger should tag something in this sentence"
    assert [(e["entity_group"], e["start"], e["end"]) for e in got] == [x[:3] for x in expect]
    assert [e["score"] for e in got] == pytest.approx([x[3] for x in expect], abs=1e-5)
    assert all(text[e["start"] : e["end"]] == e["word"] for e in got)
    assert clients["tag"].post("/tag", json={"inputs": [text, text]}).json() == [got, got]


def test_qa_equals_pipeline(clients, checkpoints):
    model, tok = direct(checkpoints["qa"])
    pipe = Pipeline.for_model(model, tok)
    question, context = "Where did the cat sit?", "The cat sat on the mat in the garden behind the old house."
    got = clients["qa"].post("/qa", json={"question": question, "context": context}).json()
    expect = pipe((question, context))
    assert got == {
        "answer": expect["text"],
        "score": pytest.approx(expect["score"], abs=1e-5),
        "start": expect["start"],
        "end": expect["end"],
    }
    assert context[got["start"] : got["end"]] == got["answer"]
    many = clients["qa"].post("/qa", json={"inputs": [{"question": question, "context": context}] * 2}).json()
    assert many == [got, got]


def test_tokenize_equals_the_tokenizer(clients, checkpoints):
    _, tok = direct(checkpoints["backbone"])
    got = clients["backbone"].post("/tokenize", json={"inputs": TEXTS[:2]}).json()
    for text, tokens in zip(TEXTS, got):
        enc = tok.encode(text)
        assert [t["id"] for t in tokens] == enc.ids and [t["text"] for t in tokens] == enc.tokens
        assert [t["special"] for t in tokens] == [bool(s) for s in enc.special_tokens_mask]
        for t in tokens:
            assert t["special"] or text[t["start"] : t["stop"]].lower() == t["text"].removeprefix("##")
    plain = clients["backbone"].post("/tokenize", json={"inputs": TEXTS[0], "add_special_tokens": False}).json()
    assert [t["id"] for t in plain[0]] == tok.encode(TEXTS[0], add_special_tokens=False).ids


def test_attention_equals_the_viz_module(clients, checkpoints):
    model, tok = direct(checkpoints["mlm"])
    got = clients["mlm"].post("/attention", json={"inputs": TEXTS[0], "pair": TEXTS[1]}).json()
    aw = attention_weights(model, tok, TEXTS[0], TEXTS[1])
    assert got["tokens"] == aw.tokens and got["special"] == aw.special
    assert torch.allclose(torch.tensor(got["weights"]), aw.weights, atol=1e-5)
    page = clients["mlm"].post("/attention", json={"inputs": TEXTS[0], "format": "html"})
    assert page.headers["content-type"].startswith("text/html") and 'id="attention-data"' in page.text


def test_info_health_metrics_and_page(clients, checkpoints):
    client = clients["classify"]
    info = client.get("/info").json()
    assert info["architecture"] == "BertForSequenceClassification" and info["task"] == "classify"
    assert info["labels"] == ["games", "mail", "net"] and info["max_input_length"] == 48
    assert info["model_type"]["classifier"]["label2id"] == {"games": 0, "mail": 1, "net": 2}
    model, _ = direct(checkpoints["classify"])
    assert info["parameters"] == sum(p.numel() for p in model.parameters())
    assert info["endpoints"] == ["attention", "decode", "embed", "embed_all", "predict", "similarity", "tokenize"]
    assert info["device"] == "cpu" and info["model_dtype"] == "float32"  # the Python API's default device
    assert client.get("/health").status_code == 200
    client.post("/embed", json={"inputs": "x y"})
    text = client.get("/metrics").text
    assert 'bertology_requests_total{endpoint="/embed",status="200"}' in text
    assert "bertology_batch_tokens_count" in text and "bertology_queue_depth 0" in text
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'id="form"' in page.text and "/attention" in page.text


def test_bf16_autocast_stays_close_to_fp32(clients, checkpoints):

    fp32 = torch.tensor(clients["classify"].post("/embed", json={"inputs": TEXTS}).json())
    exact = clients["classify"].post("/predict", json={"inputs": TEXTS}).json()
    with make_client(checkpoints["classify"], bf16=True) as client:
        bf16 = torch.tensor(client.post("/embed", json={"inputs": TEXTS}).json())
        predicted = client.post("/predict", json={"inputs": TEXTS}).json()
        assert client.get("/info").json()["model_dtype"] == "bfloat16 (autocast)"
    assert not torch.equal(bf16, fp32)  # autocast did run the forward pass in bf16 …
    assert torch.nn.functional.cosine_similarity(bf16, fp32).min() > 0.999  # … and the vectors barely moved
    for a, b in zip(predicted, exact):
        assert {r["label"]: r["score"] for r in a} == pytest.approx({r["label"]: r["score"] for r in b}, abs=0.02)
