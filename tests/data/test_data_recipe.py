"""The Recipe (data/recipe.py) and the Masker (data/masker.py): resolved once, validated with
errors naming the option; masks static per instance, dynamic per step, smoothed per batch."""

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from bertology.data import IGNORE_INDEX, Masker, Recipe, RowDraws, mask_rows_vectorised, seeded_generator
from bertology.data.permutation import PermutationSettings

CLS, SEP, PAD, MASK = 1, 2, 0, 3
SPECIAL_IDS = torch.tensor([PAD, CLS, SEP, MASK])
RANDOM_IDS = torch.arange(4, 100)


# ------------------------------------------------------------------------------------------ Recipe


@pytest.mark.parametrize(
    "family, expected",
    [
        ("bert", ("mlm+nsp", "pairs", "static", 1, "ForPreTraining", "next_sentence_label")),
        ("roberta", ("mlm", "full-sentences", "dynamic", 1, "ForMaskedLM", None)),
        ("albert", ("mlm+sop", "pairs", "static", 3, "ForPreTraining", "sentence_order_label")),
    ],
)
def test_recipe_defaults_are_the_papers(family, expected):
    r = Recipe.resolve(family, max_seq_length=64)
    assert (r.objective, r.packing, r.masking, r.ngram, r.head, r.pair_label) == expected


def test_recipe_options_replace_defaults():
    r = Recipe.resolve("bert", objective="mlm", masking="dynamic", ngram=2, max_seq_length=64)
    assert (r.objective, r.packing, r.masking, r.ngram, r.head) == (
        "mlm",
        "full-sentences",
        "dynamic",
        2,
        "ForMaskedLM",
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.masking = "static"


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(objective="mlm+xyz"), "unknown objective 'mlm\\+xyz'"),
        (dict(packing="halves"), "unknown packing 'halves'"),
        (dict(masking="sometimes"), "unknown masking 'sometimes'"),
        (dict(objective="mlm+nsp", packing="full-sentences"), "objective 'mlm\\+nsp' does not go with packing"),
        (dict(ngram=0), "ngram must be >= 1"),
        (dict(dupe_factor=0), "dupe_factor must be >= 1"),
        (dict(mlm_probability=1.5), "mlm_probability must be in \\[0, 1\\]"),
        (dict(max_seq_length=4), "max_seq_length must be >= 5"),
        (dict(short_seq_prob=-0.1), "short_seq_prob must be in \\[0, 1\\]"),
        (dict(max_predictions=0), "max_predictions must be >= 1"),
    ],
)
def test_recipe_errors_name_the_option(kw, message):
    with pytest.raises(ValueError, match=message):
        Recipe.resolve("bert", **{"max_seq_length": 64, **kw})


def test_recipe_checks_the_model_head_and_the_family():
    Recipe.resolve("bert", objective="mlm", max_seq_length=64).check_model()
    with pytest.raises(ValueError, match="bert has no mlm\\+sop head; --objective mlm or mlm\\+nsp"):
        Recipe.resolve("bert", objective="mlm+sop", max_seq_length=64).check_model()
    with pytest.raises(ValueError, match="distilbert has no pretraining recipe of its own"):
        Recipe.resolve("distilbert", max_seq_length=64)
    with pytest.raises(ValueError, match="unknown family 'gpt'"):
        Recipe.resolve("gpt", max_seq_length=64)


def _pretrain_options(**kw):
    base = dict(
        family="xlnet",
        max_length=64,
        objective=None,
        packing=None,
        masking=None,
        ngram=None,
        max_predictions=None,
        whole_word=False,
        mlm_probability=0.15,
        dupe_factor=5,
        reuse_len=None,
        num_predict=None,
        perm_size=None,
        bi_data=False,
    )
    return SimpleNamespace(**{**base, **kw})


def test_recipe_from_pretrain_options():
    r = Recipe.from_options(_pretrain_options())
    assert (r.objective, r.head, r.permutation.seq_len, r.permutation.reuse_len) == ("plm", "LMHeadModel", 64, 32)
    bert = Recipe.from_options(_pretrain_options(family="bert", whole_word=True, mlm_probability=0.3))
    assert (bert.objective, bert.whole_word, bert.max_predictions, bert.dupe_factor) == ("mlm+nsp", True, 19, 5)
    for name, value in (("objective", "mlm"), ("masking", "static"), ("ngram", 2), ("max_predictions", 5)):
        with pytest.raises(ValueError, match=f"--{name.replace('_', '-')} is an MLM option"):
            Recipe.from_options(_pretrain_options(**{name: value}))
    with pytest.raises(ValueError, match="--whole-word is an MLM option"):
        Recipe.from_options(_pretrain_options(whole_word=True))
    with pytest.raises(ValueError, match="perm_size 7 does not divide"):
        Recipe.from_options(_pretrain_options(perm_size=7))


def test_recipe_round_trips_through_a_dict():
    for r in (
        Recipe.resolve("albert", whole_word=True, max_seq_length=64),
        Recipe.permutation_lm("xlnet", PermutationSettings.scaled(64)),
    ):
        assert Recipe.from_dict(r.to_dict()) == r


