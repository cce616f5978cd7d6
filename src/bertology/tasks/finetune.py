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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from ..io import atomic_copy, atomic_dir, atomic_write_json
from ..models import (
    CheckpointError,
    check_tokenizer,
    get_family,
    load,
    load_backbone,
    load_with_heads,
    read_config,
    resolve_preset,
    task_model,
)
from ..models.heads import IGNORE_INDEX, POOLINGS
from ..options import (
    DEVICE,
    MASKING_RATE,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_NUMBER,
    PROBABILITY,
    Check,
    check_options,
    refuse_unread,
    option,
)
from ..train import distributed as dist
from ..train.arguments import TrainingArguments, precision_option, report_to_option, check_job_options
from ..train.device import check_precision, say
from ..train.run import claim_run, seeded
from ..train.trainer import Trainer, parameter_groups
from . import TASKS
from .base import Features, Task
from .fewshot import head_lr_groups, head_parameters, layer_decay_groups, parameter_depths, reinit_top_layers
from .forward import model_inputs, run_model
from .probe import fit_probe
from .prompt import DEFAULT_TEMPLATE, Prompt, read_verbalizer
from .setfit import train_setfit
from .subsets import balanced_subset
from .summary import run_summary

SENTENCE_HEAD = "ForSequenceClassification"  # the head whose sentence vector --pooling chooses
METHODS = ("head", "prompt", "probe", "setfit")

# what may differ on --resume (train/resume.py): the horizon (--epochs extends the run) and how it reports / runs
RESUME_MAY_CHANGE = frozenset(
    {"epochs", "quiet", "log_every", "keep_checkpoints", "stop_at", "compile", "device", "out_dir"}
)


