"""Hugging Face layout on local disk: `config.json` + `model.safetensors` (or `pytorch_model.bin`).

Writing a model and reading tensors into one already built; the family's `NameMap` (hf_names.py)
says what each parameter is called there. Choosing the class a directory holds is auto.py's job.
"""
from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..io import atomic_path, atomic_write_text
from .config import AlbertConfig, EncoderConfig
from .family import config_from_dict, family_of



class CheckpointError(ValueError):
    """A checkpoint does not fit the model its config describes (missing / unexpected keys)."""


def _native_layout(config: EncoderConfig) -> bool:
    return isinstance(config, AlbertConfig) and not config.hf_compatible


def hf_names(name: str, config: EncoderConfig, bare: bool) -> list[str]:
    """The transformers name(s) of one bertology parameter (three for a fused QKV projection)."""
    if _native_layout(config):
        return [name]
    return family_of(config).names.names(name, config, bare)


def copied(name: str, config: EncoderConfig) -> bool:
    """Whether transformers keeps a copy of this one parameter in every layer (XLNet's tied biases)."""
    return not _native_layout(config) and family_of(config).names.is_copied(name)


def _tied(model) -> set[str]:
    """Names of parameters that alias another one (the MLM decoder tied to the word embeddings)."""
    seen: dict[int, str] = {}
    tied = set()
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            tied.add(name)
        seen.setdefault(id(p), name)
    return tied


# ---- save -----------------------------------------------------------------------------------------

def save(model, path: str | os.PathLike) -> None:
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
        parts = [tensor.clone() for _ in names] if copied(name, config) else tensor.chunk(len(names), dim=0) if len(names) > 1 else (tensor,)
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
                        r"(cls\.predictions|lm_head|predictions)\.decoder\.weight$|vocab_projector\.weight$|^lm_loss\.weight$|"
                        r"^generator_lm_head\.weight$)")


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


def _read_safetensors(file: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(file))
    except FileNotFoundError:
        raise FileNotFoundError(f"{file}: weights file not found") from None
    except Exception as e:  # safetensors raises its own error type (and OSError / ValueError) for bad files
        raise CheckpointError(f"{file}: not a readable safetensors file, truncated or corrupt ({e})") from None


def read_weights(path: Path) -> tuple[dict[str, torch.Tensor], str]:
    """All tensors of a directory's checkpoint, and the file name to cite in errors."""
    single = path / "model.safetensors"
    index = path / "model.safetensors.index.json"
    binary = path / "pytorch_model.bin"
    if single.is_file():
        return _read_safetensors(single), str(single)
    if index.is_file():
        try:
            files = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CheckpointError(f"{index}: not a safetensors index (a JSON object with a weight_map): {e}") from None
        tensors: dict[str, torch.Tensor] = {}
        for f in files:
            tensors.update(_read_safetensors(path / f))
        return tensors, str(index)
    if binary.is_file():
        try:
            return torch.load(str(binary), map_location="cpu", weights_only=True), str(binary)
        except Exception as e:  # pickle, zip and weights_only refusals all end here
            raise CheckpointError(f"{binary}: not a readable PyTorch state dict, truncated, corrupt or holding "
                                  f"more than tensors ({type(e).__name__}: {e})") from None
    raise FileNotFoundError(f"{path}: no model.safetensors, model.safetensors.index.json or pytorch_model.bin")


# TF-converted checkpoints name LayerNorm parameters gamma / beta
_TF_NORM = ((re.compile(r"LayerNorm\.gamma$"), "LayerNorm.weight"), (re.compile(r"LayerNorm\.beta$"), "LayerNorm.bias"))


def _rebase(tensors: dict[str, torch.Tensor], config: EncoderConfig, bare: bool,
            backbone_only: bool) -> dict[str, torch.Tensor]:
    """Tensor names as the model at hand expects them: TF names renamed, and the backbone prefix
    ("bert.") dropped for a bare backbone read from a task checkpoint, or added for a task model
    read from a bare backbone checkpoint."""
    for pattern, name in _TF_NORM:
        tensors = {pattern.sub(name, k): v for k, v in tensors.items()}
    if _native_layout(config):
        return tensors
    prefix = family_of(config).names.prefix + "."
    if bare and not any(k.startswith("embeddings.") for k in tensors):
        return {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in tensors.items()}
    if backbone_only and not any(k.startswith(prefix) for k in tensors):
        return {prefix + k: v for k, v in tensors.items()}
    return tensors


def _listed(kind: str, keys: list[str]) -> str:
    return f"{kind} keys {keys[:8]}{' …' if len(keys) > 8 else ''} ({len(keys)} in all)"


