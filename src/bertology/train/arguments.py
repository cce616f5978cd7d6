"""The options every training job shares, and the Trainer's arguments derived from a job's options.

`RunOptions` is the base of every job's options dataclass (pretrain, distill, finetune): logging,
evaluation, checkpoints, stopping, the time budget and the device, declared once. `TrainingArguments` is
what the Trainer reads; `TrainingArguments.from_options` is the one place a job's options become them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import FORMATS
from ..options import DEVICE, DROPOUT, MASKING_RATE, NON_NEGATIVE, POSITIVE, POSITIVE_NUMBER, Check, OptionError, option
from . import distributed as dist
from .device import PRECISIONS
from .report import REPORTERS, check_report_to
from .schedules import budget_schedule, schedule

DEFAULT_STEPS = 1000
NO_STEP_CAP = 2**62  # a time-budgeted run without --steps: the clock stops it


def precision_option():
    """`--precision`, the same on every training job (a fresh field each time it is declared)."""
    return option(
        "auto",
        "what training computes in: auto (the CPU: fp32, or bf16 with --bf16; a GPU: measured and said, bf16 or "
        "fp16 autocast, or fp32 with TF32), fp32, bf16, fp16 (CUDA, with a gradient scaler); --bf16 is "
        "--precision bf16",
        choices=PRECISIONS,
    )


def report_to_option():
    """`--report-to`, the same on every training job."""
    return option(
        "none",
        "tensorboard: also write TensorBoard events (loss, learning rate, throughput, grad norm, held-out "
        "metrics) to OUT/tensorboard (the tensorboard extra); metrics.jsonl and loss.png are written either way",
        choices=REPORTERS,
    )


def check_job_options(o) -> None:
    """What every training job's options check beyond their ranges: --bf16 is the short spelling of
    --precision bf16 (the one set from the other, a contradiction named), and --report-to's package is there."""
    check_report_to(o.report_to)
    if o.bf16 and o.precision not in ("auto", "bf16"):
        raise OptionError(f"--bf16 with --precision {o.precision}: --bf16 is --precision bf16; give one of them")
    o.precision = "bf16" if o.bf16 else o.precision
    o.bf16 = o.precision == "bf16"


@dataclass(kw_only=True)
class RunOptions:
    """The options every long training job shares (logging, evaluation, checkpoints, stopping);
    a job's options dataclass inherits them, so they are declared once."""

    eval_every: int | None = option(None, "evaluate on the held-out documents every N steps", check=POSITIVE)
    eval_batches: int = option(8, "held-out batches per evaluation", check=POSITIVE)
    save_every: int | None = option(None, "checkpoint every N steps", check=POSITIVE)
    keep_checkpoints: int = option(2, "checkpoints kept", check=POSITIVE, old_names=("keep_last",))
    log_every: int = option(10, "log metrics every N steps", check=POSITIVE)
    quiet: bool = option(False, "no progress bar")
    stop_at: int | None = option(None, "checkpoint and stop at STEP, as if interrupted", check=POSITIVE, metavar="STEP")
    compile: bool = option(
        False,
        "torch.compile the model's blocks (inductor: fused elementwise work, fewer copies; "
        "the first steps compile, for a minute or more; bench/pretrain.py measures it)",
    )
    time_budget: float | None = option(
        None,
        "minutes of wall time for the whole command, from its start (reading, tokenizing, building instances, "
        "loading, the final evaluation and save included): training gets what setup leaves, less the end's "
        "cost measured in the run, and its learning-rate schedule follows the elapsed share of that (warmup and "
        "decay in seconds, not steps); --steps is then a cap; a budget that setup spends is refused before "
        "training",
        check=POSITIVE_NUMBER,
        metavar="MINUTES",
    )
    budget_warmup: float = option(
        0.1, "share of --time-budget spent warming up (linear schedule)", check=Check("in [0, 1)", lambda v: 0 <= v < 1)
    )
    device: str = option(
        "auto", "where the job runs: auto (a CUDA GPU when there is one), cpu, cuda or cuda:N", check=DEVICE
    )
    precision: str = precision_option()
    report_to: str = report_to_option()

    def run_arguments(self, steps: int | None) -> dict[str, Any]:
        """The TrainingArguments these options decide, for a job to add its own to. `steps` None:
        1000, or no cap under a time budget (the budget ends the run)."""
        if steps is None:
            steps = DEFAULT_STEPS if self.time_budget is None else NO_STEP_CAP
        return dict(
            steps=steps,
            log_every=self.log_every,
            eval_every=self.eval_every,
            save_every=self.save_every,
            keep_checkpoints=self.keep_checkpoints,
            quiet=self.quiet,
            stop_at=self.stop_at,
            compile=self.compile,
            time_budget_s=None if self.time_budget is None else 60 * self.time_budget,
            budget_warmup=self.budget_warmup,
        )