@dataclass
class FinetuneOptions:
    model: str = option(
        help="a model directory, or a preset such as bert-mini (random initialisation)", metavar="DIR_OR_PRESET"
    )
    task: str = option(help="the task head", choices=tuple(TASKS))
    train: str = option(
        help="CSV / TSV / JSON lines / Parquet / a datasets directory (save_to_disk), CoNLL (tag), SQuAD JSON (qa)",
        metavar="FILE",
    )
    out_dir: str = option(help="output directory", flag="--out", metavar="DIR")
    dev: str | None = option(None, "evaluated each epoch; the best epoch is kept", metavar="FILE")
    tokenizer: str | None = option(None, "default: the model directory's tokenizer.json")
    from_scratch: bool = option(
        False, "the model directory's architecture and tokenizer, randomly initialised (its random-init twin)"
    )
    epochs: float = option(3.0, "passes over the training file; fractions allowed", check=POSITIVE_NUMBER)
    patience: int | None = option(
        None,
        "early stopping: end the run once --dev's score has not improved for this many epochs (the best epoch "
        "is kept either way; default: train every epoch)",
        check=POSITIVE,
        metavar="EPOCHS",
    )
    lr: float = option(5e-5, "peak learning rate", check=POSITIVE_NUMBER)
    batch_size: int = option(32, "examples per optimizer step", check=POSITIVE)
    max_length: int = option(128, "tokens per example, special tokens included", check=Check("≥ 8", lambda v: v >= 8))
    stride: int = option(64, "overlap of QA context windows", check=NON_NEGATIVE)
    warmup_ratio: float = option(0.1, "share of the steps spent warming up", check=PROBABILITY)
    weight_decay: float = option(0.01, "AdamW's decoupled weight decay", check=NON_NEGATIVE)
    bf16: bool = option(
        False,
        "bf16 autocast (pays where the CPU multiplies bf16 natively: AMX; on a GPU the precision is measured and said)",
    )
    precision: str = precision_option()
    report_to: str = report_to_option()
    loss_plot: bool = option(True, "loss.png beside the run", cli=False)
    device: str = option(
        "auto", "where the job runs: auto (a CUDA GPU when there is one), cpu, cuda or cuda:N", check=DEVICE
    )
    seed: int = option(0, "seeds the new head, the example order and dropout")
    columns: dict[str, str] = option(default_factory=dict, cli=False)  # text_column, pair_column, label_column …
    quiet: bool = option(False, "no progress bar")
    log_every: int = option(10, "log metrics every N steps", check=POSITIVE)
    keep_checkpoints: int = option(1, "checkpoints kept", check=POSITIVE)
    checkpoints: bool = option(
        True,
        "a resumable checkpoint at each epoch; off: nothing is written until the end, the best dev epoch is "
        "kept in memory (for runs too short to resume: a killed one starts again)",
    )
    stop_at: int | None = option(None, "checkpoint and stop at STEP, as if interrupted", check=POSITIVE, metavar="STEP")
    compile: bool = option(False, "torch.compile the model's blocks (inductor); the first steps compile first")
    labels_per_class: int | None = option(
        None,
        "train on this many examples of each class (classify, pair): a "
        "class-balanced subset, nested across sizes for one --subset-seed",
        check=POSITIVE,
    )
    subset_seed: int = option(
        0, "draws the --labels-per-class subset (kept apart from --seed, so every seed trains on the same examples)"
    )
    pooling: str = option(
        "cls",
        "sentence vector of classify / pair / regress: cls = the family's head on the first "
        "token; mean = a linear layer on the mean of the real tokens (no pooler needed)",
        choices=POOLINGS,
    )
    head_lr: float | None = option(
        None, "peak learning rate of the new head's parameters (default: --lr)", check=POSITIVE_NUMBER
    )
    reinit_layers: int = option(
        0, "re-initialise the top N encoder layers (and the pooler) before fine-tuning", check=NON_NEGATIVE, metavar="N"
    )
    layer_decay: float | None = option(
        None,
        "layer-wise rate decay: each encoder layer trains at this times the rate of the layer above, the "
        "embeddings slowest, the head at --lr (ELECTRA's fine-tuning)",
        check=MASKING_RATE,
    )
    method: str = option(
        "head",
        "how the labels reach the model (classify, pair): head = a new head on the sentence vector, trained "
        "with the encoder; prompt = the pretrained head reads a template's blank (--template, --verbalizer); "
        "probe = the encoder frozen, a logistic regression on its mean-pooled vectors; setfit = the encoder tuned "
        "on same / different-label pairs (--pairs-per-example), then that logistic regression",
        choices=METHODS,
    )
    template: str = option(
        DEFAULT_TEMPLATE, "--method prompt: the input written around one blank, [MASK] whatever the model's mask token"
    )
    verbalizer: str | None = option(
        None,
        "--method prompt: each label's words, a JSON object {label: [words]} or lines label<TAB>word[, word]; "
        "default: the label's own name",
        metavar="FILE",
    )
    pairs_per_example: int = option(
        20,
        "--method setfit: pairs each training example anchors in each pass (half same-label, half not); a run "
        "sees examples × this × --epochs pairs, fewer when dev stops improving",
        check=POSITIVE,
    )

    def __post_init__(self):
        check_options(self)
        check_job_options(self)


class TaskObjective:
    """The head's own loss, re-weighted so micro-batches and ranks sum to the global batch's mean."""

    def __init__(self, per_token: bool):
        self.per_token = per_token

    def _count(self, batch) -> int | torch.Tensor:
        """Labelled tokens (a tensor: on the GPU it is read at log steps, not now) or sequences."""
        if self.per_token:
            return (batch["labels"] != IGNORE_INDEX).sum()
        return next(iter(batch.values())).shape[0]

    def totals(self, batch):
        return {"count": max(1, int(self._count(batch)))}  # the global batch, on the CPU

    def __call__(self, model, batch, totals):
        out = model(**batch)
        share = self._count(batch) / totals["count"]
        return out.loss * share, {"loss": out.loss.detach().double() * share}


