"""ONNX export of every family and head: onnxruntime's outputs equal the model's, at other batch sizes
and lengths than the traced ones, with padding; onnxruntime's optimizer fuses the exported BERT."""

import json

import numpy as np
import pytest
import torch

ort = pytest.importorskip("onnxruntime")

from bertology.cli import main  # noqa: E402
from bertology.export.onnx import example_inputs, export_onnx  # noqa: E402
from bertology.models import FAMILIES, from_config, read_config, task_class  # noqa: E402

ODD = dict(vocab_size=99, hidden_size=48, num_attention_heads=3, intermediate_size=37, num_hidden_layers=2)
EXPORTED = [(name, head) for name, f in FAMILIES.items() if name != "xlnet" for head in ("Model",) + f.heads]


def tiny(family: str, head: str):
    extra = (
        dict(num_hidden_layers=4, embedding_size=16, num_hidden_groups=2, inner_group_num=2)
        if family == "albert"
        else {}
    )
    config = FAMILIES[family].preset("tiny", **{**ODD, **extra})
    torch.manual_seed(0)
    model = task_class(family, head)(config) if head != "Model" else from_config(config)
    for p in model.parameters():  # larger weights than the init's: outputs far from a constant, so errors show
        p.data.add_(torch.randn_like(p) * 0.05)
    return model.eval()


def run(session, inputs):
    return session.run(None, {k: v.numpy() for k, v in inputs.items()})


def set_skip_padding(model, value: bool):
    for m in model.modules():
        if hasattr(m, "skip_padding"):
            m.skip_padding = value


@pytest.mark.parametrize("family,head", EXPORTED)
def test_onnxruntime_equals_the_model(family, head, tmp_path):
    model = tiny(family, head)
    result = export_onnx(model, tmp_path / "out")
    session = ort.InferenceSession(str(result.path))
    inputs = example_inputs(model, batch=3, length=11, choices=3)  # traced at 2 × 7 (× 2 choices)
    assert [i.name for i in session.get_inputs()] == list(inputs) == list(result.inputs)
    assert [o.name for o in session.get_outputs()] == list(result.outputs)
    if family in ("roberta", "distilbert"):
        assert "token_type_ids" not in inputs  # one token type, or none
    with torch.no_grad():
        ours = model(**inputs)
        set_skip_padding(model, False)
        every_position = model(**inputs)
    real = inputs["attention_mask"].bool().numpy()
    for name, value in zip(result.outputs, run(session, inputs)):
        expected = ours[name].numpy()
        assert value.shape == expected.shape, name
        # padded positions: the graph computes them as transformers does (skip_padding=False)
        assert np.abs(value - every_position[name].numpy()).max() <= 1e-4, name
        if value.ndim >= real.ndim and value.shape[: real.ndim] == real.shape:  # per token: compare real tokens
            value, expected = value[real], expected[real]
        assert np.abs(value - expected).max() <= 1e-4, name
        assert np.abs(expected).max() > 1e-2, name  # a test that can fail: the outputs are not all near zero


def test_dynamic_axes_and_files_beside(tmp_path):
    model = tiny("bert", "ForQuestionAnswering")
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_text('{"version": "1.0"}\n')
    result = export_onnx(model, tmp_path / "out", tokenizer_dir=tmp_path / "tok")
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "export.json", "model.onnx", "tokenizer.json"]
    assert (out / "tokenizer.json").read_text() == '{"version": "1.0"}\n'
    assert read_config(out).architectures == ["BertForQuestionAnswering"]
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["opset"] == 17 and manifest["outputs"] == {
        "start_logits": {"0": "batch", "1": "sequence"},
        "end_logits": {"0": "batch", "1": "sequence"},
    }
    assert result.inputs["input_ids"] == {0: "batch", 1: "sequence"}
    session = ort.InferenceSession(str(result.path))
    for batch, length in ((1, 3), (5, 20)):
        start, _ = run(session, example_inputs(model, batch, length))
        assert start.shape == (batch, length)


def test_multiple_choice_has_a_choices_axis(tmp_path):
    result = export_onnx(tiny("roberta", "ForMultipleChoice"), tmp_path / "out")
    assert result.inputs["input_ids"] == {0: "batch", 1: "choices", 2: "sequence"}
    assert result.outputs["logits"] == {0: "batch", 1: "choices"}


@pytest.mark.parametrize("head", ("Model",) + FAMILIES["xlnet"].heads)
def test_xlnet_is_refused_with_the_reason_and_nothing_written(head, tmp_path):
    model = tiny("xlnet", head)
    with pytest.raises(ValueError, match="XLNet is not exported to ONNX.*traced length"):
        export_onnx(model, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_int8_model_is_refused(tmp_path):
    model = tiny("bert", "Model")
    model.quantize_int8()
    with pytest.raises(ValueError, match="export the fp32 model"):
        export_onnx(model, tmp_path / "out")


def test_existing_out_is_refused_unless_overwrite(tmp_path):
    model = tiny("distilbert", "ForSequenceClassification")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="overwrite"):
        export_onnx(model, tmp_path / "out")
    assert (tmp_path / "out" / "mine.txt").read_text() == "keep"
    export_onnx(model, tmp_path / "out", overwrite=True)
    assert (tmp_path / "out" / "model.onnx").is_file()


def test_optimizer_fuses_the_exported_bert(tmp_path):
    model = tiny("bert", "ForSequenceClassification")
    result = export_onnx(model, tmp_path / "out", optimize=True)
    L = model.config.num_hidden_layers
    assert result.fused == {
        "EmbedLayerNormalization": 1,
        "Attention": L,
        "BiasGelu": L,
        "SkipLayerNormalization": 2 * L,
    }
    inputs = example_inputs(model, 3, 11)
    with torch.no_grad():
        expected = model(**inputs).logits.numpy()
    assert np.abs(run(ort.InferenceSession(str(result.path)), inputs)[0] - expected).max() <= 1e-4


def test_int8_graph_stays_close_to_fp32(tmp_path):
    model = tiny("bert", "Model")
    result = export_onnx(model, tmp_path / "out", int8=True, optimize=True)
    assert result.int8
    session = ort.InferenceSession(str(result.path))
    ops = {n.op_type for n in __import__("onnx").load(str(result.path)).graph.node}
    assert {"QAttention", "MatMulInteger", "DynamicQuantizeLinear"} <= ops
    inputs = example_inputs(model, 3, 11)
    with torch.no_grad():
        expected = model(**inputs).last_hidden_state
    got = torch.from_numpy(run(session, inputs)[0])
    real = inputs["attention_mask"].bool()
    cosine = torch.cosine_similarity(got[real], expected[real], dim=-1)
    assert cosine.min() >= 0.99
    assert (got[real] - expected[real]).abs().max() > 1e-6  # it is really quantized


def test_cli_export(tmp_path, capsys):
    model = tiny("albert", "ForTokenClassification")
    model.save(tmp_path / "model")
    assert main(["export", str(tmp_path / "model"), str(tmp_path / "out"), "--format", "onnx"]) == 0
    said = capsys.readouterr().out
    assert "AlbertForTokenClassification" in said and "logits (batch, sequence)" in said and "opset 17" in said
    assert main(["export", str(tmp_path / "model"), str(tmp_path / "out")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "model"), str(tmp_path / "o2"), "--opset", "12"]) == 2