# ------------------------------------------------------------------------------------------ Masker


def _rows(n=6, T=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, 100, (n, T), generator=g)
    lengths = torch.randint(T // 2, T + 1, (n,), generator=g)
    ids[:, 0] = CLS
    mask = torch.arange(T)[None, :] < lengths[:, None]
    ids[torch.arange(n), lengths - 1] = SEP
    ids[~mask] = PAD
    starts = torch.rand(n, T, generator=g) < 0.6
    return {"input_ids": ids, "attention_mask": mask.long(), "word_start": starts}


def _masker(masking="static", **kw):
    r = Recipe.resolve("roberta", masking=masking, max_seq_length=24, mlm_probability=0.3, max_predictions=None, **kw)
    return Masker(r, MASK, SPECIAL_IDS, RANDOM_IDS, **({"weights": torch.ones(100)} if masking == "smoothed" else {}))


def _rows_of(batch, keep):
    return {k: v[keep] for k, v in batch.items()}


def test_static_masks_follow_the_instance_not_the_batch_or_step():
    rows, masker = _rows(), _masker("static")
    a = masker(rows, seed=7, step=0, instances=torch.arange(6).numpy())
    # instances 4, 1 in another batch, at another step (another epoch): the same masks
    order = [4, 1]
    b = masker(_rows_of(rows, order), seed=7, step=99, instances=torch.tensor(order).numpy())
    for j, i in enumerate(order):
        assert torch.equal(b["input_ids"][j], a["input_ids"][i]) and torch.equal(b["labels"][j], a["labels"][i])
    again = masker(rows, seed=7, step=0, instances=torch.arange(6).numpy())
    assert all(torch.equal(again[k], a[k]) for k in a)  # seed determinism
    other = masker(rows, seed=8, step=0, instances=torch.arange(6).numpy())
    assert not torch.equal(other["labels"], a["labels"])
    assert "word_start" not in a and (a["labels"] != IGNORE_INDEX).any()


def test_dynamic_masks_follow_the_step():
    rows, masker = _rows(), _masker("dynamic")
    idx = torch.arange(6).numpy()
    a, b = masker(rows, seed=7, step=3, instances=idx), masker(rows, seed=7, step=3, instances=idx)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(masker(rows, seed=7, step=4, instances=idx)["labels"], a["labels"])
    special = torch.isin(rows["input_ids"], SPECIAL_IDS)
    ref = mask_rows_vectorised(
        rows["input_ids"],
        special,
        None,
        seeded_generator(7, 3, 3),
        mask_id=MASK,
        random_ids=RANDOM_IDS,
        mlm_probability=0.3,
        max_predictions=None,
    )
    assert torch.equal(a["input_ids"], ref[0]) and torch.equal(a["labels"], ref[1])


@pytest.mark.parametrize("whole_word, ngram", [(False, 1), (True, 3)])
def test_static_and_dynamic_are_one_procedure(whole_word, ngram):
    rows = _rows(n=40)
    idx = torch.arange(100, 140).numpy()
    static = _masker("static", whole_word=whole_word, ngram=ngram)(rows, seed=5, step=0, instances=idx)
    dynamic = _masker("dynamic", whole_word=whole_word, ngram=ngram)(rows, seed=5, step=0, instances=idx)
    # given the same draws they mask alike: static is the vectorised masker with one generator per instance
    special = torch.isin(rows["input_ids"], SPECIAL_IDS)
    starts = rows["word_start"] if whole_word else None
    ref = mask_rows_vectorised(
        rows["input_ids"],
        special,
        starts,
        RowDraws([(5, 2, int(i)) for i in idx]),
        mask_id=MASK,
        random_ids=RANDOM_IDS,
        mlm_probability=0.3,
        max_predictions=None,
        ngram=ngram,
    )
    assert torch.equal(static["input_ids"], ref[0]) and torch.equal(static["labels"], ref[1])
    # where the budget is a function of the row alone (single tokens), both mask as many per row
    if not whole_word:
        assert torch.equal((static["labels"] != IGNORE_INDEX).sum(1), (dynamic["labels"] != IGNORE_INDEX).sum(1))
    for out in (static, dynamic):
        assert ((out["labels"] != IGNORE_INDEX) <= ~special).all()
        kept = out["labels"] == IGNORE_INDEX
        assert torch.equal(out["input_ids"][kept], rows["input_ids"][kept])


def test_smoothed_masks_need_weights_and_follow_the_step():
    r = Recipe.resolve("roberta", masking="smoothed", max_seq_length=24)
    with pytest.raises(ValueError, match="smoothed masking needs token weights"):
        Masker(r, MASK, SPECIAL_IDS, RANDOM_IDS)
    rows, masker = _rows(), _masker("smoothed")
    idx = torch.arange(6).numpy()
    a = masker(rows, seed=1, step=2, instances=idx)
    assert torch.equal(a["labels"], masker(rows, seed=1, step=2, instances=idx)["labels"])
    candidates = int((~torch.isin(rows["input_ids"], SPECIAL_IDS)).sum())
    assert int((a["labels"] != IGNORE_INDEX).sum()) == -(-3 * candidates // 10)
