"""kill -9 at random moments, checkpoint writing included: a resumed run ends exactly where an
uninterrupted one does, and a partial checkpoint is never taken for a complete one.

Every job that resumes: pretraining (MLM, and XLNet's permutation LM with its memory), distillation and
fine-tuning. `make test` runs a few trials per job; the slow suite runs 20 (DESIGN: exact resume, atomic writes).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from bertology.io import RUN_MARKER
from bertology.models import read_config, read_weights
from bertology.train.run import checkpoints

pytestmark = pytest.mark.integration  # whole jobs: `make test-integration`

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from bertology.cli import main; sys.exit(main(sys.argv[1:]))"


def cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish(*args: str) -> None:
    p = cli(*args)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 0, err.decode()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A 150 kB slice of data/wiki.txt, a WordPiece tokenizer for it, and a small labelled task."""
    d = tmp_path_factory.mktemp("fault")
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    (d / "corpus.txt").write_text(text[: text.index("\n\n", 150_000) + 1], encoding="utf-8")
    finish(
        "tokenizer",
        "train",
        "--family",
        "bert",
        "--vocab-size",
        "800",
        "--out",
        str(d / "tok"),
        "--quiet",
        str(d / "corpus.txt"),
    )
    finish(
        "tokenizer",
        "train",
        "--family",
        "xlnet",
        "--vocab-size",
        "800",
        "--out",
        str(d / "xlnet-tok"),
        "--quiet",
        str(d / "corpus.txt"),
    )
    rows = (ROOT / "data" / "debian-sections" / "train.tsv").read_text(encoding="utf-8").splitlines()
    (d / "train.tsv").write_text("\n".join([rows[0]] + rows[1::10]) + "\n", encoding="utf-8")  # every section
    (d / "dev.tsv").write_text("\n".join([rows[0]] + rows[5::40]) + "\n", encoding="utf-8")
    teacher = pretrain_args(d, d / "teacher")
    teacher[teacher.index("--steps") + 1] = "2"
    finish(*teacher)  # distillation's teacher: a tiny BERT with an MLM head
    return d


def pretrain_args(d: Path, out: Path) -> list[str]:
    return [
        "pretrain",
        "--family",
        "bert",
        "--preset",
        "tiny",
        "--corpus",
        str(d / "corpus.txt"),
        "--tokenizer",
        str(d / "tok"),
        "--out",
        str(out),
        "--steps",
        "14",
        "--batch-size",
        "8",
        "--max-length",
        "32",
        "--warmup",
        "2",
        "--log-every",
        "1",
        "--save-every",
        "1",
        "--keep-checkpoints",
        "2",
        "--heldout",
        "3",
        "--dupe-factor",
        "1",
        "--quiet",
    ]


def xlnet_args(d: Path, out: Path) -> list[str]:
    """XLNet's permutation LM: memory carried between steps and saved with each checkpoint (mems.safetensors)."""
    return [
        "pretrain",
        "--family",
        "xlnet",
        "--preset",
        "tiny",
        "--corpus",
        str(d / "corpus.txt"),
        "--tokenizer",
        str(d / "xlnet-tok"),
        "--out",
        str(out),
        "--steps",
        "14",
        "--batch-size",
        "4",
        "--max-length",
        "32",
        "--warmup",
        "2",
        "--log-every",
        "1",
        "--save-every",
        "1",
        "--keep-checkpoints",
        "2",
        "--heldout",
        "3",
        "--quiet",
    ]


def distill_args(d: Path, out: Path) -> list[str]:
    return [
        "distill",
        "--teacher",
        str(d / "teacher"),
        "--corpus",
        str(d / "corpus.txt"),
        "--out",
        str(out),
        "--steps",
        "14",
        "--batch-size",
        "8",
        "--max-length",
        "32",
        "--warmup",
        "2",
        "--log-every",
        "1",
        "--save-every",
        "1",
        "--keep-checkpoints",
        "2",
        "--heldout",
        "3",
        "--teacher-precision",
        "fp32",
        "--quiet",
    ]


def finetune_args(d: Path, out: Path) -> list[str]:
    return [
        "finetune",
        "--model",
        "bert-tiny",
        "--tokenizer",
        str(d / "tok"),
        "--task",
        "classify",
        "--train",
        str(d / "train.tsv"),
        "--dev",
        str(d / "dev.tsv"),
        "--out",
        str(out),
        "--epochs",
        "4",
        "--batch-size",
        "16",
        "--max-length",
        "32",
        "--lr",
        "1e-3",
        "--log-every",
        "1",
        "--keep-checkpoints",
        "2",
        "--quiet",
    ]


