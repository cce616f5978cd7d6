"""A run's directory, from its claim to its final write: the prologue and epilogue every training job shares.

    run = claim_run(options.out_dir, "pretrain", options, resume, overwrite, options.run_arguments(options.steps))
    if run.done is not None:             # --resume of a run already complete: nothing changes
        return run.done
    ...                                  # build, train (the Trainer writes checkpoints/ and metrics.jsonl)
    return run.finish(model.save, summary, interrupted=result["interrupted"])

`claim_run` is called after every check of the job's input, and before its first write: the output
directory is claimed (a user's directory refused, an earlier run continued with --resume or replaced with
--overwrite), every rank waits for it, a resume whose options would change the run is refused, and a run
killed before its first checkpoint starts again. `Run.finish` writes the final model and summary.json
from the main process only, and only for a run that was not interrupted.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from ..io import atomic_write_json, claim_output_dir
from . import distributed as dist
from .arguments import NO_STEP_CAP
from .device import say
from .resume import RUN_MAY_CHANGE, same_run


@dataclass
class Run:
    """A claimed output directory: where the job writes, and whether it continues checkpoints there."""

    out: Path
    resume: bool  # continue the newest checkpoint in out/checkpoints
    overwrite: bool  # start afresh over an earlier run of ours (its checkpoints and metrics go)
    done: dict[str, Any] | None = None  # a resumed run already complete: its summary, left as it is

    def finish(
        self,
        save: Callable[[Path], None],
        summary: dict[str, Any],
        interrupted: bool,
        started: float | None = None,
        budget_s: float | None = None,
    ) -> dict[str, Any]:
        """The final model (`save(out)`) and summary.json, from the main process of an uninterrupted run;
        returns the summary (every rank). `started`: when the command began (time.perf_counter), for the
        summary's command_seconds; a command past its time budget `budget_s` says so."""
        if dist.is_main() and not interrupted:
            save(self.out)
            if started is not None:
                summary["command_seconds"] = time.perf_counter() - started
                over = summary["command_seconds"] - budget_s if budget_s is not None else 0.0
                if over >= 0.05:  # what a tenth of a second shows: "88.1 s, over its 88.1 s" said nothing
                    say(
                        f"the command took {summary['command_seconds']:.1f} s, {over:.1f} s over its {budget_s:.1f} s "
                        f"time budget (setup {summary.get('setup_seconds') or 0:.0f} s, training "
                        f"{summary['train_seconds']:.0f} s)"
                    )
            atomic_write_json(self.out / "summary.json", summary)
        return summary


def claim_run(
    out_dir: str | Path,
    command: str,
    options: Any,
    resume: bool,
    overwrite: bool,
    length: dict[str, Any] | None = None,
    may_change: frozenset[str] = RUN_MAY_CHANGE,
) -> Run:
    """Claim `out_dir` for `command` (main process; the other ranks wait), after every check of the
    input and before the first write. `options` are compared with the recorded run's on resume (only
    `may_change` may differ); `length` (RunOptions.run_arguments: steps, time_budget_s) lets a resume of
    a run already complete under it return that run's summary as `done` and change nothing."""
    out = Path(out_dir)
    if dist.is_main():
        claim_output_dir(out, command, resume=resume, overwrite=overwrite)
    dist.barrier()
    if resume and not checkpoints(out):  # killed before its first checkpoint: nothing to continue, start again
        resume, overwrite = False, True
    same_run(out, options, resume, may_change)  # a resume with options that change the run is refused here
    done = finished_run(out, length) if resume and length is not None else None
    return Run(out, resume, overwrite, done)


def checkpoints(out_dir: str | Path) -> list[Path]:
    """The complete checkpoints of a run directory, oldest first (a directory appears only once whole)."""
    directory = Path(out_dir) / "checkpoints"
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.name.startswith("step-") and (p / "trainer_state.pt").is_file())


