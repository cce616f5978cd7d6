"""Pretraining speed: bertology's MLM training step against transformers' BertForMaskedLM, and the
whole pretraining job of the demo's BERT-tiny.

    python bench/pretrain.py [--preset base|mini] [--batch 16] [--length 128] [--steps 6] [--fp32]
    python bench/pretrain.py --preset tiny --pipeline [--steps 300] [--corpus-mb 3]

--pipeline runs `bertology.train.pretrain` end to end (instances on disk, batches, Trainer) on the
first MB of data/debian-descriptions, twice in the same run: with the first wave's demo settings
(sequences of 64, dropout 0.1, 15% masking) and with the demo's small-budget recipe
(bertology.demo.recipe); it prints tokens/s of each, their ratio, and the share of the step time
spent outside forward/backward (data, optimizer, logging, evaluation).

Same initial weights, same batches (15% of tokens labelled), the step both trainers take (fused
AdamW, the default of transformers' Trainer with torch ≥ 2.8 and bertology's Trainer; gradients
clipped at norm 1), bf16 autocast where the CPU multiplies bf16 natively (the same-run probe) unless
--fp32. Ours runs the Trainer's sparse MLM head, eager and (unless --no-compile) with
`compile_blocks(inference=False)`. Each side runs in its own subprocess so its peak memory (max RSS)
is its own; the sides take turns, twice (--rounds), and each keeps its best round, so that a
shared machine's load falls on all alike. Prints the CPU line, tokens/s, the ratio ours /
transformers, the losses (the same curve within noise), model FLOPs per token and MFU against a
matrix-product peak measured in the same run.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library that transformers imports: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import json
import resource
import subprocess
import tempfile
import time

import torch

from bertology.hardware import matmul_gflops
from bertology.models import BertConfig, BertForMaskedLM
from bertology.models.params import count


def batches(steps: int, B: int, T: int, vocab: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        ids = torch.randint(1000, vocab, (B, T), generator=g)
        chosen = torch.rand(B, T, generator=g) < 0.15
        labels = torch.where(chosen, ids, torch.full_like(ids, -100))
        out.append(
            {"input_ids": ids.masked_fill(chosen, 103), "attention_mask": torch.ones_like(ids), "labels": labels}
        )
    return out


def run_side(side: str, model_dir: str, args) -> dict:
    torch.manual_seed(0)
    if side == "transformers":
        import transformers

        model = transformers.BertForMaskedLM.from_pretrained(model_dir)
    else:
        import bertology

        model = bertology.load(model_dir)
        if side == "bertology compiled":
            model.compile_blocks(inference=False)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    data = batches(args.steps + args.warmup, args.batch, args.length, model.config.vocab_size)
    losses, times = [], []
    profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) if args.profile else None
    for i, batch in enumerate(data):
        if profiler is not None and i == args.warmup:
            profiler.start()
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=not args.fp32):
            kwargs = {"sparse_prediction": True} if side.startswith("bertology") else {}
            loss = model(**batch, **kwargs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
        losses.append(round(loss.item(), 4))
    tokens = args.batch * args.length * len(times)
    result = {
        "tokens_per_s": tokens / sum(times),
        "losses": losses,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if profiler is not None:
        profiler.stop()
        result["profile"] = time_shares(profiler, sum(times))
    return result


# Where a step's time goes: each op's self time, by the kind of work it does (first match wins; a word
# matches a whole part of the op's name between underscores, e.g. "mm" matches aten::mm and aten::_mm).
KINDS = (
    ("matrix products", ("mm", "addmm", "bmm", "baddbmm", "linear", "matmul", "mkldnn", "onednn", "convolution")),
    ("attention (SDPA)", ("scaled", "flash", "efficient")),
    ("optimizer", ("adam", "adamw", "foreach")),
    ("softmax / cross-entropy", ("softmax", "nll", "cross", "logsumexp")),
    ("LayerNorm", ("layer",)),
    ("GELU / dropout", ("gelu", "dropout", "bernoulli")),
    ("gather / scatter / index", ("index", "gather", "scatter", "masked", "nonzero", "embedding", "select")),
    (
        "copies / casts / layout",
        (
            "copy",
            "clone",
            "contiguous",
            "cat",
            "view",
            "transpose",
            "permute",
            "reshape",
            "t",
            "expand",
            "unbind",
            "split",
            "as",
            "strided",
            "empty",
            "stack",
        ),
    ),
    (
        "elementwise",
        (
            "add",
            "mul",
            "div",
            "sub",
            "fill",
            "zero",
            "sum",
            "norm",
            "sqrt",
            "clamp",
            "where",
            "tanh",
            "ones",
            "zeros",
            "mean",
            "neg",
            "rsub",
            "pow",
            "exp",
            "log",
        ),
    ),
)


def time_shares(profiler, wall_s: float) -> dict[str, float]:
    """Share of the timed steps' wall time spent in each kind of op (self CPU time; the rest is Python and
    framework overhead, and compiled kernels under their own names)."""
    shares: dict[str, float] = {}
    events = sorted(profiler.key_averages(), key=lambda e: -e.self_cpu_time_total)
    top = ", ".join(f"{e.key} {100 * e.self_cpu_time_total / 1e6 / wall_s:.0f}%" for e in events[:8])
    for event in events:
        parts = set(event.key.lower().removeprefix("aten::").split("_"))
        kind = next((k for k, words in KINDS if parts.intersection(words)), "other ops")
        shares[kind] = shares.get(kind, 0.0) + event.self_cpu_time_total / 1e6 / wall_s
    return {**dict(sorted(shares.items(), key=lambda kv: -kv[1])), "top ops": top}


def pipeline(args) -> None:
    import lzma
    import warnings

    from bertology.demo import CORPORA, small_budget_options
    from bertology.hardware import bf16_pays, cpu_summary
    from bertology.tokenizers import train
    from bertology.train.pretrain import pretrain

    warnings.filterwarnings("ignore", message=".*max_predictions_per_seq.*")
    bf16 = not args.fp32 and bf16_pays()
    print(f"{cpu_summary()}; running {'bf16' if bf16 else 'fp32'}")
    with tempfile.TemporaryDirectory() as d, lzma.open(CORPORA["debian"][0], "rt", encoding="utf-8") as f:
        text = f.read(args.corpus_mb * 1_000_000)
        corpus = Path(d) / "corpus.txt"
        corpus.write_text(text[: text.rindex("\n\n") + 1], encoding="utf-8")
        train([str(corpus)], family="bert", vocab_size=8000, criterion="frequency", show_progress=False).save(
            Path(d) / "tok.json"
        )
        runs = {}
        for name in ("first wave (T=64, dropout 0.1, 15%)", "small-budget recipe (T=32, no dropout, 30%)"):
            o = small_budget_options(
                "bert", [str(corpus)], str(Path(d) / "tok.json"), str(Path(d) / name[:5]), args.steps, bf16, quiet=True
            )
            o.eval_every, o.heldout = None, 0.0
            if name.startswith("first"):  # the first wave's `make demo` BERT: only the recipe differs here
                o.seq_len, o.dropout, o.mlm_probability, o.max_predictions, o.unigram_prior = (
                    64,
                    None,
                    0.15,
                    None,
                    False,
                )
            final = pretrain(o)["final"]
            runs[name] = final
            print(
                f"{name:<48}{final['tokens_per_s']:>10,.0f} tokens/s   {final['outside_forward_backward']:.0%} of the "
                f"time outside forward/backward   (B=64, T={o.seq_len}, {args.steps} steps)",
                flush=True,
            )
        first, ours = runs.values()
        print(f"ratio recipe / first wave: {ours['tokens_per_s'] / first['tokens_per_s']:.2f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="base")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, help="timed steps (default 6; --pipeline 300)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--fp32", action="store_true")
    parser.add_argument("--no-compile", action="store_true", help="skip the compiled row (compiling takes minutes)")
    parser.add_argument("--rounds", type=int, default=2, help="turns each side takes; its best is kept")
    parser.add_argument("--profile", action="store_true", help="also print where each side's step time goes")
    parser.add_argument("--pipeline", action="store_true", help="the whole pretraining job of the demo's BERT-tiny")
    parser.add_argument("--corpus-mb", type=int, default=3)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(run_side(args.side, args.model_dir, args)))
        return
    if args.pipeline:
        args.steps = args.steps or 300
        return pipeline(args)
    from bertology.hardware import bf16_pays, cpu_summary

    args.steps = args.steps or 6
    print(cpu_summary(), flush=True)
    if not args.fp32 and not bf16_pays():
        print("bf16 is not native on this CPU (the probe above): running fp32")
        args.fp32 = True
    config = BertConfig.preset(args.preset)
    torch.manual_seed(0)
    sides = ("bertology",) + (() if args.no_compile else ("bertology compiled",)) + ("transformers",)
    results = {}
    with tempfile.TemporaryDirectory() as d:
        BertForMaskedLM(config).save(d)
        for _ in range(args.rounds):
            for side in sides:
                cmd = (
                    [
                        sys.executable,
                        __file__,
                        "--side",
                        side,
                        "--model-dir",
                        d,
                        "--preset",
                        args.preset,
                        "--batch",
                        str(args.batch),
                        "--length",
                        str(args.length),
                        "--steps",
                        str(args.steps),
                        "--warmup",
                        str(args.warmup),
                    ]
                    + (["--fp32"] if args.fp32 else [])
                    + (["--profile"] if args.profile else [])
                )
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                r = json.loads(out.strip().splitlines()[-1])
                if side not in results or r["tokens_per_s"] > results[side]["tokens_per_s"]:
                    results[side] = r
    peak = matmul_gflops(torch.float32 if args.fp32 else torch.bfloat16, n=2048, repeats=10) * 1e9  # FLOP/s
    c = count(config, f"bert-{args.preset}", args.length)
    train_flops = 3 * c.flops_per_token["total"]  # forward + backward (2×), dense MLM head: the model's FLOPs
    precision = "fp32" if args.fp32 else "bf16 autocast"
    print(
        f"BertForMaskedLM {args.preset}, B={args.batch}, T={args.length}, {precision}, {torch.get_num_threads()} threads; "
        f"model FLOPs/token (train, dense head) {train_flops / 1e9:.2f} G; matmul peak {peak / 1e12:.2f} TFLOP/s"
    )
    print(f"{'':<20}{'tokens/s':>10}{'ratio':>8}{'MFU':>8}{'max RSS':>10}  losses")
    base = results["transformers"]["tokens_per_s"]
    for side, r in results.items():
        mfu = r["tokens_per_s"] * train_flops / peak
        print(
            f"{side:<20}{r['tokens_per_s']:>10,.0f}{r['tokens_per_s'] / base:>7.2f}×{100 * mfu:>7.1f}%"
            f"{r['max_rss_mb']:>8,.0f}MB  {r['losses']}"
        )
    for side, r in results.items():
        if "profile" in r:
            top = r["profile"].pop("top ops")
            print(
                f"where {side}'s step time goes: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in r["profile"].items())
            )
            print(f"   largest ops: {top}")


if __name__ == "__main__":
    main()
