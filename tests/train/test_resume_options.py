"""--resume continues the same run: an option that would change it (data, model, objective, masking, batch,
optimisation, precision, seed) is refused before anything is written, each named with its recorded value;
the run's length, reporting and placement may change (train/resume.py). One case per class of option, for
every job that resumes: pretrain (MLM and XLNet's permutation LM), distill, finetune."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from bertology.cli import main
from bertology.options import option
from bertology.train.resume import RUN_MAY_CHANGE, check_resume_options, differences, record_options

ROOT = Path(__file__).resolve().parents[2]


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


@dataclass
class Job:
    corpus: list[str] = option(help="", metavar="FILE")
    max_length: int = option(128, old_names=("seq_len",))
    whole_word: bool = option(False)
    unigram_prior: bool = option(True)
    steps: int | None = option(None)
    log_every: int = option(10)
    overrides: dict = option(default_factory=dict, cli=False)


def test_every_difference_is_named_with_its_recorded_value(tmp_path):
    record_options(tmp_path, Job(corpus=["a.txt"]))
    assert json.loads((tmp_path / "options.json").read_text())["corpus"] == ["a.txt"]
    changed = Job(
        corpus=["b.txt", "c.txt"],
        max_length=64,
        whole_word=True,
        unigram_prior=False,
        steps=5000,
        log_every=1,
        overrides={"hidden_size": 16},
    )
    with pytest.raises(ValueError) as e:
        check_resume_options(tmp_path, changed, RUN_MAY_CHANGE)
    message = str(e.value)
    for phrase in (
        "--corpus b.txt c.txt (the run was started with --corpus a.txt)",
        "--max-length 64 (the run was started with --max-length 128)",
        "--whole-word (the run was started with no --whole-word)",
        "no --unigram-prior (the run was started with --unigram-prior)",
        "overrides {'hidden_size': 16} (the run was started with overrides {})",
        "May change on resume: --log-every, --steps",
    ):
        assert phrase in message, message
    assert "--steps 5000" not in message and "--log-every 1 " not in message
    check_resume_options(tmp_path, Job(corpus=["a.txt"], steps=5000, log_every=1))  # extend, log more often: fine


def test_an_option_added_after_the_run_started_is_compared_with_its_default(tmp_path):
    (tmp_path / "options.json").write_text(json.dumps({"corpus": ["a.txt"], "seq_len": 128}))
    check_resume_options(tmp_path, Job(corpus=["a.txt"]))
    assert differences(
        Job(corpus=["a.txt"], whole_word=True), {"corpus": ["a.txt"], "seq_len": 128}, RUN_MAY_CHANGE
    ) == ["--whole-word (the run was started with no --whole-word)"]
    (tmp_path / "options.json").unlink()
    check_resume_options(tmp_path, Job(corpus=["x"]))  # a run from before options were recorded: nothing to compare


# ---- whole jobs: a run stopped at step 1, resumed with changed options ----------------------------------------
@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("resume-options")
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    (d / "corpus.txt").write_text(text[: text.index("\n\n", 300_000) + 1], encoding="utf-8")
    (d / "other.txt").write_text(text[: text.index("\n\n", 320_000) + 1], encoding="utf-8")
    rows = (ROOT / "data" / "debian-sections" / "train.tsv").read_text(encoding="utf-8").splitlines()
    (d / "train.tsv").write_text("\n".join([rows[0]] + rows[1::25]) + "\n", encoding="utf-8")
    commands = {name: args(d) for name, args in JOBS.items()}
    assert main(commands["pretrain"] + ["--steps", "3", "--stop-at", "1"]) == 130
    assert main(commands["xlnet"] + ["--steps", "3", "--stop-at", "1"]) == 130
    teacher = d / "teacher"
    teacher_args = list(commands["pretrain"])
    teacher_args[teacher_args.index("--out") + 1] = str(teacher)
    assert main(teacher_args + ["--steps", "1"]) == 0
    commands["distill"] = commands["distill"][:2] + [str(teacher)] + commands["distill"][2:]
    assert main(commands["distill"] + ["--steps", "3", "--stop-at", "1"]) == 130
    commands["finetune"] = commands["finetune"][:2] + [str(teacher)] + commands["finetune"][2:]
    assert main(commands["finetune"] + ["--epochs", "3", "--stop-at", "1"]) == 130
    return d, commands


JOBS = {
    "pretrain": lambda d: [
        "pretrain",
        "--family",
        "bert",
        "--preset",
        "tiny",
        "--corpus",
        str(d / "corpus.txt"),
        "--out",
        str(d / "pretrain"),
        "--vocab-size",
        "600",
        "--batch-size",
        "8",
        "--max-length",
        "32",
        "--heldout",
        "2",
        "--dupe-factor",
        "1",
        "--quiet",
    ],
    "xlnet": lambda d: [
        "pretrain",
        "--family",
        "xlnet",
        "--preset",
        "tiny",
        "--corpus",
        str(d / "corpus.txt"),
        "--out",
        str(d / "xlnet"),
        "--vocab-size",
        "600",
        "--batch-size",
        "4",
        "--max-length",
        "32",
        "--heldout",
        "2",
        "--quiet",
    ],
    "distill": lambda d: [
        "distill",
        "--teacher",
        "--corpus",
        str(d / "corpus.txt"),
        "--out",
        str(d / "distill"),
        "--batch-size",
        "8",
        "--max-length",
        "32",
        "--heldout",
        "2",
        "--quiet",
    ],
    "finetune": lambda d: [
        "finetune",
        "--model",
        "--task",
        "classify",
        "--train",
        str(d / "train.tsv"),
        "--out",
        str(d / "finetune"),
        "--batch-size",
        "8",
        "--max-length",
        "32",
        "--quiet",
    ],
}
LENGTH = {
    "pretrain": ["--steps", "3"],
    "xlnet": ["--steps", "3"],
    "distill": ["--steps", "3"],
    "finetune": ["--epochs", "3"],
}

# job, class of option, changed arguments, the phrase naming it
CASES = [
    ("pretrain", "data", ["--corpus", "{d}/other.txt"], "(the run was started with --corpus {d}/corpus.txt)"),
    ("pretrain", "data", ["--max-length", "24"], "--max-length 24 (the run was started with --max-length 32)"),
    ("pretrain", "model", ["--preset", "mini"], "--preset mini (the run was started with --preset tiny)"),
    ("pretrain", "model", ["--dropout", "0"], "--dropout 0.0 (the run was started with no --dropout)"),
    ("pretrain", "objective", ["--objective", "mlm"], "--objective mlm (the run was started with no --objective)"),
    (
        "pretrain",
        "masking",
        ["--mlm-probability", "0.3", "--whole-word"],
        "--mlm-probability 0.3 (the run was started with --mlm-probability 0.15); --whole-word (the run was started "
        "with no --whole-word)",
    ),
    ("pretrain", "batch", ["--batch-size", "16"], "--batch-size 16 (the run was started with --batch-size 8)"),
    ("pretrain", "optimisation", ["--lr", "1e-3"], "--lr 0.001 (the run was started with --lr 0.0005)"),
    ("pretrain", "precision", ["--bf16"], "--bf16 (the run was started with no --bf16)"),
    ("pretrain", "seed", ["--seed", "7"], "--seed 7 (the run was started with --seed 0)"),
    (
        "xlnet",
        "permutation LM",
        ["--mem-len", "8", "--bi-data"],
        "--mem-len 8 (the run was started with no --mem-len); --bi-data (the run was started with no --bi-data)",
    ),
    ("xlnet", "batch", ["--batch-size", "8"], "--batch-size 8 (the run was started with --batch-size 4)"),
    ("distill", "objective", ["--temperature", "4"], "--temperature 4.0 (the run was started with --temperature 2.0)"),
    (
        "distill",
        "masking",
        ["--masking", "smoothed"],
        "--masking smoothed (the run was started with --masking uniform)",
    ),
    ("distill", "data", ["--max-length", "24"], "--max-length 24 (the run was started with --max-length 32)"),
    ("finetune", "data", ["--max-length", "24"], "--max-length 24 (the run was started with --max-length 32)"),
    ("finetune", "optimisation", ["--lr", "1e-3"], "--lr 0.001 (the run was started with --lr 5e-05)"),
    ("finetune", "model", ["--pooling", "mean"], "--pooling mean (the run was started with --pooling cls)"),
]


@pytest.mark.integration
@pytest.mark.parametrize("job,kind,changed,phrase", CASES, ids=[f"{c[0]}-{c[1]}-{c[2][0]}" for c in CASES])
def test_a_resume_that_changes_the_run_is_refused_naming_each_option(runs, capsys, job, kind, changed, phrase):
    d, commands = runs
    out = Path(commands[job][commands[job].index("--out") + 1])
    before = snapshot(out)
    args = commands[job] + LENGTH[job] + [a.format(d=d) for a in changed]  # argparse keeps a repeated flag's last
    assert main(args + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "--resume would change the run" in err and all(p in err for p in phrase.format(d=d).split("; ")), err
    assert err.count("\n") == 1  # one message
    assert snapshot(out) == before  # nothing written


@pytest.mark.integration
@pytest.mark.parametrize("job", list(JOBS))
def test_length_and_reporting_may_change_on_resume(runs, job):
    d, commands = runs
    longer = ["--steps", "4"] if job != "finetune" else ["--epochs", "4"]
    assert main(commands[job] + longer + ["--log-every", "1", "--resume"]) == 0
    out = Path(commands[job][commands[job].index("--out") + 1])
    assert (out / "summary.json").is_file()
    steps = [r["step"] for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "loss" in r]
    assert steps == sorted(set(steps)) and steps[-2:] == [steps[-1] - 1, steps[-1]]  # now logged every step
    if job != "finetune":
        assert steps[-1] == 4  # extended past the first run's 3


def test_a_run_recorded_under_an_options_old_name_resumes_under_the_new_one(tmp_path):
    (tmp_path / "options.json").write_text(json.dumps({"corpus": ["a.txt"], "seq_len": 64}))
    check_resume_options(tmp_path, Job(corpus=["a.txt"], max_length=64), RUN_MAY_CHANGE)  # the same run
    with pytest.raises(ValueError, match=r"--max-length 32 \(the run was started with --max-length 64\)"):
        check_resume_options(tmp_path, Job(corpus=["a.txt"], max_length=32), RUN_MAY_CHANGE)
