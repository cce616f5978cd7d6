"""pretrain --objective simcse / tsdae: the losses on known cases, the deletion noise, whole runs from a
preset and from --init that save a loadable encoder, exact resume, and the options each refuses."""

import json
import lzma
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import load_file

import bertology
from bertology.cli import main
from bertology.data.masking import seeded_generator
from bertology.data.recipe import Recipe
from bertology.models import BertConfig, BertModel
from bertology.train.registry import objective_for
from bertology.train.sentences import mean_cosine, trim
from bertology.train.simcse import SimCSEObjective, simcse_loss
from bertology.train.tsdae import DenoisingAutoEncoder, TSDAEObjective, delete_tokens

from helpers import TINY

DATA = Path(__file__).resolve().parents[2] / "data" / "debian-sections"
DESCRIPTIONS = DATA.parent / "debian-descriptions" / "descriptions.txt.xz"


# ---- SimCSE's loss --------------------------------------------------------------------------------


def test_simcse_loss_is_the_cross_entropy_of_scaled_cosines_computed_by_hand():
    a = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 2.0]])
    b = torch.tensor([[2.0, 0.0], [0.0, 1.0], [-1.0, 1.0]])
    tau = 0.5

    def cos(u, v):
        return sum(x * y for x, y in zip(u, v)) / math.sqrt(sum(x * x for x in u) * sum(y * y for y in v))

    expected = []
    for i, u in enumerate(a.tolist()):
        scores = [cos(u, v) / tau for v in b.tolist()]
        expected.append(-scores[i] + math.log(sum(math.exp(s) for s in scores)))
    assert simcse_loss(a, b, tau).tolist() == pytest.approx(expected, rel=1e-6)
    # row 0: cosines 1, 0, −1/√2 over τ = 0.5 → −2 + log(e² + 1 + e^−√2)
    assert float(simcse_loss(a, b, tau)[0]) == pytest.approx(-2 + math.log(math.e**2 + 1 + math.exp(-math.sqrt(2))))


@pytest.mark.parametrize("batch", [2, 5, 16])
def test_identical_embeddings_give_log_b(batch):
    same = torch.randn(1, 8).expand(batch, 8)
    assert simcse_loss(same, same, 0.05).tolist() == pytest.approx([math.log(batch)] * batch, rel=1e-5)


def test_the_objective_reads_two_dropout_views_and_divides_by_the_global_batch():
    torch.manual_seed(0)
    encoder = BertModel(BertConfig(**TINY, hidden_dropout_prob=0.1))
    ids = torch.randint(5, 99, (4, 7))
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
    objective = SimCSEObjective(0.05)
    encoder.train()
    torch.manual_seed(1)
    loss, metrics = objective(encoder, batch, {"sequences": 8})  # half of a global batch of 8
    torch.manual_seed(1)  # the same dropout masks: the two views as the objective drew them
    both = {k: torch.cat([v, v]) for k, v in batch.items()}
    z = encoder(**both).last_hidden_state.mean(1)  # every token real: the mean pooling
    expected = simcse_loss(z[:4], z[4:], 0.05).sum() / 8
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert float(metrics["loss"]) == pytest.approx(expected.item(), rel=1e-5)
    assert not torch.allclose(z[:4], z[4:])  # dropout made two views
    encoder.eval()  # no dropout: the two views are one vector, each text its own nearest
    assert float(objective(encoder, batch, {"sequences": 4})[1]["simcse_accuracy"]) == 1.0


def test_simcse_without_dropout_is_refused():
    from types import SimpleNamespace

    with pytest.raises(ValueError, match="--dropout 0: SimCSE's two views"):
        SimCSEObjective().check(SimpleNamespace(dropout=0.0), BertConfig(**TINY))
    with pytest.raises(ValueError, match="hidden_dropout_prob 0"):
        SimCSEObjective().check(SimpleNamespace(dropout=None), BertConfig(**TINY, hidden_dropout_prob=0.0))


