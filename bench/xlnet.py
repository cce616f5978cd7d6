"""XLNet: bertology's against transformers' on the same weights and batch, in one run.

    python bench/xlnet.py [--preset base] [--batch 8] [--length 256] [--mem-len 128] [--predict 42] [--repeats 3]

Two measurements, each alternating between the two models (median reported, so both see the same
machine), with a memory of mem_len states from a previous segment:
  - inference: the content stream (XLNetModel, no target mapping);
  - a training step of the permutation LM: XLNetLMHeadModel with a perm_mask and a target mapping
    of `--predict` targets per sequence (the original's 85 of 512), forward + backward.
Peak memory is the process's max RSS growth during each model's runs (ru_maxrss, a rough figure).
The query stream is where the two differ most: transformers runs it over all T positions and
maps the targets in and out; bertology runs it over the targets only.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library that transformers imports: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import statistics
import tempfile
import time

import torch
import transformers

from bertology.models import XLNetConfig, XLNetLMHeadModel


def inputs(B: int, T: int, P: int, mem_len: int, H: int, layers: int, vocab: int, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, vocab, (B, T), generator=g)
    perm = (torch.rand(B, T, T, generator=g) < 0.5).float()
    targets = torch.stack([torch.randperm(T, generator=g)[:P] for _ in range(B)])  # (B, P)
    mapping = torch.zeros(B, P, T).scatter_(2, targets[..., None], 1.0)
    mems = [torch.randn(mem_len, B, H, generator=g) for _ in range(layers)]
    return dict(input_ids=ids, perm_mask=perm, target_mapping=mapping, labels=ids.gather(1, targets), mems=mems)


def infer(model, x) -> float:
    backbone = model.backbone if hasattr(model, "backbone") else model.transformer
    with torch.inference_mode():
        start = time.perf_counter()
        backbone(input_ids=x["input_ids"], mems=x["mems"], use_mems=True)
        return time.perf_counter() - start


def train_step(model, x) -> float:
    model.train()
    start = time.perf_counter()
    out = model(**x, use_mems=True)
    out.loss.backward()
    elapsed = time.perf_counter() - start
    model.zero_grad(set_to_none=True)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="base")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--mem-len", type=int, default=128)
    parser.add_argument("--predict", type=int, default=42)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    config = XLNetConfig.preset(args.preset, mem_len=args.mem_len, hidden_dropout_prob=0.0)
    ours = XLNetLMHeadModel(config)
    with tempfile.TemporaryDirectory() as d:
        ours.save(d)
        theirs = transformers.XLNetLMHeadModel.from_pretrained(d)
    x = inputs(
        args.batch,
        args.length,
        args.predict,
        args.mem_len,
        config.hidden_size,
        config.num_hidden_layers,
        config.vocab_size,
    )
    print(
        f"XLNet-{args.preset}: B={args.batch}, T={args.length}, mem_len={args.mem_len}, {args.predict} targets, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers {transformers.__version__}"
    )
    with torch.no_grad():  # same weights, same answer: the comparison is fair
        ours.eval(), theirs.eval()
        a = ours(**x, use_mems=True).logits
        b = theirs(**x, use_mems=True).logits
        print(f"  max abs difference of the logits: {(a - b).abs().max().item():.2e}")
    for name, fn in (("inference (content stream)", infer), ("training step (two streams)", train_step)):
        times = {"bertology": [], "transformers": []}
        fn(ours, x), fn(theirs, x)  # warm up
        for _ in range(args.repeats):
            for label, model in (("bertology", ours), ("transformers", theirs)):
                times[label].append(fn(model, x))
        med = {k: statistics.median(v) for k, v in times.items()}
        tokens = args.batch * args.length
        print(
            f"  {name:<28} bertology {tokens / med['bertology']:>9,.0f} tok/s   transformers "
            f"{tokens / med['transformers']:>9,.0f} tok/s   speed-up {med['transformers'] / med['bertology']:.2f}×"
        )
    try:
        import resource

        print(f"  peak RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
