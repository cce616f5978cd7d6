"""The rest of text-embeddings-inference's API: POST / routed by the loaded head, /embed_all, /similarity,
/rerank, /decode; each answer equal to calling the models directly. The last test drives a real server
with the clients people use (huggingface_hub's InferenceClient, openai)."""

import pytest
import torch

import bertology
from bertology.tasks.finetune import load_tokenizer
from bertology.tasks.inference import embed, fill_mask, token_vectors
from bertology.tasks.pipeline import Pipeline

TEXTS = ["The cat sat on the mat.", "A game with falling blocks", "It was tired of the long winter."]


def direct(path):
    return bertology.load(path), load_tokenizer(str(path), None)


def test_embed_all_is_every_tokens_vector(clients, checkpoints):
    model, tok = direct(checkpoints["backbone"])
    got = clients["backbone"].post("/embed_all", json={"inputs": TEXTS})
    assert got.status_code == 200
    for mine, expect in zip(got.json(), token_vectors(model, tok, TEXTS)):
        assert torch.allclose(torch.tensor(mine), expect, atol=1e-5)
    lengths = [len(tok.encode(t)) for t in TEXTS]
    assert [len(v) for v in got.json()] == lengths


def test_similarity_is_the_cosine_to_the_source(clients, checkpoints):
    model, tok = direct(checkpoints["backbone"])
    body = {"inputs": {"source_sentence": TEXTS[0], "sentences": TEXTS[1:]}}
    got = clients["backbone"].post("/similarity", json=body).json()
    vectors = embed(model, tok, TEXTS, normalize=True)
    assert torch.allclose(torch.tensor(got), vectors[1:] @ vectors[0], atol=1e-5)
    assert clients["backbone"].post("/", json=body).json() == pytest.approx(got, abs=1e-6)  # the Inference API's route


def test_decode(clients, checkpoints):
    _, tok = direct(checkpoints["backbone"])
    ids = [tok.encode(t).ids for t in TEXTS]
    assert clients["backbone"].post("/decode", json={"ids": ids}).json() == tok.decode_batch(ids)
    assert clients["backbone"].post("/decode", json={"ids": ids[0], "skip_special_tokens": False}).json() == [
        tok.decode(ids[0], skip_special_tokens=False)
    ]
    too_big = clients["backbone"].post("/decode", json={"ids": [0, 10**6]})
    assert too_big.status_code == 422 and "outside the vocabulary" in too_big.json()["error"]
    assert clients["backbone"].post("/decode", json={"ids": "x"}).status_code == 422


def test_rerank_orders_texts_by_the_pair_classifiers_relevance(clients, checkpoints):
    pipe = Pipeline.load(checkpoints["pair"])
    query = "a game"
    got = clients["pair"].post("/rerank", json={"query": query, "texts": TEXTS, "return_text": True}).json()
    from bertology.tasks.base import Example

    logits = torch.stack(pipe.logits([Example(query, t, None) for t in TEXTS]))
    expect = logits.softmax(-1)[:, -1]
    assert [d["index"] for d in got] == expect.argsort(descending=True).tolist()
    assert all(abs(d["score"] - expect[d["index"]].item()) < 1e-5 and d["text"] == TEXTS[d["index"]] for d in got)
    raw = clients["pair"].post("/rerank", json={"query": query, "texts": TEXTS, "raw_scores": True}).json()
    assert all(abs(d["score"] - logits[d["index"], -1].item()) < 1e-5 and "text" not in d for d in raw)
    assert clients["classify"].post("/rerank", json={"query": query, "texts": TEXTS}).status_code == 404


def test_post_root_answers_the_heads_own_task(clients, checkpoints):
    model, tok = direct(checkpoints["backbone"])
    vectors = clients["backbone"].post("/", json={"inputs": TEXTS[0], "normalize": False}).json()
    assert torch.allclose(torch.tensor(vectors), embed(model, tok, TEXTS[:1]), atol=1e-5)
    # a classifier: the Inference API's shape, a list of {label, score} per input, in `parameters` or not
    single = clients["classify"].post("/", json={"inputs": TEXTS[0], "parameters": {}}).json()
    assert len(single) == 1 and {d["label"] for d in single[0]} == {"games", "mail", "net"}
    assert single[0] == clients["classify"].post("/predict", json={"inputs": TEXTS[0]}).json()
    # fill-mask: one mask's candidates flat
    model, tok = direct(checkpoints["mlm"])
    text = "The cat sat on the [MASK]."
    got = clients["mlm"].post("/", json={"inputs": text, "parameters": {"top_k": 3}}).json()
    expect = fill_mask(model, tok, [text], top_k=3)[0][0]
    assert [d["token"] for d in got] == [c.token for c in expect]
    assert clients["qa"].post("/", json={"inputs": {"question": "Who?", "context": "Mary sat."}}).status_code == 200


@pytest.mark.integration
def test_the_clients_people_use(checkpoints, monkeypatch):
    """huggingface_hub's InferenceClient (feature_extraction, sentence_similarity, text_classification,
    fill_mask) and openai's client against a real server, each compared with a direct call."""
    from live import Server

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the client then refuses every URL, ours included

    huggingface_hub = pytest.importorskip("huggingface_hub")
    import huggingface_hub.constants as hub_constants

    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)  # read once, at its import
    openai = pytest.importorskip("openai")
    model, tok = direct(checkpoints["backbone"])
    with Server(checkpoints["backbone"]) as server:
        client = huggingface_hub.InferenceClient(base_url=server.url)
        got = client.feature_extraction(TEXTS[0], normalize=False)
        assert torch.allclose(torch.tensor(got), embed(model, tok, TEXTS[:1]), atol=1e-5)
        similar = client.sentence_similarity(TEXTS[0], other_sentences=TEXTS[1:])
        vectors = embed(model, tok, TEXTS, normalize=True)
        assert torch.allclose(torch.tensor(similar), vectors[1:] @ vectors[0], atol=1e-5)
        reply = openai.OpenAI(base_url=server.url.rstrip("/") + "/v1", api_key="unused").embeddings.create(
            input=TEXTS, model="m"
        )
        assert torch.allclose(torch.tensor([d.embedding for d in reply.data]), vectors, atol=1e-5)
    pipe = Pipeline.load(checkpoints["classify"])
    with Server(checkpoints["classify"]) as server:
        scores = huggingface_hub.InferenceClient(base_url=server.url).text_classification(TEXTS[1], top_k=3)
        expect = pipe(TEXTS[1])
        assert {s.label: round(s.score, 5) for s in scores} == {k: round(v, 5) for k, v in expect.probabilities.items()}
    model, tok = direct(checkpoints["mlm"])
    with Server(checkpoints["mlm"]) as server:
        filled = huggingface_hub.InferenceClient(base_url=server.url).fill_mask("The cat sat on the [MASK].", top_k=3)
        assert [f.token for f in filled] == [
            c.token for c in fill_mask(model, tok, ["The cat sat on the [MASK]."], 3)[0][0]
        ]
