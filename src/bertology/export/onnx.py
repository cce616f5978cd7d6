"""A model as an ONNX graph that onnxruntime (and optimum's ORTModel classes) run, with dynamic batch
and length axes, its inputs and its head's outputs by name, and its config.json and tokenizer.json beside it.

    >>> export_onnx(bertology.load("runs/debian"), "runs/debian-onnx")          # doctest: +SKIP
    OnnxExport(path=PosixPath('runs/debian-onnx/model.onnx'), opset=17, inputs=['input_ids', …], …)

The graph is traced (torch.onnx's TorchScript exporter) from the model as it runs on the CPU in
fp32, with two changes that leave its values as they are:
  - padding is not packed away: the graph computes every position of the (B, T) batch, as
    transformers does (`skip_padding=False`); outputs at padded positions are therefore the
    computed values, not zeros;
  - attention is written out as transformers' eager attention is (Q, K and V as three products, an
    additive mask (1 - mask)·min, softmax(QKᵀ/√D + mask)·V), the pattern onnxruntime's BERT optimizer
    recognises and fuses into one Attention node (SkipLayerNormalization, BiasGelu likewise).
XLNet is not exported: see `check_exportable`.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn

from ..io import atomic_dir, atomic_write_text
from ..models import family_of
from ..nn import MultiHeadSelfAttention, Padding
from ..nn.int8 import is_int8
from ..tasks.forward import model_inputs

OPSET = 17  # LayerNormalization is one op from 17 on: onnxruntime fuses it with the residual (SkipLayerNormalization)
MODEL_FILE = "model.onnx"  # the name optimum's ORTModel classes open by default
# outputs a graph never returns: a loss needs labels, the per-layer tensors are for inspection, not deployment
LEFT_OUT = ("loss", "mlm_loss", "pair_loss", "hidden_states", "attentions", "mems")


@dataclass
class OnnxExport:
    """What `export_onnx` wrote: the graph, its inputs and outputs (name → dynamic axes), the opset."""

    path: Path
    opset: int
    inputs: dict[str, dict[int, str]]
    outputs: dict[str, dict[int, str]]
    int8: bool = False
    fused: dict[str, int] = field(default_factory=dict)  # onnxruntime's fused operators by type, when optimized
    files: list[str] = field(default_factory=list)

    def manifest(self) -> dict:
        d = asdict(self)
        d["path"] = self.path.name
        return d


def check_exportable(model) -> None:
    """A ValueError naming what cannot be exported, before anything is traced or written."""
    family = family_of(model.config)
    if family.name == "xlnet":
        raise ValueError(
            f"{model.architecture}: XLNet is not exported to ONNX: its relative attention builds the distance "
            "table from the sequence length as Python numbers (torch.arange over T), which a trace records as "
            "constants, so the graph would only run at the traced length; its memory (mems) and two-stream "
            "inputs have no ONNX signature either. Serve it with `bertology serve` instead."
        )
    if is_int8(model):
        raise ValueError(
            f"{model.architecture} has int8 linear layers: export the fp32 model (export --int8 "
            "quantizes the graph itself)"
        )
    if getattr(model.config, "bi_data", False):
        raise ValueError(f"{model.architecture}: bi_data models are not exported")


class EagerAttention(nn.Module):
    """`MultiHeadSelfAttention` written as transformers' eager attention, for the trace (same values):
    three products for Q, K and V (views of the fused weight), the additive mask, the explicit softmax."""

    def __init__(self, attention: MultiHeadSelfAttention):
        super().__init__()
        self.attention = attention

    def forward(
        self, x: torch.Tensor, padding: Padding, need_weights: bool = False, residual: torch.Tensor | None = None
    ):
        a = self.attention
        B, T, N, D = padding.batch, padding.length, a.num_heads, a.head_size
        H = N * D
        w, b = a.qkv.weight, a.qkv.bias  # (3H, H), (3H,): rows of Q, then K, then V

        def heads(i: int) -> torch.Tensor:  # (B, T, H) → (B, N, T, D)
            y = nn.functional.linear(x, w[i * H : (i + 1) * H], b[i * H : (i + 1) * H])
            return y.view(B, T, N, D).permute(0, 2, 1, 3)

        q, k, v = heads(0), heads(1), heads(2)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(D)  # (B, N, T, T)
        if padding.key_mask is not None:  # (B, 1, 1, T) bool
            scores = scores + (1.0 - padding.key_mask.to(scores.dtype)) * torch.finfo(scores.dtype).min
        y = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(B, T, H)  # (B, T, H)
        return (a.out(y) if residual is None else a.out(y) + residual), None


def traceable(model: nn.Module) -> nn.Module:
    """A copy of `model` that computes every position (no packing) through `EagerAttention`."""
    model = copy.deepcopy(model).cpu().float().eval()
    for module in list(model.modules()):
        if hasattr(module, "skip_padding"):
            module.skip_padding = False
        for name, child in list(module.named_children()):
            if isinstance(child, MultiHeadSelfAttention):
                setattr(module, name, EagerAttention(child))
    return model


def example_inputs(model, batch: int = 2, length: int = 7, choices: int = 2) -> dict[str, torch.Tensor]:
    """Inputs the trace runs on: the last sequence padded (so that the masked path is the one recorded)."""
    c = model.config
    shape = (batch, choices, length) if model.architecture.endswith("ForMultipleChoice") else (batch, length)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(min(5, c.vocab_size - 1), c.vocab_size, shape, generator=g)
    mask = torch.ones_like(ids)
    mask[..., -1, length // 2 :] = 0
    ids = ids.masked_fill(mask == 0, c.pad_token_id if c.pad_token_id is not None else 0)
    inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}
    inputs["token_type_ids"][..., length // 3 :] = 1 if c.type_vocab_size > 1 else 0
    return model_inputs(model, inputs)


class Graph(nn.Module):
    """The model as a function of positional tensors returning its outputs by position, for the tracer."""

    def __init__(self, model: nn.Module, inputs: list[str], outputs: list[str]):
        super().__init__()
        self.model, self.inputs, self.outputs = model, inputs, outputs

    def forward(self, *tensors):
        out = self.model(**dict(zip(self.inputs, tensors)))
        return tuple(out[name] for name in self.outputs)


def output_names(model, inputs: dict[str, torch.Tensor]) -> list[str]:
    with torch.no_grad():
        out = model(**inputs)
    return [k for k in out.keys() if k not in LEFT_OUT]


def dynamic_axes(model, names: list[str], inputs: dict[str, torch.Tensor]) -> dict[str, dict[int, str]]:
    """Which dimension of each output follows the batch, the choices and the length: found by running
    the model on inputs one size larger along each, and seeing which dimensions of the outputs grow."""
    multiple = inputs["input_ids"].dim() == 3
    axis_names = ["batch", "choices", "sequence"] if multiple else ["batch", "sequence"]
    with torch.no_grad():
        base = model(**inputs)
        grown = []
        for i in range(len(axis_names)):
            shape = list(inputs["input_ids"].shape)
            shape[i] += 1
            bigger = example_inputs(model, shape[0], shape[-1], shape[1] if multiple else 2)
            grown.append(model(**bigger))
    axes = {}
    for name in names:
        dims = {}
        for i, out in enumerate(grown):
            for d, (a, b) in enumerate(zip(base[name].shape, out[name].shape)):
                if a != b:
                    dims[d] = axis_names[i]
        axes[name] = dims
    return axes


def export_onnx(
    model,
    out: str | Path,
    *,
    tokenizer_dir: str | Path | None = None,
    opset: int = OPSET,
    int8: bool = False,
    optimize: bool = False,
    overwrite: bool = False,
) -> OnnxExport:
    """Write `out`/model.onnx (the model as a graph), config.json, tokenizer.json (from `tokenizer_dir`
    when given) and export.json (the opset, the inputs and outputs with their dynamic axes).

    `optimize`: onnxruntime's BERT optimizer fuses the graph (Attention, SkipLayerNormalization,
    BiasGelu, EmbedLayerNormalization: its contrib ops, so the graph then runs on onnxruntime only).
    `int8`: the graph's matrix products dynamically quantized by onnxruntime (int8 weights per
    output channel, activations quantized on each call), after the fusions when both are asked.
    Both need the onnxruntime package.
    The directory appears whole or not at all; an existing `out` is an error unless `overwrite`.
    """
    out = Path(out)
    check_exportable(model)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out}: already exists (pass overwrite=True / --overwrite to replace it)")
    tokenizer = Path(tokenizer_dir) / "tokenizer.json" if tokenizer_dir is not None else None
    if tokenizer is not None and not tokenizer.is_file():
        raise FileNotFoundError(f"{tokenizer}: no tokenizer.json to put beside the graph")
    if int8 or optimize:
        require_onnxruntime("--int8" if int8 else "--optimize")
    graph_model = traceable(model)
    inputs = example_inputs(graph_model)
    names = output_names(graph_model, inputs)
    input_axes = {
        k: ({0: "batch", 1: "choices", 2: "sequence"} if v.dim() == 3 else {0: "batch", 1: "sequence"})
        for k, v in inputs.items()
    }
    output_axes = dynamic_axes(graph_model, names, inputs)
    result = OnnxExport(out / MODEL_FILE, opset, input_axes, output_axes, int8)
    with atomic_dir(out, exists="replace" if overwrite else "error") as tmp:
        with warnings.catch_warnings():  # the input checks' Python branches are constants in a trace, as meant
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Graph(graph_model, list(inputs), names),
                tuple(inputs.values()),
                str(tmp / MODEL_FILE),
                input_names=list(inputs),
                output_names=names,
                dynamic_axes={**input_axes, **output_axes},
                opset_version=opset,
                dynamo=False,
                do_constant_folding=True,
            )
        if optimize:
            result.fused = optimize_graph(tmp / MODEL_FILE, tmp / MODEL_FILE, model.config)
        if int8:
            quantize_graph(tmp / MODEL_FILE, tmp / MODEL_FILE)
        config = model.config.to_dict()
        config["architectures"] = [model.architecture]
        atomic_write_text(tmp / "config.json", json.dumps(config, indent=2, sort_keys=True) + "\n")
        if tokenizer is not None:
            shutil.copyfile(tokenizer, tmp / "tokenizer.json")
        result.files = sorted(p.name for p in tmp.iterdir()) + ["export.json"]
        atomic_write_text(tmp / "export.json", json.dumps(result.manifest(), indent=2) + "\n")
    return result


def require_onnxruntime(flag: str) -> None:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        raise ValueError(f"export {flag} needs onnxruntime, which is not installed: pip install onnxruntime") from None


def optimize_graph(source: Path, target: Path, config) -> dict[str, int]:
    """onnxruntime's transformer optimizer (model type "bert") on `source`, written to `target`; returns
    the fused operators it made, by type (those it made at least one of)."""
    from onnxruntime.transformers import optimizer

    optimized = optimizer.optimize_model(
        str(source),
        model_type="bert",
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
        opt_level=0,
    )
    optimized.save_model_to_file(str(target))
    return {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}


def quantize_graph(source: Path, target: Path) -> None:
    """onnxruntime's dynamic quantization of the graph's matrix products, MatMul and the fused Attention's
    (int8 weights per output channel, activations per call) from `source` to `target` (which may be the same file)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = source.with_name(source.stem + "-fp32.onnx")
    if source == target:
        source.replace(fp32)
    quantize_dynamic(
        str(fp32 if source == target else source),
        str(target),
        per_channel=True,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul", "Attention"],
        extra_options={"DefaultTensorType": 1},
    )  # FLOAT: the fused ops' outputs have no inferred type
    if source == target:
        fp32.unlink()