def absent_parameters(model, tensors: dict[str, torch.Tensor]) -> list[str]:
    """The model's parameter names (bertology's) that `tensors` (transformers' names) do not hold:
    what `load_state` would call missing, before anything is copied. A job starting from a
    checkpoint asks which heads it must build new (an encoder-only directory has no MLM head)."""
    config = model.config
    bare = not hasattr(model, "backbone")
    tensors = _rebase(tensors, config, bare, backbone_only=True)  # a bare backbone's names as the model's
    tied = _tied(model)
    return [name for name in model.state_dict() if name not in tied
            and any(n not in tensors for n in hf_names(name, config, bare))]


def load_state(model, tensors: dict[str, torch.Tensor], source: str, strict: bool = True,
               backbone_only: bool = False) -> None:
    """Copy `tensors` (transformers' names) into `model`; `backbone_only` leaves the heads as they are.

    Shapes must match; missing or unexpected keys are a CheckpointError (warnings with strict=False).
    """
    config = model.config
    bare = not hasattr(model, "backbone")
    tensors = _rebase(tensors, config, bare, backbone_only)
    used: set[str] = set()
    missing: list[str] = []
    tied = _tied(model)
    with torch.no_grad():
        for name, target in model.state_dict().items():
            if name in tied or (backbone_only and not name.startswith("backbone.")):
                continue
            names = hf_names(name, config, bare)
            absent = [n for n in names if n not in tensors]
            if absent:
                missing.extend(absent)
                continue
            if copied(name, config):  # one parameter, a copy per layer in transformers: the copies must agree
                value = tensors[names[0]]
                if any(not torch.equal(tensors[n], value) for n in names[1:]):
                    raise CheckpointError(f"{source}: {names[0]} differs between layers, but the config ties it "
                                          "across layers (untie_r false); set untie_r true to load these weights")
            else:
                value = torch.cat([tensors[n] for n in names], dim=0) if len(names) > 1 else tensors[names[0]]
            if value.shape != target.shape:
                raise CheckpointError(f"{source}: {'+'.join(names)} has shape {tuple(value.shape)}, the config "
                                      f"implies {tuple(target.shape)}")
            target.copy_(value)
            used.update(names)
    if backbone_only:
        pooler = [m for m in missing if ".pooler" in m]
        if pooler:
            warnings.warn(f"{source}: the checkpoint has no pooler ({pooler[0]} …); the new head's pooler starts "
                          "randomly initialised", stacklevel=3)
        missing = [m for m in missing if ".pooler" not in m]
    unexpected = [] if backbone_only else sorted(k for k in tensors if k not in used and not _IGNORABLE.match(k))
    problems = ([_listed("missing", missing)] if missing else []) + ([_listed("unexpected", unexpected)] if unexpected else [])
    if problems:
        message = f"{source}: {'; '.join(problems)} for {model.architecture}"
        if strict:
            raise CheckpointError(message + " (pass strict=False to load anyway, leaving missing weights random)")
        warnings.warn(message, stacklevel=3)


# ---- a model and its tokenizer ---------------------------------------------------------------------

def check_tokenizer(config: EncoderConfig, tokenizer, source: str | os.PathLike) -> None:
    """Refuse (ValueError naming `source`, the tokenizer file) a tokenizer that does not belong to a model with
    `config`: an id past the embedding table (vocabulary, added tokens and the special tokens the post-processor
    inserts), a pad token other than config.json's pad_token_id, or truncation longer than the positions.

    Every command that loads a model calls it right after loading, before it writes anything: otherwise a
    mismatch surfaces mid-training as an index error, after the output directory was set up.
    """
    rows = config.vocab_size
    vocab = tokenizer.get_vocab()
    top_token, top = max(vocab.items(), key=lambda kv: kv[1], default=(None, -1))
    if top >= rows:
        raise ValueError(f"{source}: {len(vocab):,} tokens with ids up to {top:,} ({top_token!r}), past the "
                         f"{rows:,} rows of the model's embedding table (config.json vocab_size): this tokenizer "
                         "was not made for this model")
    probe = tokenizer.encode("a", "b")  # the special tokens a post-processor inserts carry their own ids
    if probe.ids and max(probe.ids) >= rows:
        raise ValueError(f"{source}: its post-processor inserts id {max(probe.ids):,}, past the {rows:,} rows of the "
                         "model's embedding table (config.json vocab_size)")
    pad_token = family_of(config).specials.pad
    pad_id = tokenizer.token_to_id(pad_token)
    padding = getattr(tokenizer, "padding", None)
    if padding is not None:
        pad_token, pad_id = padding["pad_token"], padding["pad_id"]
    if pad_id is not None and config.pad_token_id is not None and pad_id != config.pad_token_id:
        raise ValueError(f"{source}: pads with {pad_token!r} = id {pad_id}, but config.json's pad_token_id is "
                         f"{config.pad_token_id}: this tokenizer was not made for this model")
    truncation = getattr(tokenizer, "truncation", None)
    if truncation is not None and truncation["max_length"] > config.max_length:
        raise ValueError(f"{source}: truncates to {truncation['max_length']} tokens, more than the model's "
                         f"{config.max_length} positions (config.json max_position_embeddings)")
