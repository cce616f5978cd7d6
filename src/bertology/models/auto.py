"""Which class a model is: every architecture by its transformers name, and reading a directory
into the class its config.json names (what transformers' Auto classes do)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import torch

from ..hardware import resolve_device
from ..nn import fused
from . import albert, bert, distilbert, electra, roberta, xlnet, xlnet_qa
from .base import PreTrainedModel
from .checkpoint import load_state, open_weights, read_config, read_weights
from .config import EncoderConfig
from .family import get_family

QUANTIZE = (None, "int8")  # what `load(..., quantize=)` accepts

# every model class of the family files, by its name (= transformers' architecture name)
ARCHITECTURES: dict[str, type[PreTrainedModel]] = {
    name: cls
    for module in (bert, roberta, albert, distilbert, electra, xlnet, xlnet_qa)
    for name, cls in vars(module).items()
    if isinstance(cls, type) and issubclass(cls, PreTrainedModel) and cls.__module__ == module.__name__
}


def task_class(model_type: str, head: str) -> type[PreTrainedModel]:
    """A family's class for a head: task_class("albert", "ForMaskedLM") is AlbertForMaskedLM."""
    return ARCHITECTURES[get_family(model_type).class_name(head)]


def from_config(config: EncoderConfig, architecture: str | None = None) -> PreTrainedModel:
    """Build a randomly initialised model; `architecture` defaults to the config's, else the backbone."""
    name = architecture or (config.architectures[0] if config.architectures else get_family(config.model_type).backbone)
    if name not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {name!r}; known: {', '.join(ARCHITECTURES)}")
    cls = ARCHITECTURES[name]
    if cls.config_class is not type(config):
        raise ValueError(f"architecture {name} takes a {cls.config_class.__name__}, not a {type(config).__name__}")
    return cls(config)


def load(
    path: str | os.PathLike,
    architecture: str | None = None,
    strict: bool = True,
    compile: bool = False,
    device: str | torch.device = "cpu",
    say=None,
    quantize: str | None = None,
) -> PreTrainedModel:
    """Read a local Hugging Face directory into the bertology model its config's `architectures` names.

    `strict=False` turns missing keys (left randomly initialised) and unexpected keys into warnings.
    `compile=True` compiles its blocks for inference (`PreTrainedModel.compile_blocks`).
    `device`: where the model is put: "cpu" (the default: it takes CPU tensors, as a plain torch
    module does), "cuda", "cuda:N", a torch.device, or "auto" (a CUDA GPU when there is one, said
    through `say`); a GPU asked for and absent is an error before anything is read.
    `quantize="int8"`: the blocks' linear layers as dynamic int8 layers for CPU inference
    (`PreTrainedModel.quantize_int8`; what stays fp32 is said through `say`); not with `compile`.
    Without either, a CPU model's block linear layers are `nn.fused.FusedLinear` (oneDNN's products with
    the activation and the residual add in their epilogues in fp32 inference, nn.Linear elsewhere): on
    the CPU that eager path is the faster one, and `compile=True` there warns so.
    """
    if quantize not in QUANTIZE:
        raise ValueError(f"quantize={quantize!r}: choose one of {', '.join(map(str, QUANTIZE))}")
    if quantize and compile:
        raise ValueError(
            "int8 and compile do not combine (the compiled blocks would not run the quantized layers); choose one"
        )
    device = device if isinstance(device, torch.device) else resolve_device(device, say)
    if compile and device.type == "cpu":
        warnings.warn(fused.COMPILED_ON_THE_CPU, RuntimeWarning, stacklevel=2)
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: not a model directory" + ("" if path.exists() else " (it does not exist)"))
    config = read_config(path)
    # int8 on the CPU: the model built without memory and each block quantized as soon as its weights are
    # in, so that the fp32 blocks never all exist at once (strict only: nothing may stay unread)
    as_loaded = quantize == "int8" and strict and device.type == "cpu"
    try:
        if as_loaded:
            with torch.device("meta"):
                model = from_config(config, architecture)
            materialize(model)
        else:
            model = from_config(config, architecture)
    except ValueError as e:
        raise ValueError(f"{path / 'config.json'}: {e}") from None
    tensors, source = open_weights(path)  # one tensor at a time: the checkpoint never sits beside the model
    check = getattr(model, "check_checkpoint", None)  # a family's own word on weights of the wrong kind
    if check is not None:
        check(tensors, source)
    notes = []
    if as_loaded:
        notes, quantize_when_loaded = model.quantize_int8(as_loaded=True)
        load_state(model, tensors, source, strict, copied_one=quantize_when_loaded)
        quantize_when_loaded(None)
    else:
        load_state(model, tensors, source, strict)
    model.to(device).eval()
    if quantize == "int8" and not as_loaded:
        notes = model.quantize_int8()
    elif quantize is None and device.type == "cpu" and not compile:
        fused.fuse(model)  # fp32 inference on the CPU: the blocks' linear layers through oneDNN (nn/fused.py)
    for note in notes:
        if say is not None:
            say(note)
    return model.compile_blocks(inference=True) if compile else model


def materialize(model: torch.nn.Module) -> None:
    """A model built on the meta device given CPU memory, uninitialised (pages the kernel hands out
    only when written), its tied parameters tied again (`to_empty` gives each place its own)."""
    first: dict[int, str] = {}
    aliases = []
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in first:
            aliases.append((name, first[id(p)]))
        first.setdefault(id(p), name)
    model.to_empty(device="cpu")
    for name, source in aliases:
        owner, _, attr = name.rpartition(".")
        setattr(model.get_submodule(owner), attr, model.get_parameter(source))


def load_for_task(path: str | os.PathLike, head: str, labels: list[str] | int | None = None) -> PreTrainedModel:
    """A pretrained backbone (read from any head's checkpoint, or a bare one) under a new, randomly
    initialised task head, e.g. `load_for_task("bert-dir", "ForSequenceClassification", ["neg", "pos"])`.

    The checkpoint's own head weights (MLM, NSP …) are dropped; a pooler the checkpoint lacks (an
    MLM-only checkpoint) is initialised randomly with a warning; any other missing weight is an error.
    """
    model = task_model(read_config(path), head, labels)
    load_backbone(model, path)
    return model


def task_model(config: EncoderConfig, head: str, labels: list[str] | int | None = None) -> PreTrainedModel:
    """A randomly initialised `head` model of the config's family, with `labels` classes when given."""
    if labels is not None:
        config = config.with_labels(labels)
    cls = task_class(config.model_type, head)
    config.architectures = [cls.__name__]
    return cls(config)


def load_with_heads(model: PreTrainedModel, path: str | os.PathLike) -> None:
    """The checkpoint at `path` into `model`, its heads included (a prompt classifier's masked LM or
    discriminator); the checkpoint's heads that `model` lacks (NSP, SOP) are left out, and a weight of
    `model` that the checkpoint lacks is an error."""
    tensors, source = read_weights(Path(path))
    load_state(model, tensors, source, strict=True, other_heads_ok=True)


def load_backbone(model: PreTrainedModel, path: str | os.PathLike) -> None:
    """The backbone weights of the checkpoint at `path` into `model`, whose own head stays as it is
    (a pooler the checkpoint lacks starts random, with a warning; any other missing weight is an error)."""
    tensors, source = read_weights(Path(path))
    load_state(model, tensors, source, strict=True, backbone_only=True)
