"""`bertology export [--format onnx|sentence-transformers] DIR OUT`: argument parsing; the work is
onnx.py's and sentence_layout.py's."""

from __future__ import annotations

from dataclasses import dataclass

from ..options import OptionError, accepts_old_names, add_arguments, check_options, from_args, option

FORMATS = ("onnx", "sentence-transformers")
POOLINGS = ("mean", "cls")


@accepts_old_names
@dataclass
class ExportOptions:
    model: str = option(help="a model directory bertology.load reads", cli=False)
    out: str = option(help="the directory to write", cli=False)
    format: str = option(
        "onnx",
        "what to write: an ONNX graph (model.onnx) with config.json, tokenizer.json and "
        "export.json beside it, or a directory sentence_transformers.SentenceTransformer "
        "opens (the encoder, its tokenizer, pooling and, with --normalize, normalisation)",
        choices=FORMATS,
    )
    int8: bool = option(
        False,
        "quantize the graph's matrix products to int8 with onnxruntime (weights per output "
        "channel, activations per call); needs onnxruntime installed",
    )
    optimize: bool = option(
        False,
        "fuse the graph with onnxruntime's BERT optimizer (Attention, SkipLayerNormalization, "
        "BiasGelu): faster, but then it runs on onnxruntime only; needs onnxruntime installed",
    )
    opset: int = option(17, "ONNX opset (17: LayerNormalization is one op, which onnxruntime's optimizer fuses)")
    tokenizer: str | None = option(
        None,
        "where tokenizer.json is (default: the model directory; none there: no tokenizer.json is written)",
        metavar="DIR",
    )
    overwrite: bool = option(False, "replace OUT if it exists")
    pooling: str = option(
        "mean",
        "sentence-transformers: the sentence vector is the mean over real tokens or the first token's",
        choices=POOLINGS,
    )
    normalize: bool = option(False, "sentence-transformers: unit-length sentence vectors")
    max_length: int | None = option(
        None,
        "sentence-transformers: where texts are cut (its max_seq_length; default: the model's positions)",
        old_names=("max_seq_length",),
    )

    def __post_init__(self):
        check_options(self)
        if self.opset < 14:
            raise OptionError(f"--opset {self.opset}: must be ≥ 14 (the exported attention needs it)")
        onnx_only = [f"--{n}" for n in ("int8", "optimize") if getattr(self, n)]
        if self.format != "onnx" and onnx_only:
            raise OptionError(f"{', '.join(onnx_only)}: ONNX options; --format {self.format} writes PyTorch weights")


def _export(args) -> int:
    from pathlib import Path

    from ..models import load
    from .onnx import export_onnx

    options = from_args(ExportOptions, args)
    tokenizer = Path(options.tokenizer) if options.tokenizer else Path(options.model)
    if options.tokenizer and not (tokenizer / "tokenizer.json").is_file():
        raise FileNotFoundError(f"--tokenizer {options.tokenizer}: no tokenizer.json there")
    model = load(options.model)
    if options.format == "sentence-transformers":
        return _sentence_transformers(model, tokenizer, options)
    result = export_onnx(
        model,
        options.out,
        tokenizer_dir=tokenizer if (tokenizer / "tokenizer.json").is_file() else None,
        opset=options.opset,
        int8=options.int8,
        optimize=options.optimize,
        overwrite=options.overwrite,
    )
    print(
        f"{model.architecture} → {result.path} (opset {result.opset}{', int8' if result.int8 else ''}"
        + (", fused: " + ", ".join(f"{k} ×{v}" for k, v in result.fused.items()) if result.fused else "")
        + "): inputs "
        + ", ".join(f"{k} {_axes(v)}" for k, v in result.inputs.items())
        + "; outputs "
        + ", ".join(f"{k} {_axes(v)}" for k, v in result.outputs.items())
        + f"; written: {', '.join(result.files)}"
    )
    return 0


def _sentence_transformers(model, tokenizer_dir, options) -> int:
    from ..tokenizers import Tokenizer
    from .sentence_layout import save_sentence_transformers

    if not (tokenizer_dir / "tokenizer.json").is_file():
        raise FileNotFoundError(
            f"{tokenizer_dir}: no tokenizer.json (sentence-transformers needs one; give --tokenizer DIR)"
        )
    path = save_sentence_transformers(
        model,
        Tokenizer.load(tokenizer_dir / "tokenizer.json"),
        options.out,
        options.pooling,
        options.normalize,
        options.max_length,
        options.overwrite,
    )
    print(
        f"{model.architecture} → {path}: SentenceTransformer('{path}') gives {options.pooling}-pooled "
        f"{'unit ' if options.normalize else ''}vectors of {model.config.hidden_size} dimensions"
    )
    return 0


def _axes(axes: dict[int, str]) -> str:
    return "(" + ", ".join(axes.values()) + ")" if axes else "(fixed)"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export",
        help="write a model as an ONNX graph for onnxruntime (and optimum), "
        "optionally int8, or as a sentence-transformers directory",
    )
    p.add_argument("model", metavar="DIR", help="a model directory bertology.load reads")
    p.add_argument(
        "out",
        metavar="OUT",
        help="the directory to write (onnx: model.onnx, config.json, tokenizer.json, "
        "export.json; sentence-transformers: its modules and the model)",
    )
    add_arguments(p, ExportOptions)
    p.set_defaults(func=_export)
