"""What this CPU (or CUDA GPU) does well, measured rather than assumed: its name, its matrix-product
flags, and a same-run probe of fp32 against bf16 matrix products.

bf16 autocast pays only where the CPU multiplies bf16 natively (AMX, AVX512-BF16); on AVX2-only
CPUs (AMD Zen, older Intel) it is emulated and slower than fp32, so precision is chosen by a probe.
A GPU gets the same rule (`cuda_precision`): its half precision (bf16 from Ampere on, else fp16)
against fp32 with TF32 matrix products where it has them.
"""

from __future__ import annotations

import platform
import time
import warnings
from functools import lru_cache
from pathlib import Path

import torch

FLAGS = (
    "amx_bf16",
    "avx512_bf16",
    "avx512f",
    "avx2",
    "amx_int8",
    "avx512_vnni",
    "avx_vnni",
)  # the last three: int8 (nn/int8.py)


def cpu_name_and_flags() -> tuple[str, list[str]]:
    """('Intel(R) Xeon(R) …', ['amx_bf16', 'avx512f', …]) from /proc/cpuinfo (the platform's name elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return platform.processor() or platform.machine(), []
    name = next(
        (line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")),
        platform.machine(),
    )
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return name, [f for f in FLAGS if f in flags]


def matmul_gflops(dtype: torch.dtype, n: int = 1024, repeats: int = 8) -> float:
    """Measured GFLOP/s of an n×n matrix product in `dtype` (one warm-up, then `repeats` timed)."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * n**3 * repeats / (time.perf_counter() - start) / 1e9


@lru_cache(maxsize=1)
def precision_probe() -> dict[str, float | bool]:
    """fp32 and bf16 matmul GFLOP/s measured now, and whether bf16 pays (≥ 1.5× fp32).

    An x86 CPU without AMX or AVX512-BF16 emulates bf16 at a few hundredths of fp32's speed: one
    full-size emulated product takes seconds (a minute on a busy machine), time a job's budget pays
    for, so such a CPU is measured on small products, which say as much."""
    native = platform.machine().lower() not in ("x86_64", "amd64") or bool(
        {"amx_bf16", "avx512_bf16"} & set(cpu_name_and_flags()[1])
    )
    n = 1024 if native else 256
    fp32, bf16 = matmul_gflops(torch.float32, n=n), matmul_gflops(torch.bfloat16, n=n)
    return {"fp32_gflops": round(fp32, 1), "bf16_gflops": round(bf16, 1), "bf16_pays": bf16 >= 1.5 * fp32}


def bf16_pays() -> bool:
    return bool(precision_probe()["bf16_pays"])


def precision_reason() -> str:
    """Why the probe picks what it picks, in words: 'bf16: bf16 matrix products run at 4.35× fp32's speed …'."""
    p = precision_probe()
    factor = p["bf16_gflops"] / max(p["fp32_gflops"], 1e-9)
    picked = "bf16" if p["bf16_pays"] else "fp32"
    return f"{picked}: bf16 matrix products run at {factor:.2f}× fp32's speed on this CPU (measured now; bf16 needs ≥ 1.5×)"


@lru_cache(maxsize=1)
def check_bf16_requested() -> bool:
    """Called where the user asked for bf16: warns once per process when this CPU emulates it
    (the measured factor in the message). Returns whether bf16 pays here."""
    if bf16_pays():
        return True
    name, flags = cpu_name_and_flags()
    p = precision_probe()
    warnings.warn(
        f"bf16 requested, but {name} [{', '.join(flags) or 'no AMX/AVX512/AVX2 flags'}] does not multiply "
        f"bf16 natively: measured now, bf16 runs at {p['bf16_gflops'] / max(p['fp32_gflops'], 1e-9):.2f}× "
        f"fp32's speed ({p['bf16_gflops']:.0f} vs {p['fp32_gflops']:.0f} GFLOP/s); fp32 will be as fast or "
        "faster",
        RuntimeWarning,
        stacklevel=3,
    )
    return False


