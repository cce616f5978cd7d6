"""Hugging Face layout on local disk: `config.json` + `model.safetensors` (or `pytorch_model.bin`).

Our module names are our own (one fused QKV projection, short names); each family has a name map
that rewrites a bertology parameter name into the transformers name(s) for the same tensor. The
map is a list of (regex, replacement) rules; a replacement holding `{qkv}` names three tensors, the
fused projection split along its output dimension into query, key, value.
"""
from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path
from typing import Callable

import torch
from safetensors.torch import load_file, save_file

from .io import atomic_path, atomic_write_text
from .models import PreTrainedModel, config_from_dict, from_config, task_class
from .models.config import AlbertConfig, EncoderConfig

Rule = tuple[str, "str | Callable[[re.Match], str]"]


class CheckpointError(ValueError):
    """A checkpoint does not fit the model its config describes (missing / unexpected keys)."""

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


def _heads(mlm: str, transform: str, norm: str, bias: str, decoder: str, pair: str = "cls.seq_relationship.") -> list[Rule]:
    return [
        (r"mlm\.dense\.", mlm + transform), (r"mlm\.norm\.", mlm + norm),
        (r"mlm\.bias$", bias), (r"mlm\.decoder\.weight$", decoder),
        (r"pair\.classifier\.", pair),
        (r"classifier\.pre_classifier\.", "pre_classifier."),  # DistilBERT
        (r"classifier\.dense\.", "classifier.dense."), (r"classifier\.out_proj\.", "classifier.out_proj."),  # RoBERTa
        (r"classifier\.classifier\.", "classifier."),
        (r"qa\.classifier\.", "qa_outputs."),
    ]


def _family(config: EncoderConfig) -> tuple[str, list[Rule], list[Rule], tuple[str, str, str]]:
    """(prefix of the backbone in task checkpoints, backbone rules, head rules, names of q, k, v)."""
    qkv = ("query", "key", "value")
    t = config.model_type
    if t == "bert":
        heads = _heads("cls.predictions.", "transform.dense.", "transform.LayerNorm.", "cls.predictions.bias",
                       "cls.predictions.decoder.weight")
        return "bert", _BERT_BACKBONE, heads, qkv
    if t == "roberta":
        return "roberta", _BERT_BACKBONE, _heads("lm_head.", "dense.", "layer_norm.", "lm_head.bias", "lm_head.decoder.weight"), qkv
    if t == "albert":
        heads = _heads("predictions.", "dense.", "LayerNorm.", "predictions.bias", "predictions.decoder.weight",
                       pair="sop_classifier.classifier.")
        return "albert", _albert_backbone(config), heads, qkv
    if t == "distilbert":
        heads = _heads("", "vocab_transform.", "vocab_layer_norm.", "vocab_projector.bias", "vocab_projector.weight")
        return "distilbert", _DISTILBERT_BACKBONE, heads, ("q_lin", "k_lin", "v_lin")
    raise ValueError(f"no Hugging Face name map for model_type {t!r}")


def _native_layout(config: EncoderConfig) -> bool:
    return isinstance(config, AlbertConfig) and not config.hf_compatible


def hf_names(name: str, config: EncoderConfig, bare: bool) -> list[str]:
    """The transformers name(s) of one bertology parameter (three for a fused QKV projection)."""
    if _native_layout(config):
        return [name]
    prefix, backbone, heads, qkv = _family(config)
    if name.startswith("backbone."):
        name, rules, prefix = name[len("backbone."):], backbone, prefix + "."
    else:
        rules, prefix = (backbone if bare else heads), ""
    for pattern, replacement in rules:
        m = re.match(pattern, name)
        if m:
            mapped = replacement(m) if callable(replacement) else m.expand(replacement)
            mapped = prefix + mapped + name[m.end():]
            return [mapped.replace("{qkv}", part) for part in qkv] if "{qkv}" in mapped else [mapped]
    raise KeyError(f"no Hugging Face name for parameter {name!r} of a {config.model_type} model")


def _tied(model: PreTrainedModel) -> set[str]:
    """Names of parameters that alias another one (the MLM decoder tied to the word embeddings)."""
    seen: dict[int, str] = {}
    tied = set()
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            tied.add(name)
        seen.setdefault(id(p), name)
    return tied


# ---- save -----------------------------------------------------------------------------------------

