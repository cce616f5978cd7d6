"""Precision is chosen by measuring: the probe, the reason it gives, and the warning when bf16 is
asked for on a CPU that emulates it."""

import warnings

import pytest
import torch

from bertology import hardware


@pytest.fixture
def probe(monkeypatch):
    """Replace the measured probe with given numbers (and forget any earlier warning)."""

    def set_probe(fp32: float, bf16: float):
        result = {"fp32_gflops": fp32, "bf16_gflops": bf16, "bf16_pays": bf16 >= 1.5 * fp32}
        monkeypatch.setattr(hardware, "precision_probe", lambda: result)
        hardware.check_bf16_requested.cache_clear()

    yield set_probe
    hardware.check_bf16_requested.cache_clear()


def test_the_real_probe_measures_both_precisions():
    p = hardware.precision_probe()
    assert p["fp32_gflops"] > 0 and p["bf16_gflops"] > 0
    assert p["bf16_pays"] == (p["bf16_gflops"] >= 1.5 * p["fp32_gflops"])
    name, flags = hardware.cpu_name_and_flags()
    assert name and set(flags) <= set(hardware.FLAGS)
    assert name in hardware.cpu_summary()


def test_bf16_on_an_emulating_cpu_warns_once_with_the_measured_factor(probe):
    probe(fp32=300.0, bf16=75.0)
    with pytest.warns(RuntimeWarning, match=r"bf16 runs at 0\.25× fp32's speed \(75 vs 300 GFLOP/s\)"):
        assert hardware.check_bf16_requested() is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hardware.check_bf16_requested()  # once per process: no second warning
    assert hardware.precision_reason().startswith("fp32: bf16 matrix products run at 0.25×")


def test_bf16_where_it_pays_is_silent(probe):
    probe(fp32=300.0, bf16=1200.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hardware.check_bf16_requested() is True
    assert hardware.precision_reason().startswith("bf16: bf16 matrix products run at 4.00×")


def test_the_trainer_warns_when_asked_for_emulated_bf16(probe, tmp_path):
    import torch

    from bertology.train.trainer import Trainer
    from bertology.train.arguments import TrainingArguments

    probe(fp32=300.0, bf16=100.0)
    model = torch.nn.Linear(2, 2)
    with pytest.warns(RuntimeWarning, match="does not multiply bf16 natively"):
        Trainer(model, TrainingArguments(out_dir=str(tmp_path), steps=1, batch_size=1, bf16=True), lambda s: {}, None)


def test_resolve_device_takes_what_is_asked_and_names_a_missing_gpu(monkeypatch):
    from bertology.hardware import resolve_device

    said = []
    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto", said.append) == torch.device("cpu") and said == []
    for spec, message in (("cuda", "no CUDA GPU"), ("cuda:1", "no CUDA GPU"), ("gpu", "expected auto, cpu, cuda")):
        with pytest.raises(ValueError, match=message):
            resolve_device(spec)