def losses(out: Path) -> list[float]:
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [line["loss"] for line in lines if "loss" in line]


def assert_checkpoints_complete(out: Path) -> None:
    """Every checkpoint the trainer would resume from reads back whole."""
    for ckpt in checkpoints(out):
        read_config(ckpt)
        read_weights(ckpt)
        state = torch.load(ckpt / "trainer_state.pt", map_location="cpu", weights_only=True)
        assert int(ckpt.name.split("-")[1]) == state["step"]
        assert (ckpt / "tokenizer.json").is_file()


def kill_and_resume(args_of, d: Path, tmp_path: Path, trials: int, seed: int) -> None:
    reference = tmp_path / "reference"
    started = time.perf_counter()
    finish(*args_of(d, reference))
    duration = time.perf_counter() - started
    rng = random.Random(seed)
    for trial in range(trials):
        out = tmp_path / f"trial-{trial}"
        p = cli(*args_of(d, out))
        time.sleep(rng.uniform(0.2, duration))
        p.send_signal(signal.SIGKILL)
        p.wait()
        if out.is_dir():
            assert_checkpoints_complete(out)
        finish(*args_of(d, out), *(["--resume"] if (out / RUN_MARKER).is_file() else []))
        assert losses(out) == losses(reference), f"trial {trial} (killed after {p.returncode})"
        assert not list((out / "checkpoints").glob(".*")), "a killed checkpoint write left its temporary directory"
        assert_checkpoints_complete(out)


def test_pretraining_survives_kill_9(inputs, tmp_path):
    kill_and_resume(pretrain_args, inputs, tmp_path, trials=3, seed=0)


def test_finetuning_survives_kill_9(inputs, tmp_path):
    kill_and_resume(finetune_args, inputs, tmp_path, trials=2, seed=1)
    final = json.loads((tmp_path / "trial-0" / "summary.json").read_text())
    reference = json.loads((tmp_path / "reference" / "summary.json").read_text())
    assert final["dev"] == reference["dev"] and final["best_step"] == reference["best_step"]


def test_xlnet_permutation_lm_survives_kill_9(inputs, tmp_path):
    kill_and_resume(xlnet_args, inputs, tmp_path, trials=2, seed=3)
    assert all((c / "mems.safetensors").is_file() for c in checkpoints(tmp_path / "trial-0"))


def test_distillation_survives_kill_9(inputs, tmp_path):
    kill_and_resume(distill_args, inputs, tmp_path, trials=2, seed=4)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args_of",
    [pretrain_args, finetune_args, xlnet_args, distill_args],
    ids=["pretrain", "finetune", "xlnet", "distill"],
)
def test_twenty_kills(inputs, tmp_path, args_of):
    kill_and_resume(args_of, inputs, tmp_path, trials=20, seed=2)


def test_a_full_disk_is_one_message_and_the_previous_checkpoint_stays(inputs, tmp_path, monkeypatch, capsys):
    """The third checkpoint's weights hit ENOSPC: the run stops with the error, checkpoint 2 is intact."""
    import errno

    import bertology.models.checkpoint as checkpoint
    from bertology.cli import main

    out = tmp_path / "run"
    args = pretrain_args(inputs, out)
    args[args.index("--keep-checkpoints") + 1] = "5"
    real_save, calls = checkpoint.save_file, []

    def save_file(tensors, path, metadata=None):
        calls.append(path)
        if len(calls) == 3:
            with open(path, "wb") as f:
                f.write(b"half a file")
            raise OSError(errno.ENOSPC, "No space left on device", path)
        real_save(tensors, path, metadata=metadata)

    monkeypatch.setattr(checkpoint, "save_file", save_file)
    assert main(args) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert [c.name for c in checkpoints(out)] == ["step-00000001", "step-00000002"]
    assert_checkpoints_complete(out)
    assert not list((out / "checkpoints").glob(".*"))
    monkeypatch.setattr(checkpoint, "save_file", real_save)
    assert main(args + ["--resume"]) == 0  # room again: the run continues from step 2
    assert len(losses(out)) == 14