def load_tokenizer(model_dir: str | None, tokenizer: str | None):
    from ..tokenizers import Tokenizer

    source = tokenizer or (str(Path(model_dir) / "tokenizer.json") if model_dir else None)
    if source is None or not Path(source).exists():
        raise FileNotFoundError(
            f"{source or model_dir}: no tokenizer; pass --tokenizer (a tokenizer.json or directory)"
        )
    tok = Tokenizer.load(source)
    padding = tok.padding
    tok.no_padding()  # the task pads and truncates itself, and reports what it cuts
    tok.no_truncation()
    if padding is not None and padding["direction"] == "left":  # XLNet: <cls> last, so padding goes first
        tok.enable_padding(**{**padding, "length": None})
    return tok


LABEL_VOCABULARY = {"classify", "pair", "tag"}  # tasks whose labels are names mapped through label2id


def predict_examples(
    model,
    task: Task,
    tokenizer,
    examples,
    max_length: int,
    stride: int,
    bf16: bool = False,
    label2id: dict[str, int] | None = None,
) -> list[Any]:
    """Featurize, run the model, post-process. With `label2id`, labels are checked against it on the way."""
    return predict_features(
        model, task, task.featurize(examples, tokenizer, max_length, label2id, stride), examples, bf16
    )


def predict_features(model, task: Task, features: Features, examples, bf16: bool = False) -> list[Any]:
    """Run the model on features made already (`task.featurize`) and post-process them into predictions."""
    return task.predict(run_model(model, features, bf16=bf16), features, examples, model.config.id2label)


def _build_model(o: FinetuneOptions, task: Task, labels, tokenizer):
    path = Path(o.model)
    head_labels = labels if labels is not None else (1 if task.name == "regress" else None)
    if path.is_dir():  # pretrained, or its random-init twin: the directory's architecture and tokenizer
        config = read_config(path)
        check_tokenizer(config, tokenizer, o.tokenizer or path / "tokenizer.json")
    else:
        try:
            record, size = resolve_preset(o.model)
        except ValueError as e:
            raise ValueError(f"{o.model!r}: not a model directory, and {e}") from None
        pad = tokenizer.token_to_id(record.specials.pad)
        config = record.preset(
            size, vocab_size=tokenizer.vocab_size, **({"pad_token_id": pad} if pad is not None else {})
        )
    if task.head == SENTENCE_HEAD:
        _check_pooling(o, config.model_type)
        config.extra["bertology_pooling"] = o.pooling  # read by the head, here and whenever the model is loaded
    prompt = getattr(task, "prompt", None)
    if prompt is not None:
        config.extra["bertology_prompt"] = prompt.to_dict()  # the verbalizer travels in config.json
    model = task_model(config, get_family(config.model_type).task_head(task.head), head_labels)
    if path.is_dir() and not o.from_scratch and prompt is not None:  # the backbone and its pretrained head
        try:
            load_with_heads(model, path)
        except CheckpointError as e:
            raise ValueError(
                f"--method prompt reads the blank with {o.model}'s pretraining head, and its weights are not all "
                f"there: {e}"
            ) from None
    elif path.is_dir() and not o.from_scratch:  # the pretrained backbone under the new head
        load_backbone(model, path)
    if o.reinit_layers:
        reinit_top_layers(model, o.reinit_layers)
    return model


def _check_pooling(o: FinetuneOptions, model_type: str) -> None:
    if o.pooling == "mean" and get_family(model_type).summary_head:
        raise ValueError(
            "--pooling mean: XLNet's sentence head is its own sequence summary (config summary_type); "
            "mean pooling covers bert, roberta, albert and distilbert"
        )


