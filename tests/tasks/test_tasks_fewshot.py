"""Few-sample fine-tuning options: --reinit-layers, --head-lr, --labels-per-class, --pooling checks."""

import json

import pytest
import torch

from bertology.models import get_family, task_class
from bertology.tasks.fewshot import encoder_layers, head_lr_groups, head_parameters, reinit_top_layers
from bertology.tasks.finetune import finetune
from bertology.train.trainer import Trainer, parameter_groups
from bertology.train.arguments import TrainingArguments

from test_tasks_finetune import _options


def _tiny(family: str, **overrides):
    cfg = get_family(family).preset("tiny", vocab_size=99, **overrides).with_labels(["a", "b"])
    torch.manual_seed(0)
    return task_class(family, "ForSequenceClassification")(cfg)


@pytest.mark.parametrize("family", ("bert", "roberta", "distilbert", "xlnet"))
def test_reinit_changes_exactly_the_top_layers(family):
    model = _tiny(family, num_hidden_layers=3)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(1)
    assert reinit_top_layers(model, 2) == [1, 2]
    after = model.state_dict()
    layer = "backbone.layers." if family == "xlnet" else "backbone.encoder.layers."
    for name, value in before.items():
        top = name.startswith((layer + "1.", layer + "2.")) or name.startswith("backbone.pooler.")
        weight_like = (
            name.endswith("weight") and "norm" not in name
        )  # biases and LayerNorms re-initialise to what they were
        if top and weight_like:
            assert not torch.equal(value, after[name]), name
        elif not top:
            assert torch.equal(value, after[name]), name
    # the fresh weights follow the model's own initialisation: N(0, initializer_range)
    std = model.config.initializer_range
    w = next(p for n, p in model.named_parameters() if n.startswith(layer + "2.") and p.dim() == 2)
    assert w.std().item() == pytest.approx(std, rel=0.1)


def test_reinit_refuses_albert_shared_blocks_and_too_many_layers():
    with pytest.raises(ValueError, match="shared with layer"):
        reinit_top_layers(_tiny("albert"), 1)
    with pytest.raises(ValueError, match="has 2 encoder layers"):
        reinit_top_layers(_tiny("bert"), 3)
    assert len(encoder_layers(_tiny("bert"))) == 2


def test_head_lr_splits_every_group_and_keeps_its_settings(tmp_path):
    model = _tiny("bert")
    head = head_parameters(model)
    assert {n for n, p in model.named_parameters() if id(p) in head} == {
        "classifier.classifier.weight",
        "classifier.classifier.bias",
    }
    groups = head_lr_groups(parameter_groups(model, 0.01), head, 3e-3)
    args = TrainingArguments(out_dir=str(tmp_path), steps=8, lr=1e-4, warmup_steps=4)
    trainer = Trainer(model, args, batches=None, objective=None, param_groups=groups)
    got = [(g["initial_lr"], g["weight_decay"], {id(p) for p in g["params"]}) for g in trainer.optimizer.param_groups]
    assert [(lr, wd) for lr, wd, _ in got] == [(1e-4, 0.01), (1e-4, 0.0), (3e-3, 0.01), (3e-3, 0.0)]
    assert got[2][2] | got[3][2] == head and not (got[0][2] | got[1][2]) & head
    assert sum(len(g[2]) for g in got) == len(list(model.parameters()))
    assert trainer.scheduler.get_last_lr() == pytest.approx([2.5e-5, 2.5e-5, 7.5e-4, 7.5e-4])  # one schedule for both


def test_finetune_with_head_lr_trains_the_head_at_its_rate(tmp_path):
    finetune(_options(tmp_path, epochs=1, head_lr=4e-3, log_every=1))
    lines = [json.loads(line) for line in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    assert max(r["lr"] for r in lines if "lr" in r) <= 2e-3  # the logged rate stays the encoder's
    from bertology.train.run import checkpoints

    state = torch.load(checkpoints(tmp_path / "out")[-1] / "trainer_state.pt", weights_only=True)
    groups = state["optimizer"]["param_groups"]
    assert [g["initial_lr"] for g in groups] == [2e-3, 2e-3, 4e-3, 4e-3]
    assert [len(g["params"]) for g in groups][2:] == [1, 1]  # the classifier's weight, then its bias


def test_labels_per_class_trains_on_the_balanced_subset(tmp_path):
    summary = finetune(_options(tmp_path, epochs=1, labels_per_class=5, subset_seed=3))
    from bertology.tasks.subsets import balanced_subset

    labels = [line.split("\t")[1] for line in (tmp_path / "train.tsv").read_text().splitlines()[1:]]
    assert summary["train_examples"] == 10
    assert summary["train_subset"] == {"labels_per_class": 5, "seed": 3, "indices": balanced_subset(labels, 5, 3)}
    assert summary["options"]["labels_per_class"] == 5
    assert (
        json.loads((tmp_path / "out" / "summary.json").read_text())["train_subset"]["indices"]
        == summary["train_subset"]["indices"]
    )


def test_options_that_do_not_fit_the_task_or_model_fail_before_writing(tmp_path):
    with pytest.raises(ValueError, match="class 'animals' has only 32 examples"):
        finetune(_options(tmp_path, labels_per_class=33))
    with pytest.raises(ValueError, match="--labels-per-class takes a sequence-classification task"):
        finetune(_options(tmp_path, task="regress", labels_per_class=2))
    assert not (tmp_path / "out").exists()


@pytest.mark.integration
def test_mean_pooling_and_reinit_through_finetune(tmp_path):
    import bertology

    summary = finetune(_options(tmp_path, pooling="mean", reinit_layers=1))
    assert summary["dev"]["accuracy"] == 1.0
    tuned = bertology.load(tmp_path / "out")
    assert tuned.pooling == "mean" and tuned.config.extra["bertology_pooling"] == "mean"


def test_mean_pooling_from_a_pretrained_checkpoint_keeps_its_encoder(tmp_path):
    import bertology
    from bertology.models import BertConfig, BertForPreTraining

    from test_tasks_finetune import TOKENIZER

    torch.manual_seed(0)
    pretrained = BertForPreTraining(BertConfig.preset("tiny", vocab_size=30522))
    pretrained.save(tmp_path / "pre")
    bertology.Tokenizer.load(TOKENIZER).save(tmp_path / "pre" / "tokenizer.json")
    finetune(_options(tmp_path, model=str(tmp_path / "pre"), tokenizer=None, epochs=1, lr=1e-9, pooling="mean"))
    tuned = bertology.load(tmp_path / "out")
    assert tuned.pooling == "mean" and tuned.backbone.pooler is None  # the checkpoint's pooler is not used
    before = pretrained.backbone.encoder.layers[0].ffn.up.weight
    assert torch.allclose(tuned.backbone.encoder.layers[0].ffn.up.weight, before, atol=1e-6)
