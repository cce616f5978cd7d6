"""The device of a training job: --device cpu is the default where there is no GPU, a GPU asked for
and absent fails before anything is written, building batches ahead changes nothing; on a GPU
(`gpu` marker), mixed precision trains like fp32, resume is exact and two GPUs equal one."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import bertology
from bertology.cli import main
from bertology.train import PretrainingObjective, Trainer, TrainingArguments

from helpers import synthetic_batches, tiny_model

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
no_gpu_here = pytest.mark.skipif(torch.cuda.is_available(), reason="here --device auto takes the GPU")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A 150 kB slice of data/wiki.txt and a WordPiece tokenizer for it."""
    d = tmp_path_factory.mktemp("device")
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    (d / "corpus.txt").write_text(text[: text.index("\n\n", 150_000) + 1], encoding="utf-8")
    assert (
        main(
            [
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
            ]
        )
        == 0
    )
    return d


def _pretrain_args(d: Path, out: Path, *extra: str) -> list[str]:
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
        "4",
        "--batch-size",
        "8",
        "--max-length",
        "32",
        "--warmup",
        "1",
        "--log-every",
        "1",
        "--heldout",
        "3",
        "--dupe-factor",
        "1",
        "--quiet",
        *extra,
    ]


def _losses(out: Path) -> list[float]:
    return [r["loss"] for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "loss" in r]


@no_gpu_here
def test_device_cpu_is_the_default_where_there_is_no_gpu(corpus, tmp_path):
    assert main(_pretrain_args(corpus, tmp_path / "default")) == 0
    assert main(_pretrain_args(corpus, tmp_path / "cpu", "--device", "cpu")) == 0
    assert _losses(tmp_path / "default") == _losses(tmp_path / "cpu")
    a, b = bertology.load(tmp_path / "default"), bertology.load(tmp_path / "cpu")
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q), name


@no_gpu_here
@pytest.mark.parametrize("command", ["pretrain", "finetune", "distill"])
def test_a_gpu_asked_for_and_absent_fails_before_anything_is_written(corpus, tmp_path, command, capsys):
    out = tmp_path / "out"
    args = {
        "pretrain": _pretrain_args(corpus, out),
        "finetune": [
            "finetune",
            "--model",
            "bert-tiny",
            "--tokenizer",
            str(corpus / "tok"),
            "--task",
            "classify",
            "--train",
            str(ROOT / "data" / "debian-sections" / "train.tsv"),
            "--out",
            str(out),
            "--quiet",
        ],
        "distill": [
            "distill",
            "--teacher",
            str(tmp_path / "no-teacher"),
            "--corpus",
            str(corpus / "corpus.txt"),
            "--out",
            str(out),
            "--quiet",
        ],
    }[command]
    assert main(args + ["--device", "cuda"]) == 2
    assert "--device cuda: no CUDA GPU is available" in capsys.readouterr().err
    assert not out.exists()


def _run(tmp_path, device, steps=6, **kw):
    args = TrainingArguments(
        out_dir=str(tmp_path),
        steps=steps,
        batch_size=8,
        lr=1e-3,
        warmup_steps=2,
        log_every=1,
        quiet=True,
        device=device,
        **kw,
    )
    trainer = Trainer(tiny_model(), args, synthetic_batches(), PretrainingObjective())
    trainer.train()
    return trainer


@pytest.mark.parametrize("accumulation", [1, 2])
def test_building_batches_ahead_gives_the_same_run_bit_for_bit(tmp_path, device, accumulation):
    plain = _run(tmp_path / "plain", device, accumulation=accumulation, prefetch=False)
    ahead = _run(tmp_path / "ahead", device, accumulation=accumulation, prefetch=True)
    keys = ("step", "loss", "mlm_loss", "mlm_accuracy", "pair_loss", "grad_norm", "lr")
    assert [{k: r[k] for k in keys} for r in plain.history] == [{k: r[k] for k in keys} for r in ahead.history]
    for (name, p), q in zip(plain.model.named_parameters(), ahead.model.parameters()):
        assert torch.equal(p, q), name


def test_a_run_says_the_share_of_time_outside_forward_and_backward(tmp_path, device):
    record = _run(tmp_path, device, steps=2).history[-1]
    assert 0.0 <= record["outside_forward_backward"] < 1.0 and record["tokens_per_s"] > 0


def test_a_precision_the_device_cannot_give_is_refused():
    with pytest.raises(ValueError, match="fp16 autocast with a gradient scaler is for CUDA"):
        Trainer(
            tiny_model(),
            TrainingArguments(out_dir="x", steps=1, device="cpu", precision="fp16"),
            synthetic_batches(),
            PretrainingObjective(),
        )
    with pytest.raises(ValueError, match="precision 'fp8'"):
        TrainingArguments(out_dir="x", steps=1, precision="fp8")


# ---- on a GPU ---------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("precision, tolerance", [("bf16", 0.05), ("fp16", 0.25)])
def test_mixed_precision_trains_like_fp32(tmp_path, precision, tolerance):
    """Losses of a tiny model without dropout: the half precision's curve stays near fp32's (fp16 may
    skip a first step whose scaled gradients overflow, hence its wider tolerance)."""
    runs = {}
    for p in ("fp32", precision):
        model = tiny_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        args = TrainingArguments(
            out_dir=str(tmp_path / p),
            steps=20,
            batch_size=8,
            lr=1e-3,
            warmup_steps=2,
            log_every=1,
            quiet=True,
            device="cuda",
            precision=p,
        )
        trainer = Trainer(model, args, synthetic_batches(fixed=True), PretrainingObjective())
        trainer.train()
        runs[p] = [r["loss"] for r in trainer.history if "loss" in r]
    assert runs[precision][-1] < runs[precision][0] - 0.5, runs[precision]
    assert max(abs(a - b) for a, b in zip(runs["fp32"], runs[precision])) < tolerance, runs


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_resume_on_the_gpu_is_bit_exact_with_deterministic_algorithms(tmp_path, precision):
    result = subprocess.run(
        [sys.executable, str(HERE / "resume_worker.py"), str(tmp_path), "cuda", precision],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    losses = json.loads(result.stdout.splitlines()[-1])
    assert losses["resumed"] == losses["full"]


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_two_gpus_equal_one(tmp_path):
    """Summation order (over ranks, in NCCL's reduction) and TF32 matrix products differ, so the
    runs agree within 1e-3, not bit for bit."""
    from ddp_worker import main as run_single

    steps = 4
    run_single(str(tmp_path / "single"), steps, "cuda")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",  # the sources under test, then the worker's helpers
        "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(HERE)])),
    }
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(HERE / "ddp_worker.py"),
        str(tmp_path / "ddp"),
        str(steps),
        "cuda",
    ]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    single, ddp = (json.loads((tmp_path / d / "losses.json").read_text()) for d in ("single", "ddp"))
    assert len(single) == len(ddp) == steps
    assert max(abs(a - b) for a, b in zip(single, ddp)) < 1e-3, (single, ddp)
    a = bertology.load(tmp_path / "single" / "checkpoints" / f"step-{steps:08d}")
    b = bertology.load(tmp_path / "ddp" / "checkpoints" / f"step-{steps:08d}")
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert (p - q).abs().max() < 1e-3, name
