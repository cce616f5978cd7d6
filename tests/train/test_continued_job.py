"""`bertology pretrain --init` as a user runs it: a tiny BERT (and a tiny ELECTRA pair) pretrained, then
continued on the task's own texts (TAPT, --text-column) with an extended vocabulary; the result resumes
exactly, loads in transformers and fine-tunes."""

import json
from pathlib import Path

import pytest
import torch
import transformers

import bertology
from bertology.cli import main

pytestmark = pytest.mark.integration  # whole jobs: `make test-integration`

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "data" / "debian-sections" / "train.tsv"
COMMON = [
    "--steps",
    "6",
    "--batch-size",
    "8",
    "--max-length",
    "32",
    "--warmup",
    "2",
    "--log-every",
    "1",
    "--quiet",
    "--dupe-factor",
    "1",
    "--heldout",
    "20",
    "--save-every",
    "3",
]


def _base(out, family, *extra):
    """A tiny model of `family` pretrained from scratch on the task's texts: what the jobs continue."""
    command = ["pretrain", "--family", family, "--preset", "tiny", "--corpus", str(TRAIN), "--text-column", "text"]
    assert main([*command, "--out", str(out), "--vocab-size", "600", *COMMON, *extra]) == 0
    return out


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return _base(tmp_path_factory.mktemp("base") / "bert", "bert")


def _tapt(base, out, *extra, family="bert"):
    return main(
        [
            "pretrain",
            "--family",
            family,
            "--init",
            str(base),
            "--corpus",
            str(TRAIN),
            "--text-column",
            "text",
            "--out",
            str(out),
            "--extend-vocab",
            "30",
            "--vocab-size",
            "1500",
            *COMMON,
            *extra,
        ]
    )


def _losses(out):
    return [
        json.loads(line)["loss"] for line in (Path(out) / "metrics.jsonl").read_text().splitlines() if '"loss"' in line
    ]


def test_tapt_with_extension_resumes_exactly_and_loads_everywhere(base, tmp_path, capsys):
    assert _tapt(base, tmp_path / "full") == 0
    err = capsys.readouterr().err
    assert "every weight of BertForPreTraining taken from the checkpoint" in err and "30 pieces added" in err
    summary = json.loads((tmp_path / "full" / "summary.json").read_text())
    ext = summary["init"]["extension"]
    assert ext["added"] == 30 and ext["tokens_per_word_after"] < ext["tokens_per_word_before"]

    assert _tapt(base, tmp_path / "split", "--stop-at", "3") == 130
    assert _tapt(base, tmp_path / "split", "--resume") == 0
    assert _losses(tmp_path / "split") == _losses(tmp_path / "full")
    capsys.readouterr()
    # a resume without the --init the run started from is refused
    assert (
        main(
            [
                "pretrain",
                "--family",
                "bert",
                "--corpus",
                str(TRAIN),
                "--text-column",
                "text",
                "--out",
                str(tmp_path / "split"),
                *COMMON,
                "--resume",
            ]
        )
        == 2
    )
    assert "continued --init" in capsys.readouterr().err

    ours = bertology.load(tmp_path / "full")
    theirs = transformers.AutoModelForPreTraining.from_pretrained(tmp_path / "full").eval()
    assert ours.config.vocab_size == theirs.config.vocab_size == 630
    x, keep = _batch(tmp_path / "full")
    with torch.no_grad():
        assert (ours(**x).prediction_logits - theirs(**x).prediction_logits)[keep].abs().max() < 1e-5
    _finetunes(tmp_path / "full", tmp_path / "ft")


def _batch(model_dir):
    """Two descriptions as the model's tokenizer encodes them, and which positions are real tokens."""
    tok = bertology.Tokenizer.load(model_dir)
    batch = tok.encode_batch(
        ["efficient word processor for GNOME", "python library"], padding=True, return_tensors="pt"
    )
    x = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    return x, x["attention_mask"].bool()


def _finetunes(model_dir, out):
    dev = ROOT / "data" / "debian-sections" / "dev.tsv"
    assert (
        main(
            [
                "finetune",
                "--model",
                str(model_dir),
                "--task",
                "classify",
                "--train",
                str(TRAIN),
                "--dev",
                str(dev),
                "--out",
                str(out),
                "--epochs",
                "0.05",
                "--max-length",
                "32",
                "--quiet",
            ]
        )
        == 0
    )
    assert (out / "config.json").is_file()


@pytest.fixture(scope="module")
def electra_base(tmp_path_factory):
    return _base(tmp_path_factory.mktemp("base") / "electra", "electra", "--generator-size", "0.5")


def test_electra_continues_its_pair_with_extension_resumes_exactly_and_loads_everywhere(electra_base, tmp_path, capsys):
    assert _tapt(electra_base, tmp_path / "full", family="electra") == 0
    err = capsys.readouterr().err
    assert "every weight of ElectraForPreTraining taken from the checkpoint" in err and "30 pieces added" in err
    assert f"the generator from {electra_base / 'generator'} (hidden size 64 of the discriminator's 128)" in err
    assert _tapt(electra_base, tmp_path / "split", "--stop-at", "3", family="electra") == 130
    assert _tapt(electra_base, tmp_path / "split", "--resume", family="electra") == 0
    assert _losses(tmp_path / "split") == _losses(tmp_path / "full")

    x, keep = _batch(tmp_path / "full")
    for sub, cls in (("", transformers.ElectraForPreTraining), ("generator", transformers.ElectraForMaskedLM)):
        ours, theirs = bertology.load(tmp_path / "full" / sub), cls.from_pretrained(tmp_path / "full" / sub).eval()
        assert ours.config.vocab_size == theirs.config.vocab_size == 630
        with torch.no_grad():
            assert (ours(**x).logits - theirs(**x).logits)[keep].abs().max() < 1e-5
    _finetunes(tmp_path / "full", tmp_path / "ft")


def test_electra_under_the_mlm_objective_says_it_leaves_the_generator(electra_base, tmp_path, capsys):
    out = tmp_path / "mlm"
    assert _tapt(electra_base, out, "--objective", "mlm", "--steps", "2", "--save-every", "2", family="electra") == 0
    err = capsys.readouterr().err
    assert f"{electra_base / 'generator'} is not used: --objective mlm" in err
    assert not (out / "generator").exists()


def test_electra_from_a_transformers_discriminator_gets_a_new_generator(electra_base, tmp_path, capsys):
    """google/electra-*-discriminator's layout: transformers' ElectraForPreTraining, no generator beside it."""
    theirs = transformers.ElectraForPreTraining.from_pretrained(electra_base)
    theirs.save_pretrained(tmp_path / "hf")
    bertology.Tokenizer.load(electra_base).save(tmp_path / "hf" / "tokenizer.json")

    def run(out, *extra):
        return main(
            [
                "pretrain",
                "--family",
                "electra",
                "--init",
                str(tmp_path / "hf"),
                "--corpus",
                str(TRAIN),
                "--text-column",
                "text",
                "--out",
                str(out),
                "--generator-size",
                "0.25",
                *COMMON,
                *extra,
            ]
        )

    assert run(tmp_path / "full") == 0
    err = capsys.readouterr().err
    assert "no generator" in err and "a new one of hidden size 32 (--generator-size 0.25 of 128)" in err
    assert transformers.ElectraForMaskedLM.from_pretrained(tmp_path / "full" / "generator").config.hidden_size == 32
    assert run(tmp_path / "split", "--stop-at", "3") == 130
    assert run(tmp_path / "split", "--resume") == 0
    assert _losses(tmp_path / "split") == _losses(tmp_path / "full")
