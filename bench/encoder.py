"""Inference speed of bertology's BERT-base against transformers' on the same weights and inputs.

    python bench/encoder.py [--batch 16] [--length 128] [--repeats 5] [--preset base] [--no-compile]

Prints the CPU (model, flags, a matmul peak in fp32 and bf16 measured in the same run), then
tokens/s of ours (eager, and with `compile_blocks()`: torch.compile's inductor, weights frozen)
and of transformers, with the ratios ours / theirs, at a fixed length and on a mixed-length batch
(lengths uniform in 16..length, padded to the longest), in fp32 and, where the CPU multiplies bf16
natively (the same-run probe), under bf16 autocast (ours with its linear weights stored in bf16,
`store_linear_weights()`, as `serve --bf16` has them: the same outputs bit for bit). Runs alternate
between the models and the median is reported, so all see the same machine. Peak RSS: each side
loads and runs the fixed fp32 batch in a fresh process of its own (VmHWM).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library that transformers imports: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import statistics
import subprocess
import tempfile
import time

import torch
import transformers

from bertology.hardware import bf16_pays, cpu_summary
from bertology.models import BertConfig, BertModel
from bertology.nn import fused


def batch(B: int, T: int, mixed: bool, vocab: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, vocab, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    if mixed:
        lengths = torch.randint(16, T + 1, (B,), generator=g)
        lengths[0] = T  # the batch is padded to its longest sequence
        mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    return ids.masked_fill(mask == 0, 0), mask


def timed(model, ids, mask, bf16: bool) -> float:
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        start = time.perf_counter()
        model(input_ids=ids, attention_mask=mask)
        return time.perf_counter() - start


def peak_rss_mib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def rss_of(side: str, weights: str, args) -> float:
    """Peak RSS (MiB) of a fresh process that loads one side's model and runs the fixed fp32 batch."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--rss-of",
            side,
            "--weights",
            weights,
            "--batch",
            str(args.batch),
            "--length",
            str(args.length),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.split()[-1])


def rss_child(args) -> None:
    import bertology

    model = (
        bertology.load(args.weights)
        if args.rss_of == "ours"
        else transformers.BertModel.from_pretrained(args.weights).eval()
    )
    ids, mask = batch(args.batch, args.length, False, model.config.vocab_size)
    timed(model, ids, mask, False)
    print(peak_rss_mib())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--preset", default="base")
    parser.add_argument("--no-compile", action="store_true", help="skip the compiled rows (compiling takes minutes)")
    parser.add_argument("--rss-of", choices=("ours", "theirs"), help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_of:
        return rss_child(args)
    print(cpu_summary())
    torch.manual_seed(0)
    ours = BertModel(BertConfig.preset(args.preset)).eval()
    with tempfile.TemporaryDirectory() as d:
        ours.save(d)
        theirs = transformers.BertModel.from_pretrained(d).eval()
        memory = {side: rss_of(side, d, args) for side in ("ours", "theirs")}

    def copy_of_ours(bf16: bool, compiled: bool) -> BertModel:
        model = BertModel(ours.config).eval()
        model.load_state_dict(ours.state_dict())
        if not compiled:
            fused.fuse(model)  # as `bertology.load` gives it (inductor packs the weights itself)
        model = model.store_linear_weights() if bf16 else model
        return model.compile_blocks(inference=True) if compiled else model

    def side_by_side(bf16: bool) -> dict:
        variants = {"ours": copy_of_ours(bf16, False)}
        if not args.no_compile:
            variants["ours compiled"] = copy_of_ours(bf16, True)
        return {**variants, "transformers": theirs}

    # bf16 rows: ours with its linear weights stored in bf16, as `serve --bf16` keeps them (autocast's casts, once)
    models = {False: side_by_side(False), True: side_by_side(True) if bf16_pays() else None}
    print(
        f"BERT-{args.preset}, B={args.batch}, T={args.length}, torch {torch.__version__}, "
        f"transformers {transformers.__version__} (attention: {theirs.config._attn_implementation}), "
        f"{torch.get_num_threads()} threads"
    )
    print(
        f"peak RSS running the fixed fp32 batch, each in its own process: ours {memory['ours']:,.0f} MiB, "
        f"transformers {memory['theirs']:,.0f} MiB"
    )
    precisions = (False, True) if bf16_pays() else (False,)
    if not bf16_pays():
        print("bf16: not native on this CPU (the probe above), so not measured")
    names = list(models[False])
    print(
        f"{'case':<22}"
        + "".join(f"{n + ' tok/s':>22}" for n in names)
        + "".join(f"{n + ' ratio':>22}" for n in names if n != "transformers")
    )
    for mixed in (False, True):
        ids, mask = batch(args.batch, args.length, mixed, ours.config.vocab_size)
        real_tokens = int(mask.sum())
        for bf16 in precisions:
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                outputs = {
                    n: m(input_ids=ids, attention_mask=mask).last_hidden_state for n, m in models[bf16].items()
                }  # warm-up
            for n, out in outputs.items():  # the same numbers from all, before timing anything
                diff = (out.float() - outputs["transformers"].float())[mask.bool()].abs().max()
                assert diff < (5e-2 if bf16 else 1e-4), f"{n}: outputs differ by {diff}"
            times = {n: [] for n in names}
            for _ in range(args.repeats):
                for n in names:
                    times[n].append(timed(models[bf16][n], ids, mask, bf16))
            speed = {n: real_tokens / statistics.median(t) for n, t in times.items()}
            case = f"{'mixed 16..' + str(args.length) if mixed else 'fixed'} {'bf16' if bf16 else 'fp32'}"
            print(
                f"{case:<22}"
                + "".join(f"{speed[n]:>22,.0f}" for n in names)
                + "".join(f"{speed[n] / speed['transformers']:>21.2f}×" for n in names if n != "transformers")
            )


if __name__ == "__main__":
    main()
