"""The fine-tuning job: a pretrained encoder (or a preset, randomly initialised) + a task head,
trained on labelled files with the shared Trainer, evaluated on dev each epoch, best kept.

The output directory is Hugging Face layout (config.json with id2label / label2id, model.safetensors,
tokenizer.json): transformers' Auto classes load it and give the same logits. The task and its
columns are recorded in config.json (`bertology_task`, `bertology_columns`) so that `evaluate`,
`predict` and `Pipeline.load` know how to read new data.
"""
from __future__ import annotations

import json
import math
import shutil
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..data import FAMILY_SPECIALS
from ..io import atomic_write_text
from ..hub import load_for_task, read_config
from ..models import CONFIGS, task_class
from ..models.heads import IGNORE
from ..train import distributed as dist
from ..train.trainer import Trainer, TrainingArguments
from . import TASKS
from .base import Features, Task

@dataclass
class FinetuneOptions:
    model: str  # a model directory (pretrained) or a preset like "bert-mini" (random initialisation)
    task: str
    train: str
    out_dir: str
    dev: str | None = None
    tokenizer: str | None = None  # default: the model directory's tokenizer.json
    from_scratch: bool = False  # a model directory's architecture and tokenizer, randomly initialised
    epochs: float = 3.0
    lr: float = 5e-5
    batch_size: int = 32
    max_length: int = 128
    stride: int = 64
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    bf16: bool = False
    seed: int = 0
    columns: dict[str, str] = field(default_factory=dict)  # text_column, pair_column, label_column …
    quiet: bool = False
    log_every: int = 10
    keep_checkpoints: int = 1
    stop_at: int | None = None  # checkpoint and stop at this step, as if interrupted (continue with resume)


class TaskObjective:
    """The head's own loss, re-weighted so micro-batches and ranks sum to the global batch's mean."""

    def __init__(self, per_token: bool):
        self.per_token = per_token

    def _count(self, batch) -> int:
        if self.per_token:
            return int((batch["labels"] != IGNORE).sum())
        return next(iter(batch.values())).shape[0]

    def totals(self, batch):
        return {"count": max(1, self._count(batch))}

    def __call__(self, model, batch, totals):
        out = model(**batch)
        share = self._count(batch) / totals["count"]
        return out.loss * share, {"loss": float(out.loss.detach()) * share}


def load_tokenizer(model_dir: str | None, tokenizer: str | None):
    from ..tokenizers import Tokenizer

    source = tokenizer or (str(Path(model_dir) / "tokenizer.json") if model_dir else None)
    if source is None or not Path(source).exists():
        raise FileNotFoundError(f"{source or model_dir}: no tokenizer; pass --tokenizer (a tokenizer.json or directory)")
    tok = Tokenizer.load(source)
    tok.no_padding()  # the task pads and truncates itself, and reports what it cuts
    tok.no_truncation()
    return tok