def check_task_options(o: FinetuneOptions, task: Task) -> None:
    """Options that only some tasks take fail before anything is read or written."""
    if o.labels_per_class is not None and task.name not in ("classify", "pair"):
        raise ValueError(
            f"--labels-per-class takes a sequence-classification task (classify, pair), not --task {task.name}"
        )
    if o.pooling != "cls" and task.head != SENTENCE_HEAD:
        raise ValueError(
            f"--pooling {o.pooling} takes a sequence task (classify, pair, regress), not --task {task.name}"
        )
    if o.method != "head" and task.name not in ("classify", "pair"):
        raise ValueError(f"--method {o.method} takes a classification task (classify, pair), not --task {task.name}")
    if o.method != "prompt" and (o.verbalizer is not None or o.template != DEFAULT_TEMPLATE):
        raise ValueError(f"--template and --verbalizer are read by --method prompt, not --method {o.method}")
    if o.method == "probe" and (o.pooling != "mean" or o.layer_decay or o.reinit_layers or o.head_lr):
        raise ValueError(
            "--method probe fits a logistic regression on the frozen encoder's mean-pooled vectors: give "
            "--pooling mean, and no --layer-decay, --reinit-layers or --head-lr (nothing else trains)"
        )
    if o.method == "setfit" and (o.pooling != "mean" or o.layer_decay or o.head_lr):
        raise ValueError(
            "--method setfit tunes the encoder's mean-pooled vectors on pairs, then fits a logistic regression on "
            "them: give --pooling mean, and no --layer-decay or --head-lr (the head is fitted, not trained)"
        )
    if o.method != "setfit":
        refuse_unread(o, ("pairs_per_example",), "--method setfit")
    if o.method in ("head", "prompt"):
        if o.patience is not None and not o.dev:
            raise ValueError("--patience stops when --dev's score stops improving: give --dev")
    else:  # a probe trains no epochs; setfit stops on its own dev checks, every quarter pass
        refuse_unread(o, ("patience",), "--method head and --method prompt")
    if task.name != "qa":
        refuse_unread(o, ("stride",), "--task qa (the overlap of a long context's windows)")
    if o.labels_per_class is None:
        refuse_unread(o, ("subset_seed",), "--labels-per-class (the subset it draws)")
    if not o.checkpoints:
        refuse_unread(o, ("keep_checkpoints",), "runs with checkpoints (without --no-checkpoints)")
    if o.method == "prompt" and (o.pooling != "cls" or o.reinit_layers or o.head_lr):
        raise ValueError(
            "--method prompt reads the pretrained head at the template's blank: --pooling, --reinit-layers and "
            "--head-lr (which shape a new head, --method head's) do not apply"
        )


def training_subset(o: FinetuneOptions, examples) -> list[int] | None:
    """The indices of the training examples --labels-per-class keeps (None: all of them)."""
    if o.labels_per_class is None:
        return None
    try:
        return balanced_subset([e.label for e in examples], o.labels_per_class, o.subset_seed)
    except ValueError as e:
        raise ValueError(f"{o.train}: {e}") from None


def prompt_for(o: FinetuneOptions, labels: list[str], tokenizer) -> Prompt:
    """The template and each label's words (--verbalizer, or the label's own name), as the family prompts."""
    family = get_family(read_config(o.model).model_type) if Path(o.model).is_dir() else resolve_preset(o.model)[0]
    if not family.prompts:
        raise ValueError(f"--method prompt: {family.name} has no prompt head (its pretraining is not a masked LM)")
    words = {label: [label] for label in labels}
    if o.verbalizer is not None:
        given = read_verbalizer(o.verbalizer)
        missing, unknown = sorted(set(labels) - set(given)), sorted(set(given) - set(labels))
        if missing or unknown:
            raise ValueError(
                f"{o.verbalizer}: "
                + "; ".join(
                    ([f"no words for label(s) {', '.join(map(repr, missing))}"] if missing else [])
                    + ([f"label(s) {', '.join(map(repr, unknown))} not in the training file"] if unknown else [])
                )
            )
        words = {label: given[label] for label in labels}
    try:
        return Prompt.build(o.template, words, tokenizer, family.prompts)
    except ValueError as e:
        raise ValueError(f"--method prompt: {e}") from None


def _check_model_source(o: FinetuneOptions) -> None:
    if Path(o.model).is_dir():
        read_config(o.model)  # a missing or broken config.json fails before anything is written
        return
    try:
        resolve_preset(o.model)
    except ValueError as e:
        raise ValueError(f"--model {o.model!r}: no such model directory, and not a preset ({e})") from None
    if o.from_scratch:
        raise ValueError(
            f"--from-scratch takes a model directory (its random-init twin); --model {o.model!r} is a "
            "preset, which starts from random weights anyway"
        )
    if o.tokenizer is None:
        raise ValueError(f"--model {o.model!r} is a preset: give the tokenizer to use with --tokenizer")


