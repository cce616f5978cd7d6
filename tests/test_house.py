"""The pieces every job shares: the family records, options declared once, the atomic writer."""

from __future__ import annotations

import argparse
import dataclasses
import doctest
import importlib
import json
import os

import pytest

from bertology import io
from bertology.models import ARCHITECTURES, FAMILIES, PRETRAINABLE, get_family, resolve_preset
from bertology.options import OptionError, add_arguments, from_args
from bertology.tasks.finetune import FinetuneOptions
from bertology.tokenizers.training import KINDS
from bertology.train.pretrain import PretrainOptions


@pytest.mark.parametrize("module", ["bertology.options", "bertology.models.family", "bertology.models.hf_names"])
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


# ---- families ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_record_names_real_classes_tokens_and_layouts(name):
    f = get_family(name)
    transformers = pytest.importorskip("transformers")
    assert f.config.model_type == name and f.backbone in ARCHITECTURES
    for head in f.heads:  # every head is ours and transformers' under the same name
        assert f.class_name(head) in ARCHITECTURES and hasattr(transformers, f.class_name(head))
    kind = KINDS[f.tokenizer]
    for token in (f.specials.cls, f.specials.sep, f.specials.mask, f.specials.pad):
        assert token in kind.special_tokens, f"{name}: {token} is not among its tokenizer's special tokens"
    assert f.segments == (name in ("bert", "albert", "electra", "xlnet"))  # RoBERTa has one token type, DistilBERT none
    with pytest.raises(ValueError, match=f"{name} has no ForCausalLM head"):
        f.class_name("ForCausalLM")


def test_pretrainable_families_carry_their_papers_recipe():
    assert PRETRAINABLE == ("bert", "roberta", "albert", "xlnet", "electra")
    assert [(get_family(n).pretraining.objective, get_family(n).pretraining.ngram) for n in PRETRAINABLE] == [
        ("mlm+nsp", 1),
        ("mlm", 1),
        ("mlm+sop", 3),
        ("plm", 1),
        ("rtd", 1),
    ]
    assert get_family("distilbert").pretraining is None


def test_presets_resolve_or_name_the_choices():
    family, size = resolve_preset("albert-xxlarge")
    assert family.name == "albert" and family.preset(size).hidden_size == 4096
    with pytest.raises(ValueError, match="unknown bert preset 'enormous'; bert presets: tiny, mini"):
        resolve_preset("bert-enormous")
    with pytest.raises(ValueError, match="'gpt2-small' is not a preset .*families: bert, roberta"):
        resolve_preset("gpt2-small")


# ---- options ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls, required",
    [
        (PretrainOptions, ["--family", "bert", "--corpus", "a.txt", "--out", "o"]),
        (FinetuneOptions, ["--model", "m", "--task", "classify", "--train", "t.tsv", "--out", "o"]),
    ],
)
def test_the_parser_defaults_are_the_dataclass_defaults(cls, required):
    parser = argparse.ArgumentParser()
    add_arguments(parser, cls)
    parsed = from_args(cls, parser.parse_args(required))
    first = {f.name: getattr(parsed, f.name) for f in dataclasses.fields(cls)}
    api = cls(**{k: first[k] for k in ("family", "corpus", "out_dir", "model", "task", "train") if k in first})
    assert dataclasses.asdict(parsed) == dataclasses.asdict(api)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"batch_size": 0}, r"--batch-size 0: must be ≥ 1"),
        ({"steps": -3}, r"--steps -3: must be ≥ 1"),
        ({"mlm_probability": 1.5}, r"--mlm-probability 1.5: must be in \(0, 1\]"),
        ({"dropout": 1.0}, r"--dropout 1.0: must be in \[0, 1\)"),
        ({"heldout": 2.5}, r"--heldout 2.5: must be a fraction"),
        ({"heldout": -4}, r"--heldout -4: must be a fraction"),
        ({"lr": float("nan")}, r"--lr nan: not a finite number"),
        ({"batch_size": 2.0}, r"--batch-size 2.0: not an integer"),
        ({"schedule": "cosine"}, r"--schedule 'cosine': choose one of linear, triangle"),
        ({"family": "distilbert"}, r"--family 'distilbert': choose one of bert, roberta, albert"),
    ],
)
def test_bad_option_values_are_named(change, message):
    good = dict(family="bert", corpus=["a.txt"], out_dir="o")
    with pytest.raises(OptionError, match=message):
        PretrainOptions(**{**good, **change})


def test_finetune_options_are_checked_too():
    with pytest.raises(OptionError, match=r"--epochs 0: must be > 0"):
        FinetuneOptions(model="m", task="classify", train="t", out_dir="o", epochs=0)
    with pytest.raises(OptionError, match=r"--task 'summarize': choose one of classify"):
        FinetuneOptions(model="m", task="summarize", train="t", out_dir="o")


# ---- the atomic writer ----------------------------------------------------------------------------


def test_atomic_dir_appears_whole_or_not_at_all(tmp_path):
    final = tmp_path / "step-1"
    with pytest.raises(RuntimeError):
        with io.atomic_dir(final) as tmp:
            (tmp / "model.safetensors").write_text("half")
            raise RuntimeError("killed")
    assert not final.exists() and os.listdir(tmp_path) == []
    with io.atomic_dir(final) as tmp:
        (tmp / "a").write_text("1")
    assert (final / "a").read_text() == "1"
    with pytest.raises(FileExistsError):
        with io.atomic_dir(final) as tmp:
            (tmp / "a").write_text("2")
    with io.atomic_dir(final, exists="keep") as tmp:
        (tmp / "a").write_text("3")
    assert (final / "a").read_text() == "1"
    with io.atomic_dir(final, exists="replace") as tmp:
        (tmp / "b").write_text("4")
    assert sorted(os.listdir(final)) == ["b"] and os.listdir(tmp_path) == ["step-1"]


def test_atomic_path_leaves_the_old_file_when_the_write_fails(tmp_path):
    target = tmp_path / "tokenizer.json"
    target.write_text("old")
    with pytest.raises(OSError):
        with io.atomic_path(target) as tmp:
            tmp.write_text("new, half written")
            raise OSError(28, "No space left on device")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["tokenizer.json"]


def test_claim_output_dir_protects_the_users_files(tmp_path):
    users = tmp_path / "mine"
    users.mkdir()
    (users / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not empty and not written by bertology"):
        io.claim_output_dir(users, "pretrain")
    io.claim_output_dir(users, "pretrain", overwrite=True)  # written into; nothing deleted
    assert (users / "notes.txt").read_text() == "keep me"

    ours = io.claim_output_dir(tmp_path / "run", "pretrain")
    (ours / "metrics.jsonl").write_text("{}\n")
    assert json.loads((ours / io.RUN_MARKER).read_text()) == {"command": "pretrain"}
    with pytest.raises(FileExistsError, match="holds an earlier pretrain run; continue it with --resume"):
        io.claim_output_dir(ours, "pretrain")
    assert io.claim_output_dir(ours, "pretrain", resume=True) == ours
    with pytest.raises(FileNotFoundError, match="nothing to resume"):
        io.claim_output_dir(tmp_path / "new", "pretrain", resume=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        io.claim_output_dir(tmp_path / "file" / "out", "finetune")