def save(model: PreTrainedModel, path: str | os.PathLike) -> None:
    """Write config.json and model.safetensors; transformers' Auto classes load them with no missing keys."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    config = model.config
    bare = not hasattr(model, "backbone")
    tied = _tied(model)
    tensors: dict[str, torch.Tensor] = {}
    for name, tensor in model.state_dict().items():
        if name in tied:
            continue
        names = hf_names(name, config, bare)
        parts = tensor.chunk(len(names), dim=0) if len(names) > 1 else (tensor,)
        for n, t in zip(names, parts):
            tensors[n] = t.detach().contiguous().cpu()
    d = config.to_dict()
    d["architectures"] = [model.architecture]
    if _native_layout(config):
        d["bertology_layout"] = "native"
        d["bertology_note"] = (
            f"ALBERT with sharing={config.sharing!r} (the paper's ablation) has no transformers equivalent: "
            "these weights use bertology's own parameter names and load only with bertology.load."
        )
        warnings.warn(f"{path}: {d['bertology_note']}", stacklevel=2)
    with atomic_path(path / "model.safetensors") as tmp:
        save_file(tensors, str(tmp), metadata={"format": "pt"})
    atomic_write_text(path / "config.json", json.dumps(d, indent=2, sort_keys=True) + "\n")


# ---- load -----------------------------------------------------------------------------------------

# Keys transformers checkpoints may hold that carry nothing we need: position-id buffers, and the
# decoder copies of the tied word embeddings / bias.
_IGNORABLE = re.compile(r"(.*\.position_ids$|.*decoder\.bias$|"
                        r"(cls\.predictions|lm_head|predictions)\.decoder\.weight$|vocab_projector\.weight$)")


def read_config(path: str | os.PathLike) -> EncoderConfig:
    path = Path(path)
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no config.json (a Hugging Face model directory holds config.json and weights)")
    try:
        d = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{file}: not valid JSON ({e})") from None
    return config_from_dict(d, source=str(file))


def read_weights(path: Path) -> tuple[dict[str, torch.Tensor], str]:
    """All tensors of a directory's checkpoint, and the file name to cite in errors."""
    single = path / "model.safetensors"
    index = path / "model.safetensors.index.json"
    binary = path / "pytorch_model.bin"
    if single.is_file():
        return load_file(str(single)), str(single)
    if index.is_file():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        tensors: dict[str, torch.Tensor] = {}
        for f in files:
            tensors.update(load_file(str(path / f)))
        return tensors, str(index)
    if binary.is_file():
        return torch.load(str(binary), map_location="cpu", weights_only=True), str(binary)
    raise FileNotFoundError(f"{path}: no model.safetensors, model.safetensors.index.json or pytorch_model.bin")


def load(path: str | os.PathLike, architecture: str | None = None, strict: bool = True) -> PreTrainedModel:
    """Read a local Hugging Face directory into the bertology model its config's `architectures` names.

    `strict=False` turns missing keys (left randomly initialised) and unexpected keys into warnings.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: not a directory")
    config = read_config(path)
    try:
        model = from_config(config, architecture)
    except ValueError as e:
        raise ValueError(f"{path / 'config.json'}: {e}") from None
    tensors, source = read_weights(path)
    load_state(model, tensors, source, strict)
    return model.eval()


def load_for_task(path: str | os.PathLike, head: str, labels: list[str] | int | None = None) -> PreTrainedModel:
    """A pretrained backbone (read from any head's checkpoint, or a bare one) under a new, randomly
    initialised task head, e.g. `load_for_task("bert-dir", "ForSequenceClassification", ["neg", "pos"])`.

    The checkpoint's own head weights (MLM, NSP …) are dropped; a pooler the checkpoint lacks (an
    MLM-only checkpoint) is initialised randomly with a warning; any other missing weight is an error.
    """
    path = Path(path)
    config = read_config(path)
    if labels is not None:
        config = config.with_labels(labels)
    cls = task_class(config.model_type, head)
    config.architectures = [cls.__name__]
    model = cls(config)
    tensors, source = read_weights(path)
    load_state(model, tensors, source, strict=True, backbone_only=True)
    return model


def load_state(model: PreTrainedModel, tensors: dict[str, torch.Tensor], source: str, strict: bool = True,
               backbone_only: bool = False) -> None:
    config = model.config
    bare = not hasattr(model, "backbone")
    tensors = {re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", k)): v
               for k, v in tensors.items()}  # TF-converted checkpoints
    if bare and not _native_layout(config):
        prefix = _family(config)[0] + "."
        if not any(k.startswith("embeddings.") for k in tensors):  # a backbone inside a task checkpoint
            tensors = {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in tensors.items()}
    if backbone_only and not _native_layout(config):
        prefix = _family(config)[0] + "."
        if not any(k.startswith(prefix) for k in tensors):  # a bare backbone checkpoint
            tensors = {prefix + k: v for k, v in tensors.items()}
    used: set[str] = set()
    missing: list[str] = []
    tied = _tied(model)
    state = model.state_dict()
    with torch.no_grad():
        for name, target in state.items():
            if name in tied or (backbone_only and not name.startswith("backbone.")):
                continue
            names = hf_names(name, config, bare)
            absent = [n for n in names if n not in tensors]
            if absent:
                missing.extend(absent)
                continue
            value = torch.cat([tensors[n] for n in names], dim=0) if len(names) > 1 else tensors[names[0]]
            if value.shape != target.shape:
                raise ValueError(f"{source}: {names[0] if len(names) == 1 else '+'.join(names)} has shape "
                                 f"{tuple(value.shape)}, the config implies {tuple(target.shape)}")
            target.copy_(value)
            used.update(names)
    if backbone_only:
        pooler = [m for m in missing if ".pooler" in m]
        if pooler:
            warnings.warn(f"{source}: the checkpoint has no pooler ({pooler[0]} …); the new head's pooler starts "
                          "randomly initialised", stacklevel=3)
        missing = [m for m in missing if ".pooler" not in m]
    unexpected = [] if backbone_only else sorted(k for k in tensors if k not in used and not _IGNORABLE.match(k))
    problems = []
    if missing:
        problems.append(f"missing keys {missing[:8]}{' …' if len(missing) > 8 else ''} ({len(missing)} in all)")
    if unexpected:
        problems.append(f"unexpected keys {unexpected[:8]}{' …' if len(unexpected) > 8 else ''} ({len(unexpected)} in all)")
    if problems:
        message = f"{source}: {'; '.join(problems)} for {model.architecture}"
        if strict:
            raise CheckpointError(message + " (pass strict=False to load anyway, leaving missing weights random)")
        warnings.warn(message, stacklevel=3)