def test_mean_cosine_and_trim():
    assert mean_cosine(torch.ones(3, 4)) == pytest.approx(1.0)
    assert mean_cosine(torch.tensor([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(-1.0)
    rows = {"input_ids": torch.tensor([[2, 7, 3, 0, 0]]), "attention_mask": torch.tensor([[1, 1, 1, 0, 0]])}
    assert trim(rows)["input_ids"].tolist() == [[2, 7, 3]]


# ---- TSDAE's noise and loss --------------------------------------------------------------------------


def _rows(lengths, T=20, cls=2, sep=3):
    g = torch.Generator().manual_seed(5)
    ids = torch.zeros(len(lengths), T, dtype=torch.long)
    for r, n in enumerate(lengths):
        ids[r, :n] = torch.cat([torch.tensor([cls]), torch.randint(10, 99, (n - 2,), generator=g), torch.tensor([sep])])
    return ids, (ids != 0).long()


def test_deletion_is_exact_per_text_ordered_and_keeps_the_special_tokens():
    lengths = [20, 12, 7, 3, 2]  # 18, 10, 5, 1, 0 tokens between [CLS] and [SEP]
    ids, mask = _rows(lengths)
    out, out_mask = delete_tokens(ids, mask, 0.6, seeded_generator(0, 7, 0), pad_id=0)
    inner = [n - 2 for n in lengths]
    deleted = [min(max(0, n - 1), math.floor(0.6 * n + 0.5)) for n in inner]  # 11, 6, 3, 0 (one kept), 0
    assert deleted == [11, 6, 3, 0, 0]
    assert out_mask.sum(1).tolist() == [n - d for n, d in zip(lengths, deleted)]
    assert out.shape[1] == int(out_mask.sum(1).max())  # cut to the longest damaged text
    for r, n in enumerate(lengths):
        kept = out[r, : int(out_mask[r].sum())].tolist()
        original = ids[r, :n].tolist()
        assert kept[0] == 2 and kept[-1] == 3
        it = iter(original)
        assert all(t in it for t in kept)  # a subsequence: the survivors in their order
        assert (out[r, int(out_mask[r].sum()) :] == 0).all()  # padded after


def test_deletion_is_a_function_of_the_seed():
    ids, mask = _rows([20] * 6)
    a = delete_tokens(ids, mask, 0.6, seeded_generator(3, 7, 4), 0)
    b = delete_tokens(ids, mask, 0.6, seeded_generator(3, 7, 4), 0)
    c = delete_tokens(ids, mask, 0.6, seeded_generator(3, 7, 5), 0)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    objective = TSDAEObjective(0.6)
    first = objective.prepare({"input_ids": ids, "attention_mask": mask}, 3, 4)
    again = objective.prepare({"input_ids": ids, "attention_mask": mask}, 3, 4)
    assert torch.equal(first["noisy_input_ids"], again["noisy_input_ids"])
    assert torch.equal(first["noisy_input_ids"], a[0])  # drawn from (seed, 7, step)
    assert torch.equal(first["input_ids"], ids)  # the original text is the target


def test_deletion_share_over_many_texts_is_the_ratio():
    ids, mask = _rows([20] * 50)
    _, out_mask = delete_tokens(ids, mask, 0.6, seeded_generator(1, 7, 0), 0)
    assert (out_mask.sum(1) - 2).tolist() == [18 - 11] * 50  # round(0.6 · 18) = 11 deleted of each


def test_tsdae_loss_is_the_decoder_cross_entropy_over_the_original_tokens():
    torch.manual_seed(0)
    model = DenoisingAutoEncoder(BertModel(BertConfig(**TINY))).eval()
    assert model.decoder.position.weight.shape == (32, 32)
    # the decoder's vocabulary is the encoder's word embedding matrix, not a copy
    assert not any(p is model.encoder.embeddings.word.weight for p in model.decoder.parameters())
    ids, mask = _rows([9, 6], T=9)
    objective = TSDAEObjective(0.6)
    objective.model(model.encoder)
    batch = objective.prepare({"input_ids": ids, "attention_mask": mask}, 0, 0)
    totals = objective.totals(batch)
    assert totals == {"predicted": 8 + 5}  # every real token after [CLS]
    loss, metrics = objective(model, batch, totals)
    logits = model(batch)  # (B, T−1, V)
    real = mask[:, 1:].bool()
    expected = F.cross_entropy(logits[real], ids[:, 1:][real])
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    loss.backward()
    assert model.encoder.embeddings.word.weight.grad.abs().sum() > 0  # tied: the decoder trains them too
    # the decoder learns of the text through the damaged text's vector alone: swap those, other logits
    swapped = {**batch, **{k: batch[k].flip(0) for k in batch if k.startswith("noisy_")}}
    assert not torch.allclose(model(swapped), logits)


def test_the_registry_builds_each_objective_from_the_options():
    from types import SimpleNamespace

    o = SimpleNamespace(temperature=0.1, deletion_ratio=0.5, discriminator_weight=None, sampling_temperature=None)
    assert objective_for("simcse", o).temperature == 0.1
    assert objective_for("tsdae", o).ratio == 0.5
    assert objective_for("rtd", o).weight == 50.0
    with pytest.raises(ValueError, match="unknown objective 'nope'"):
        objective_for("nope", o)
    recipe = Recipe.resolve("roberta", max_seq_length=32, objective="tsdae")
    assert (recipe.packing, recipe.head, recipe.dupe_factor) == ("doc-sentences", "ForMaskedLM", 1)


# ---- whole runs ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The first 400 package descriptions of the Debian corpus: short texts, a document each."""
    with lzma.open(DESCRIPTIONS, "rt", encoding="utf-8") as f:
        text = f.read(300_000)
    path = tmp_path_factory.mktemp("corpus") / "descriptions-head.txt"
    path.write_text("\n\n".join(text.split("\n\n")[:400]) + "\n", encoding="utf-8")
    return path


def _run(corpus, out, objective, *extra):
    args = ["pretrain", "--family", "bert", "--corpus", str(corpus), "--out", str(out), "--objective", objective]
    args += ["--steps", "4", "--batch-size", "8", "--max-length", "32", "--warmup", "1", "--log-every", "1"]
    args += ["--eval-every", "2", "--eval-batches", "2", "--heldout", "3", "--quiet", *extra]
    if "--init" not in extra:
        args += ["--preset", "tiny", "--vocab-size", "800"]
    return main(args)


def _losses(out):
    return [
        json.loads(line)["loss"] for line in (Path(out) / "metrics.jsonl").read_text().splitlines() if '"loss"' in line
    ]


@pytest.mark.integration
def test_simcse_from_a_preset_saves_an_encoder_that_loads_and_probes(corpus, tmp_path):
    assert _run(corpus, tmp_path / "simcse", "simcse") == 0
    summary = json.loads((tmp_path / "simcse" / "summary.json").read_text())
    assert summary["objective"] == "simcse" and summary["architecture"] == "BertModel" and summary["steps"] == 4
    assert set(summary["eval"]) >= {"eval/simcse_loss", "eval/simcse_accuracy", "eval/mean_cosine"}
    assert all(math.isfinite(v) for v in _losses(tmp_path / "simcse"))
    model = bertology.load(tmp_path / "simcse")  # strict: a whole BertModel, its pooler included
    assert isinstance(model, BertModel)
    assert json.loads((tmp_path / "simcse" / "config.json").read_text())["architectures"] == ["BertModel"]
    theirs = transformers.AutoModel.from_pretrained(tmp_path / "simcse").eval()  # Hugging Face layout
    ids = torch.tensor([[2, 40, 41, 42, 3], [2, 50, 3, 0, 0]])
    mask = (ids != 0).long()
    with torch.no_grad():
        ours_h, theirs_h = model(input_ids=ids, attention_mask=mask), theirs(input_ids=ids, attention_mask=mask)
    real = mask.bool()
    assert (ours_h.last_hidden_state[real] - theirs_h.last_hidden_state[real]).abs().max() < 1e-4
    args = ["finetune", "--model", str(tmp_path / "simcse"), "--task", "classify", "--train", str(DATA / "train.tsv")]
    args += ["--dev", str(DATA / "dev.tsv"), "--out", str(tmp_path / "probe"), "--method", "probe"]
    args += ["--pooling", "mean", "--labels-per-class", "3", "--max-length", "24", "--quiet"]
    assert main(args) == 0
    assert json.loads((tmp_path / "probe" / "summary.json").read_text())["method"] == "probe"


@pytest.mark.integration
def test_tsdae_continues_an_init_checkpoint_and_saves_its_encoder_alone(corpus, tmp_path, capsys):
    assert _run(corpus, tmp_path / "mlm", "mlm") == 0  # an MLM run: BertForMaskedLM
    assert _run(corpus, tmp_path / "tsdae", "tsdae", "--init", str(tmp_path / "mlm")) == 0
    assert "its encoder continues under --objective tsdae" in capsys.readouterr().err
    summary = json.loads((tmp_path / "tsdae" / "summary.json").read_text())
    assert summary["init"]["path"] == str(tmp_path / "mlm")
    assert set(summary["eval"]) >= {"eval/reconstruction_loss", "eval/reconstruction_accuracy"}
    saved = load_file(str(tmp_path / "tsdae" / "model.safetensors"))
    assert not any(k.startswith(("cls.", "decoder")) for k in saved)  # the encoder alone
    assert not (tmp_path / "tsdae" / "decoder.safetensors").exists()
    assert (sorted((tmp_path / "tsdae" / "checkpoints").iterdir())[-1] / "decoder.safetensors").is_file()
    start, tuned = bertology.load(tmp_path / "mlm"), bertology.load(tmp_path / "tsdae")
    word = "bert.embeddings.word_embeddings.weight"
    assert not torch.equal(
        tuned.state_dict()["embeddings.word.weight"], start.state_dict()["backbone.embeddings.word.weight"]
    )
    assert word not in saved and "embeddings.word_embeddings.weight" in saved


@pytest.mark.integration
@pytest.mark.parametrize("objective", ["simcse", "tsdae"])
def test_resume_continues_exactly(corpus, tmp_path, objective):
    """Dropout's stream (SimCSE's views) and the deletions (TSDAE) are the same after a stop and --resume."""
    assert _run(corpus, tmp_path / "full", objective) == 0
    assert _run(corpus, tmp_path / "split", objective, "--stop-at", "2") == 130
    assert _run(corpus, tmp_path / "split", objective, "--resume") == 0
    assert _losses(tmp_path / "split") == _losses(tmp_path / "full")
    full, split = (load_file(str(tmp_path / d / "model.safetensors")) for d in ("full", "split"))
    assert full.keys() == split.keys() and all(torch.equal(full[k], split[k]) for k in full)


@pytest.mark.integration
def test_options_that_cannot_apply_are_refused_before_any_write(corpus, tmp_path, capsys):
    assert _run(corpus, tmp_path / "a", "simcse", "--dropout", "0") == 2
    assert "SimCSE's two views" in capsys.readouterr().err
    assert _run(corpus, tmp_path / "b", "mlm", "--temperature", "0.1") == 2
    assert "--temperature is a simcse option" in capsys.readouterr().err
    assert _run(corpus, tmp_path / "c", "simcse", "--deletion-ratio", "0.5") == 2
    assert "--deletion-ratio is a tsdae option" in capsys.readouterr().err
    assert _run(corpus, tmp_path / "d", "tsdae", "--whole-word") == 2
    assert "--objective tsdae reads texts unmasked" in capsys.readouterr().err
    assert not any((tmp_path / d).exists() for d in "abcd")
