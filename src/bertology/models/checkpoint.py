"""Hugging Face layout on local disk: `config.json` + `model.safetensors` (or `pytorch_model.bin`).

Writing a model and reading tensors into one already built; the family's `NameMap` (hf_names.py)
says what each parameter is called there. Choosing the class a directory holds is auto.py's job.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import torch
from safetensors import safe_open
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
        parts = (
            [tensor.clone() for _ in names]
            if copied(name, config)
            else tensor.chunk(len(names), dim=0)
            if len(names) > 1
            else (tensor,)
        )
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
_IGNORABLE = re.compile(
    r"(.*\.position_ids$|.*decoder\.bias$|"
    r"(cls\.predictions|lm_head|predictions)\.decoder\.weight$|vocab_projector\.weight$|^lm_loss\.weight$|"
    r"^generator_lm_head\.weight$)"
)


def read_config(path: str | os.PathLike) -> EncoderConfig:
    path = Path(path)
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise FileNotFoundError(
            f"{file}: no config.json (a Hugging Face model directory holds config.json and weights)"
        )
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


class TensorReader(Mapping):
    """A checkpoint's safetensors files as a mapping from tensor name to tensor, each tensor read from
    its file when asked (and not kept): loading copies one tensor at a time into the model, so the
    checkpoint never sits in memory beside the model. Read with pread(2) where safetensors offers it,
    so no mapping of the whole file stays resident either. `renamed` gives the same files under
    other names (what `_rebase` does to a dict)."""

    def __init__(self, files: list[Path], names: dict[str, tuple[int, str]] | None = None):
        self.files = files
        self._handles: list = [None] * len(files)
        if names is None:
            names = {}
            for i, file in enumerate(files):
                names.update((k, (i, k)) for k in self._handle(i).keys())
        self.names = names  # our name → (file index, the name in the file)

    def _handle(self, i: int):
        if self._handles[i] is None:
            file = self.files[i]
            try:
                try:
                    self._handles[i] = safe_open(str(file), framework="pt", backend="pread")
                except TypeError:  # a safetensors without the pread backend maps the file
                    self._handles[i] = safe_open(str(file), framework="pt")
            except FileNotFoundError:
                raise FileNotFoundError(f"{file}: weights file not found") from None
            except Exception as e:  # safetensors raises its own error type (and OSError / ValueError) for bad files
                raise CheckpointError(f"{file}: not a readable safetensors file, truncated or corrupt ({e})") from None
        return self._handles[i]

    def __getitem__(self, name: str) -> torch.Tensor:
        i, key = self.names[name]
        try:
            return self._handle(i).get_tensor(key)
        except Exception as e:
            raise CheckpointError(
                f"{self.files[i]}: tensor {key} could not be read, the file is truncated or corrupt ({e})"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def renamed(self, rename: Callable[[str], str]) -> "TensorReader":
        reader = TensorReader(self.files, {rename(k): v for k, v in self.names.items()})
        reader._handles = self._handles
        return reader


def _safetensors_files(path: Path) -> tuple[list[Path], str] | None:
    """A directory's safetensors files (one, or the shards an index names) and the file to cite; None if none."""
    single = path / "model.safetensors"
    index = path / "model.safetensors.index.json"
    if single.is_file():
        return [single], str(single)
    if index.is_file():
        try:
            files = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CheckpointError(f"{index}: not a safetensors index (a JSON object with a weight_map): {e}") from None
        return [path / f for f in files], str(index)
    return None


def open_weights(path: Path) -> tuple[Mapping[str, torch.Tensor], str]:
    """A directory's checkpoint as `read_weights` gives it, but safetensors read one tensor at a time
    (`TensorReader`) as `load_state` copies them: peak memory one model, not a model and a checkpoint."""
    found = _safetensors_files(path)
    if found is None:
        return read_weights(path)
    files, source = found
    return TensorReader(files), source


def read_weights(path: Path) -> tuple[dict[str, torch.Tensor], str]:
    """All tensors of a directory's checkpoint, and the file name to cite in errors."""
    binary = path / "pytorch_model.bin"
    found = _safetensors_files(path)
    if found is not None:
        files, source = found
        tensors: dict[str, torch.Tensor] = {}
        for f in files:
            tensors.update(_read_safetensors(f))
        return tensors, source
    if binary.is_file():
        try:
            return torch.load(str(binary), map_location="cpu", weights_only=True), str(binary)
        except Exception as e:  # pickle, zip and weights_only refusals all end here
            raise CheckpointError(
                f"{binary}: not a readable PyTorch state dict, truncated, corrupt or holding "
                f"more than tensors ({type(e).__name__}: {e})"
            ) from None
    raise FileNotFoundError(f"{path}: no model.safetensors, model.safetensors.index.json or pytorch_model.bin")


# TF-converted checkpoints name LayerNorm parameters gamma / beta
_TF_NORM = ((re.compile(r"LayerNorm\.gamma$"), "LayerNorm.weight"), (re.compile(r"LayerNorm\.beta$"), "LayerNorm.bias"))


