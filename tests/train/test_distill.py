"""Distillation: the student's initial layers, the loss terms by hand, a student that learns its
teacher faster than MLM alone, exact resume, Hugging Face loading, and the mistakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from bertology.cli import main
from bertology.models import BertConfig, BertForPreTraining, BertModel, RobertaConfig, RobertaForMaskedLM, load
from bertology.options import OptionError
from bertology.train.distill import DistillOptions, distill
from bertology.train.distillation import Alphas, DistillationObjective, evaluate_student
from bertology.train.student import default_layers, init_student

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    path = tmp_path_factory.mktemp("distill") / "corpus.txt"
    path.write_text(text[: text.index("\n\n", 400_000) + 1], encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def teacher_dir(corpus):
    """A 4-layer BERT pretrained for a few steps: it has an MLM head and opinions of its own."""
    out = corpus.parent / "teacher"
    assert (
        main(
            [
                "pretrain",
                "--family",
                "bert",
                "--preset",
                "tiny",
                "--corpus",
                str(corpus),
                "--out",
                str(out),
                "--vocab-size",
                "1500",
                "--steps",
                "40",
                "--batch-size",
                "16",
                "--max-length",
                "32",
                "--lr",
                "3e-3",
                "--heldout",
                "2",
                "--dupe-factor",
                "1",
                "--quiet",
                "--seed",
                "1",
            ]
        )
        == 0
    )
    config = json.loads((out / "config.json").read_text())
    assert config["num_hidden_layers"] == 2
    return out


def same_parameters(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    pa, pb = dict(a.named_parameters()), dict(b.named_parameters())
    return pa.keys() == pb.keys() and all(torch.equal(pa[k], pb[k]) for k in pa)


def test_default_layers_are_distilberts_choice():
    assert default_layers(12, 6) == [0, 2, 4, 7, 9, 11]
    assert default_layers(24, 6) == [0, 5, 9, 14, 18, 23] and default_layers(2, 1) == [0]


def test_the_student_starts_as_a_copy_of_the_teachers_layers():
    torch.manual_seed(0)
    teacher = BertForPreTraining(BertConfig.preset("tiny", vocab_size=120, num_hidden_layers=12))
    student = init_student(teacher)  # DistilBERT, 6 layers
    assert student.architecture == "DistilBertForMaskedLM" and student.config.num_hidden_layers == 6
    for j, i in enumerate([0, 2, 4, 7, 9, 11]):
        assert same_parameters(student.backbone.encoder.layers[j], teacher.backbone.encoder.layers[i])
    for name in ("word", "position", "norm"):
        assert same_parameters(getattr(student.backbone.embeddings, name), getattr(teacher.backbone.embeddings, name))
    assert student.backbone.embeddings.token_type is None and student.backbone.pooler is None
    assert torch.equal(student.mlm.bias, teacher.mlm.bias) and same_parameters(student.mlm.dense, teacher.mlm.dense)
    assert student.mlm.decoder.weight is student.backbone.embeddings.word.weight  # tied, as DistilBERT's
    chosen = init_student(teacher, "bert", layers=[1, 5, 6])
    assert chosen.architecture == "BertForMaskedLM" and chosen.config.num_hidden_layers == 3
    assert same_parameters(chosen.backbone.encoder.layers[2], teacher.backbone.encoder.layers[6])
    assert same_parameters(chosen.backbone.embeddings.token_type, teacher.backbone.embeddings.token_type)


@pytest.mark.parametrize(
    "layers, student, message",
    [
        ([0, 12], "distilbert", "the teacher has layers 0..11"),
        ([3, 2], "distilbert", "must be increasing"),
        (None, "roberta", "a bert teacher gives a distilbert or bert student"),
    ],
)
def test_bad_student_requests_are_named(layers, student, message):
    teacher = BertModel(BertConfig.preset("tiny", vocab_size=50, num_hidden_layers=12))
    with pytest.raises(ValueError, match=message):
        init_student(teacher, student, layers)


def test_each_loss_term_equals_its_formula():
    torch.manual_seed(0)
    teacher = RobertaForMaskedLM(RobertaConfig.preset("tiny", vocab_size=40, pad_token_id=1)).eval()
    student = init_student(teacher, "roberta", [1]).eval()
    with torch.no_grad():  # make the student differ from the teacher
        for p in student.parameters():
            p.add_(0.05 * torch.randn_like(p))
    ids = torch.tensor([[0, 5, 6, 7, 8, 2], [0, 9, 10, 2, 1, 1]])
    attention = (ids != 1).long()
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[1, 1] = 6, 9
    batch = {"input_ids": ids, "attention_mask": attention, "labels": labels}
    T = 3.0
    objective = DistillationObjective(teacher, Alphas(ce=1, mlm=1, cos=1, mse=1), temperature=T)
    loss, metrics = objective(student, batch, objective.totals(batch))
    with torch.no_grad():
        h_t = teacher.backbone(ids, attention).last_hidden_state
        h_s = student.backbone(ids, attention).last_hidden_state
        masked, real = labels != -100, attention.bool()
        z_t, z_s = teacher.mlm(h_t)[0][masked], student.mlm(h_s)[0][masked]  # (2, V)
        p, q = (z_t / T).softmax(-1), (z_s / T).softmax(-1)
        ce = T**2 * (p * (p.log() - q.log())).sum() / 2  # "batchmean" over the 2 masked rows
        mlm = -(z_s.log_softmax(-1)[torch.arange(2), labels[masked]]).mean()
        cos = (1 - (h_s[real] * h_t[real]).sum(-1) / (h_s[real].norm(dim=-1) * h_t[real].norm(dim=-1))).mean()
        mse = ((z_s - z_t) ** 2).sum() / 2
    expected = {"ce_loss": ce, "mlm_loss": mlm, "cos_loss": cos, "mse_loss": mse}
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(float(value), rel=1e-4), name
    assert float(loss.detach()) == pytest.approx(float(sum(expected.values())), rel=1e-4)
    everywhere = DistillationObjective(teacher, Alphas(ce=1, mlm=0, cos=0), T, ce_over="all")
    assert everywhere.totals(batch)["rows"] == int(real.sum()) == 10


def test_a_teacher_without_an_mlm_head_teaches_through_its_hidden_states():
    teacher = BertModel(BertConfig.preset("tiny", vocab_size=50))
    with pytest.raises(ValueError, match="has no MLM head, .* set --alpha-ce 0"):
        DistillationObjective(teacher, Alphas(ce=5.0))
    objective = DistillationObjective(teacher, Alphas(ce=0.0))
    student = init_student(teacher)
    ids = torch.randint(5, 50, (2, 7))
    labels = torch.where(torch.rand(2, 7) < 0.3, ids, -100)
    labels[0, 0] = ids[0, 0]
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    _, metrics = objective(student, batch, objective.totals(batch))
    assert set(metrics) == {"mlm_loss", "cos_loss", "loss"}


def _options(teacher_dir, corpus, out, **kw):
    base = dict(
        teacher=str(teacher_dir),
        corpus=[str(corpus)],
        out_dir=str(out),
        steps=24,
        batch_size=16,
        max_length=32,
        warmup=2,
        heldout=2,
        log_every=1,
        quiet=True,
        teacher_precision="fp32",
        lr=1e-3,
    )
    return DistillOptions(**{**base, **kw})


@pytest.mark.integration
def test_the_teacher_is_learnt_faster_than_by_mlm_alone(teacher_dir, corpus, tmp_path):
    distilled = distill(_options(teacher_dir, corpus, tmp_path / "distilled", depth=1))
    alone = distill(_options(teacher_dir, corpus, tmp_path / "alone", depth=1, alpha_ce=0.0, alpha_cos=0.0))
    teacher = load(teacher_dir)
    from bertology.data import build_instances
    from bertology.tokenizers import Tokenizer

    store = build_instances(
        [str(corpus)],
        Tokenizer.load(teacher_dir / "tokenizer.json"),
        "distilbert",
        max_seq_length=32,
        objective="mlm",
        packing="full-sentences",
        masking="dynamic",
        seed=7,
    )
    batches = [store.batch(i, 16) for i in range(4)]
    kl = {
        name: evaluate_student(load(tmp_path / name), teacher, batches)["kl_to_teacher"]
        for name in ("distilled", "alone")
    }
    assert kl["distilled"] < 0.8 * kl["alone"], kl
    assert distilled["parameters"] < distilled["teacher_parameters"] and alone["alphas"]["ce"] == 0.0


@pytest.mark.integration
def test_smoothed_masking_and_exact_resume(teacher_dir, corpus, tmp_path):
    full = distill(_options(teacher_dir, corpus, tmp_path / "full", masking="smoothed", steps=8))
    assert distill(_options(teacher_dir, corpus, tmp_path / "split", masking="smoothed", steps=8, stop_at=3))[
        "interrupted"
    ]
    distill(_options(teacher_dir, corpus, tmp_path / "split", masking="smoothed", steps=8), resume=True)

    def losses(d):
        return [json.loads(line)["loss"] for line in (d / "metrics.jsonl").read_text().splitlines() if '"loss"' in line]

    assert losses(tmp_path / "split") == losses(tmp_path / "full") and len(losses(tmp_path / "full")) == 8
    assert full["final"]["mlm_loss"] > 0


def test_the_student_loads_in_transformers_with_the_same_logits(teacher_dir, corpus, tmp_path):
    transformers = pytest.importorskip("transformers")
    assert (
        main(
            [
                "distill",
                "--teacher",
                str(teacher_dir),
                "--corpus",
                str(corpus),
                "--out",
                str(tmp_path / "s"),
                "--steps",
                "3",
                "--batch-size",
                "8",
                "--max-length",
                "32",
                "--heldout",
                "2",
                "--quiet",
            ]
        )
        == 0
    )
    # the held-out documents are scored without --eval-every, as pretrain's are (once, at the last step)
    assert "eval/kl_to_teacher" in json.loads((tmp_path / "s" / "summary.json").read_text())["eval"]
    ours = load(tmp_path / "s")
    theirs = transformers.DistilBertForMaskedLM.from_pretrained(tmp_path / "s").eval()
    ids = torch.randint(5, 1000, (2, 12))
    with torch.no_grad():
        assert (ours(ids).logits - theirs(ids).logits).abs().max() < 1e-4


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--temperature", "0"], "--temperature 0.0: must be > 0"),
        (["--layers", "0,5"], "--layers 0,5: the teacher has layers 0..1"),
        (["--layers", "1,0"], "must be increasing"),
        (["--layers", "a,b"], "comma-separated layer numbers"),
        (["--student", "roberta"], "a bert teacher gives a distilbert or bert student"),
        (["--alpha-ce", "0", "--alpha-mlm", "0", "--alpha-cos", "0"], "nothing to learn from"),
    ],
)
def test_mistakes_are_named_before_anything_is_written(teacher_dir, corpus, tmp_path, capsys, extra, message):
    args = ["distill", "--teacher", str(teacher_dir), "--corpus", str(corpus), "--out", str(tmp_path / "o"), *extra]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_option_ranges_hold_in_the_api_too(teacher_dir, corpus, tmp_path):
    with pytest.raises(OptionError, match="--alpha-cos -1.0: must be ≥ 0"):
        _options(teacher_dir, corpus, tmp_path, alpha_cos=-1.0)