def resume_status(out_dir: str | Path, run: dict[str, Any]) -> tuple[bool, str | None]:
    """(complete, note) for resuming the run in `out_dir` under `run` (RunOptions.run_arguments: steps,
    time_budget_s). Complete: its newest checkpoint already reached those steps or spent that time, so a
    resume would train nothing and only rewrite the finished model and summary; the note says so. Otherwise
    the note says when a finished run continues because its budget was raised; None for an interrupted run.
    Read from trainer_state.pt memory-mapped: its optimizer moments are not loaded for this."""
    found = checkpoints(out_dir)
    if not found:
        return False, None
    file = found[-1] / "trainer_state.pt"
    try:
        state = torch.load(file, map_location="cpu", weights_only=True, mmap=True)
        before = json.loads(state["args"])
    except Exception as e:
        raise ValueError(f"{file}: corrupt or unreadable checkpoint ({e})") from None
    step, elapsed = int(state["step"]), float(state.get("elapsed_s", 0.0))
    if _reached(step, elapsed, run["steps"], _horizon(state, before, run.get("time_budget_s"))):
        asked = _budget(run["steps"], run.get("time_budget_s"))
        return True, (
            f"{out_dir}: the run is complete (step {step:,}, {asked}): nothing to train "
            "(raise --steps or --time-budget to train it further)"
        )
    if _reached(step, elapsed, int(before["steps"]), _horizon(state, before, before.get("time_budget_s"))):
        finished, raised = (
            _budget(int(before["steps"]), before.get("time_budget_s")),
            _budget(run["steps"], run.get("time_budget_s")),
        )
        return (
            False,
            f"{out_dir}: the run had finished at step {step:,} ({finished}); continuing it to {raised}, the raised budget",
        )
    return False, None


def finished_run(out_dir: str | Path, run: dict[str, Any]) -> dict[str, Any] | None:
    """On resume: the summary.json (marked "already_complete") of a run already complete under `run`, which is
    then left as it is; None when the resume has training to do. Either is said through `say`."""
    complete, note = resume_status(out_dir, run)
    summary = Path(out_dir) / "summary.json"
    if complete and summary.is_file():
        say(f"{note}; nothing was changed")
        return {**json.loads(summary.read_text(encoding="utf-8")), "already_complete": True}
    if complete:  # killed between its last checkpoint and its summary: the resume writes what is missing
        say(f"{note}; writing the final model and summary.json, which the run did not write")
    elif note is not None:
        say(note)
    return None


def _reached(step: int, elapsed_s: float, steps: int, horizon_s: float | None) -> bool:
    return step >= steps or (horizon_s is not None and elapsed_s >= horizon_s)


def _horizon(state: dict[str, Any], before: dict[str, Any], time_budget_s: float | None) -> float | None:
    """The training seconds a run under `time_budget_s` stops at: the horizon its checkpoint recorded (a command's
    budget less its setup and end), lengthened by a raise of the budget; the budget itself for a Trainer's own."""
    if time_budget_s is None:
        return None
    if state.get("horizon_s") is None or before.get("time_budget_s") is None:
        return time_budget_s
    return float(state["horizon_s"]) + time_budget_s - float(before["time_budget_s"])


def _budget(steps: int, time_budget_s: float | None) -> str:
    """A run's budget in the options' words: "--steps 3", "--time-budget 2 min"."""
    if time_budget_s is None:
        return f"--steps {steps:,}"
    return f"--time-budget {time_budget_s / 60:g} min" + (f", --steps {steps:,}" if steps < NO_STEP_CAP else "")


def run_summary(trainer: Any, result: dict[str, Any]) -> dict[str, Any]:
    """What every job's summary.json says about its run: steps, interruption, time, the last
    training and evaluation metrics."""
    return {
        "steps": result["step"],
        "interrupted": result["interrupted"],
        "train_seconds": trainer.elapsed_s,  # the Trainer's (evaluations included); command_seconds: the whole command's
        "setup_seconds": trainer.time.setup_s,  # under --time-budget: the command's seconds before its first step
        "final": next((r for r in reversed(trainer.history) if "loss" in r), {}),
        "eval": next((r for r in reversed(trainer.history) if any(k.startswith("eval/") for k in r)), {}),
    }


def _cuda_devices() -> list[int]:
    """The GPUs whose random state fork_rng keeps: all of them once CUDA has started (torch.manual_seed
    seeds them all), none before (asking for a state would start CUDA in a CPU job)."""
    return list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """torch's global random state seeded with `seed` inside the block and restored after it: for
    what draws from it (weight initialisation, dropout) without changing the caller's stream."""
    with torch.random.fork_rng(devices=_cuda_devices()):
        torch.manual_seed(seed)
        yield
