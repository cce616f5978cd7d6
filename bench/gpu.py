"""BERT on one GPU: bertology against transformers (its SDPA attention), same weights, same inputs,
same precision, on the same GPU in the same run.

    python bench/gpu.py [--preset base] [--batch 128] [--length 128] [--steps 20]
                        [--infer-batch 128] [--infer-length 256] [--rounds 2]
    python bench/gpu.py --device cpu --preset tiny --steps 2      # a smoke test of this script, no GPU needed

1. The MLM pretraining step at T = --length (full sequences, 15% of tokens labelled): forward,
   backward, gradient clipping at norm 1 and fused AdamW, under bf16 autocast where the GPU has it
   (Ampere and later; fp16 with a gradient scaler elsewhere). Ours computes the MLM head on the
   labelled tokens only (sparse_prediction), as bertology's Trainer does; transformers computes it
   on every token, as its Trainer does.
2. Inference of the encoder (BertModel) on a mixed-length batch (lengths uniform in 16..--infer-length,
   padded to the longest, so about 45% padding) and on a full one, under the same autocast: ours skips
   padding in the linear layers and, on CUDA, in attention (varlen over the packed rows);
   transformers computes every padded position. Tokens/s count real tokens only.

The sides take turns (--rounds) and each keeps its best round. Prints the GPU, a bf16 (or fp16)
matrix-product peak measured in the same run, tokens/s of each side, the ratio ours / transformers,
and model-FLOPs utilisation against the measured peak (model FLOPs: the dense model's, 3× the forward
pass for a training step, the same count for both sides). Without CUDA it exits with status 2,
unless --device cpu asks for the smoke test.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/tokenizers.py would shadow the `tokenizers` library that transformers imports: keep bench/ off sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import tempfile
import time

import torch

import bertology
from bertology.hardware import resolve_device
from bertology.models import BertConfig, BertForMaskedLM
from bertology.models.params import count
from bertology.tasks.forward import inference_dtype


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(device: torch.device, dtype: torch.dtype, n: int, repeats: int = 20) -> float:
    """Measured FLOP/s of an n×n matrix product in `dtype` on `device` (warmed up first)."""
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    synchronize(device)
    return 2 * n**3 * repeats / (time.perf_counter() - start)


def mlm_batches(n: int, B: int, T: int, vocab: int, device: torch.device, seed: int = 0) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ids = torch.randint(1000, vocab, (B, T), generator=g)
        chosen = torch.rand(B, T, generator=g) < 0.15
        batch = {
            "input_ids": ids.masked_fill(chosen, 103),
            "attention_mask": torch.ones_like(ids),
            "labels": torch.where(chosen, ids, torch.full_like(ids, -100)),
        }
        out.append({k: v.to(device) for k, v in batch.items()})
    return out


def train_steps(
    model, batches: list[dict], warmup: int, dtype: torch.dtype | None, sparse: bool, device: torch.device
) -> tuple[float, list[float]]:
    """Tokens/s of the timed steps (after `warmup`) and every step's loss (read once, at the end)."""
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    losses = []
    for i, batch in enumerate(batches):
        if i == warmup:
            synchronize(device)
            start = time.perf_counter()
        with torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = model(**batch, **({"sparse_prediction": True} if sparse else {})).loss
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
    synchronize(device)
    tokens = sum(b["input_ids"].numel() for b in batches[warmup:])
    return tokens / (time.perf_counter() - start), [round(x, 3) for x in torch.stack(losses).float().tolist()]


