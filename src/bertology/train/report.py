"""Where a run's metrics go, so that training can be watched: metrics.jsonl always, TensorBoard's event
files with --report-to tensorboard, and loss.png beside the run when it stops.

    reporter = Reporter(out, report_to="tensorboard")   # opened by the Trainer, main process only
    reporter.log({"step": 10, "loss": 3.2, "lr": 1e-4, "tokens": 40960})
    reporter.close()                                     # flushes the events, draws out/loss.png

A record is one line of metrics.jsonl: training metrics (loss, lr, grad_norm, tokens_per_s, …) at log
steps, `eval/…` metrics at evaluations, `tokens` the real (unpadded) tokens trained on so far. In
TensorBoard the training metrics are under `train/` and the held-out ones under `eval/`, against the step.
loss.png draws the training loss and every held-out loss against tokens, on a log scale.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..io import atomic_write_text
from ..options import OptionError
from ..viz.plots import plot_losses

REPORTERS = ("none", "tensorboard")
METRICS_FILE = "metrics.jsonl"
EVENTS_DIR = "tensorboard"  # in the run directory: `tensorboard --logdir RUN/tensorboard`
LOSS_PLOT = "loss.png"


def check_report_to(report_to: str) -> None:
    """--report-to's package is installed, or an OptionError saying how to get it (before the first write)."""
    if report_to not in REPORTERS:
        raise OptionError(f"--report-to {report_to!r}: choose one of {', '.join(REPORTERS)}")
    if report_to == "tensorboard":
        try:
            import tensorboard  # noqa: F401
        except ImportError:
            raise OptionError(
                "--report-to tensorboard: the tensorboard package is not installed; "
                "pip install 'bertology[tensorboard]' (or pip install tensorboard)"
            ) from None


class Reporter:
    """A run's metrics lines, its TensorBoard events and its loss plot (write nothing where not `main`)."""

    def __init__(self, out: Path, report_to: str = "none", main: bool = True):
        check_report_to(report_to)
        self.out, self.report_to, self.main = Path(out), report_to, main
        self.events = None  # torch.utils.tensorboard.SummaryWriter, opened at the first record

    @property
    def metrics_file(self) -> Path:
        return self.out / METRICS_FILE

    def log(self, record: dict[str, Any]) -> None:
        if not self.main:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        with open(self.metrics_file, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        if self.report_to == "tensorboard":
            if self.events is None:
                from torch.utils.tensorboard import SummaryWriter

                self.events = SummaryWriter(log_dir=str(self.out / EVENTS_DIR))
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)) and math.isfinite(value):
                    self.events.add_scalar(key if key.startswith("eval/") else f"train/{key}", value, record["step"])

    def truncate(self, step: int) -> None:
        """Drop the lines an interrupted run wrote after its last checkpoint (TensorBoard shows a resumed
        run's later points over the dropped ones itself)."""
        if self.main and self.metrics_file.is_file():
            lines = self.metrics_file.read_text(encoding="utf-8").splitlines()
            keep = [line for line in lines if json.loads(line).get("step", 0) <= step]
            atomic_write_text(self.metrics_file, "".join(line + "\n" for line in keep))

    def start_afresh(self) -> None:
        """An overwritten run's metrics and events go with its checkpoints."""
        if self.main:
            self.metrics_file.unlink(missing_ok=True)
            for events in (self.out / EVENTS_DIR).glob("events.out.tfevents.*"):
                events.unlink()

    def close(self, plot: bool = True) -> None:
        """Flush the events and (`plot`) draw loss.png from metrics.jsonl (the whole run, resumed parts included)."""
        if self.events is not None:
            self.events.close()
            self.events = None
        if plot:
            self.plot()

    def plot(self) -> None:
        """Draw loss.png from metrics.jsonl as it is now (nothing before the first training loss)."""
        if self.main and self.metrics_file.is_file():
            records = [json.loads(line) for line in self.metrics_file.read_text(encoding="utf-8").splitlines()]
            if any("loss" in r for r in records):
                plot_losses(records, self.out / LOSS_PLOT, title=self.out.name)
