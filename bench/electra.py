"""ELECTRA's speed: a replaced-token-detection pretraining step (generator + discriminator) against
transformers' ElectraForMaskedLM + ElectraForPreTraining written as the paper's loop, and the
discriminator's inference at base against transformers', next to BERT-base's own ratio.

    python bench/electra.py [--preset mini] [--batch 32] [--length 128] [--steps 6] [--rounds 3] [--fp32]
                            [--inference-preset base] [--inference-batch 8] [--no-inference]

Training: the same initial weights (ours saved, transformers reading them: the discriminator and,
from generator/, the generator, whose embeddings are then shared as in the paper), the same
batches (15% of the tokens selected, 85% of those [MASK]), the same step (fused AdamW, clipping at
norm 1). transformers' loop is the paper's: generator MLM loss, a sample of its softmax at the
masked positions (no gradient), the discriminator's BCE over real tokens with λ = 50. Ours is
bertology's ElectraPair under ReplacedTokenDetectionObjective (sparse generator head, packed real
tokens). Precision as the hardware probe says: bf16 autocast where the CPU multiplies bf16
natively and it pays, else fp32 (--fp32 forces it).

The sides take turns (--rounds) in one process; each round times --steps steps after a warmup, and
the per-step medians over all rounds are compared, so that a shared machine's load falls on both
alike. Prints the CPU line, tokens/s, the ratio ours / transformers, and each side's last losses.
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
import torch.nn.functional as F

from bertology.data.masking import ELECTRA_SHARES, replace_tokens
from bertology.hardware import bf16_pays, cpu_summary
from bertology.models import BertConfig, BertModel, ElectraPair
from bertology.models.config import ElectraConfig
from bertology.nn import set_dropout
from bertology.train.rtd import ReplacedTokenDetectionObjective

MASK_ID = 103


def batches(n: int, B: int, T: int, vocab: int, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    """Masked batches as the masker makes them for rtd (ELECTRA's 85% [MASK], the rest kept)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ids = torch.randint(1000, vocab, (B, T), generator=g)
        selected = torch.rand(B, T, generator=g) < 0.15
        masked, labels = replace_tokens(ids, selected, g, MASK_ID, torch.arange(1000, vocab), ELECTRA_SHARES)
        out.append(
            {
                "input_ids": masked,
                "attention_mask": torch.ones_like(ids),
                "labels": labels,
                "replacement_draws": torch.rand(B, T, generator=g, dtype=torch.float64),
            }
        )
    return out


class PaperLoop:
    """transformers' generator and discriminator, one step as the paper writes it."""

    def __init__(self, directory: Path):
        import transformers

        self.disc = transformers.ElectraForPreTraining.from_pretrained(directory)
        self.gen = transformers.ElectraForMaskedLM.from_pretrained(directory / "generator")
        self.gen.electra.embeddings = self.disc.electra.embeddings  # shared token, position, type embeddings
        self.gen.generator_lm_head.weight = self.disc.electra.embeddings.word_embeddings.weight
        self.g = torch.Generator().manual_seed(0)
        for m in (self.disc, self.gen):
            m.train()

    def parameters(self):
        return {id(p): p for m in (self.gen, self.disc) for p in m.parameters()}.values()

    def loss(self, batch):
        labels, mask = batch["labels"], batch["attention_mask"]
        masked = labels != -100
        gen = self.gen(input_ids=batch["input_ids"], attention_mask=mask, labels=labels)
        with torch.no_grad():
            probs = F.softmax(gen.logits[masked].float(), -1)  # (M, V)
            sampled = torch.multinomial(probs, 1, generator=self.g).squeeze(-1)
            original = torch.where(masked, labels, batch["input_ids"])
            corrupted = original.masked_scatter(masked, sampled)
        disc = self.disc(input_ids=corrupted, attention_mask=mask, labels=(corrupted != original).long())
        return gen.loss + 50.0 * disc.loss


class Ours:
    def __init__(self, pair: ElectraPair):
        self.pair, self.objective = pair.train(), ReplacedTokenDetectionObjective()

    def parameters(self):
        return self.pair.parameters()

    def loss(self, batch):
        return self.objective(self.pair, batch, self.objective.totals(batch))[0]


def time_steps(side, optimizer, data, warmup: int, bf16: bool) -> tuple[list[float], list[float]]:
    times, losses = [], []
    for i, batch in enumerate(data):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = side.loss(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(side.parameters()), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i >= warmup:
            times.append(time.perf_counter() - start)
        losses.append(round(float(loss.detach()), 3))
    return times, losses


def training(args, bf16: bool) -> None:
    config = ElectraConfig.preset(args.preset, vocab_size=args.vocab)
    torch.manual_seed(0)
    pair = ElectraPair(config, args.generator_size)
    if args.no_dropout:
        set_dropout(pair, 0.0)
    with tempfile.TemporaryDirectory() as d:
        pair.save(d)
        theirs = PaperLoop(Path(d))
    if args.no_dropout:
        for m in (theirs.gen, theirs.disc):
            m.config.hidden_dropout_prob = m.config.attention_probs_dropout_prob = 0.0
            for module in m.modules():
                if isinstance(module, torch.nn.Dropout):
                    module.p = 0.0
    sides = {"bertology": Ours(pair), "transformers": theirs}
    optimizers = {k: torch.optim.AdamW(list(s.parameters()), lr=1e-4, fused=True) for k, s in sides.items()}
    times = {k: [] for k in sides}
    losses = {}
    for r in range(args.rounds):
        data = batches(args.steps + args.warmup, args.batch, args.length, args.vocab, seed=r)
        for name, side in sides.items():
            t, losses[name] = time_steps(side, optimizers[name], data, args.warmup, bf16)
            times[name] += t
    tokens = args.batch * args.length
    speed = {k: tokens / statistics.median(v) for k, v in times.items()}
    g = pair.generator.config
    print(
        f"pretraining step, electra-{args.preset} (H={config.hidden_size}, E={config.embedding_size}, generator "
        f"H={g.hidden_size}), batch {args.batch} × {args.length}, vocab {args.vocab}, {'bf16' if bf16 else 'fp32'}, "
        f"{args.rounds} rounds × {args.steps} steps, medians:"
    )
    for name in sides:
        print(f"  {name:<14}{speed[name]:>10,.0f} tokens/s   last losses {losses[name][-3:]}")
    print(f"  ratio bertology / transformers: {speed['bertology'] / speed['transformers']:.2f}×", flush=True)


@torch.no_grad()
def inference(args, bf16: bool) -> None:
    """Backbone forward passes at mixed lengths (a padded batch), ours against transformers', for
    ELECTRA's discriminator and for BERT, in turns."""
    import transformers

    g = torch.Generator().manual_seed(0)
    B, T = args.inference_batch, args.length
    ids = torch.randint(1000, 30522, (B, T), generator=g)
    lengths = torch.randint(T // 4, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    ratios = {}
    for family, ours_cls, config in (
        ("electra", ElectraPair, ElectraConfig.preset(args.inference_preset)),
        ("bert", BertModel, BertConfig.preset(args.inference_preset)),
    ):
        torch.manual_seed(0)
        with tempfile.TemporaryDirectory() as d:
            if family == "electra":
                ours = ElectraPair(config, 0.25).discriminator
                ours.save(d)
                theirs = transformers.ElectraForPreTraining.from_pretrained(d)
            else:
                ours = ours_cls(config)
                ours.save(d)
                theirs = transformers.BertModel.from_pretrained(d)
        ours.eval(), theirs.eval()
        times = {"bertology": [], "transformers": []}
        for _ in range(args.rounds):
            for name, model in (("bertology", ours), ("transformers", theirs)):
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    model(input_ids=ids, attention_mask=mask)  # warm
                    for _ in range(args.steps):
                        start = time.perf_counter()
                        model(input_ids=ids, attention_mask=mask)
                        times[name].append(time.perf_counter() - start)
        real = int(mask.sum())
        speed = {k: real / statistics.median(v) for k, v in times.items()}
        ratios[family] = speed["bertology"] / speed["transformers"]
        print(
            f"inference, {family}-{args.inference_preset} ({'discriminator' if family == 'electra' else 'BertModel'}), "
            f"batch {B} × up to {T} ({real} real tokens): bertology {speed['bertology']:,.0f}, transformers "
            f"{speed['transformers']:,.0f} real tokens/s; ratio {ratios[family]:.2f}×",
            flush=True,
        )
    print(f"  ELECTRA's ratio / BERT's ratio: {ratios['electra'] / ratios['bert']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="mini")
    parser.add_argument("--vocab", type=int, default=30522)
    parser.add_argument("--generator-size", type=float, default=0.25)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-dropout", action="store_true", help="dropout off on both sides (the demo's recipe)")
    parser.add_argument("--fp32", action="store_true")
    parser.add_argument("--inference-preset", default="base")
    parser.add_argument("--inference-batch", type=int, default=8)
    parser.add_argument("--no-inference", action="store_true")
    args = parser.parse_args()
    print(cpu_summary(), flush=True)
    bf16 = not args.fp32 and bf16_pays()
    if not args.fp32 and not bf16:
        print("bf16 is not native on this CPU or does not pay (the probe above): running fp32")
    training(args, bf16)
    if not args.no_inference:
        inference(args, bf16)


if __name__ == "__main__":
    main()