def cpu_summary() -> str:
    """One line for benches and reports: CPU, flags, threads, the probe and the precision it picks."""
    name, flags = cpu_name_and_flags()
    p = precision_probe()
    return (
        f"{name} [{', '.join(flags) or 'no AMX/AVX512/AVX2 flags'}], {torch.get_num_threads()} threads; matmul "
        f"fp32 {p['fp32_gflops']:.0f} GFLOP/s, bf16 {p['bf16_gflops']:.0f} GFLOP/s → "
        f"{'bf16' if p['bf16_pays'] else 'fp32'}"
    )


HALF_PAYS = 1.5  # a half precision is chosen where its matrix products run at least this many times fp32's


def cuda_matmul_tflops(device: torch.device, dtype: torch.dtype, n: int = 4096, repeats: int = 20) -> float:
    """Measured TFLOP/s of an n×n matrix product in `dtype` on CUDA `device` (fp32 under the
    TF32 setting in force), timed between two synchronisations after one warm-up."""
    a, b = torch.randn(n, n, device=device).to(dtype), torch.randn(n, n, device=device).to(dtype)
    a @ b
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    torch.cuda.synchronize(device)
    return 2 * n**3 * repeats / (time.perf_counter() - start) / 1e12


@lru_cache(maxsize=None)
def cuda_half_dtype(device: torch.device) -> torch.dtype:
    """The half precision CUDA `device` multiplies natively: bf16 from Ampere (compute capability 8.0)
    on, fp16 before. (torch.cuda.is_bf16_supported asks about the current GPU, not this one.)"""
    return torch.bfloat16 if torch.cuda.get_device_capability(device)[0] >= 8 else torch.float16


def cuda_precision(device: torch.device) -> dict[str, object]:
    """What a training job on CUDA `device` runs in, measured now: fp32 (TF32 matrix products where
    the GPU has them, compute capability ≥ 8.0) against the half precision it multiplies natively
    (bf16 from Ampere on; fp16 before, which needs a gradient scaler). The half precision is picked
    where it runs ≥ HALF_PAYS× fp32; `reason` says so in words."""
    major, minor = torch.cuda.get_device_capability(device)
    name = torch.cuda.get_device_name(device)
    tf32 = major >= 8
    half = cuda_half_dtype(device)
    half_name = "bf16" if half == torch.bfloat16 else "fp16"
    previous = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = tf32  # fp32 as a fp32 run would multiply
        fp32 = cuda_matmul_tflops(device, torch.float32)
        fast = cuda_matmul_tflops(device, half)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    pays = fast >= HALF_PAYS * fp32
    pick = half_name if pays else "fp32"
    fp32_name = "fp32 (TF32 matrix products)" if tf32 else "fp32"
    return {
        "gpu": name,
        "capability": f"{major}.{minor}",
        "tf32": tf32,
        "half": half_name,
        "fp32_tflops": round(fp32, 1),
        "half_tflops": round(fast, 1),
        "pick": pick,
        "reason": f"{pick if pays else fp32_name}: {half_name} matrix products run at {fast / max(fp32, 1e-9):.2f}× "
        f"{fp32_name}'s speed on {name} (compute capability {major}.{minor}; measured now; "
        f"{half_name} needs ≥ {HALF_PAYS}×)",
    }


def resolve_device(spec: str = "auto", say=None) -> torch.device:
    """The device a job runs on: 'auto' takes the first CUDA GPU when there is one (and says so
    through `say`), else the CPU; 'cpu', 'cuda' and 'cuda:N' are taken as asked, and a GPU that is
    not there is an error naming it rather than a silent fall back to the CPU."""
    if spec == "auto":
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        if say is not None and device.type == "cuda":
            say(f"device auto: {torch.cuda.get_device_name(device)} ({device}); --device cpu to stay on the CPU")
        return device
    if spec != "cpu" and not (spec == "cuda" or (spec.startswith("cuda:") and spec[5:].isdigit())):
        raise ValueError(f"--device {spec!r}: expected auto, cpu, cuda or cuda:N")
    device = torch.device(spec)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {spec}: no CUDA GPU is available to this process (torch {torch.__version__})")
        index = device.index or 0
        if index >= torch.cuda.device_count():
            raise ValueError(f"--device {spec}: only {torch.cuda.device_count()} CUDA GPU(s) here")
        device = torch.device("cuda", index)
    return device