def _check_labels(task: Task, labels: list[str] | None, split: str, examples) -> None:
    """Every label of dev / test must be one the model learns from the training file."""
    if labels is None or examples is None:
        return
    unknown = sorted(set(task.label_set(examples)) - set(labels))
    if unknown:
        raise ValueError(
            f"{split}: label(s) {', '.join(map(repr, unknown[:10]))} never occur in the training file, "
            f"so the model cannot predict them (training labels: {', '.join(map(repr, labels[:20]))})"
        )


def finetune(o: FinetuneOptions, resume: bool = False, overwrite: bool = False) -> dict[str, Any]:
    """Fine-tune (or, with `resume`, continue an interrupted run in o.out_dir exactly); returns the summary.

    Everything is read and checked before the first write: the device, the model, tokenizer, every
    split and its labels, --max-length against the model's positions, and the output directory.
    """
    device, task, tokenizer, train, dev, labels, subset = _checked_inputs(o)
    out = Path(o.out_dir)
    with seeded(o.seed):  # the new head's initial weights (from scratch: every weight) and dropout
        model = _checked_model(o, task, labels, tokenizer)
        run = claim_run(out, "finetune", o, resume, overwrite, may_change=RESUME_MAY_CHANGE)
        return _finetune(o, task, model, tokenizer, train, dev, labels, out, run.resume, run.overwrite, subset, device)


def check_finetune(o: FinetuneOptions) -> None:
    """Every check `finetune(o)` makes before its first write, writing nothing: `finetune --grid` runs them
    before it claims its directory, so that a refused grid leaves --out as it was. The model is built as
    finetune builds it (what the checks of the tokenizer, pooling and --max-length read) and dropped."""
    _, task, tokenizer, _, _, labels, _ = _checked_inputs(o)
    with seeded(o.seed):  # torch's global random state is left as it was
        _checked_model(o, task, labels, tokenizer)


def _checked_inputs(o: FinetuneOptions):
    """(device, task, tokenizer, train, dev, labels, subset): the options, device, tokenizer and splits, checked."""
    device = dist.rank_device(o.device, say)  # a GPU asked for and absent fails here, before any write
    check_precision(device, o.precision)
    task = TASKS[o.task]()
    check_task_options(o, task)
    _check_model_source(o)
    tokenizer = load_tokenizer(o.model if Path(o.model).is_dir() else None, o.tokenizer)
    train = task.read(o.train, **o.columns)
    dev = task.read(o.dev, **o.columns) if o.dev else None
    labels = task.label_set(train)
    _check_labels(task, labels, o.dev, dev)
    if o.method == "prompt":
        task = TASKS[o.task](prompt=prompt_for(o, labels, tokenizer).to_dict())
    subset = training_subset(o, train)
    if subset is not None:
        train = [train[i] for i in subset]
    return device, task, tokenizer, train, dev, labels, subset


def _checked_model(o: FinetuneOptions, task: Task, labels, tokenizer):
    """The model to fine-tune (under the caller's seed), its positions checked against --max-length."""
    model = _build_model(o, task, labels, tokenizer)
    if o.max_length > model.config.max_length:
        raise ValueError(
            f"--max-length {o.max_length} is longer than the {model.config.max_length} positions of {o.model}"
        )
    return model


