"""finetune --method probe, --layer-decay and --no-checkpoints: what each changes, checked by value."""

from pathlib import Path

import pytest
import torch

from bertology.models import ARCHITECTURES, get_family
from bertology.tasks.fewshot import layer_decay_groups, parameter_depths

DATA = Path(__file__).resolve().parents[2] / "data" / "debian-sections"


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    """A tiny random BERT pretraining checkpoint with a WordPiece trained on the task's texts."""
    from bertology.tokenizers import train

    texts = [line.split("\t")[1] for line in (DATA / "train.tsv").read_text().splitlines()[1:]]
    tok = train(lines=texts, family="bert", vocab_size=600, show_progress=False)
    out = tmp_path_factory.mktemp("bert")
    torch.manual_seed(0)
    ARCHITECTURES["BertForPreTraining"](get_family("bert").preset("tiny", vocab_size=tok.vocab_size)).save(out)
    tok.save(out / "tokenizer.json")
    return out


def _options(model, out, **kw):
    from bertology.tasks.finetune import FinetuneOptions

    return FinetuneOptions(
        model=str(model),
        task="classify",
        train=str(DATA / "train.tsv"),
        dev=str(DATA / "dev.tsv"),
        out_dir=str(out),
        labels_per_class=5,
        max_length=24,
        quiet=True,
        **kw,
    )


def test_probe_is_a_logistic_regression_on_the_frozen_vectors(bert_dir, tmp_path):
    from bertology.tasks.baseline import fit_logistic_regression
    from bertology.tasks.finetune import finetune, load_finetuned, predict_examples
    from bertology.nn.fused import unfuse
    from bertology.tasks.probe import sentence_vectors

    summary = finetune(_options(bert_dir, tmp_path / "probe", method="probe", pooling="mean"))
    assert summary["method"] == "probe" and summary["steps"] == 0
    assert summary["probe"]["l2"] in {float(k) for k in summary["probe"]["dev_accuracy_by_l2"]}
    model, task, tok, _ = load_finetuned(tmp_path / "probe")
    unfuse(model)  # the job fitted the probe on its built (unfused) encoder: the same kernels, the same vectors
    # the encoder is the checkpoint's, untouched
    from bertology import load

    backbone = load(bert_dir).backbone.state_dict()
    assert all(torch.equal(v, model.backbone.state_dict()[k]) for k, v in backbone.items() if "pooler" not in k)
    # the head is the regression fitted on the training subset's mean-pooled vectors at the chosen L2
    train = [e for e in task.read(str(DATA / "train.tsv"))]
    subset = [train[i] for i in summary["train_subset"]["indices"]]
    features = task.featurize(subset, tok, 24, model.config.label2id)
    W, b = fit_logistic_regression(
        sentence_vectors(model, features), features.tensors["labels"], 10, summary["probe"]["l2"]
    )
    assert torch.allclose(model.classifier.proj.weight, W.T, atol=1e-5)
    dev = task.read(str(DATA / "dev.tsv"))
    predictions = predict_examples(model, task, tok, dev, 24, 0)
    assert task.metrics(predictions, dev)["accuracy"] == pytest.approx(summary["dev"]["accuracy"])


def test_probe_and_prompt_refuse_options_they_do_not_read(bert_dir, tmp_path):
    from bertology.tasks.finetune import finetune

    with pytest.raises(ValueError, match="--method probe .*--pooling mean"):
        finetune(_options(bert_dir, tmp_path / "a", method="probe"))
    with pytest.raises(ValueError, match="--template and --verbalizer are read by --method prompt"):
        finetune(_options(bert_dir, tmp_path / "b", template="{text} is [MASK]"))
    with pytest.raises(ValueError, match="--method prompt reads the pretrained head"):
        finetune(_options(bert_dir, tmp_path / "c", method="prompt", pooling="mean"))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_layer_decay_rates_fall_from_the_head_to_the_embeddings():
    torch.manual_seed(0)
    model = ARCHITECTURES["BertForSequenceClassification"](get_family("bert").preset("tiny", vocab_size=99))
    depths = parameter_depths(model)
    assert depths[id(model.backbone.embeddings.word.weight)] == 0
    layers = model.backbone.encoder.schedule()
    assert [depths[id(next(blocks[0].parameters()))] for blocks in layers] == [1, 2]
    assert depths[id(model.classifier.classifier.weight)] == 3
    groups = layer_decay_groups([{"params": list(model.parameters()), "weight_decay": 0.0}], depths, 0.5, 1e-3)
    rate = {id(p): g["lr"] for g in groups for p in g["params"]}
    assert rate[id(model.backbone.embeddings.word.weight)] == pytest.approx(1e-3 * 0.5**3)
    assert rate[id(model.classifier.classifier.weight)] == pytest.approx(1e-3)
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))


def test_without_checkpoints_the_best_epoch_is_kept_in_memory_and_written_once(bert_dir, tmp_path):
    from bertology.tasks.finetune import finetune, load_finetuned, predict_examples

    summary = finetune(_options(bert_dir, tmp_path / "run", pooling="mean", epochs=6, lr=3e-3, checkpoints=False))
    assert not (tmp_path / "run" / "checkpoints").exists() and not (tmp_path / "run" / "best").exists()
    assert summary["best_step"] is not None
    model, task, tok, _ = load_finetuned(tmp_path / "run")
    dev = task.read(str(DATA / "dev.tsv"))
    accuracy = task.metrics(predict_examples(model, task, tok, dev, 24, 0), dev)["accuracy"]
    assert accuracy == pytest.approx(summary["dev"]["accuracy"])  # the written model is the best epoch's
