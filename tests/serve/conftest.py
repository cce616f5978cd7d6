"""Tiny checkpoints of every head the server knows, written to disk as `bertology finetune` / `model.save`
would, and an in-process client (Starlette's TestClient: the app's lifespan, its worker thread, no socket)."""

import itertools
from pathlib import Path

import pytest
import torch

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install -e '.[serve]'")

from bertology.models import ARCHITECTURES, get_family  # noqa: E402
from serve_client import make_client

WIKI = Path(__file__).resolve().parents[2] / "data" / "wiki.txt"
TINY = dict(
    hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, max_position_embeddings=64
)
# name: (family, architecture suffix, labels, what config.json records as `finetune` would)
CHECKPOINTS = {
    "backbone": ("bert", "Model", None, {}),
    "mlm": ("bert", "ForMaskedLM", None, {}),
    "classify": (
        "bert",
        "ForSequenceClassification",
        ["games", "mail", "net"],
        {"bertology_task": "classify", "bertology_max_length": 48},
    ),
    "pair": ("bert", "ForSequenceClassification", ["no", "yes"], {"bertology_task": "pair"}),
    "regress": ("bert", "ForSequenceClassification", 1, {}),  # no task recorded: one label means regression
    "tag": ("bert", "ForTokenClassification", ["B-PER", "I-PER", "B-LOC", "I-LOC", "O"], {}),
    "qa": ("bert", "ForQuestionAnswering", None, {}),
    "choice": ("bert", "ForMultipleChoice", None, {"bertology_task": "choice"}),
    "roberta-mlm": ("roberta", "ForMaskedLM", None, {}),
    "albert-mlm": ("albert", "ForMaskedLM", None, {}),
    "distilbert-mlm": ("distilbert", "ForMaskedLM", None, {}),
}
TOKENIZER_OF = {"distilbert": "bert"}  # DistilBERT keeps BERT's WordPiece


def train_tokenizer(family: str):
    from bertology.tokenizers import train

    with open(WIKI, encoding="utf-8") as f:
        lines = list(itertools.islice(f, 400))
    return train(lines=lines, family=family, vocab_size=600, show_progress=False)


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("serve-checkpoints")
    tokenizers = {f: train_tokenizer(f) for f in ("bert", "roberta", "albert")}
    out = {}
    for name, (family, head, labels, extra) in CHECKPOINTS.items():
        tok = tokenizers[TOKENIZER_OF.get(family, family)]
        record = get_family(family)
        pad = tok.token_to_id(record.specials.pad)
        config = record.preset("tiny", vocab_size=tok.vocab_size, pad_token_id=pad, **TINY)
        if labels is not None:
            config = config.with_labels(labels)
        config.extra.update(extra)
        torch.manual_seed(0)
        model = ARCHITECTURES[record.class_prefix + head](config).eval()
        out[name] = root / name
        model.save(out[name])
        tok.save(out[name] / "tokenizer.json")
    return out


@pytest.fixture(scope="module")
def clients(checkpoints):
    """clients[name]: a started in-process client of that checkpoint's server (made on first use)."""
    stack = []

    class Clients(dict):
        def __missing__(self, name):
            client = make_client(checkpoints[name])
            client.__enter__()  # runs the lifespan: starts the batching worker
            stack.append(client)
            self[name] = client
            return client

    yield Clients()
    for client in reversed(stack):
        client.__exit__(None, None, None)
