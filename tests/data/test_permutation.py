"""XLNet's permutation-LM data (data/permutation.py) and its pretraining job (train/plm.py, train/pretrain_data.py)."""

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

import bertology
from bertology.cli import main
from bertology.data.instances import Segment, SpecialTokens
from bertology.data.permutation import (
    PermutationData,
    PermutationSettings,
    Stream,
    batchify,
    block_order,
    build_stream,
    permutation_mask,
    sample_spans,
)
from bertology.models import XLNetConfig, XLNetLMHeadModel
from bertology.train.plm import PermutationLMObjective

ROOT = Path(__file__).resolve().parents[2]
SPECIALS = SpecialTokens(cls=4, sep=3, mask=5, pad=0, all_ids=(0, 2, 3, 4, 5), eod=2)
SETTINGS = PermutationSettings(seq_len=32, reuse_len=16, num_predict=6, perm_size=8)


def synthetic_stream(n_docs=40, seed=0):
    """Documents of sentences of 'words' (a word = 1-3 pieces), ids 10..99."""
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n_docs):
        sentences = []
        for _ in range(rng.integers(2, 6)):
            ids, starts = [], []
            for _ in range(rng.integers(3, 12)):
                pieces = int(rng.integers(1, 4))
                ids += rng.integers(10, 99, pieces).tolist()
                starts += [True] + [False] * (pieces - 1)
            sentences.append(Segment(ids, starts))
        docs.append(sentences)
    return build_stream(docs, SPECIALS.eod)


@pytest.fixture(scope="module")
def data():
    return PermutationData(synthetic_stream(), SETTINGS, SPECIALS, batch_size=4, seed=0)


def test_examples_have_the_originals_layout(data):
    b = data.batch(0)
    R, T = SETTINGS.reuse_len, SETTINGS.seq_len
    assert b["input_ids"].shape == (4, T) and b["perm_mask"].shape == (4, T, T)
    assert b["target_mapping"].shape == (4, SETTINGS.num_predict, T) and b["labels"].shape == (4, SETTINGS.num_predict)
    for r in range(4):
        ids, types = b["input_ids"][r].tolist(), b["token_type_ids"][r].tolist()
        assert ids[-1] == SPECIALS.cls and types[-1] == 2
        seps = [i for i, t in enumerate(ids) if t == SPECIALS.sep]
        assert seps[-1] == T - 2 and len(seps) >= 2
        a_end = max(i for i in seps if i < T - 2)  # A ends at its <sep>
        assert set(types[: a_end + 1]) == {0} and set(types[a_end + 1 : T - 1]) == {1}
        assert a_end > R  # A starts after the reuse part
    assert set(b["is_continuation"].tolist()) <= {0, 1}


def test_exactly_num_predict_targets_never_sep_or_cls(data):
    for step in range(3):
        b = data.batch(step)
        tm = b["target_mapping"]
        assert torch.equal(tm.sum(-1), torch.ones(4, SETTINGS.num_predict))  # one-hot rows
        assert tm.sum(1).max() == 1  # each position at most once
        positions = tm.argmax(-1)
        assert torch.equal(b["input_ids"].gather(1, positions), b["labels"])
        assert not torch.isin(b["labels"], torch.tensor([SPECIALS.sep, SPECIALS.cls])).any()
        first, second = SETTINGS.split_predictions()
        assert ((positions < SETTINGS.reuse_len).sum(1) == first).all()


def test_the_permutation_is_a_valid_factorisation_order(data):
    """A target sees exactly the non-targets and the targets earlier in the order; no token sees a
    later target; a non-target sees no target at all; the reuse part sees nothing of the rest."""
    R, T = SETTINGS.reuse_len, SETTINGS.seq_len
    b = data.batch(1)
    for r in range(4):
        hidden = b["perm_mask"][r].bool()
        targets = b["target_mapping"][r].sum(0).bool()
        functional = torch.isin(b["input_ids"][r], torch.tensor([SPECIALS.sep, SPECIALS.cls]))
        assert hidden[:R, R:].all()  # the reuse part is blind to the new part
        assert not hidden[R:, :R][:, ~targets[:R]].any()  # the new part sees the reuse part's non-targets
        for part in (slice(0, R), slice(R, T)):
            h, t, f = hidden[part, part], targets[part], functional[part]
            plain = ~t & ~f
            assert not h[:, plain].any()  # every token sees the plain tokens
            assert h[plain][:, t].all()  # plain tokens see no target
            assert h[t][:, t].diagonal().all()  # a target does not see itself
            # the targets' visibility among themselves is a strict total order: a DAG with all pairs decided
            tt = ~h[t][:, t]  # tt[i, j]: target i sees target j
            n = int(t.sum())
            assert not (tt & tt.T).any() and int(tt.sum()) == n * (n - 1) // 2
            seen = tt.sum(1).sort().values.tolist()
            assert seen == list(range(n))  # the first sees none, the next one, … the last all others


