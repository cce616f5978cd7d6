"""The prologue and epilogue every training job shares (train/run.py): the claim refuses before writing,
a run killed before its first checkpoint starts again, and the final write happens once, from the main
process of an uninterrupted run."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from bertology.train import run as run_module
from bertology.train.run import claim_run

TRAIN = Path(run_module.__file__).parent


@dataclass
class Job:
    steps: int = 3
    lr: float = 1e-3


def test_the_final_write_is_the_main_process_of_an_uninterrupted_run(tmp_path, monkeypatch):
    run = claim_run(tmp_path / "out", "pretrain", Job(), resume=False, overwrite=False)
    saved = []
    assert run.finish(saved.append, {"steps": 3}, interrupted=True) == {"steps": 3}
    assert saved == [] and not (run.out / "summary.json").exists()
    monkeypatch.setattr(run_module.dist, "is_main", lambda: False)  # rank 1 of a torchrun job
    run.finish(saved.append, {"steps": 3}, interrupted=False)
    assert saved == [] and not (run.out / "summary.json").exists()
    monkeypatch.setattr(run_module.dist, "is_main", lambda: True)
    run.finish(saved.append, {"steps": 3}, interrupted=False)
    assert saved == [run.out] and json.loads((run.out / "summary.json").read_text()) == {"steps": 3}


def test_a_resume_without_a_checkpoint_starts_again_and_one_that_changes_the_run_is_refused(tmp_path):
    out = tmp_path / "out"
    first = claim_run(out, "pretrain", Job(), resume=False, overwrite=False)
    assert (first.resume, first.overwrite) == (False, False)
    again = claim_run(out, "pretrain", Job(), resume=True, overwrite=False)  # killed before its first checkpoint
    assert (again.resume, again.overwrite, again.done) == (False, True, None)
    (out / "checkpoints" / "step-00000001").mkdir(parents=True)
    (out / "checkpoints" / "step-00000001" / "trainer_state.pt").write_bytes(b"")
    before = sorted(p.name for p in out.rglob("*"))
    with pytest.raises(ValueError, match=r"--lr 0.1 \(the run was started with --lr 0.001\)"):
        claim_run(out, "pretrain", Job(lr=0.1), resume=True, overwrite=False)
    assert sorted(p.name for p in out.rglob("*")) == before


def test_another_commands_directory_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "out"
    claim_run(out, "finetune", Job(), resume=False, overwrite=False)
    before = sorted(p.name for p in out.rglob("*"))
    with pytest.raises(FileExistsError, match="holds a finetune run"):
        claim_run(out, "pretrain", Job(), resume=True, overwrite=False)
    assert sorted(p.name for p in out.rglob("*")) == before


def test_every_job_in_train_writes_its_summary_through_run_finish():
    writers = [
        p.name
        for p in sorted(TRAIN.glob("*.py"))
        if p.name != "run.py" and re.search(r"""["']summary\.json["']""", p.read_text(encoding="utf-8"))
    ]
    assert writers == [], f"final writes outside Run.finish (no main-process guard there): {writers}"
