"""One dataclass config per family. Defaults are the paper's base size; presets are named sizes.

`to_dict` / `from_dict` speak Hugging Face's config.json keys, so a config written by bertology
is read by `transformers.AutoConfig` and the reverse. Keys we do not model are kept in `extra`
and written back unchanged.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..io import atomic_write_text

# config.json keys that are not fields: written from properties (labels, model_type) or by transformers
_DERIVED_KEYS = {"transformers_version", "model_type", "architectures", "id2label", "label2id", "num_labels"}


@dataclass
class EncoderConfig:
    model_type: ClassVar[str] = ""
    hf_names: ClassVar[dict[str, str]] = {}  # our field → config.json key, where they differ
    presets: ClassVar[dict[str, dict[str, Any]]] = {}

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    classifier_dropout: float | None = None
    id2label: dict[int, str] = field(default_factory=lambda: {0: "LABEL_0", 1: "LABEL_1"})
    architectures: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    # sizes that must be positive integers, and probabilities that must lie in [0, 1)
    _POSITIVE: ClassVar[tuple[str, ...]] = (
        "vocab_size",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "intermediate_size",
        "max_position_embeddings",
    )
    _PROBABILITIES: ClassVar[tuple[str, ...]] = ("hidden_dropout_prob", "attention_probs_dropout_prob")

    def __post_init__(self):
        name = type(self).__name__
        for f in self._POSITIVE:
            value = getattr(self, f)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {f} must be a positive integer, got {value!r}")
        if (
            isinstance(self.type_vocab_size, bool)
            or not isinstance(self.type_vocab_size, int)
            or self.type_vocab_size < 0
        ):
            raise ValueError(f"{name}: type_vocab_size must be an integer ≥ 0, got {self.type_vocab_size!r}")
        for f in self._PROBABILITIES:
            value = getattr(self, f)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ValueError(f"{name}: {f} must be a number in [0, 1), got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"{type(self).__name__}: hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_attention_heads}"
            )
        self.id2label = {int(k): str(v) for k, v in self.id2label.items()}

    # ---- positions ------------------------------------------------------------------------
    @property
    def position_offset(self) -> int:
        """Position ids start here (RoBERTa: after the padding index)."""
        return 0

    @property
    def max_length(self) -> int:
        """The longest sequence, special tokens included, the position table holds."""
        return self.max_position_embeddings - self.position_offset

    # ---- labels ---------------------------------------------------------------------------
    @property
    def head_dropout(self) -> float:
        """Dropout before a classification / tagging head, as each family's reference sets it."""
        return self.hidden_dropout_prob if self.classifier_dropout is None else self.classifier_dropout

    @property
    def token_head_dropout(self) -> float:
        return self.head_dropout

    @property
    def qa_head_dropout(self) -> float:
        return 0.0

    @property
    def num_labels(self) -> int:
        return len(self.id2label)

    @property
    def label2id(self) -> dict[str, int]:
        return {v: k for k, v in self.id2label.items()}

    def with_labels(self, labels: int | list[str]) -> "EncoderConfig":
        """A copy with `labels` classes (a count, or the label names in id order)."""
        names = [f"LABEL_{i}" for i in range(labels)] if isinstance(labels, int) else list(labels)
        return dataclasses.replace(self, id2label=dict(enumerate(names)))

    # ---- presets --------------------------------------------------------------------------
    @classmethod
    def preset(cls, name: str, **overrides) -> "EncoderConfig":
        if name not in cls.presets:
            raise ValueError(f"unknown {cls.model_type} preset {name!r}; known: {', '.join(cls.presets)}")
        return cls(**{**cls.presets[name], **overrides})

    # ---- Hugging Face config.json ---------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = dict(self.extra)
        for f in dataclasses.fields(self):
            if f.name in ("id2label", "architectures", "extra"):
                continue
            d[self.hf_names.get(f.name, f.name)] = getattr(self, f.name)
        d["model_type"] = self.model_type
        if self.architectures:
            d["architectures"] = list(self.architectures)
        d["id2label"] = {str(k): v for k, v in self.id2label.items()}
        d["label2id"] = self.label2id
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "config") -> "EncoderConfig":
        if d.get("model_type", cls.model_type) != cls.model_type:
            raise ValueError(f"{source}: model_type {d.get('model_type')!r} is not {cls.model_type!r}")
        to_field = {cls.hf_names.get(f.name, f.name): f.name for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in d.items():
            if key in to_field and key not in ("extra",):
                kwargs[to_field[key]] = value
            elif key not in _DERIVED_KEYS:
                extra[key] = value
        kwargs["architectures"] = d.get("architectures")
        if "id2label" in d:
            kwargs["id2label"] = {int(k): v for k, v in d["id2label"].items()}
        elif "num_labels" in d:
            kwargs["id2label"] = {i: f"LABEL_{i}" for i in range(int(d["num_labels"]))}
        cls._check_supported(extra, source)
        try:
            return cls(**kwargs, extra=extra)
        except TypeError as e:
            raise ValueError(f"{source}: {e}") from None

    @classmethod
    def _check_supported(cls, extra: dict[str, Any], source: str) -> None:
        kind = extra.get("position_embedding_type", "absolute")
        if kind != "absolute":
            raise ValueError(f"{source}: position_embedding_type {kind!r} is not supported (only 'absolute')")

    def save(self, path: str | os.PathLike) -> None:
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> "EncoderConfig":
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f), source=str(path))


