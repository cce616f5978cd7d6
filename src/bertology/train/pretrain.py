"""The pretraining job: corpus → tokenizer → instances → model → Trainer → Hugging Face directory.

Each family's defaults follow its paper (see data.FAMILY_DEFAULTS): BERT MLM + NSP, static masks
over pairs; RoBERTa MLM only, dynamic masks over FULL-SENTENCES packing, byte-level BPE; ALBERT
MLM + SOP with n-gram masking, factorized embeddings and shared layers. Every one is overridable.

The output directory ends up holding config.json + model.safetensors + tokenizer.json (loadable
by bertology.load and transformers' AutoModelForPreTraining / AutoModelForMaskedLM), metrics.jsonl,
checkpoints/ and the instance cache.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..data import FAMILY_SPECIALS, build_instances
from ..models import CONFIGS, task_class
from ..models.params import count
from ..nn import set_dropout
from . import distributed as dist
from .diagnostics import unigram_accuracy, unigram_loss
from .objectives import PretrainingObjective, evaluate_pretraining
from .trainer import Trainer, TrainingArguments

TOKENIZER_FAMILY = {"bert": "bert", "roberta": "roberta", "albert": "albert"}


@dataclass
class PretrainOptions:
    family: str
    corpus: list[str]
    out_dir: str
    preset: str = "mini"
    tokenizer: str | None = None  # a tokenizer.json / directory; None = train the family's tokenizer
    vocab_size: int = 8000
    steps: int = 1000
    batch_size: int = 32
    seq_len: int = 128
    lr: float = 5e-4
    warmup: int = 100  # steps, for the linear schedule
    schedule: str = "linear"  # linear (BERT's warmup + decay) | triangle (budget-tied one-cycle, Cramming)
    dropout: float | None = None  # dropout while pretraining; None = the config's (0.1); saved configs keep theirs
    unigram_prior: bool = True  # start the MLM output bias at the corpus's log unigram distribution
    weight_decay: float = 0.01
    accumulation: int = 1
    max_grad_norm: float = 1.0
    bf16: bool = False
    seed: int = 0
    objective: str | None = None  # mlm | mlm+nsp | mlm+sop
    masking: str | None = None  # static | dynamic
    packing: str | None = None  # pairs | full-sentences | doc-sentences
    whole_word: bool = False
    ngram: int | None = None
    dupe_factor: int = 5
    mlm_probability: float = 0.15
    max_predictions: int | None = None
    format: str = "lines"
    heldout: float = 0.05
    eval_every: int | None = None
    eval_batches: int = 8
    save_every: int | None = None
    keep_last: int = 2
    log_every: int = 10
    quiet: bool = False
    stop_at: int | None = None
    config_overrides: dict[str, Any] = field(default_factory=dict)


def _tokenizer(o: PretrainOptions, out: Path, resume: bool):
    from ..tokenizers import Tokenizer, train

    saved = out / "tokenizer.json"
    if resume and saved.is_file():
        return Tokenizer.load(saved)  # the vocabulary the checkpoint was trained with
    if o.tokenizer is not None:
        tok = Tokenizer.load(o.tokenizer)
    elif dist.is_main():
        # BERT's WordPiece by frequency (Hugging Face's rule): the likelihood criterion, bertology's
        # default for `tokenizer train`, needs ~1.8x the tokens per word at these vocabulary sizes.
        extra = {"criterion": "frequency"} if o.family == "bert" else {}
        tok = train(o.corpus, family=TOKENIZER_FAMILY[o.family], vocab_size=o.vocab_size, show_progress=not o.quiet, **extra)
    if dist.is_main():
        tok.save(saved)
    dist.barrier()
    return Tokenizer.load(saved)


def _model(o: PretrainOptions, tok, objective: str):
    cfg_cls = CONFIGS[o.family]
    pad_token = FAMILY_SPECIALS[o.family][3]
    pad = tok.token_to_id(pad_token)
    if pad is None:
        raise ValueError(f"tokenizer has no {pad_token} token, which {o.family} pads with")
    positions = o.seq_len + (2 if o.family == "roberta" else 0)  # RoBERTa's positions start at padding_idx + 1
    config = cfg_cls.preset(o.preset, vocab_size=tok.vocab_size, pad_token_id=pad,
                            max_position_embeddings=max(positions, 64), **o.config_overrides)
    head = "ForPreTraining" if objective in ("mlm+nsp", "mlm+sop") else "ForMaskedLM"
    if (o.family, objective) in (("bert", "mlm+sop"), ("albert", "mlm+nsp")):
        raise ValueError(f"{o.family} has no {objective} head (BERT pairs with NSP, ALBERT with SOP)")
    torch.manual_seed(o.seed)
    model = task_class(o.family, head)(config)
    return model if o.dropout is None else set_dropout(model, o.dropout)


def pretrain(o: PretrainOptions, resume: bool = False) -> dict[str, Any]:
    """Run (or continue) a pretraining job; returns its summary (also written to out/summary.json)."""
    if o.family not in TOKENIZER_FAMILY:
        raise ValueError(f"unknown family {o.family!r}; pretraining supports {', '.join(TOKENIZER_FAMILY)}")
    for f in o.corpus:
        if not Path(f).is_file():
            raise FileNotFoundError(f"{f}: corpus file not found")
    dist.init_from_env()
    out = Path(o.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(o, out, resume)

    def build():
        return build_instances(
            o.corpus, tok, family=o.family, max_seq_length=o.seq_len, objective=o.objective, packing=o.packing,
            masking=o.masking, dupe_factor=o.dupe_factor, whole_word=o.whole_word, ngram=o.ngram,
            mlm_probability=o.mlm_probability, max_predictions_per_seq=o.max_predictions or max(1, round(o.seq_len * o.mlm_probability)),
            seed=o.seed, cache_dir=out / "cache", format=o.format,
            heldout=int(o.heldout) if o.heldout >= 1 else o.heldout, show_progress=not o.quiet and dist.is_main(),
        )

    if not dist.is_main():
        dist.barrier()  # rank 0 builds the cache, the others then open it
    store = build()
    if dist.is_main():
        dist.barrier()
    if store.num_instances < o.batch_size:
        raise ValueError(f"{', '.join(o.corpus)}: {store.num_instances} instances of length {o.seq_len}, fewer than one batch "
                         f"of {o.batch_size}; use a larger corpus, a smaller --batch-size or --seq-len, or a larger --dupe-factor")
    objective_name = store.config.objective  # the family default, unless overridden
    model = _model(o, tok, objective_name)
    counts = store.token_counts(model.config.vocab_size)
    if o.unigram_prior and not resume:
        model.mlm.init_bias_from_counts(counts)
    args = TrainingArguments(
        out_dir=str(out), steps=o.steps, batch_size=o.batch_size, lr=o.lr, warmup_steps=o.warmup, schedule=o.schedule,
        weight_decay=o.weight_decay, accumulation=o.accumulation, max_grad_norm=o.max_grad_norm, bf16=o.bf16,
        seed=o.seed, log_every=o.log_every, eval_every=o.eval_every, save_every=o.save_every,
        keep_last=o.keep_last, quiet=o.quiet, stop_at=o.stop_at,
    )
    heldout = store.heldout
    evaluate = None
    if heldout is not None and heldout.num_instances:
        n_eval = max(1, min(o.eval_batches, math.ceil(heldout.num_instances / o.batch_size)))
        eval_size = min(o.batch_size, heldout.num_instances)
        eval_batches = [heldout.batch(i, eval_size, seed=o.seed + 1) for i in range(n_eval)]

        def evaluate(m):
            return {**evaluate_pretraining(m, eval_batches), **unigram}

        eval_labels = torch.cat([b["labels"].flatten() for b in eval_batches])
        unigram = {"unigram_accuracy": unigram_accuracy(counts, eval_labels), "unigram_loss": unigram_loss(counts, eval_labels)}

    trainer = Trainer(model, args, lambda step: store.batch(step, o.batch_size), PretrainingObjective(), evaluate,
                      save_extra=lambda d: tok.save(d / "tokenizer.json"))
    started = trainer.step
    result = trainer.train(resume=resume)
    summary = {
        "family": o.family, "preset": o.preset, "architecture": model.architecture, "objective": objective_name,
        "parameters": model.num_parameters(), "steps": result["step"], "resumed_from": started if resume else None,
        "interrupted": result["interrupted"], "instances": store.num_instances,
        "flops_per_token": count(model.config, seq_length=o.seq_len).flops_per_token["total"],
        "final": next((r for r in reversed(trainer.history) if "loss" in r), {}),
        "eval": next((r for r in reversed(trainer.history) if any(k.startswith("eval/") for k in r)), {}),
        "options": {k: v for k, v in asdict(o).items() if k != "config_overrides"},
    }
    if dist.is_main() and not result["interrupted"]:
        model.save(out)  # the final model, next to tokenizer.json
        (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary
