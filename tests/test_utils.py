"""tabflow.utils: memory sizes against /proc/meminfo, RMM rounding, the NVML-style helpers."""

from __future__ import annotations

import os
import sys
import types

import pytest
import torch

import tabflow.utils
from tabflow.utils import (
    _pynvml_mem_size,
    device_mem_size,
    get_rmm_size,
    pynvml_mem_size,
)

needs_meminfo = pytest.mark.skipif(not os.path.exists("/proc/meminfo"), reason="needs Linux /proc/meminfo")


def meminfo_bytes(field: str) -> int:
    """One /proc/meminfo field in bytes, parsed independently of tabflow."""
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


@pytest.fixture
def no_cuda(monkeypatch):
    """No GPU library installed (import cupy and import pynvml raise ImportError)."""
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setitem(sys.modules, "pynvml", None)


class _CudaRuntimeError(RuntimeError):
    pass


def _fake_cupy(devices: int, current: int = 0) -> types.SimpleNamespace:
    """CuPy's CUDA runtime API for ``devices`` GPUs with 3 GiB free of 8 GiB each."""
    state = {"device": current}

    def get_device_count():
        if devices == 0:
            raise _CudaRuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
        return devices

    class Device:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            self.previous, state["device"] = state["device"], self.index
            return self

        def __exit__(self, *exc):
            state["device"] = self.previous

    def mem_get_info():
        state.setdefault("asked", []).append(state["device"])
        return 3 * 2**30, 8 * 2**30

    runtime = types.SimpleNamespace(
        CUDARuntimeError=_CudaRuntimeError, getDeviceCount=get_device_count,
        getDevice=lambda: state["device"], memGetInfo=mem_get_info,
    )
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime, Device=Device), state=state)


@pytest.fixture
def fake_gpu(monkeypatch):
    """One CUDA device with 3 GiB free of 8 GiB, as CuPy would report it."""
    cupy = _fake_cupy(devices=1)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return cupy


@needs_meminfo
def test_host_memory_matches_proc_meminfo():
    assert device_mem_size("total", cpu=True) == meminfo_bytes("MemTotal")
    # Free memory moves while the test runs: compare within 256 MiB.
    assert abs(device_mem_size("free", cpu=True) - meminfo_bytes("MemFree")) < 256 * 2**20


@needs_meminfo
def test_without_a_gpu_device_memory_is_host_memory(no_cuda):
    assert device_mem_size() == device_mem_size(kind="total", cpu=True) == meminfo_bytes("MemTotal")


@needs_meminfo
def test_host_memory_without_psutil(monkeypatch, no_cuda):
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil now raises ImportError
    assert device_mem_size("total") == meminfo_bytes("MemTotal")
    assert abs(device_mem_size("free", cpu=True) - meminfo_bytes("MemFree")) < 256 * 2**20


def test_host_memory_without_psutil_or_proc_meminfo(monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)
    monkeypatch.setattr(tabflow.utils, "_read_meminfo", dict)
    expected = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert device_mem_size("total", cpu=True) == expected


def test_gpu_memory_comes_from_cupy(fake_gpu):
    assert device_mem_size() == device_mem_size("total") == 8 * 2**30
    assert device_mem_size("free") == 3 * 2**30


def test_gpu_memory_is_that_of_the_current_device(monkeypatch):
    cupy = _fake_cupy(devices=2, current=1)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    assert device_mem_size() == 8 * 2**30
    assert cupy.state["asked"] == [1] and cupy.state["device"] == 1


@needs_meminfo
def test_cupy_without_a_device_gives_host_memory(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(devices=0))
    assert device_mem_size("total") == meminfo_bytes("MemTotal")


def test_gpu_memory_from_nvml_without_cupy(monkeypatch):
    memory = types.SimpleNamespace(total=16 * 2**30, free=5 * 2**30)
    fake = types.SimpleNamespace(
        NVMLError=RuntimeError, nvmlInit=lambda: None, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda index: index, nvmlDeviceGetMemoryInfo=lambda handle: memory,
    )
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert device_mem_size("total") == 16 * 2**30 and device_mem_size("free") == 5 * 2**30


@needs_meminfo
def test_cpu_true_ignores_the_gpu(fake_gpu):
    assert device_mem_size("total", cpu=True) == meminfo_bytes("MemTotal")


@pytest.mark.parametrize("call", [lambda: device_mem_size("used"), lambda: device_mem_size("used", cpu=True),
                                  lambda: pynvml_mem_size("largest")])
def test_unknown_kind_is_an_error(call):
    with pytest.raises(ValueError, match="not a supported memory kind"):
        call()


@pytest.mark.parametrize("size", [0, 1, 255, 256, 257, 1000, 10**12 + 7, 0.8 * 2**33, 1e9 + 0.5])
def test_get_rmm_size_rounds_down_to_256_bytes(size):
    rounded = get_rmm_size(size)
    assert isinstance(rounded, int)
    assert rounded == int(size) - int(size) % 256
    assert rounded % 256 == 0 and 0 <= size - rounded < 256


def test_get_rmm_size_of_a_negative_size_is_an_error():
    with pytest.raises(ValueError, match="negative"):
        get_rmm_size(-1)


def test_pynvml_mem_size_uses_nvml(monkeypatch):
    calls = []
    memory = types.SimpleNamespace(total=16 * 2**30, free=5 * 2**30)
    fake = types.SimpleNamespace(
        nvmlInit=lambda: calls.append("init"),
        nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlDeviceGetHandleByIndex=lambda index: calls.append(f"handle {index}") or index,
        nvmlDeviceGetMemoryInfo=lambda handle: memory,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert pynvml_mem_size("total", index=1) == 16 * 2**30
    assert _pynvml_mem_size(kind="free") == 5 * 2**30
    assert calls == ["init", "handle 1", "shutdown", "init", "handle 0", "shutdown"]


def test_pynvml_mem_size_falls_back_to_cupy(monkeypatch, fake_gpu):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert pynvml_mem_size("free") == 3 * 2**30
    with pytest.raises(RuntimeError, match="no GPU 1"):
        pynvml_mem_size("total", index=1)


def test_pynvml_mem_size_without_any_gpu(monkeypatch, no_cuda):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(RuntimeError, match="nvidia-ml-py"):
        pynvml_mem_size()


def test_notebook_style_sizing(no_cuda):
    # As NVTabular notebooks size an RMM pool or Dask worker limit from the device.
    pool = get_rmm_size(0.8 * device_mem_size(kind="total"))
    assert 0 < pool <= device_mem_size(kind="total") and pool % 256 == 0


@pytest.mark.gpu
def test_real_gpu_memory(cuda_device):
    pytest.importorskip("cupy")  # the GPU engine's array library, which tabflow asks
    free, total = torch.cuda.mem_get_info()
    # device_mem_size promises cudaMemGetInfo's numbers (what allocations can use) ...
    assert device_mem_size("total") == total
    assert 0 < device_mem_size("free") <= total
    # ... pynvml_mem_size NVML's (what nvidia-smi shows), which also counts the memory the
    # driver keeps for itself: 85,520,809,984 against 85,017,493,504 bytes on an H100.
    nvml_total = pynvml_mem_size("total")
    assert total <= nvml_total <= total * 1.02
