"""optimum's `ORTModelFor…` classes open what `export_onnx` writes and give the model's outputs.

optimum's onnxruntime integration (the `optimum-onnx` package) supports transformers < 4.58 only,
and the test stack pins transformers 5, so this module is skipped there. To run it (docs/export.md):
a virtual environment with torch==2.13.0, "transformers<4.58", optimum-onnx, onnxruntime, onnx and
pytest, then `PYTHONPATH=src python -m pytest tests/export/test_optimum.py`."""

import numpy as np
import pytest
import torch

optimum_ort = pytest.importorskip("optimum.onnxruntime", exc_type=ImportError)

from bertology.export.onnx import example_inputs, export_onnx  # noqa: E402
from bertology.models import FAMILIES, from_config, task_class  # noqa: E402

ODD = dict(vocab_size=99, hidden_size=48, num_attention_heads=3, intermediate_size=37, num_hidden_layers=2)
CLASSES = {  # our head → optimum's class for it, and the output compared
    "Model": ("ORTModelForFeatureExtraction", "last_hidden_state"),
    "ForMaskedLM": ("ORTModelForMaskedLM", "logits"),
    "ForSequenceClassification": ("ORTModelForSequenceClassification", "logits"),
    "ForTokenClassification": ("ORTModelForTokenClassification", "logits"),
    "ForQuestionAnswering": ("ORTModelForQuestionAnswering", "start_logits"),
    "ForMultipleChoice": ("ORTModelForMultipleChoice", "logits"),
}
CASES = [(family, head) for family in FAMILIES if family not in ("xlnet",) for head in CLASSES]


@pytest.mark.parametrize("family,head", CASES)
def test_optimum_opens_the_export_and_equals_the_model(family, head, tmp_path):
    config = FAMILIES[family].preset("tiny", **ODD)
    torch.manual_seed(0)
    model = (from_config(config) if head == "Model" else task_class(family, head)(config)).eval()
    for p in model.parameters():
        p.data.add_(torch.randn_like(p) * 0.05)
    export_onnx(model, tmp_path / "onnx")
    name, output = CLASSES[head]
    ort_model = getattr(optimum_ort, name).from_pretrained(tmp_path / "onnx")
    inputs = example_inputs(model, batch=3, length=11, choices=3)
    with torch.no_grad():
        expected = model(**inputs)[output].numpy()
    got = getattr(ort_model(**inputs), output)
    got = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    real = inputs["attention_mask"].bool().numpy()
    if got.ndim > real.ndim and got.shape[: real.ndim] == real.shape:  # per token: the real tokens
        got, expected = got[real], expected[real]
    elif got.shape == real.shape:  # start logits: padded positions are masked differently
        got, expected = got[real], expected[real]
    assert np.abs(got - expected).max() <= 1e-4
