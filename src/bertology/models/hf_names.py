"""Parameter names in transformers' layout, per family: what makes our checkpoints theirs.

Our module names are our own (one fused QKV projection, short names). A family's `NameMap`
rewrites a bertology parameter name into the transformers name(s) for the same tensor: a list of
(regex, replacement) rules; a replacement holding `{qkv}` names three tensors, the fused
projection split along its output dimension into query, key, value.

    >>> from bertology.models.config import BertConfig
    >>> names = BERT.names("backbone.encoder.layers.0.attention.attention.qkv.weight", BertConfig(), bare=False)
    >>> names[0]
    'bert.encoder.layer.0.attention.self.query.weight'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .config import AlbertConfig, EncoderConfig

Rule = tuple[str, "str | Callable[[re.Match], str]"]

_EMBEDDINGS: list[Rule] = [
    (r"embeddings\.word\.", "embeddings.word_embeddings."),
    (r"embeddings\.position\.", "embeddings.position_embeddings."),
    (r"embeddings\.token_type\.", "embeddings.token_type_embeddings."),
    (r"embeddings\.norm\.", "embeddings.LayerNorm."),
]
_BERT_BACKBONE: list[Rule] = _EMBEDDINGS + [
    (r"encoder\.layers\.(\d+)\.attention\.attention\.qkv\.", r"encoder.layer.\1.attention.self.{qkv}."),
    (r"encoder\.layers\.(\d+)\.attention\.attention\.out\.", r"encoder.layer.\1.attention.output.dense."),
    (r"encoder\.layers\.(\d+)\.attention\.norm\.", r"encoder.layer.\1.attention.output.LayerNorm."),
    (r"encoder\.layers\.(\d+)\.ffn\.up\.", r"encoder.layer.\1.intermediate.dense."),
    (r"encoder\.layers\.(\d+)\.ffn\.down\.", r"encoder.layer.\1.output.dense."),
    (r"encoder\.layers\.(\d+)\.ffn\.norm\.", r"encoder.layer.\1.output.LayerNorm."),
    (r"pooler\.dense\.", "pooler.dense."),
]
_DISTILBERT_BACKBONE: list[Rule] = _EMBEDDINGS + [
    (r"encoder\.layers\.(\d+)\.attention\.attention\.qkv\.", r"transformer.layer.\1.attention.{qkv}."),
    (r"encoder\.layers\.(\d+)\.attention\.attention\.out\.", r"transformer.layer.\1.attention.out_lin."),
    (r"encoder\.layers\.(\d+)\.attention\.norm\.", r"transformer.layer.\1.sa_layer_norm."),
    (r"encoder\.layers\.(\d+)\.ffn\.up\.", r"transformer.layer.\1.ffn.lin1."),
    (r"encoder\.layers\.(\d+)\.ffn\.down\.", r"transformer.layer.\1.ffn.lin2."),
    (r"encoder\.layers\.(\d+)\.ffn\.norm\.", r"transformer.layer.\1.output_layer_norm."),
]


def _albert_backbone(config: AlbertConfig) -> list[Rule]:
    inner = config.inner_group_num

    def block(suffix: str) -> Callable[[re.Match], str]:
        def name(m: re.Match) -> str:  # unique layer u = group · inner_group_num + j
            group, j = divmod(int(m[1]), inner)
            return f"encoder.albert_layer_groups.{group}.albert_layers.{j}.{suffix}"

        return name

    return _EMBEDDINGS + [
        (r"encoder\.project\.", "encoder.embedding_hidden_mapping_in."),
        (r"encoder\.attention_blocks\.(\d+)\.attention\.qkv\.", block("attention.{qkv}.")),
        (r"encoder\.attention_blocks\.(\d+)\.attention\.out\.", block("attention.dense.")),
        (r"encoder\.attention_blocks\.(\d+)\.norm\.", block("attention.LayerNorm.")),
        (r"encoder\.ffn_blocks\.(\d+)\.up\.", block("ffn.")),
        (r"encoder\.ffn_blocks\.(\d+)\.down\.", block("ffn_output.")),
        (r"encoder\.ffn_blocks\.(\d+)\.norm\.", block("full_layer_layer_norm.")),
        (r"pooler\.dense\.", "pooler."),
    ]


def _heads(
    mlm: str, transform: str, norm: str, bias: str, decoder: str, pair: str = "cls.seq_relationship."
) -> list[Rule]:
    return [
        (r"mlm\.dense\.", mlm + transform),
        (r"mlm\.norm\.", mlm + norm),
        (r"mlm\.bias$", bias),
        (r"mlm\.decoder\.weight$", decoder),
        (r"pair\.classifier\.", pair),
        (r"classifier\.pre_classifier\.", "pre_classifier."),  # DistilBERT
        (r"classifier\.dense\.", "classifier.dense."),
        (r"classifier\.out_proj\.", "classifier.out_proj."),  # RoBERTa
        (r"classifier\.classifier\.", "classifier."),
        (r"classifier\.proj\.", "mean_classifier."),  # bertology's mean-pooled head: no transformers name
        (r"qa\.classifier\.", "qa_outputs."),
        (r"projection\.", "projection."),  # sentence distillation's map to the teacher's width: no transformers name
    ]


@dataclass(frozen=True)
class NameMap:
    """How one family's parameters are named in transformers."""

    prefix: str  # the backbone's attribute in task models ("bert")
    backbone: "list[Rule] | Callable[[EncoderConfig], list[Rule]]"  # a function where the config decides
    heads: list[Rule]
    qkv: tuple[str, str, str] = ("query", "key", "value")
    copied: str = r"$^"  # our names of parameters transformers stores once per layer ("{layer}"): copies, not parts

    def is_copied(self, name: str) -> bool:
        return re.match(self.copied, name.removeprefix("backbone.")) is not None

    def names(self, name: str, config: EncoderConfig, bare: bool) -> list[str]:
        """The transformers name(s) of one bertology parameter (three for a fused QKV projection,
        one per layer for a parameter shared across layers that transformers keeps per layer).
        `bare`: the model is a backbone on its own (no `backbone.` prefix, no heads)."""
        backbone = self.backbone(config) if callable(self.backbone) else self.backbone
        if name.startswith("backbone."):
            name, rules, prefix = name[len("backbone.") :], backbone, self.prefix + "."
        else:
            rules, prefix = (backbone if bare else self.heads), ""
        for pattern, replacement in rules:
            m = re.match(pattern, name)
            if m:
                mapped = replacement(m) if callable(replacement) else m.expand(replacement)
                mapped = prefix + mapped + name[m.end() :]
                if "{layer}" in mapped:
                    return [mapped.replace("{layer}", str(i)) for i in range(config.num_hidden_layers)]
                return [mapped.replace("{qkv}", part) for part in self.qkv] if "{qkv}" in mapped else [mapped]
        raise KeyError(f"no Hugging Face name for parameter {name!r} of a {config.model_type} model")


