"""How the demo spends its minutes: a wall-clock budget for the whole run on the machine at hand.

The tokenizers are trained first (their cost is what it is); of the time then left, a share goes
to pretraining, split evenly between the models and each enforced by the Trainer's own clock
(`--time-budget`: the learning-rate schedule follows elapsed time, so every model ends its decay
when its share ends, on a fast CPU or a slow one); the rest goes to fine-tuning, whose label
counts are run in order of importance while the measured cost of what remains fits.

The plan is held, not only made: each stage reads the clock when it starts. A pretraining slot is an
equal share of what is left of pretraining's time, so a slow stage shortens the slots after it; the
first label count gives up the choice of method where its candidates do not fit, but always runs;
every count gets one seed before any gets more seeds (the first count's further seeds included); a
later count runs on fewer seeds, or not at all, or is given up midway when the machine slows down.
Every cut is kept with its reason (`Budget.cut`), and an interrupted run's seconds count when it is
resumed.

On a GPU the same minutes buy far more tokens: batches are larger, and the model size is chosen from
a throughput probe (`choose_preset`) so that each model sees enough tokens for its size. On the CPU
the plan is the tiny one, unprobed.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..io import atomic_write_json

# labelled examples per class of data/debian-sections (None: all of them, 175 per class)
LABEL_COUNTS = (10, 30, 100, None)
PRIORITY = (10, None, 30, 100)  # the order the counts get time: the seed's few-label claim first
SEEDS = (0, 1, 2, 3, 4)
LEARNING_RATES = (1e-3, 3e-3)  # random init and pretrained starts want different rates: both run, dev chooses
PROMPT_RATES = (1e-3,)  # measured best of {1e-4, 3e-4, 1e-3, 3e-3} for a word2vec + MLM BERT-tiny (3e-3 for MLM alone)
REPORT_RESERVE_S = 30.0  # plots, attention maps and tables at the end
PATIENCE = 4  # epochs without a better dev score before a fine-tuning run ends (dev plateaus by about half its epochs)
GPU_PRESETS = ("tiny", "mini", "small", "base")  # the probe's candidates, smallest first
GPU_BATCH_SIZE = 512  # sequences a pretraining step on a GPU: a tiny batch leaves a GPU waiting on kernel launches
TOKENS_PER_PARAMETER = 20.0  # the least a model should see for its size (Hoffmann et al. 2022's compute-optimal ratio)


def label_name(count: int | None) -> str:
    return "all" if count is None else str(count)


def label_count(name: str) -> int | None:
    """label_name's inverse: "10" → 10, "all" → None."""
    return None if name == "all" else int(name)


def count_order(count: int | None) -> float:
    """Sort key of label counts: every number, then all (None)."""
    return math.inf if count is None else count


@dataclass
class Budget:
    """Seconds for the whole demo, counted from its creation plus the seconds `before` it (what an
    interrupted run spent: --resume continues the same budget), and what was cut to hold it.

    `file` keeps both across runs: `checkpoint()` writes it at each stage's end and when the demo
    stops, so that a killed run loses at most the stage it was in."""

    seconds: float
    clock: Callable[[], float] = time.perf_counter
    before: float = 0.0
    cuts: list[str] = field(default_factory=list)  # "what was cut: why", in the order decided
    file: Path | None = None
    started: float | None = None  # on `clock`; None: now (the CLI passes when the command began, imports included)

    def __post_init__(self):
        if self.started is None:
            self.started = self.clock()

    @classmethod
    def resumed(cls, seconds: float, file: Path, resume: bool, **kwargs) -> "Budget":
        """A budget that counts what the run in `file` spent when resuming it, and starts afresh otherwise."""
        state = json.loads(file.read_text(encoding="utf-8")) if resume and file.is_file() else {}
        return cls(seconds, before=state.get("spent_s", 0.0), cuts=state.get("cuts", []), file=file, **kwargs)

    def spent(self) -> float:
        return self.before + self.clock() - self.started

    def left(self) -> float:
        return self.seconds - self.spent()

    def cut(self, what: str, why: str) -> str:
        """Record a cut (once: a resumed run may decide it again) and return it in words for the log."""
        line = f"{what}: {why}"
        if line not in self.cuts:
            self.cuts.append(line)
        return line

    def checkpoint(self) -> None:
        if self.file is not None:
            atomic_write_json(self.file, {"budget_s": self.seconds, "spent_s": self.spent(), "cuts": self.cuts})


