"""Attention maps: what each head of a layer attends to, over the real tokens of a sentence (pair).

    >>> fig = attention_map(model, tokenizer, "The cat sat on the mat.", layer=2)        # doctest: +SKIP
    >>> fig.savefig("layer2.png")                                                       # doctest: +SKIP
    >>> write_attention("attention.html", model, tokenizer, "The cat sat on the mat.")  # doctest: +SKIP

Rows are the attending (query) tokens, columns the attended (key) tokens; each row sums to 1.
Special tokens ([CLS], [SEP], <s> …) are drawn in red on the axes: many heads park their
attention on them when they have nothing better to do (Clark et al., 2019).
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass
class AttentionWeights:
    tokens: list[str]
    special: list[bool]
    weights: torch.Tensor  # (L, N, T, T): every layer, every head, queries × keys; cross-attention (L, N, T, S)
    key_tokens: list[str] | None = None  # cross-attention: the source's tokens (None: the keys are `tokens`)
    key_special: list[bool] | None = None

    @property
    def keys(self) -> tuple[list[str], list[bool]]:
        if self.key_tokens is None:
            return self.tokens, self.special
        return self.key_tokens, self.key_special or [False] * len(self.key_tokens)

    @property
    def num_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def num_heads(self) -> int:
        return self.weights.shape[1]


def real_tokens(tokenizer, text: str, pair: str | None, max_length: int):
    """The Encoding of `text` (and `pair`) through the tokenizer's pipeline without its padding or
    truncation: a tokenizer.json that pads every text to a length (all-MiniLM-L6-v2's pads to 128)
    would add [PAD] rows and columns whose weights, with no mask, leak into the real tokens' rows;
    one that truncates would draw a cut text as if it were the whole. A text longer than the model's
    `max_length` positions is an error, not a silent cut."""
    enc = tokenizer.encode_batch([text], None if pair is None else [pair], padding=False, truncation=False)[0]
    if len(enc) > max_length:
        raise ValueError(
            f"the text{' pair' if pair is not None else ''} is {len(enc)} tokens long, longer than the model's "
            f"{max_length} positions: give a shorter text"
        )
    return enc


@torch.no_grad()
def attention_weights(model, tokenizer, text: str, pair: str | None = None) -> AttentionWeights:
    """Run the model's encoder on one input and return its attention probabilities over the real tokens
    (no padding, whatever the tokenizer's settings: see `real_tokens`)."""
    backbone = getattr(model, "backbone", model)
    device = next(backbone.parameters()).device  # the inputs go where the model is; the weights come back
    enc = real_tokens(tokenizer, text, pair, backbone.config.max_length)
    ids = torch.tensor([enc.ids], device=device)
    kwargs = {"input_ids": ids, "output_attentions": True}
    if backbone.config.type_vocab_size > 1:
        kwargs["token_type_ids"] = torch.tensor([enc.type_ids], device=device)
    backbone.eval()
    out = backbone(**kwargs)
    weights = torch.stack([a[0] for a in out.attentions]).float().cpu()  # (L, N, T, T)
    return AttentionWeights(list(enc.tokens), [bool(s) for s in enc.special_tokens_mask], weights)


def cross_attention_weights(queries: list[str], source: list[str], weights: torch.Tensor) -> AttentionWeights:
    """Weights of one cross-attention, (N, T, S) or (T, S), as one layer for `plot_attention`: the
    query tokens as rows, the source's as columns (MultiHeadCrossAttention's need_weights output
    for one example, or explicit_attention's).

    >>> aw = cross_attention_weights(["q"], ["k1", "k2"], torch.tensor([[0.25, 0.75]]))
    >>> aw.weights.shape, aw.keys[0]
    (torch.Size([1, 1, 1, 2]), ['k1', 'k2'])
    """
    w = weights.detach().float().cpu()
    w = w.view(1, 1, *w.shape) if w.dim() == 2 else w[None]
    if w.shape[-2:] != (len(queries), len(source)):
        raise ValueError(
            f"weights of shape {tuple(weights.shape)} for {len(queries)} queries and {len(source)} source tokens"
        )
    return AttentionWeights(list(queries), [False] * len(queries), w, list(source), [False] * len(source))


def _check(aw: AttentionWeights, layer: int | None, head: int | None) -> None:
    if layer is not None and not 0 <= layer < aw.num_layers:
        raise ValueError(f"layer {layer} does not exist: the model has layers 0..{aw.num_layers - 1}")
    if head is not None and not 0 <= head < aw.num_heads:
        raise ValueError(f"head {head} does not exist: the model has heads 0..{aw.num_heads - 1}")


def plot_attention(aw: AttentionWeights, layer: int | None = None, head: int | None = None):
    """A grid of every head of `layer` (default: the last), or one head; returns the matplotlib Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _check(aw, layer, head)
    layer = aw.num_layers - 1 if layer is None else layer
    heads = list(range(aw.num_heads)) if head is None else [head]
    cols = math.ceil(math.sqrt(len(heads)))
    rows = math.ceil(len(heads) / cols)
    T = len(aw.tokens)
    key_tokens, key_special = aw.keys
    size = max(3.0, 0.22 * max(T, len(key_tokens)))
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows), squeeze=False)
    for ax in axes.flat[len(heads) :]:
        ax.axis("off")
    for ax, h in zip(axes.flat, heads):
        ax.imshow(aw.weights[layer, h].numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_title(f"layer {layer} head {h}", fontsize=9)
        ax.set_xticks(range(len(key_tokens)))
        ax.set_yticks(range(T))
        ax.set_xticklabels(key_tokens, rotation=90, fontsize=7)
        ax.set_yticklabels(aw.tokens, fontsize=7)
        for labels, specials in ((ax.get_xticklabels(), key_special), (ax.get_yticklabels(), aw.special)):
            for label, special in zip(labels, specials):
                if special:
                    label.set_color("crimson")
    fig.suptitle("attention: rows attend to columns (special tokens in red)", fontsize=10)
    fig.tight_layout()
    return fig


def attention_map(
    model, tokenizer, text: str, pair: str | None = None, layer: int | None = None, head: int | None = None
):
    """The figure for one text (pair), straight from a model and its tokenizer."""
    return plot_attention(attention_weights(model, tokenizer, text, pair), layer, head)


_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>bertology attention</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; }} td.c {{ width: 18px; height: 18px; }}
th {{ font-weight: normal; font-size: 11px; padding: 0 4px; }} th.special {{ color: crimson; }}
th.col {{ writing-mode: vertical-rl; transform: rotate(180deg); height: 80px; }} #info {{ height: 1.5em; }}
</style></head><body>
<h3>{title}</h3>
<label>layer <select id="layer"></select></label> <label>head <select id="head"></select></label>
<p id="info">hover a cell: query token → key token, weight</p>
<table id="grid"></table>
<script type="application/json" id="attention-data">{payload}</script>
<script>
const data = JSON.parse(document.getElementById("attention-data").textContent);
const layerSel = document.getElementById("layer"), headSel = document.getElementById("head");
data.weights.forEach((_, l) => layerSel.add(new Option(l, l)));
data.weights[0].forEach((_, h) => headSel.add(new Option(h, h)));
layerSel.value = data.weights.length - 1;
function th(text, special, cls) {{
  const e = document.createElement("th"); e.textContent = text;
  e.className = (special ? "special " : "") + (cls || ""); return e; }}
function draw() {{
  const w = data.weights[+layerSel.value][+headSel.value], grid = document.getElementById("grid");
  grid.innerHTML = "";
  const head = grid.insertRow(); head.appendChild(document.createElement("th"));
  data.tokens.forEach((t, j) => head.appendChild(th(t, data.special[j], "col")));
  w.forEach((row, i) => {{
    const tr = grid.insertRow(); tr.appendChild(th(data.tokens[i], data.special[i]));
    row.forEach((v, j) => {{
      const td = tr.insertCell(); td.className = "c";
      td.style.background = `rgba(40, 70, 200, ${{v}})`;
      td.onmouseenter = () => document.getElementById("info").textContent =
        `${{data.tokens[i]}} → ${{data.tokens[j]}}: ${{v.toFixed(3)}}`;
    }});
  }});
}}
layerSel.onchange = headSel.onchange = draw; draw();
</script></body></html>
"""


def attention_html(aw: AttentionWeights, title: str = "attention") -> str:
    """A self-contained page: pick layer and head, hover a cell for its weight. Data in a JSON block."""
    payload = {
        "tokens": aw.tokens,
        "special": aw.special,
        "weights": [[[[round(float(v), 5) for v in row] for row in h] for h in layer] for layer in aw.weights],
    }
    text = json.dumps(payload).replace("</", "<\\/")  # a token like "</s>" must not close the script element
    return _HTML.format(title=html.escape(title), payload=text)


def write_attention(
    path: str | Path,
    model,
    tokenizer,
    text: str,
    pair: str | None = None,
    layer: int | None = None,
    head: int | None = None,
) -> AttentionWeights:
    """Write FILE.png (the grid for `layer`, or one head) or FILE.html (every layer and head, interactive)."""
    from ..io import atomic_path

    path = Path(path)
    aw = attention_weights(model, tokenizer, text, pair)
    _check(aw, layer, head)
    if path.suffix == ".html":
        with atomic_path(path) as tmp:
            tmp.write_text(attention_html(aw, f"{text}" + (f" / {pair}" if pair else "")), encoding="utf-8")
    elif path.suffix == ".png":
        fig = plot_attention(aw, layer, head)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=110)
        import matplotlib.pyplot as plt

        plt.close(fig)
    else:
        raise ValueError(f"{path}: give a .png or .html file name")
    return aw
