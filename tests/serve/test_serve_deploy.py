"""What a deployment takes from a served checkpoint: the int8 engine (serve --int8) and the exported
graph (bertology export), each against the Pipeline the server runs in fp32."""

import numpy as np
import pytest
import torch

from bertology.nn import int8
from bertology.options import OptionError
from bertology.serve.engine import Engine
from bertology.serve.options import ServeOptions
from bertology.tasks.base import Example

TEXTS = ["the cat sat on the mat", "a game", "network tools for the command line and a long tail of words"]


def test_int8_engine_predicts_close_to_fp32(checkpoints):
    fp32 = Engine.load(checkpoints["classify"])
    said = []
    int8 = Engine.load(checkpoints["classify"], quantize="int8", say=said.append)
    assert int8.precision == "float32 + int8 linear layers" == int8.info()["model_dtype"]
    assert said and said[0].startswith("int8: 8 linear layers")
    examples = [Example(t, None, None, id=str(i)) for i, t in enumerate(TEXTS)]
    a, b = torch.stack(fp32.pipeline.logits(examples)), torch.stack(int8.pipeline.logits(examples))
    assert torch.cosine_similarity(a, b, dim=-1).min() >= 0.99 and not torch.equal(a, b)


def test_the_engine_warms_up_and_says_which_path_it_serves_with(checkpoints):
    said = []
    Engine.load(checkpoints["classify"], say=said.append)
    assert len(said) == 1 and said[0].startswith("path: eager, fp32 linear layers")
    said.clear()
    Engine.load(checkpoints["classify"], quantize="int8", say=said.append)
    assert said[-1].startswith(f"path: eager, int8 linear layers on {int8.default_kernel()}'s kernel (asked for)")
    assert "padding skipped in the linear layers and attention" in said[-1]


def test_int8_does_not_combine_with_bf16_or_compile():
    for other in ({"bf16": True}, {"compile": True}):
        with pytest.raises(OptionError, match="--int8 with"):
            ServeOptions(model="m", int8=True, **other)


def test_exported_graph_equals_the_pipeline(checkpoints, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from bertology.cli import main

    assert main(["export", str(checkpoints["classify"]), str(tmp_path / "onnx")]) == 0
    assert (tmp_path / "onnx" / "tokenizer.json").read_bytes() == (
        checkpoints["classify"] / "tokenizer.json"
    ).read_bytes()
    pipe = Engine.load(checkpoints["classify"]).pipeline
    examples = [Example(t, None, None, id=str(i)) for i, t in enumerate(TEXTS)]
    features = pipe.task.featurize(examples, pipe.tokenizer, pipe.max_length, None, pipe.stride)
    session = ort.InferenceSession(str(tmp_path / "onnx" / "model.onnx"))
    feed = {i.name: features.tensors[i.name].numpy() for i in session.get_inputs()}
    assert feed["attention_mask"].min() == 0  # padded: the texts differ in length
    logits = session.run(["logits"], feed)[0]
    expected = torch.stack(pipe.logits(examples)).numpy()
    assert np.abs(logits - expected).max() <= 1e-4


def test_predict_and_evaluate_int8_from_the_cli(checkpoints, tmp_path, capsys):
    from bertology.cli import main

    assert main(["predict", "--model", str(checkpoints["classify"]), "--device", "cpu", "--int8", "a game"]) == 0
    said = capsys.readouterr()
    assert said.err.startswith("int8: 8 linear layers") and said.out.endswith("\ta game\n")
    data = tmp_path / "test.tsv"
    data.write_text("text\tlabel\na game\tgames\nmail for all\tmail\n")
    assert main(["evaluate", "--model", str(checkpoints["classify"]), "--data", str(data), "--int8"]) == 0
    assert "accuracy" in capsys.readouterr().out


def test_export_onnx_is_top_level():
    import bertology
    from bertology.export.onnx import export_onnx

    assert bertology.export_onnx is export_onnx