def model_inputs(model, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Drop token_type_ids for families without token types (DistilBERT) or with one (RoBERTa)."""
    if model.config.type_vocab_size <= 1:
        batch = {k: v for k, v in batch.items() if k != "token_type_ids"}
    return batch


LABEL_KEYS = ("labels", "start_positions", "end_positions")
LABEL_VOCABULARY = {"classify", "pair", "tag"}  # tasks whose labels are names mapped through label2id


@torch.no_grad()
def run_model(model, features: Features, batch_size: int = 64, bf16: bool = False) -> list[Any]:
    model.eval()
    outputs = []
    for start in range(0, len(features), batch_size):
        batch = features.batch(range(start, min(start + batch_size, len(features))))
        inputs = {k: v for k, v in model_inputs(model, batch).items() if k not in LABEL_KEYS}
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = model(**inputs)
        outputs.append(out)
    return outputs


def predict_examples(model, task: Task, tokenizer, examples, max_length: int, stride: int, bf16: bool = False,
                     label2id: dict[str, int] | None = None) -> list[Any]:
    """Featurize, run the model, post-process. With `label2id`, labels are checked against it on the way."""
    features = task.featurize(examples, tokenizer, max_length, label2id, stride)
    return task.predict(run_model(model, features, bf16=bf16), features, examples, model.config.id2label)


def evaluate_examples(model, task: Task, tokenizer, examples, max_length: int, stride: int,
                      bf16: bool = False) -> dict[str, float]:
    """The task's metrics; a label the model was never trained on is an error naming its file and line."""
    label2id = model.config.label2id if task.name in LABEL_VOCABULARY else None
    predictions = predict_examples(model, task, tokenizer, examples, max_length, stride, bf16, label2id)
    return task.metrics(predictions, examples)


def _build_model(o: FinetuneOptions, task: Task, labels, tokenizer):
    path = Path(o.model)
    head_labels = labels if labels is not None else (1 if task.name == "regress" else None)
    torch.manual_seed(o.seed)  # the new head's initial weights (from scratch: every weight) follow the seed
    if path.is_dir() and not o.from_scratch:
        return load_for_task(path, task.head, head_labels)
    if path.is_dir():  # the random-init twin: the directory's architecture and tokenizer, no weights
        config = read_config(path)
    else:
        family, _, size = o.model.partition("-")
        if family not in CONFIGS:
            raise ValueError(f"{o.model!r}: neither a model directory nor a preset such as bert-mini, roberta-small")
        pad = tokenizer.token_to_id(FAMILY_SPECIALS["bert" if family == "distilbert" else family][3])
        config = CONFIGS[family].preset(size, vocab_size=tokenizer.vocab_size,
                                        **({"pad_token_id": pad} if pad is not None else {}))
    if head_labels is not None:
        config = config.with_labels(head_labels)
    return task_class(config.model_type, task.head)(config)


def finetune(o: FinetuneOptions, resume: bool = False) -> dict[str, Any]:
    """Fine-tune (or, with `resume`, continue an interrupted run in o.out_dir exactly); returns the summary."""
    if o.task not in TASKS:
        raise ValueError(f"unknown task {o.task!r}; known: {', '.join(TASKS)}")
    task = TASKS[o.task]()
    out = Path(o.out_dir)
    tokenizer = load_tokenizer(o.model if Path(o.model).is_dir() else None, o.tokenizer)
    train = task.read(o.train, **o.columns)
    dev = task.read(o.dev, **o.columns) if o.dev else None
    labels = task.label_set(train)
    model = _build_model(o, task, labels, tokenizer)
    model.config.extra.update(bertology_task=task.name, bertology_columns=dict(o.columns),
                              bertology_max_length=o.max_length, bertology_stride=o.stride,
                              bertology_task_options=task_options(task))
    label2id = model.config.label2id if labels is not None else None
    features = task.featurize(train, tokenizer, o.max_length, label2id, o.stride)
    if features.truncated:
        warnings.warn(f"{o.train}: {features.truncated} of {len(train)} examples were truncated to {o.max_length} tokens")
    n = len(features)
    steps_per_epoch = math.ceil(n / o.batch_size)
    steps = max(1, math.ceil(o.epochs * steps_per_epoch))

    def batches(step: int) -> dict[str, torch.Tensor]:
        epoch, i = divmod(step, steps_per_epoch)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(o.seed * 1_000_003 + epoch))
        return model_inputs(model, features.batch(order[i * o.batch_size:(i + 1) * o.batch_size]))

    best = {"score": -math.inf, "step": None, "metrics": None}
    best_file = out / "best" / "best.json"  # so that a resumed run knows the epoch to beat
    if resume and best_file.is_file():
        best.update(json.loads(best_file.read_text()))

    def evaluate(m) -> dict[str, float]:
        scores = evaluate_examples(m, task, tokenizer, dev, o.max_length, o.stride, o.bf16)
        score = scores[task.main_metric]
        if score > best["score"] and dist.is_main():
            best.update(score=score, step=trainer.step, metrics=scores)
            _save(m, out / "tokenizer.json", out / "best")
            atomic_write_text(best_file, json.dumps(best) + "\n")
        return scores

    args = TrainingArguments(
        out_dir=str(out), steps=steps, batch_size=o.batch_size, lr=o.lr, warmup_steps=round(o.warmup_ratio * steps),
        weight_decay=o.weight_decay, bf16=o.bf16, seed=o.seed, log_every=o.log_every,
        eval_every=steps_per_epoch if dev else None, keep_last=o.keep_checkpoints, quiet=o.quiet,
        save_every=steps_per_epoch, stop_at=o.stop_at,
    )
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save(out / "tokenizer.json")  # once; checkpoints copy the file
    trainer = Trainer(model, args, batches, TaskObjective(per_token=task.name == "tag"), evaluate if dev else None,
                      save_extra=lambda d: shutil.copyfile(out / "tokenizer.json", d / "tokenizer.json"))
    result = trainer.train(resume=resume)
    if result["interrupted"]:  # a checkpoint is written; `resume` continues from it
        return {"task": task.name, "model": o.model, "steps": result["step"], "interrupted": True, "options": asdict(o)}
    if dist.is_main():
        if dev is not None and best["step"] is not None:
            for f in ("config.json", "model.safetensors", "tokenizer.json"):  # the best epoch becomes the model
                shutil.copyfile(out / "best" / f, out / f".{f}.tmp")
                (out / f".{f}.tmp").replace(out / f)
        else:
            _save(model, out / "tokenizer.json", out)
    summary = {
        "task": task.name, "model": o.model, "architecture": model.architecture, "train_examples": len(train),
        "truncated": features.truncated, "steps": result["step"], "best_step": best["step"],
        "dev": best["metrics"], "labels": labels, "interrupted": False, "options": asdict(o),
    }
    if dist.is_main():
        (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def _save(model, tokenizer_file: Path, directory: Path) -> None:
    model.save(directory)
    if tokenizer_file != directory / "tokenizer.json":
        shutil.copyfile(tokenizer_file, directory / "tokenizer.json")


def task_options(task: Task) -> dict[str, Any]:
    """What a task learnt from its training files and must keep at prediction time (QA: SQuAD v2.0)."""
    if task.name == "qa":
        return {"version_2": task.allows_no_answer}
    return {}


def load_finetuned(path: str | Path):
    """(model, task, tokenizer, columns) of a directory written by `finetune`."""
    from ..hub import load

    config = read_config(path)
    name = config.extra.get("bertology_task")
    if name not in TASKS:
        raise ValueError(f"{Path(path) / 'config.json'}: no bertology_task recorded; was it written by `bertology finetune`?")
    task = TASKS[name](**config.extra.get("bertology_task_options", {}))
    return load(path), task, load_tokenizer(str(path), None), dict(config.extra.get("bertology_columns", {}))
