"""`bertology.load(..., device=…)`: the model goes where it is asked, a GPU that is not there is an error
before anything is read, and on a GPU the outputs are the CPU's within half-precision tolerance."""

import pytest
import torch

import bertology
from bertology.models import get_family, task_class
from bertology.tasks.forward import inference_dtype, precision, precision_name, to_cpu
from bertology.train.device import to_device

FAMILIES = ["bert", "roberta", "albert", "distilbert"]
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error where no CUDA GPU is")
gpu = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """{family: directory} of tiny MLM models, saved."""
    root = tmp_path_factory.mktemp("device")
    out = {}
    for family in FAMILIES:
        torch.manual_seed(0)
        model = task_class(family, "ForMaskedLM")(get_family(family).preset("tiny", vocab_size=99))
        model.save(root / family)
        out[family] = root / family
    return out


def batch():
    ids = torch.randint(5, 99, (3, 12), generator=torch.Generator().manual_seed(0))
    mask = (torch.arange(12)[None] < torch.tensor([[12], [5], [9]])).long()
    return ids, mask


def test_load_puts_the_model_on_the_device_asked(saved):
    default = bertology.load(saved["bert"])
    for device in ("cpu", torch.device("cpu"), "auto" if not torch.cuda.is_available() else "cpu"):
        model = bertology.load(saved["bert"], device=device)
        assert {p.device.type for p in model.parameters()} == {"cpu"}
        ids, mask = batch()
        with torch.no_grad():
            assert torch.equal(
                model(input_ids=ids, attention_mask=mask).logits, default(input_ids=ids, attention_mask=mask).logits
            )


@no_cuda
def test_a_gpu_asked_for_and_absent_is_an_error_before_reading(saved, tmp_path):
    with pytest.raises(ValueError, match="--device cuda: no CUDA GPU"):
        bertology.load(tmp_path / "not-even-there", device="cuda")  # the device fails first, not the directory
    with pytest.raises(ValueError, match="expected auto, cpu, cuda or cuda:N"):
        bertology.load(saved["bert"], device="gpu")


def test_on_the_cpu_nothing_moves_and_the_callers_precision_holds():
    cpu = torch.device("cpu")
    batch_ = {"input_ids": torch.ones(2, 3, dtype=torch.long)}
    assert to_device(batch_, cpu) is batch_ and inference_dtype(cpu) is None
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with precision(cpu):  # no bf16 asked: an autocast around the call stays in force
            assert torch.is_autocast_enabled("cpu")
    with precision(cpu, bf16=True):
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16 and torch.is_autocast_enabled("cpu")
    assert precision_name(cpu) == "float32" and precision_name(cpu, bf16=True) == "bfloat16 (autocast)"


def test_to_cpu_moves_every_tensor_of_an_output():
    from bertology.models.outputs import BaseModelOutput

    out = BaseModelOutput(torch.zeros(1, 2, 3), None, (torch.zeros(1), torch.ones(1)), None)
    moved = to_cpu(out)
    assert (
        moved.pooler_output is None and len(moved.hidden_states) == 2 and moved.last_hidden_state.device.type == "cpu"
    )


@pytest.mark.parametrize("family", FAMILIES)
@gpu[0]
@gpu[1]
def test_a_model_on_cuda_gives_the_cpu_models_outputs(saved, family):
    """Padded batches on CUDA take the variable-length attention over packed rows, under the GPU's autocast."""
    cpu, cuda = bertology.load(saved[family]), bertology.load(saved[family], device="cuda")
    assert {p.device.type for p in cuda.parameters()} == {"cuda"}
    ids, mask = batch()
    with torch.no_grad():
        expected = cpu(input_ids=ids, attention_mask=mask).logits
        with precision(torch.device("cuda")):
            got = cuda(input_ids=ids.cuda(), attention_mask=mask.cuda()).logits.float().cpu()
    real = mask.bool()
    assert torch.allclose(got[real], expected[real], atol=5e-2, rtol=2e-2)
