"""The device the suite's device-aware tests run on, chosen in one place: the CPU, unless
`pytest --device cuda` (or cuda:N) or BERTOLOGY_TEST_DEVICE says otherwise; tests marked `gpu`
skip, saying why, where CUDA is absent."""

import os

import pytest
import torch


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        default=None,
        help="device of the device-aware tests: cpu (default, or $BERTOLOGY_TEST_DEVICE), cuda, cuda:N",
    )


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU; torch {torch.__version__} sees none here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def device(request) -> str:
    spec = request.config.getoption("--device") or os.environ.get("BERTOLOGY_TEST_DEVICE", "cpu")
    if spec != "cpu" and not torch.cuda.is_available():
        pytest.skip(f"--device {spec}: no CUDA GPU here")
    return spec