def test_block_order_repeats_one_permutation_per_block():
    order = block_order(12, 4, np.random.default_rng(3))
    assert sorted(order.tolist()) == list(range(12))
    assert ((order[4:8] - 4) == order[:4]).all() and ((order[8:] - 8) == order[:4]).all()


def test_permutation_mask_against_its_definition():
    rng = np.random.default_rng(5)
    order = rng.permutation(10)
    targets = rng.random(10) < 0.4
    hidden = permutation_mask(order, targets, np.zeros(10, bool))
    for i in range(10):
        for j in range(10):
            sees = (not targets[j]) if not targets[i] else (not targets[j] or order[j] < order[i])
            assert hidden[i, j] == (not sees)


def test_span_statistics_follow_the_recipe():
    """Spans are whole words, n words with p(n) ∝ 1/n, in a context of n·alpha/beta tokens."""
    rng = np.random.default_rng(0)
    lengths, fractions = Counter(), []
    for _ in range(300):
        starts = rng.random(700) < 0.6
        starts[0] = True
        mask = sample_spans(starts, 60, rng)
        assert mask.sum() == 60
        edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(int), [0]])))
        runs = list(zip(edges[::2], edges[1::2]))
        end_of_spans = runs[-2][1] if len(runs) > 1 else 0
        fractions.append(mask[:end_of_spans].mean())
        for begin, end in runs[:-1]:  # the last span may be cut short by the budget
            assert starts[begin] and (end == 700 or starts[end])  # whole words
            lengths[int(starts[begin:end].sum())] += 1
    total = sum(lengths.values())
    expected = 1 / np.arange(1, 6) / (1 / np.arange(1, 6)).sum()
    observed = np.array([lengths[n] / total for n in range(1, 6)])
    assert np.abs(observed - expected).max() < 0.03, observed
    # n words of 1/0.6 pieces each predicted per 6n context tokens plus the span: 1.67n / 7.67n ≈ 0.22
    assert 0.19 < np.mean(fractions) < 0.25


def test_bi_data_rows_run_backwards():
    s = Stream(np.arange(20), np.ones(20, bool), np.zeros(20, bool))
    rows = batchify(s, 4, bi_data=True)
    assert rows.ids[2].tolist() == rows.ids[0][::-1].tolist() and rows.ids.shape == (4, 10)


def test_consecutive_steps_continue_each_rows_stream(data):
    """The reuse part of step k + 1 follows the reuse part of step k in the same row's stream, so
    the memory (the reuse part's states) is the context right before it."""
    R = SETTINGS.reuse_len
    for k in range(data.steps_per_epoch - 1):
        now, then = data.batch(k), data.batch(k + 1)
        for r in range(4):
            stream = torch.from_numpy(data.rows.ids[r])
            assert torch.equal(now["input_ids"][r, :R], stream[k * R : (k + 1) * R])
            assert torch.equal(then["input_ids"][r, :R], stream[(k + 1) * R : (k + 2) * R])
    assert data.batch(0)["first"].all() and not data.batch(1)["first"].any()
    assert data.batch(data.steps_per_epoch)["first"].all()  # a new epoch: the memory starts empty
    assert torch.equal(data.batch(2)["perm_mask"], data.batch(2)["perm_mask"])  # a pure function of the step


def tiny_model(mem_len=24):
    torch.manual_seed(0)
    config = XLNetConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        mem_len=mem_len,
        reuse_len=SETTINGS.reuse_len,
        hidden_dropout_prob=0.0,
    )
    return XLNetLMHeadModel(config)


def test_memory_is_carried_between_consecutive_batches_and_micro_batches_agree(data):
    model = tiny_model().eval()
    whole, halves = PermutationLMObjective(), PermutationLMObjective()
    for step in range(3):
        b = data.batch(step)
        totals = whole.totals(b)
        expected_mems = None if step == 0 else whole.previous
        loss, _ = whole(model, b, totals)
        with torch.no_grad():  # the same step by hand: the model with the previous step's memory
            direct = model(
                **{k: b[k] for k in ("input_ids", "token_type_ids", "perm_mask", "target_mapping", "labels")},
                mems=expected_mems,
                use_mems=True,
            )
        assert torch.allclose(direct.loss, loss) and all(torch.equal(a, c) for a, c in zip(direct.mems, whole.latest))
        halves.totals(b)
        for part in (slice(0, 2), slice(2, 4)):  # two micro-batches: each finds its rows' memory
            halves(model, {k: v[part] for k, v in b.items()}, totals)
        assert all(torch.allclose(a, c, atol=1e-6) for a, c in zip(whole.latest, halves.latest))
    assert whole.latest[0].shape == (24, 4, 32)  # mem_len states of reuse_len per step, the last 24 kept


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(reuse_len=30), "reuse_len 30 leaves 2 of seq_len 32"),
        (dict(perm_size=6), "perm_size 6 does not divide reuse_len = 16"),
        (dict(num_predict=40), "num_predict 40 is more than the tokens there are"),
        (dict(seq_len=0), "seq_len must be a positive integer"),
    ],
)
def test_bad_settings_are_named(change, message):
    with pytest.raises(ValueError, match=message):
        PermutationSettings(**{**SETTINGS.__dict__, **change})