@dataclass
class Plan:
    quick: bool
    preset: str
    vocab_size: int
    corpus_bytes: int | None  # None = the whole in-domain corpus
    seq_len: int
    batch_size: int
    finetune_length: int
    seeds: tuple[int, ...]
    learning_rates: tuple[float, ...]  # of --method head
    label_counts: tuple[int | None, ...]  # in PRIORITY order
    bf16: bool
    # of the time left after the tokenizers: pretraining, the rest fine-tuning (on 2 CPU cores, every label
    # count on one seed and the first on more need about half: docs/demo.md)
    pretrain_share: float = 0.5
    device: str = "cpu"  # where every stage runs: "cpu", "cuda:N"
    prompt_rates: tuple[float, ...] = PROMPT_RATES
    patience: int | None = PATIENCE  # finetune --patience of every run that trains
    grid_workers: int = 1  # finetune --grid --workers: runs side by side on the CPU's cores

    @property
    def selection_seeds(self) -> tuple[int, ...]:
        """The seeds every candidate method runs on before dev chooses; the chosen one then runs on all."""
        return self.seeds[:2] if len(self.seeds) > 2 else self.seeds[:1]

    def rates(self, method: str) -> tuple[float, ...]:
        """The learning rates tried for a fine-tuning method (a probe trains no rate: one run per seed)."""
        return {"head": self.learning_rates, "prompt": self.prompt_rates, "probe": self.learning_rates[:1]}[method]

    @classmethod
    def make(cls, quick: bool, bf16: bool, device: str = "cpu") -> "Plan":
        """The CPU's plan (tiny models), or on a GPU the same with GPU_BATCH_SIZE sequences a step (not
        --quick, a smoke test); the preset on a GPU is then chosen by `choose_preset`."""
        if quick:
            return cls(
                quick=True,
                preset="tiny",
                vocab_size=2000,
                corpus_bytes=400_000,
                seq_len=32,
                batch_size=16,
                finetune_length=32,
                seeds=(0, 1),
                learning_rates=(3e-3,),
                prompt_rates=(1e-3,),
                label_counts=(10, None),
                bf16=bf16,
                device=device,
                grid_workers=cpu_grid_workers(device),
            )
        return cls(
            quick=False,
            preset="tiny",
            vocab_size=8000,
            corpus_bytes=None,
            seq_len=32,
            batch_size=64 if device == "cpu" else GPU_BATCH_SIZE,
            finetune_length=32,
            seeds=SEEDS,
            learning_rates=LEARNING_RATES,
            label_counts=PRIORITY,
            bf16=bf16,
            device=device,
            grid_workers=cpu_grid_workers(device),
        )

    @property
    def probes_presets(self) -> bool:
        return self.device != "cpu" and not self.quick

    def epochs(self, examples: int) -> float:
        """Passes over `examples` labelled examples: about 64 optimizer steps of 32 at least (a
        handful of examples needs many passes before the random-init twin converges), between 5 and
        30 passes; the best dev epoch is kept. --quick: one pass (two for the smallest sets)."""
        if self.quick:
            return 2.0 if examples < 200 else 1.0
        return float(min(30, max(5, math.ceil(64 * 32 / examples))))


def cpu_grid_workers(device: str) -> int:
    """Fine-tuning runs side by side: two on a CPU of two cores or more (a tiny model keeps one thread
    busy, and two threads not twice as busy), one on a GPU."""
    from ..data.tokenstore import default_workers

    return 2 if device == "cpu" and default_workers() >= 2 else 1


def choose_preset(
    measured: dict[str, tuple[float, int]], seconds: float, tokens_per_parameter: float = TOKENS_PER_PARAMETER
) -> str:
    """The largest preset that sees at least `tokens_per_parameter` tokens per parameter in a pretraining
    slot of `seconds`, from {preset: (measured tokens/s, parameters)}; the smallest where none does.

    Why this rule: a fixed budget trains a larger model on fewer tokens, and a model far from the tokens
    its size needs is undertrained, fine-tuning worse than a smaller one trained longer (Hoffmann et
    al. 2022 put the compute-optimal ratio near 20 tokens per parameter). So the probe's measured speed
    of each candidate on this device turns the slot into tokens, and the model grows only while the
    tokens keep up with it: on the CPU, or a slow GPU, that leaves the tiny preset.

    >>> choose_preset({"tiny": (2e6, 1e6), "mini": (1.5e6, 7e6), "small": (3e5, 2.5e7)}, 100)
    'mini'
    >>> choose_preset({"tiny": (1e4, 1e6), "mini": (3e3, 7e6)}, 100)
    'tiny'
    """
    order = sorted(measured, key=lambda preset: measured[preset][1])  # smallest first
    fitting = [p for p in order if measured[p][0] * seconds >= tokens_per_parameter * measured[p][1]]
    return fitting[-1] if fitting else order[0]


def run_passes(examples: int, epochs: float, dev: int, test: int) -> float:
    """A fine-tuning run's cost in example passes: training (forward + backward) plus the forward-only
    evaluations of dev after each epoch and of test once, a forward pass counted as a third of a step.

    >>> round(run_passes(100, 20, dev=250, test=500), 1)
    3833.3
    """
    return examples * epochs + (dev * math.ceil(epochs) + test) / 3
