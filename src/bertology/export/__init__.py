"""Deployment: a model as an ONNX graph (onnx.py, `bertology export`), optionally int8.

The eager int8 path is `PreTrainedModel.quantize_int8` (nn/int8.py); onnxruntime is needed only to
quantize an exported graph (`export --int8`) and, in the tests and bench/ort.py, as the oracle and
the peer. Nothing here is imported until used, so that `bertology --help` stays fast.
"""
