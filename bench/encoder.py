"""Inference speed of bertology's BERT-base against transformers' on the same weights and inputs.

    python bench/encoder.py [--batch 16] [--length 128] [--repeats 5] [--preset base]

Prints tokens/s for both and the ratio ours / theirs, at a fixed length and on a mixed-length
batch (lengths uniform in 16..length, padded to the longest), in fp32 and under bf16 autocast.
Runs alternate between the two models and the median is reported, so both see the same machine.
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

import bertology
from bertology.models import BertConfig, BertModel


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--preset", default="base")
    args = parser.parse_args()
    torch.manual_seed(0)
    ours = BertModel(BertConfig.preset(args.preset)).eval()
    with tempfile.TemporaryDirectory() as d:
        ours.save(d)
        theirs = transformers.BertModel.from_pretrained(d).eval()
    print(f"BERT-{args.preset}, B={args.batch}, T={args.length}, torch {torch.__version__}, "
          f"transformers {transformers.__version__} (attention: {theirs.config._attn_implementation}), "
          f"{torch.get_num_threads()} threads")
    print(f"{'case':<22}{'ours tok/s':>12}{'transformers tok/s':>20}{'ratio':>8}")
    for mixed in (False, True):
        ids, mask = batch(args.batch, args.length, mixed, ours.config.vocab_size)
        real_tokens = int(mask.sum())
        with torch.inference_mode():  # the same numbers from both, before timing anything
            diff = (ours(input_ids=ids, attention_mask=mask).last_hidden_state
                    - theirs(input_ids=ids, attention_mask=mask).last_hidden_state)[mask.bool()].abs().max()
        assert diff < 1e-4, f"outputs differ by {diff}"
        for bf16 in (False, True):
            times = {"ours": [], "theirs": []}
            for model in (ours, theirs):  # warm-up
                timed(model, ids, mask, bf16)
            for _ in range(args.repeats):
                times["ours"].append(timed(ours, ids, mask, bf16))
                times["theirs"].append(timed(theirs, ids, mask, bf16))
            a = real_tokens / statistics.median(times["ours"])
            b = real_tokens / statistics.median(times["theirs"])
            case = f"{'mixed 16..' + str(args.length) if mixed else 'fixed'} {'bf16' if bf16 else 'fp32'}"
            print(f"{case:<22}{a:>12,.0f}{b:>20,.0f}{a / b:>7.2f}×")


if __name__ == "__main__":
    main()