def _sizes(**named: tuple[int, int, int]) -> dict[str, dict[str, int]]:
    """name=(layers, hidden, heads) → preset kwargs with the usual 4× feed-forward width."""
    return {
        n: dict(num_hidden_layers=layers, hidden_size=h, num_attention_heads=a, intermediate_size=4 * h)
        for n, (layers, h, a) in named.items()
    }


# The compact BERTs of Turc et al. (2019) plus the paper's base and large.
_BERT_SIZES = _sizes(
    tiny=(2, 128, 2), mini=(4, 256, 4), small=(4, 512, 8), medium=(8, 512, 8), base=(12, 768, 12), large=(24, 1024, 16)
)


@dataclass
class BertConfig(EncoderConfig):
    model_type: ClassVar[str] = "bert"
    presets: ClassVar[dict[str, dict[str, Any]]] = _BERT_SIZES


@dataclass
class RobertaConfig(EncoderConfig):
    """RoBERTa = BERT's shape with GPT-2's byte-level vocabulary, one token type, padding id 1."""

    model_type: ClassVar[str] = "roberta"
    presets: ClassVar[dict[str, dict[str, Any]]] = _BERT_SIZES

    vocab_size: int = 50265
    max_position_embeddings: int = 514  # 512 positions + padding_idx + 1 offset
    type_vocab_size: int = 1
    layer_norm_eps: float = 1e-5
    pad_token_id: int = 1
    bos_token_id: int = 0
    eos_token_id: int = 2

    @property
    def position_offset(self) -> int:
        return self.pad_token_id + 1