def test_too_small_a_corpus_and_odd_bi_data_batches_are_named():
    with pytest.raises(ValueError, match="tokens per batch row at batch size 4"):
        PermutationData(synthetic_stream(n_docs=1), SETTINGS, SPECIALS, batch_size=4)
    with pytest.raises(ValueError, match="bi_data needs an even batch size"):
        PermutationData(synthetic_stream(), PermutationSettings(**{**SETTINGS.__dict__, "bi_data": True}), SPECIALS, 3)


# ---- the job -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    text = (ROOT / "data" / "wiki.txt").read_text(encoding="utf-8")
    cut = text.index("\n\n", 150_000)
    path = tmp_path_factory.mktemp("corpus") / "wiki-head.txt"
    path.write_text(text[: cut + 1], encoding="utf-8")
    return path


def _run(corpus, out, *extra):
    return main(
        [
            "pretrain",
            "--family",
            "xlnet",
            "--preset",
            "tiny",
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            "--vocab-size",
            "800",
            "--steps",
            "6",
            "--batch-size",
            "4",
            "--seq-len",
            "32",
            "--warmup",
            "2",
            "--log-every",
            "1",
            "--heldout",
            "2",
            "--quiet",
            *extra,
        ]
    )


@pytest.mark.integration
def test_pretrain_resumes_exactly_with_its_memory(corpus, tmp_path, capsys):
    assert _run(corpus, tmp_path / "whole", "--eval-every", "3") == 0
    assert "held-out PLM accuracy" in capsys.readouterr().out
    assert _run(corpus, tmp_path / "cut", "--eval-every", "3", "--stop-at", "3") == 130
    assert (tmp_path / "cut" / "checkpoints" / "step-00000003" / "mems.safetensors").is_file()
    assert _run(corpus, tmp_path / "cut", "--eval-every", "3", "--resume") == 0
    lines = [
        [json.loads(line) for line in (tmp_path / d / "metrics.jsonl").read_text().splitlines()]
        for d in ("whole", "cut")
    ]
    assert lines[0] == lines[1] or [r.get("loss") for r in lines[0]] == [r.get("loss") for r in lines[1]]
    a, b = bertology.load(tmp_path / "whole"), bertology.load(tmp_path / "cut")
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    summary = json.loads((tmp_path / "whole" / "summary.json").read_text())
    assert summary["objective"] == "plm" and summary["recipe"]["reuse_len"] == 16 and summary["recipe"]["mem_len"] == 24
    assert type(a).__name__ == "XLNetLMHeadModel" and a.config.mem_len == 24
    assert 0 < summary["eval"]["eval/unigram_accuracy"] < 1 and summary["eval"]["eval/unigram_loss"] > 0


@pytest.mark.integration
def test_pretrain_starts_the_lm_bias_at_the_unigram_prior(corpus, tmp_path):
    """As for MLM: the output bias starts at the log unigram distribution, unless --no-unigram-prior."""
    assert _run(corpus, tmp_path / "prior", "--steps", "1", "--lr", "1e-9", "--warmup", "0") == 0
    assert _run(corpus, tmp_path / "zero", "--steps", "1", "--lr", "1e-9", "--warmup", "0", "--no-unigram-prior") == 0
    prior, zero = (bertology.load(tmp_path / d).lm_loss.bias.detach() for d in ("prior", "zero"))
    assert zero.abs().max() < 1e-6 and abs(float(prior.mean())) < 1e-4 and float(prior.std()) > 1.0
    tok = bertology.Tokenizer.load(tmp_path / "prior" / "tokenizer.json")
    assert prior[tok.token_to_id("▁the")] > prior.quantile(0.99)  # the most frequent word scores near the top


def test_pretrain_refuses_mlm_options_for_xlnet(corpus, tmp_path, capsys):
    assert (
        main(["pretrain", "--family", "xlnet", "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--ngram", "3"])
        == 2
    )
    assert "--ngram is an MLM option" in capsys.readouterr().err
    assert (
        main(
            [
                "pretrain",
                "--family",
                "xlnet",
                "--corpus",
                str(corpus),
                "--out",
                str(tmp_path / "o"),
                "--seq-len",
                "64",
                "--perm-size",
                "5",
            ]
        )
        == 2
    )
    assert "perm_size 5 does not divide" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