BERT = NameMap(
    "bert",
    _BERT_BACKBONE,
    _heads(
        "cls.predictions.",
        "transform.dense.",
        "transform.LayerNorm.",
        "cls.predictions.bias",
        "cls.predictions.decoder.weight",
    ),
)
ROBERTA = NameMap(
    "roberta", _BERT_BACKBONE, _heads("lm_head.", "dense.", "layer_norm.", "lm_head.bias", "lm_head.decoder.weight")
)
ALBERT = NameMap(
    "albert",
    _albert_backbone,
    _heads(
        "predictions.",
        "dense.",
        "LayerNorm.",
        "predictions.bias",
        "predictions.decoder.weight",
        pair="sop_classifier.classifier.",
    ),
)
DISTILBERT = NameMap(
    "distilbert",
    _DISTILBERT_BACKBONE,
    _heads("", "vocab_transform.", "vocab_layer_norm.", "vocab_projector.bias", "vocab_projector.weight"),
    qkv=("q_lin", "k_lin", "v_lin"),
)


# ELECTRA: BERT's backbone without a pooler, its projection E → H beside the embeddings; the
# generator's and discriminator's heads and the multiple-choice summary under their transformers names
_ELECTRA_BACKBONE: list[Rule] = [(r"encoder\.project\.", "embeddings_project.")] + _BERT_BACKBONE[:-1]
ELECTRA = NameMap(
    "electra",
    _ELECTRA_BACKBONE,
    [(r"discriminator\.", "discriminator_predictions."), (r"classifier\.summary\.", "sequence_summary.summary.")]
    + _heads("generator_predictions.", "dense.", "LayerNorm.", "generator_lm_head.bias", "generator_lm_head.weight"),
)


# XLNet shares nothing with BERT's layout. Its heads carry transformers' own names, so they map to
# themselves; with untie_r=False the backbone's one set of attention biases is written into every
# layer, as transformers (which always unties them) expects.
_XLNET_BACKBONE: list[Rule] = [
    (r"word\.", "word_embedding."),
    (r"mask_emb$", "mask_emb"),
    (r"(r_[wrs]_bias)$", r"layer.{layer}.rel_attn.\1"),
    (r"layers\.(\d+)\.attention\.norm\.", r"layer.\1.rel_attn.layer_norm."),
    (r"layers\.(\d+)\.attention\.", r"layer.\1.rel_attn."),
    (r"layers\.(\d+)\.ffn\.up\.", r"layer.\1.ff.layer_1."),
    (r"layers\.(\d+)\.ffn\.down\.", r"layer.\1.ff.layer_2."),
    (r"layers\.(\d+)\.ffn\.norm\.", r"layer.\1.ff.layer_norm."),
]
XLNET = NameMap("transformer", _XLNET_BACKBONE, [(r"", "")], copied=r"r_[wrs]_bias$")