@dataclass
class AlbertConfig(EncoderConfig):
    """ALBERT: embeddings of size E projected to H; layers shared across depth.

    `sharing` is the ALBERT paper's ablation: "all" (the published models), "attention" (only the
    attention blocks shared), "ffn" (only the feed-forward blocks shared), "none". Hugging Face's
    layout (`num_hidden_groups` groups of `inner_group_num` layers) expresses "all" and "none";
    "attention" / "ffn" checkpoints are bertology's own format.
    """

    model_type: ClassVar[str] = "albert"
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512),
        "mini": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024),
        "small": dict(num_hidden_layers=6, hidden_size=512, num_attention_heads=8, intermediate_size=2048),
        "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
        "large": dict(num_hidden_layers=24, hidden_size=1024, num_attention_heads=16, intermediate_size=4096),
        "xlarge": dict(num_hidden_layers=24, hidden_size=2048, num_attention_heads=16, intermediate_size=8192),
        "xxlarge": dict(num_hidden_layers=12, hidden_size=4096, num_attention_heads=64, intermediate_size=16384),
    }

    vocab_size: int = 30000
    embedding_size: int = 128
    hidden_act: str = "gelu_new"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    classifier_dropout_prob: float = 0.1
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    sharing: str = "all"
    bos_token_id: int = 2
    eos_token_id: int = 3

    def __post_init__(self):
        super().__post_init__()
        if self.sharing not in ("all", "attention", "ffn", "none"):
            raise ValueError(f"AlbertConfig: sharing {self.sharing!r} is not one of all, attention, ffn, none")
        if self.num_hidden_layers % self.num_hidden_groups:
            raise ValueError(
                f"AlbertConfig: num_hidden_layers {self.num_hidden_layers} is not a multiple of "
                f"num_hidden_groups {self.num_hidden_groups}"
            )
        if self.sharing in ("attention", "ffn") and (self.num_hidden_groups, self.inner_group_num) != (1, 1):
            raise ValueError("AlbertConfig: sharing 'attention' / 'ffn' takes num_hidden_groups = inner_group_num = 1")

        if self.sharing == "none":  # Hugging Face spells "no sharing" as one group per layer
            self.num_hidden_groups, self.inner_group_num = self.num_hidden_layers, 1

    @property
    def head_dropout(self) -> float:
        return self.classifier_dropout_prob

    @property
    def hf_compatible(self) -> bool:
        """Whether transformers' AlbertModel can hold these weights (it knows groups, not blocks)."""
        return self.sharing in ("all", "none")


