"""Files and directories the atomic writer makes end with the mode a plain open() / mkdir gives under the
process umask (mkstemp / mkdtemp alone give 0600 / 0700, unreadable to a teammate or a container user)."""

import os
import stat
from pathlib import Path

import pytest

from bertology.io import atomic_dir, atomic_path, atomic_write_json, claim_output_dir, current_umask, mode_under

ROOT = Path(__file__).resolve().parents[1]
UMASKS = [0o022, 0o077, 0o002]


@pytest.fixture(params=UMASKS, ids=[oct(u) for u in UMASKS])
def umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def plain_file_mode(tmp_path) -> int:
    """What open() itself gives here, the reference the writer must match."""
    probe = tmp_path / "probe-plain"
    probe.write_text("x")
    try:
        return mode(probe)
    finally:
        probe.unlink()


def test_mode_under_is_open_and_mkdir():
    assert mode_under(0o022) == 0o644 and mode_under(0o077) == 0o600
    assert mode_under(0o022, directory=True) == 0o755 and mode_under(0o077, directory=True) == 0o700


def test_the_umask_is_read_when_asked_and_left_as_it_was(umask):
    assert current_umask() == umask
    assert current_umask() == umask  # reading it did not change it


def test_atomic_files_get_the_plain_open_mode(tmp_path, umask):
    atomic_write_json(tmp_path / "summary.json", {"a": 1})
    with atomic_path(tmp_path / "weights.bin") as tmp:
        tmp.write_bytes(b"\0" * 8)
    with atomic_path(tmp_path / "recreated.bin") as tmp:  # a writer that unlinks and creates anew
        tmp.unlink()
        tmp.write_bytes(b"x")
    expected = plain_file_mode(tmp_path)
    assert expected == mode_under(umask)
    for name in ("summary.json", "weights.bin", "recreated.bin"):
        assert oct(mode(tmp_path / name)) == oct(expected), name


def test_atomic_dirs_get_the_plain_mkdir_mode(tmp_path, umask):
    with atomic_dir(tmp_path / "step-00000001") as tmp:
        (tmp / "inner.txt").write_text("x")
    (tmp_path / "plain").mkdir()
    assert (
        oct(mode(tmp_path / "step-00000001")) == oct(mode(tmp_path / "plain")) == oct(mode_under(umask, directory=True))
    )
    with atomic_dir(tmp_path / "step-00000001", exists="replace") as tmp:  # replaced: the new one's mode
        (tmp / "inner.txt").write_text("y")
    assert oct(mode(tmp_path / "step-00000001")) == oct(mode_under(umask, directory=True))


def test_a_saved_checkpoint_is_readable_as_open_would_leave_it(tmp_path, umask):
    """A model saved into a checkpoint directory, as the Trainer does: every file and directory."""
    from bertology.models import BertConfig, BertForMaskedLM

    model = BertForMaskedLM(
        BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    )
    out = claim_output_dir(tmp_path / "run", "pretrain")
    with atomic_dir(out / "checkpoints" / "step-00000002") as tmp:
        model.save(tmp)
    model.save(out)
    found = {p.relative_to(out).as_posix(): mode(p) for p in [out, *out.rglob("*")]}
    assert "checkpoints/step-00000002/model.safetensors" in found and "config.json" in found
    wrong = {name: oct(m) for name, m in found.items() if m != mode_under(umask, directory=(out / name).is_dir())}
    assert wrong == {}


def test_without_proc_the_umask_is_read_and_restored(monkeypatch, umask):
    import bertology.io

    def no_proc(*args, **kwargs):
        raise FileNotFoundError("/proc/self/status")

    monkeypatch.setattr(bertology.io, "open", no_proc, raising=False)  # as on macOS: no /proc
    assert current_umask() == umask
    assert os.umask(umask) == umask  # still in force after the read


@pytest.mark.integration
@pytest.mark.parametrize("mask", [0o022, 0o077], ids=["022", "077"])
def test_every_file_of_a_pretrain_and_finetune_run_has_the_umask_mode(tmp_path, mask):
    """The runs as a user makes them: the model, tokenizer, summary, checkpoints/, best/ and the rest."""
    from bertology.cli import main

    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    (tmp_path / "corpus.txt").write_text(text[: text.index("\n\n", 200_000) + 1], encoding="utf-8")
    rows = (ROOT / "data" / "debian-sections" / "train.tsv").read_text(encoding="utf-8").splitlines()
    (tmp_path / "train.tsv").write_text("\n".join([rows[0]] + rows[1::40]) + "\n", encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("\n".join([rows[0]] + rows[2::80]) + "\n", encoding="utf-8")
    old = os.umask(mask)
    try:
        assert main(["pretrain", "--family", "bert", "--preset", "tiny", "--corpus", str(tmp_path / "corpus.txt"),
                     "--out", str(tmp_path / "pretrained"), "--vocab-size", "600", "--batch-size", "8",
                     "--max-length", "32", "--steps", "2", "--heldout", "2", "--dupe-factor", "1", "--quiet"]) == 0  # fmt: skip
        assert main(["finetune", "--model", str(tmp_path / "pretrained"), "--task", "classify",
                     "--train", str(tmp_path / "train.tsv"), "--dev", str(tmp_path / "dev.tsv"),
                     "--out", str(tmp_path / "finetuned"), "--epochs", "1", "--batch-size", "8",
                     "--max-length", "32", "--quiet"]) == 0  # fmt: skip
    finally:
        os.umask(old)
    made = [p for run in ("pretrained", "finetuned") for p in [tmp_path / run, *(tmp_path / run).rglob("*")]]
    assert any(p.name == "checkpoints" for p in made) and any(p.name == "best" for p in made)
    wrong = {
        p.relative_to(tmp_path).as_posix(): oct(mode(p))
        for p in made
        if mode(p) != mode_under(mask, directory=p.is_dir())
    }
    assert wrong == {}
