"""What a user gets from `pip install bertology`: the wheel, installed into a fresh virtual environment
beside a torch that is already there, runs the demo from an empty directory (its data travels in the wheel)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.integration


def _run(*command, cwd=None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the checkout's sources must not be seen
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_the_wheel_installs_beside_a_users_torch_and_runs_the_demo(tmp_path):
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", dist, ROOT)
    wheel = next(dist.glob("bertology-*.whl"))
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    pip, python = venv / "bin" / "pip", venv / "bin" / "python"
    _run(pip, "install", "--quiet", "torch==2.13.0")  # the user's torch, there before bertology
    _run(pip, "install", "--quiet", f"{wheel}[demo]")
    assert _run(python, "-c", "import torch; print(torch.__version__)").strip().startswith("2.13.0")
    assert _run(venv / "bin" / "bertology", "--version").strip().startswith("bertology ")
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    _run(venv / "bin" / "bertology", "demo", "--quick", "--out", "demo", cwd=empty)
    assert (empty / "demo" / "report.md").is_file() and (empty / "demo" / "results.json").is_file()