def _finetune(
    o: FinetuneOptions,
    task: Task,
    model,
    tokenizer,
    train,
    dev,
    labels,
    out: Path,
    resume: bool,
    overwrite: bool,
    subset: list[int] | None = None,
    device: torch.device | None = None,
) -> dict[str, Any]:
    model.config.extra.update(
        bertology_task=task.name,
        bertology_columns=dict(o.columns),
        bertology_max_length=o.max_length,
        bertology_stride=o.stride,
        bertology_task_options=task_options(task),
    )
    label2id = model.config.label2id if labels is not None else None
    features = task.featurize(train, tokenizer, o.max_length, label2id, o.stride)
    if features.truncated:
        warnings.warn(
            f"{o.train}: {features.truncated} of {len(train)} examples were truncated to {o.max_length} tokens"
        )
    if o.method == "probe":
        return _probe(o, task, model, tokenizer, features, train, dev, labels, out, subset, device)
    if o.method == "setfit":
        return train_setfit(o, task, model, tokenizer, features, train, dev, labels, out, subset, device)
    n = len(features)
    steps_per_epoch = math.ceil(n / o.batch_size)
    steps = max(1, math.ceil(o.epochs * steps_per_epoch))

    def batches(step: int) -> dict[str, torch.Tensor]:
        epoch, i = divmod(step, steps_per_epoch)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(o.seed * 1_000_003 + epoch))
        return model_inputs(model, features.batch(order[i * o.batch_size : (i + 1) * o.batch_size]))

    best = {"score": -math.inf, "step": None, "metrics": None}
    best_file = out / "best" / "best.json"  # so that a resumed run knows the epoch to beat
    if resume and best_file.is_file():
        best.update(json.loads(best_file.read_text()))
    elif overwrite:
        shutil.rmtree(out / "best", ignore_errors=True)  # an earlier run's best epoch is not this run's

    since_best = 0  # evaluations since dev last improved: --patience ends the run at its value
    dev_features = None  # tokenized once, read at every evaluation
    kept_in_memory: dict[str, torch.Tensor] = {}  # the best epoch's weights, without --checkpoints

    def evaluate(m) -> dict[str, float]:
        nonlocal dev_features
        label2id = m.config.label2id if task.name in LABEL_VOCABULARY else None
        if dev_features is None:
            dev_features = task.featurize(dev, tokenizer, o.max_length, label2id, o.stride)
        scores = task.metrics(predict_features(m, task, dev_features, dev, o.bf16), dev)
        nonlocal since_best
        score = scores[task.main_metric]
        since_best = 0 if score > best["score"] else since_best + 1
        if score > best["score"] and dist.is_main():
            best.update(score=score, step=trainer.step, metrics=scores)
            if not o.checkpoints:  # a copy in memory, written once at the end
                kept_in_memory.update({k: v.detach().to("cpu", copy=True) for k, v in m.state_dict().items()})
                return scores
            with atomic_dir(out / "best", exists="replace") as tmp:  # weights and score change together
                _save(m, out / "tokenizer.json", tmp)
                atomic_write_json(tmp / "best.json", best)
        return scores

    args = TrainingArguments.from_options(
        o,
        out,
        overwrite,
        steps=steps,
        warmup_steps=round(o.warmup_ratio * steps),
        keep_checkpoints=o.keep_checkpoints,
        eval_every=steps_per_epoch if dev else None,
        save_every=steps_per_epoch,
        checkpoints=o.checkpoints,
        **({"device": str(device)} if device is not None else {}),
    )
    if not resume:
        tokenizer.save(out / "tokenizer.json")  # once; checkpoints copy the file
    groups = parameter_groups(model, o.weight_decay)
    if o.head_lr is not None:
        groups = head_lr_groups(groups, head_parameters(model), o.head_lr)
    if o.layer_decay is not None:
        groups = layer_decay_groups(groups, parameter_depths(model), o.layer_decay, o.lr)
    trainer = Trainer(
        model,
        args,
        batches,
        TaskObjective(per_token=task.name == "tag"),
        evaluate if dev else None,
        save_extra=lambda d: atomic_copy(out / "tokenizer.json", d / "tokenizer.json"),
        param_groups=groups,
        stop_when=(lambda: since_best >= o.patience) if o.patience else None,
    )
    result = trainer.train(resume=resume)
    if result["interrupted"]:  # a checkpoint is written; `resume` continues from it
        return {"task": task.name, "model": o.model, "steps": result["step"], "interrupted": True, "options": asdict(o)}
    if dist.is_main():
        if kept_in_memory:
            model.load_state_dict(kept_in_memory)
            _save(model, out / "tokenizer.json", out)
        elif dev is not None and best["step"] is not None:
            for f in ("config.json", "model.safetensors", "tokenizer.json"):  # the best epoch becomes the model
                atomic_copy(out / "best" / f, out / f)
        else:
            _save(model, out / "tokenizer.json", out)
    summary = run_summary(o, task, model, train, features, labels, subset, best["metrics"])
    summary.update(steps=result["step"], best_step=best["step"], early_stopped=result["step"] < steps)
    if dist.is_main():
        atomic_write_json(out / "summary.json", summary)
    return summary