@dataclass
class DistilBertConfig(EncoderConfig):
    """DistilBERT: BERT's width, half its depth, no token types, no pooler."""

    model_type: ClassVar[str] = "distilbert"
    hf_names: ClassVar[dict[str, str]] = dict(
        hidden_size="dim",
        num_hidden_layers="n_layers",
        num_attention_heads="n_heads",
        intermediate_size="hidden_dim",
        hidden_act="activation",
        hidden_dropout_prob="dropout",
        attention_probs_dropout_prob="attention_dropout",
    )
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        n: {**s, "num_hidden_layers": max(1, s["num_hidden_layers"] // 2)} for n, s in _BERT_SIZES.items()
    }

    num_hidden_layers: int = 6
    type_vocab_size: int = 0
    sinusoidal_pos_embds: bool = False
    qa_dropout: float = 0.1
    seq_classif_dropout: float = 0.2

    @property
    def head_dropout(self) -> float:
        return self.seq_classif_dropout

    @property
    def token_head_dropout(self) -> float:
        return self.hidden_dropout_prob

    @property
    def qa_head_dropout(self) -> float:
        return self.qa_dropout

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        for key in ("type_vocab_size", "layer_norm_eps", "classifier_dropout"):  # fixed in DistilBERT
            d.pop(key)
        return d


@dataclass
class XLNetConfig(EncoderConfig):
    """XLNet (Yang et al., 2019): relative positions, two-stream attention, segment recurrence.

    There is no position table and no token-type embedding: positions enter as sinusoidal relative
    encodings, segments as "same / different segment" biases, so token type ids may be any integers
    (XLNet gives <cls> its own segment, 2). `max_position_embeddings` is only the length the
    fine-tuning tasks cut to; it is not written to config.json. `untie_r=True` (one set of
    attention biases per layer, as the released models and transformers) is the default;
    `untie_r=False` shares r_w / r_r / r_s biases across layers, the original code's default.
    """

    model_type: ClassVar[str] = "xlnet"
    hf_names: ClassVar[dict[str, str]] = dict(
        hidden_size="d_model",
        num_hidden_layers="n_layer",
        num_attention_heads="n_head",
        intermediate_size="d_inner",
        hidden_act="ff_activation",
        hidden_dropout_prob="dropout",
    )
    presets: ClassVar[dict[str, dict[str, Any]]] = _BERT_SIZES

    vocab_size: int = 32000
    type_vocab_size: int = 3  # segments A, B and <cls>; compared for equality only, never embedded
    pad_token_id: int = 5
    bos_token_id: int = 1
    eos_token_id: int = 2
    untie_r: bool = True
    attn_type: str = "bi"
    mem_len: int | None = 512
    reuse_len: int | None = None
    use_mems_eval: bool = True
    use_mems_train: bool = False
    bi_data: bool = False
    clamp_len: int = -1
    same_length: bool = False
    summary_type: str = "last"
    summary_use_proj: bool = True
    summary_activation: str | None = "tanh"
    summary_last_dropout: float = 0.1
    start_n_top: int = 5
    end_n_top: int = 5

    # config.json keys of BertConfig that XLNet does not have
    _NOT_WRITTEN: ClassVar[tuple[str, ...]] = (
        "attention_probs_dropout_prob",
        "max_position_embeddings",
        "type_vocab_size",
        "classifier_dropout",
    )

    def __post_init__(self):
        self.attention_probs_dropout_prob = self.hidden_dropout_prob  # XLNet has one dropout rate
        super().__post_init__()
        if self.attn_type not in ("bi", "uni"):
            raise ValueError(f"XLNetConfig: attn_type {self.attn_type!r} is not one of bi, uni")
        if self.summary_type not in ("last", "first", "mean"):
            raise ValueError(f"XLNetConfig: summary_type {self.summary_type!r} is not one of last, first, mean")
        for name in ("mem_len", "reuse_len"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"XLNetConfig: {name} must be an integer ≥ 0 or None, got {value!r}")

    @property
    def d_head(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def head_dropout(self) -> float:
        return self.summary_last_dropout

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        for key in self._NOT_WRITTEN:
            d.pop(key)
        d["d_head"] = self.d_head
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "config") -> "XLNetConfig":
        d = dict(d)
        if "n_token" in d and "vocab_size" not in d:  # configs converted from the original checkpoints
            d["vocab_size"] = d.pop("n_token")
        d_head = d.pop("d_head", None)
        config = super().from_dict(d, source)
        if d_head is not None and d_head != config.d_head:
            raise ValueError(f"{source}: d_head {d_head} is not d_model / n_head = {config.d_head}")
        return config


@dataclass
class ElectraConfig(EncoderConfig):
    """ELECTRA (Clark et al., 2020): BERT's encoder with embeddings of size E projected to H when
    they differ, no pooler. The same config describes the discriminator and the (narrower) generator.

    Presets small / base / large are Google's discriminators; tiny and mini have BERT-tiny's and
    BERT-mini's shapes (E = H), so that the two families race on equal networks. The summary_*
    keys are transformers' multiple-choice head (first token → dense → GELU → dropout).
    """

    model_type: ClassVar[str] = "electra"
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": dict(_BERT_SIZES["tiny"], embedding_size=128),
        "mini": dict(_BERT_SIZES["mini"], embedding_size=256),
        "small": dict(
            num_hidden_layers=12, hidden_size=256, num_attention_heads=4, intermediate_size=1024, embedding_size=128
        ),
        "base": dict(_BERT_SIZES["base"], embedding_size=768),
        "large": dict(_BERT_SIZES["large"], embedding_size=1024),
    }

    embedding_size: int = 768
    summary_type: str = "first"
    summary_use_proj: bool = True
    summary_activation: str | None = "gelu"
    summary_last_dropout: float = 0.1

    _POSITIVE: ClassVar[tuple[str, ...]] = EncoderConfig._POSITIVE + ("embedding_size",)

    def __post_init__(self):
        super().__post_init__()
        # transformers' other summaries (last token, mean, no projection) are not ELECTRA's: refuse, not guess
        if (self.summary_type, self.summary_use_proj) != ("first", True) or self.extra.get("summary_proj_to_labels"):
            raise ValueError(
                f"ElectraConfig: summary_type {self.summary_type!r} / summary_use_proj "
                f"{self.summary_use_proj!r} / summary_proj_to_labels: only ELECTRA's own ('first', "
                "true, false) is supported"
            )
