"""A resumed run is the same run: its options are recorded when it starts and compared on --resume.

    record_options(out, options)                  out/options.json, written when a run starts
    check_resume_options(out, options, may_change)  before --resume writes anything: every option
                                                  that differs from the recorded one, except those in
                                                  `may_change`, is named with its recorded value

Only what cannot change the trained weights may change: how long the run goes (`--steps`,
`--time-budget`, `--epochs` for fine-tuning, each extending the same schedule's horizon), how it
reports (logging, evaluation cadence, checkpoints kept, the progress bar) and where it runs
(`--device`, `--compile`). Data, model, objective, masking, batch, learning rate, precision and seed
are the run itself: a change there would write a model trained under two configurations.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Job:
    ...     max_length: int = 128
    ...     steps: int = 100
    >>> differences(Job(max_length=64, steps=200), {"max_length": 128, "steps": 100}, frozenset({"steps"}))
    ['--max-length 64 (the run was started with --max-length 128)']
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from ..io import atomic_write_json
from ..options import default_of, flag_of, renamed
from . import distributed as dist

RUN_OPTIONS = "options.json"
# RunOptions' fields that leave the weights as they are (trainer.RunOptions): length, reporting, placement
RUN_MAY_CHANGE = frozenset(
    {
        "steps",
        "time_budget",
        "eval_every",
        "eval_batches",
        "save_every",
        "keep_checkpoints",
        "log_every",
        "quiet",
        "stop_at",
        "compile",
        "device",
        "out_dir",
    }
)


def _plain(value: Any) -> Any:
    """The JSON form a value is recorded in (tuples become lists, paths strings), for a like-for-like comparison."""
    return json.loads(json.dumps(value, default=str))


def _shown(flag: str, value: Any) -> str:
    if value is None:
        return f"no {flag}"
    if value is True:
        return flag
    if value is False:
        return f"no {flag}" if not flag.startswith("--no-") else flag
    if isinstance(value, list):
        return f"{flag} {' '.join(map(str, value))}"
    return f"{flag} {value}"


def differences(options: Any, recorded: dict[str, Any], may_change: frozenset[str]) -> list[str]:
    """One phrase per option whose value differs from the recorded one (outside `may_change`). An option
    the record lacks (added to bertology after the run started) is compared with its default."""
    found = []
    for old, f in renamed(type(options)).items():  # a run recorded before an option was renamed
        if old in recorded and f.name not in recorded:
            recorded = {**recorded, f.name: recorded[old]}
    if "bf16" in recorded and "precision" not in recorded:  # recorded before --precision: --bf16 said it
        recorded = {**recorded, "precision": "bf16" if recorded["bf16"] else "auto"}
    for f in dataclasses.fields(options):
        if f.name in may_change:
            continue
        now = _plain(getattr(options, f.name))
        then = recorded[f.name] if f.name in recorded else _plain(default_of(f))
        if now != then:
            flag = flag_of(f) if f.metadata.get("cli", True) else f.name
            found.append(f"{_shown(flag, now)} (the run was started with {_shown(flag, then)})")
    return found


def record_options(out: Path, options: Any) -> None:
    atomic_write_json(Path(out) / RUN_OPTIONS, _plain(dataclasses.asdict(options)))


def check_resume_options(out: Path, options: Any, may_change: frozenset[str] = RUN_MAY_CHANGE) -> None:
    """Refuse (ValueError, nothing written) a --resume whose options would change the run in `out`."""
    path = Path(out) / RUN_OPTIONS
    if not path.is_file():  # a run started before bertology recorded options: nothing to compare against
        return
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(
            f"{path}: unreadable ({e}); the run's options cannot be checked, so it cannot be resumed "
            "safely: start again with --overwrite"
        ) from None
    found = differences(options, recorded, may_change)
    if found:
        allowed = ", ".join(
            sorted(
                flag_of(f)
                for f in dataclasses.fields(options)
                if f.name in may_change and f.metadata.get("cli", True) and f.name != "out_dir"
            )
        )
        raise ValueError(
            f"{out}: --resume would change the run: {'; '.join(found)}. Resume with the recorded "
            f"values, or start again with --overwrite (or another --out). May change on resume: {allowed}"
        )


def same_run(out: Path, options: Any, resume: bool, may_change: frozenset[str] = RUN_MAY_CHANGE) -> None:
    """A job's one call after claiming `out`: on resume, check the options against the record (nothing is
    written before); on a fresh start, record them (rank 0)."""
    if resume:
        check_resume_options(out, options, may_change)
    elif dist.is_main():
        record_options(out, options)