def mixed_batch(B: int, T: int, vocab: int, mixed: bool, device: torch.device, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, vocab, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    if mixed:
        lengths = torch.randint(16, T + 1, (B,), generator=g)
        lengths[0] = T  # padded to the longest
        mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    return ids.masked_fill(mask == 0, 0).to(device), mask.to(device)


@torch.inference_mode()
def infer(
    model, ids, mask, dtype: torch.dtype | None, repeats: int, device: torch.device
) -> tuple[float, torch.Tensor]:
    """Real tokens/s over `repeats` forward passes (after one warm-up) and the last hidden state."""
    model.eval()
    with torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        out = model(input_ids=ids, attention_mask=mask).last_hidden_state
        synchronize(device)
        start = time.perf_counter()
        for _ in range(repeats):
            out = model(input_ids=ids, attention_mask=mask).last_hidden_state
        synchronize(device)
    return int(mask.sum()) * repeats / (time.perf_counter() - start), out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu for a smoke test of this script")
    p.add_argument("--preset", default="base")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--infer-batch", type=int, default=128)
    p.add_argument("--infer-length", type=int, default=256)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(
            f"bench/gpu.py: no CUDA GPU here (torch {torch.__version__}); it measures a GPU. "
            "`--device cpu --preset tiny --steps 2` smoke-tests the script on the CPU.",
            file=sys.stderr,
        )
        return 2
    import transformers

    transformers.logging.set_verbosity_error()  # its load report lists the MLM head the encoder leaves out
    transformers.logging.disable_progress_bar()
    device = resolve_device(args.device)
    dtype = inference_dtype(device)  # None on the CPU: the smoke test runs fp32
    precision = f"{str(dtype)[6:]} autocast" if dtype else "fp32"
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        peak = matmul_peak(device, dtype, 8192)
    else:
        name = "CPU (smoke test)"
        peak = matmul_peak(device, torch.float32, 512, repeats=4)
    config = BertConfig.preset(args.preset)
    print(
        f"{name}: torch {torch.__version__}, transformers {transformers.__version__}; {precision}; matrix-product "
        f"peak {peak / 1e12:.3g} TFLOP/s ({str(dtype or torch.float32)[6:]}, measured now)",
        flush=True,
    )

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as d:
        BertForMaskedLM(config).save(d)  # one set of weights, read by both sides

        def load(side: str, head: str):
            if side == "bertology":
                model = bertology.load(d, device=device)
                return model if head == "mlm" else model.backbone
            if head == "mlm":
                return transformers.BertForMaskedLM.from_pretrained(d, attn_implementation="sdpa").to(device)
            return transformers.BertModel.from_pretrained(d, attn_implementation="sdpa", add_pooling_layer=False).to(
                device
            )

        batches = mlm_batches(args.warmup + args.steps, args.batch, args.length, config.vocab_size, device)
        train: dict[str, tuple[float, list[float]]] = {}
        for _ in range(args.rounds):
            for side in ("bertology", "transformers"):
                model = load(side, "mlm")
                result = train_steps(model, batches, args.warmup, dtype, side == "bertology", device)
                if side not in train or result[0] > train[side][0]:
                    train[side] = result
                del model
                if device.type == "cuda":
                    torch.cuda.empty_cache()
        flops = 3 * count(config, f"bert-{args.preset}", args.length).flops_per_token["total"]
        print(
            f"\nMLM pretraining step: bert-{args.preset}, B={args.batch}, T={args.length}, {precision}; "
            f"model FLOPs/token {flops / 1e9:.2f} G (dense head)"
        )
        print(f"{'':<14}{'tokens/s':>12}{'ratio':>8}{'MFU':>8}  losses")
        for side, (rate, losses) in train.items():
            print(
                f"{side:<14}{rate:>12,.0f}{rate / train['transformers'][0]:>7.2f}×{100 * rate * flops / peak:>7.1f}%  "
                f"{losses[:3]} … {losses[-2:]}"
            )

        ours, theirs = load("bertology", "encoder"), load("transformers", "encoder")
        for mixed in (True, False):
            ids, mask = mixed_batch(args.infer_batch, args.infer_length, config.vocab_size, mixed, device)
            mean_length = float(mask.sum(1).float().mean())
            forward = count(config, f"bert-{args.preset}", round(mean_length)).flops_per_token
            flops = forward["total"] - forward["MLM head"]
            rates: dict[str, float] = {}
            outputs = {}
            for _ in range(args.rounds):
                for side, model in (("bertology", ours), ("transformers", theirs)):
                    rate, outputs[side] = infer(model, ids, mask, dtype, args.repeats, device)
                    rates[side] = max(rates.get(side, 0.0), rate)
            real = mask.bool()
            diff = (outputs["bertology"][real].float() - outputs["transformers"][real].float()).abs().max().item()
            print(
                f"\ninference, encoder: B={args.infer_batch}, "
                + (
                    f"lengths 16..{args.infer_length} (mean {mean_length:.0f}, {100 * (1 - real.float().mean()):.0f}% "
                    "padding)"
                    if mixed
                    else f"T={args.infer_length} (no padding)"
                )
                + f", {precision}; max |ours − theirs| at real tokens {diff:.2e}"
            )
            print(f"{'':<14}{'tokens/s':>12}{'ratio':>8}{'MFU':>8}")
            for side, rate in rates.items():
                print(
                    f"{side:<14}{rate:>12,.0f}{rate / rates['transformers']:>7.2f}×{100 * rate * flops / peak:>7.1f}%"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