def _renamed(tensors: Mapping[str, torch.Tensor], rename: Callable[[str], str]) -> Mapping[str, torch.Tensor]:
    if isinstance(tensors, TensorReader):  # names only: nothing is read
        return tensors.renamed(rename)
    return {rename(k): v for k, v in tensors.items()}


def _rebase(
    tensors: Mapping[str, torch.Tensor], config: EncoderConfig, bare: bool, backbone_only: bool
) -> Mapping[str, torch.Tensor]:
    """Tensor names as the model at hand expects them: TF names renamed, and the backbone prefix
    ("bert.") dropped for a bare backbone read from a task checkpoint, or added for a task model
    read from a bare backbone checkpoint."""
    for pattern, name in _TF_NORM:
        if any(pattern.search(k) for k in tensors):
            tensors = _renamed(tensors, lambda k, pattern=pattern, name=name: pattern.sub(name, k))
    if _native_layout(config):
        return tensors
    prefix = family_of(config).names.prefix + "."
    if bare and not any(k.startswith("embeddings.") for k in tensors):
        return _renamed(tensors, lambda k: k[len(prefix) :] if k.startswith(prefix) else k)
    if backbone_only and not any(k.startswith(prefix) for k in tensors):
        return _renamed(tensors, lambda k: prefix + k)
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
    return [
        name
        for name in model.state_dict()
        if name not in tied and any(n not in tensors for n in hf_names(name, config, bare))
    ]


def load_state(
    model,
    tensors: Mapping[str, torch.Tensor],
    source: str,
    strict: bool = True,
    backbone_only: bool = False,
    copied_one: Callable[[str], None] | None = None,
    other_heads_ok: bool = False,
) -> None:
    """Copy `tensors` (transformers' names; a dict, or a `TensorReader`) into `model`; `backbone_only`
    leaves the heads as they are; `other_heads_ok` leaves out the checkpoint's weights the model has no
    place for (a pretraining checkpoint's NSP head under a prompt classifier). `copied_one(name)` is called after each of the model's tensors is
    filled (in `state_dict` order), with no reference to it kept here: it may replace the module.

    Shapes must match; missing or unexpected keys are a CheckpointError (warnings with strict=False).
    """
    config = model.config
    bare = not hasattr(model, "backbone")
    tensors = _rebase(tensors, config, bare, backbone_only)
    used: set[str] = set()
    missing: list[str] = []
    tied = _tied(model)
    state = model.state_dict()
    with torch.no_grad():
        for name in list(state):
            target = state.pop(name)  # popped: a module replaced by `copied_one` is freed with it
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
                    raise CheckpointError(
                        f"{source}: {names[0]} differs between layers, but the config ties it "
                        "across layers (untie_r false); set untie_r true to load these weights"
                    )
            else:
                value = torch.cat([tensors[n] for n in names], dim=0) if len(names) > 1 else tensors[names[0]]
            if value.shape != target.shape:
                raise CheckpointError(
                    f"{source}: {'+'.join(names)} has shape {tuple(value.shape)}, the config "
                    f"implies {tuple(target.shape)}"
                )
            target.copy_(value)
            used.update(names)
            del target, value
            if copied_one is not None:
                copied_one(name)
    if backbone_only:
        pooler = [m for m in missing if ".pooler" in m]
        if pooler:
            warnings.warn(
                f"{source}: the checkpoint has no pooler ({pooler[0]} …); the new head's pooler starts "
                "randomly initialised",
                stacklevel=3,
            )
        missing = [m for m in missing if ".pooler" not in m]
    unexpected = (
        []
        if backbone_only or other_heads_ok
        else sorted(k for k in tensors if k not in used and not _IGNORABLE.match(k))
    )
    problems = ([_listed("missing", missing)] if missing else []) + (
        [_listed("unexpected", unexpected)] if unexpected else []
    )
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
        raise ValueError(
            f"{source}: {len(vocab):,} tokens with ids up to {top:,} ({top_token!r}), past the "
            f"{rows:,} rows of the model's embedding table (config.json vocab_size): this tokenizer "
            "was not made for this model"
        )
    probe = tokenizer.encode("a", "b")  # the special tokens a post-processor inserts carry their own ids
    if probe.ids and max(probe.ids) >= rows:
        raise ValueError(
            f"{source}: its post-processor inserts id {max(probe.ids):,}, past the {rows:,} rows of the "
            "model's embedding table (config.json vocab_size)"
        )
    pad_token = family_of(config).specials.pad
    pad_id = tokenizer.token_to_id(pad_token)
    padding = getattr(tokenizer, "padding", None)
    if padding is not None:
        pad_token, pad_id = padding["pad_token"], padding["pad_id"]
    if pad_id is not None and config.pad_token_id is not None and pad_id != config.pad_token_id:
        raise ValueError(
            f"{source}: pads with {pad_token!r} = id {pad_id}, but config.json's pad_token_id is "
            f"{config.pad_token_id}: this tokenizer was not made for this model"
        )
    truncation = getattr(tokenizer, "truncation", None)
    if truncation is not None and truncation["max_length"] > config.max_length:
        raise ValueError(
            f"{source}: truncates to {truncation['max_length']} tokens, more than the model's "
            f"{config.max_length} positions (config.json max_position_embeddings)"
        )