def _probe(o: FinetuneOptions, task: Task, model, tokenizer, features, train, dev, labels, out: Path, subset, device):
    """--method probe: the frozen encoder's sentence vectors, a logistic regression fitted on them, one save."""
    model.to(device or "cpu")
    dev_features = task.featurize(dev, tokenizer, o.max_length, model.config.label2id, o.stride) if dev else None
    fitted = fit_probe(model, features, dev_features, o.bf16)
    scores = task.metrics(predict_features(model, task, dev_features, dev, o.bf16), dev) if dev else None
    summary = {**run_summary(o, task, model, train, features, labels, subset, scores), "steps": 0, "probe": fitted}
    if dist.is_main():
        tokenizer.save(out / "tokenizer.json")
        model.to("cpu").save(out)
        atomic_write_json(out / "summary.json", summary)
    return summary


def _save(model, tokenizer_file: Path, directory: Path) -> None:
    model.save(directory)
    if tokenizer_file != directory / "tokenizer.json":
        atomic_copy(tokenizer_file, directory / "tokenizer.json")


def task_options(task: Task) -> dict[str, Any]:
    """What a task learnt from its training files and must keep at prediction time (QA: SQuAD v2.0; a
    prompt's template and verbalizer)."""
    if task.name == "qa":
        return {"version_2": task.allows_no_answer}
    if getattr(task, "prompt", None) is not None:
        return {"prompt": task.prompt.to_dict()}
    return {}


def grid_best_run(path: str | Path, say=None) -> Path:
    """`path` itself, or for a directory `finetune --grid` wrote (grid.json, no config.json) its kept run: the
    chosen rate's best-dev seed, said through `say` so that the user knows which model answers."""
    path = Path(path)
    grid = path / "grid.json"
    if (path / "config.json").is_file() or not grid.is_file():
        return path
    result = json.loads(grid.read_text(encoding="utf-8"))
    best = Path(result["best_dir"])
    best = best if best.is_absolute() or best.is_dir() else path / best.name
    if not (best / "config.json").is_file():
        raise FileNotFoundError(f"{grid}: its best run {best} is missing (was the grid directory moved in part?)")
    run = next((r for r in result.get("runs", []) if Path(r["dir"]).name == best.name), {})
    if say is not None:
        say(
            f"{path}: a finetune --grid directory; its best run answers: {best} (lr {result['lr']:g}"
            + (f", seed {run['seed']}, dev {result['metric']} {run['dev']:.4f})" if run else ")")
        )
    return best


def load_finetuned(path: str | Path, device: str | torch.device = "cpu", say=None, quantize: str | None = None):
    """(model, task, tokenizer, columns) of a directory written by `finetune`, or of a task model transformers
    saved (its task as `serve` reads it: tasks.task_of); the model as `load` gives it on `device`, with
    `quantize` (int8 quantized block by block as it loads)."""
    from . import HEAD_TASKS, task_of  # the rule serve uses too: a transformers task model has no bertology_task

    path = grid_best_run(path, say)
    config = read_config(path)
    task = task_of(config)
    if task is None:
        architecture = config.architectures[0] if config.architectures else config.model_type
        raise ValueError(
            f"{Path(path) / 'config.json'}: {architecture} has no task head and no bertology_task is recorded; "
            f"give a model written by `bertology finetune` or a transformers *{', *'.join(HEAD_TASKS)} model"
        )
    tokenizer = load_tokenizer(str(path), None)
    check_tokenizer(config, tokenizer, Path(path) / "tokenizer.json")
    model = load(path, device=device, say=say, quantize=quantize)
    return model, task, tokenizer, dict(config.extra.get("bertology_columns", {}))
