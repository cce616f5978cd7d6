"""Resuming a run that already finished: said, and nothing changed (it used to exit 0 after rewriting the
model and summary.json with "resumed_from": 0 and "final": {}); with a raised step budget it continues,
saying so, and its summary says where it resumed."""

import hashlib
import json
from pathlib import Path

import pytest

from bertology.cli import main
from bertology.train import PretrainingObjective, Trainer, TrainingArguments
from bertology.train.run import resume_status

from helpers import synthetic_batches, tiny_model, wiki_head


def _trainer(out, steps, **kw):
    args = TrainingArguments(out_dir=str(out), steps=steps, batch_size=8, lr=1e-3, log_every=1, quiet=True, **kw)
    return Trainer(tiny_model(), args, synthetic_batches(), PretrainingObjective())


def test_resume_status_tells_a_finished_run_from_an_interrupted_one(tmp_path):
    _trainer(tmp_path / "done", 2).train()
    complete, note = resume_status(tmp_path / "done", {"steps": 2, "time_budget_s": None})
    assert complete and note == (
        f"{tmp_path / 'done'}: the run is complete (step 2, --steps 2): nothing to train "
        "(raise --steps or --time-budget to train it further)"
    )
    complete, note = resume_status(tmp_path / "done", {"steps": 5, "time_budget_s": None})
    assert not complete
    assert (
        note
        == f"{tmp_path / 'done'}: the run had finished at step 2 (--steps 2); continuing it to --steps 5, the raised budget"
    )
    _trainer(tmp_path / "stopped", 4, stop_at=2).train()  # interrupted at step 2 of 4: a plain resume
    assert resume_status(tmp_path / "stopped", {"steps": 4, "time_budget_s": None}) == (False, None)
    assert resume_status(tmp_path / "empty", {"steps": 4}) == (False, None)


def test_a_spent_time_budget_is_complete_too(tmp_path):
    _trainer(tmp_path, 2).train()
    complete, note = resume_status(tmp_path, {"steps": 2**62, "time_budget_s": 1e-9})
    assert complete and "--time-budget" in note and "step 2" in note


def test_the_trainer_records_the_step_it_resumed_from(tmp_path):
    _trainer(tmp_path, 4, stop_at=3).train()
    resumed = _trainer(tmp_path, 4)
    assert resumed.resumed_from is None
    resumed.train(resume=True)
    assert resumed.resumed_from == 3 and resumed.step == 4


def _files(out: Path) -> dict[str, tuple[str, int]]:
    return {
        p.relative_to(out).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


@pytest.mark.integration
def test_pretrain_resume_of_a_finished_run_changes_nothing(tmp_path, capsys):
    args = ["pretrain", "--family", "bert", "--preset", "tiny", "--vocab-size", "600", "--batch-size", "8"]
    args += ["--max-length", "32", "--heldout", "2", "--dupe-factor", "1", "--quiet", "--eval-every", "2"]
    args += ["--corpus", str(wiki_head(tmp_path / "corpus.txt", 200_000)), "--out", str(tmp_path / "run")]
    out = tmp_path / "run"
    assert main(args + ["--steps", "2"]) == 0
    finished = json.loads((out / "summary.json").read_text())
    assert finished["steps"] == 2 and finished["final"] and finished["resumed_from"] is None
    before = _files(out)
    capsys.readouterr()

    assert main(args + ["--steps", "2", "--resume"]) == 0
    said = capsys.readouterr()
    assert f"{out}: the run is complete (step 2, --steps 2): nothing to train" in said.err
    assert "nothing was changed" in said.err and "written to" not in said.out
    assert _files(out) == before  # not a byte nor a timestamp

    assert main(args + ["--steps", "3", "--resume"]) == 0
    said = capsys.readouterr()
    assert f"{out}: the run had finished at step 2 (--steps 2); continuing it to --steps 3" in said.err
    continued = json.loads((out / "summary.json").read_text())
    assert continued["steps"] == 3 and continued["resumed_from"] == 2 and continued["final"]["step"] == 3