@dataclass(kw_only=True)
class CorpusOptions(RunOptions):
    """The options of a job that trains on a text corpus (pretrain, distill): the corpus format, the
    optimisation and the masking they share; a job redeclares a field whose default is its own."""

    format: str = option("lines", "corpus format", choices=FORMATS)
    text_column: str | None = option(
        None,
        "read the --corpus files as tables (CSV / TSV / JSON lines / Parquet / a datasets directory) and "
        "train on this column's texts, a record a document (task-adaptive pretraining); a Parquet or "
        "datasets --corpus is read so without it, from its 'text' column",
        metavar="NAME",
    )
    steps: int | None = option(
        None, "optimizer steps (default 1000; with --time-budget a cap, default none)", check=POSITIVE
    )
    batch_size: int = option(32, "global batch (over accumulation and ranks)", check=POSITIVE)
    max_length: int = option(
        128,
        "tokens per sequence, special tokens included",
        check=Check("≥ 8", lambda v: v >= 8),
        old_names=("seq_len",),
    )
    lr: float = option(5e-4, "peak learning rate", check=POSITIVE_NUMBER)
    warmup: int = option(
        100,
        "warmup steps, then linear decay to 0 (with --time-budget: --budget-warmup instead)",
        check=NON_NEGATIVE,
    )
    weight_decay: float = option(0.01, "AdamW's decoupled weight decay", check=NON_NEGATIVE)
    accumulation: int = option(1, "micro-batches per optimizer step", check=POSITIVE)
    max_grad_norm: float = option(1.0, "gradient clipping norm", check=POSITIVE_NUMBER)
    dropout: float | None = option(
        None, "dropout while training (default: the config's; the saved config keeps its own)", check=DROPOUT
    )
    bf16: bool = option(
        False,
        "bf16 autocast (pays where the CPU multiplies bf16 natively: AMX; on a GPU the precision is measured and said)",
    )
    mlm_probability: float = option(0.15, "share of tokens masked", check=MASKING_RATE)
    seed: int = option(0, "seeds the model's initial weights, dropout, the instances and the masks")


@dataclass
class TrainingArguments:
    out_dir: str
    steps: int
    batch_size: int = 32  # global: summed over accumulation steps and ranks
    lr: float = 1e-4
    warmup_steps: int = 0
    schedule: str = "linear"  # linear (warmup_steps, then decay) | triangle (budget-tied one-cycle)
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-6
    accumulation: int = 1
    max_grad_norm: float | None = 1.0
    bf16: bool = False
    seed: int = 0
    log_every: int = 10
    eval_every: int | None = None
    save_every: int | None = None
    keep_checkpoints: int = 2  # the newest checkpoints kept
    checkpoints: bool = True  # False: none at all, not even the final one (a run too short to resume: start it again)
    quiet: bool = False
    stop_at: int | None = None  # checkpoint and stop at this step, as if interrupted (continue with resume)
    overwrite: bool = False  # start afresh over an earlier run in out_dir (its checkpoints and metrics go)
    compile: bool = False  # torch.compile the model's blocks (PreTrainedModel.compile_blocks) before training
    # wall-clock seconds: the run stops when they are spent (steps is then a cap) and the schedule follows the
    # elapsed share of them; elapsed time is kept in checkpoints across resumes. A job that passes the Trainer a
    # CommandBudget (train/budget.py) makes them the whole command's: the Trainer gets what its setup left
    time_budget_s: float | None = None
    budget_warmup: float = 0.1  # share of the time budget spent warming up (linear schedule)
    # auto: a CUDA GPU when there is one; cpu, cuda, cuda:N (under torchrun: cuda:LOCAL_RANK per process)
    device: str = "auto"
    # auto: the CPU as `bf16` says; on CUDA measured (hardware.cuda_precision); fp32, bf16, fp16 (CUDA) as asked
    precision: str = "auto"
    report_to: str = "none"  # tensorboard: events beside metrics.jsonl (train/report.py)
    loss_plot: bool = True  # loss.png when the run stops (the demo's seconds-long fine-tuning runs leave it out)
    # build the next batch on a worker thread during the step (None: on CUDA, where the CPU is otherwise idle)
    prefetch: bool | None = None

    def __post_init__(self):
        if self.steps < 1:
            raise ValueError(f"steps must be ≥ 1, got {self.steps}")
        if self.batch_size % (self.accumulation * dist.world_size()):
            raise ValueError(
                f"batch_size {self.batch_size} is not divisible by accumulation {self.accumulation} × "
                f"world size {dist.world_size()}"
            )
        schedule(self.schedule, self.steps, self.warmup_steps)  # an unknown name fails here, before any write
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision {self.precision!r}: choose one of {', '.join(PRECISIONS)}")
        if self.time_budget_s is not None:
            if not self.time_budget_s > 0:
                raise ValueError(f"time budget must be > 0 seconds, got {self.time_budget_s}")
            budget_schedule(self.schedule, self.budget_warmup)
        self.betas = tuple(self.betas)

    @classmethod
    def from_options(cls, o, out: Path | str, overwrite: bool, **decided: Any) -> "TrainingArguments":
        """The one place a job's options become the Trainer's arguments: every field the options
        carry under the same name (lr, batch_size, seed, device, …; `warmup` as warmup_steps), a RunOptions'
        `run_arguments` (steps, logging, checkpoints, time budget), then what the job `decided`
        itself (fine-tuning: steps from its epochs, warmup from its ratio, …; the device it resolved)."""
        taken = {f: getattr(o, f) for f in cls.__dataclass_fields__ if f not in ("out_dir", "steps") and hasattr(o, f)}
        if hasattr(o, "warmup"):
            taken["warmup_steps"] = o.warmup
        if isinstance(o, RunOptions):
            taken.update(o.run_arguments(o.steps))
        return cls(out_dir=str(out), **{**taken, "overwrite": overwrite, **decided})
