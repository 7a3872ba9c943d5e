"""The cuDF engine's GPU memory: RMM's default replaced by a cudaMallocAsync pool once, a
resource chosen by the user kept. On the CPU a stand-in ``rmm`` module records what is set;
the GPU test checks the real one in a fresh process."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import types

import pytest

from tabflow.backends import _device_memory, reset_gpu_memory


class _Resource:
    pass


def _fake_rmm(async_error: Exception | None = None) -> types.ModuleType:
    """An ``rmm`` with the attributes the engine uses; ``calls`` records what was done."""
    rmm = types.ModuleType("rmm")
    mr = types.SimpleNamespace()

    class CudaMemoryResource(_Resource):
        pass

    class CudaAsyncMemoryResource(_Resource):
        def __init__(self) -> None:
            if async_error is not None:
                raise async_error

    class PoolMemoryResource(_Resource):
        pass

    class ManagedMemoryResource(_Resource):
        pass

    state = {"current": CudaMemoryResource()}
    rmm.calls = []

    def set_current_device_resource(resource):
        rmm.calls.append(("set", type(resource).__name__))
        state["current"] = resource

    def reinitialize(managed_memory=False):
        rmm.calls.append(("reinitialize", managed_memory))
        state["current"] = ManagedMemoryResource() if managed_memory else CudaMemoryResource()

    mr.CudaMemoryResource = CudaMemoryResource
    mr.CudaAsyncMemoryResource = CudaAsyncMemoryResource
    mr.PoolMemoryResource = PoolMemoryResource
    mr.get_current_device_resource = lambda: state["current"]
    mr.set_current_device_resource = set_current_device_resource
    rmm.mr = mr
    rmm.reinitialize = reinitialize
    return rmm


@pytest.fixture
def fresh(monkeypatch):
    """A process that has not used the cuDF engine yet, with the stand-in RMM."""
    monkeypatch.setattr(_device_memory, "_DECISION", None)
    monkeypatch.delenv(_device_memory.POOL_VARIABLE, raising=False)

    def install(rmm):
        monkeypatch.setitem(sys.modules, "rmm", rmm)
        return rmm

    return install


def _current(rmm) -> str:
    return type(rmm.mr.get_current_device_resource()).__name__


def test_the_default_resource_becomes_an_async_pool_once(fresh, caplog):
    rmm = fresh(_fake_rmm())
    with caplog.at_level(logging.INFO, logger="tabflow"):
        decision = _device_memory.use_async_pool()
    assert _current(rmm) == "CudaAsyncMemoryResource"
    assert "cudaMallocAsync" in decision and "cudaMallocAsync" in caplog.text
    # A resource set afterwards by the user is not replaced by later uses of the engine.
    rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())
    assert _device_memory.use_async_pool() == decision
    assert _current(rmm) == "CudaMemoryResource"
    assert [call for call in rmm.calls if call[1] == "CudaAsyncMemoryResource"] == [("set", "CudaAsyncMemoryResource")]


def test_a_resource_set_before_is_kept(fresh):
    rmm = fresh(_fake_rmm())
    rmm.mr.set_current_device_resource(rmm.mr.PoolMemoryResource())
    decision = _device_memory.use_async_pool()
    assert _current(rmm) == "PoolMemoryResource"
    assert "PoolMemoryResource" in decision and "kept" in decision


def test_the_environment_variable_keeps_rmm_s_default(fresh, monkeypatch):
    rmm = fresh(_fake_rmm())
    monkeypatch.setenv(_device_memory.POOL_VARIABLE, "0")
    decision = _device_memory.use_async_pool()
    assert _current(rmm) == "CudaMemoryResource"
    assert _device_memory.POOL_VARIABLE in decision


def test_a_driver_without_cudamallocasync_keeps_the_default(fresh):
    rmm = fresh(_fake_rmm(async_error=RuntimeError("RMM failure: cudaMallocAsync not supported with this CUDA driver/runtime version")))
    decision = _device_memory.use_async_pool()
    assert _current(rmm) == "CudaMemoryResource"
    assert "not available" in decision and "not supported" in decision


def test_threads_decide_once(fresh):
    import threading

    rmm = fresh(_fake_rmm())
    barrier = threading.Barrier(8)
    decisions = []

    def use():
        barrier.wait()
        decisions.append(_device_memory.use_async_pool())

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(decisions)) == 1
    assert rmm.calls == [("set", "CudaAsyncMemoryResource")]


@pytest.mark.parametrize("managed", [False, True])
def test_reset_gpu_memory_rebuilds_the_engine_s_default(fresh, managed):
    rmm = fresh(_fake_rmm())
    _device_memory.use_async_pool()
    reset_gpu_memory(managed_memory=managed)
    assert rmm.calls[1] == ("reinitialize", managed)
    assert _current(rmm) == ("ManagedMemoryResource" if managed else "CudaAsyncMemoryResource")


def test_without_rmm_nothing_is_chosen(fresh, monkeypatch):
    monkeypatch.setitem(sys.modules, "rmm", None)  # import rmm raises ImportError
    assert _device_memory.use_async_pool() == "RMM is not installed"
    reset_gpu_memory()  # nothing to reset, no error


@pytest.mark.gpu
def test_the_cudf_engine_runs_on_the_async_pool(tmp_path):
    pytest.importorskip("cudf")
    script = textwrap.dedent(
        f"""
        import pandas as pd, rmm
        import tabflow as nvt
        from tabflow import ops
        frame = pd.DataFrame({{"c": ["a", "b", None, "a"], "x": [1.0, 2.0, None, 4.0]}})
        frame.to_parquet(r"{tmp_path / 'in.parquet'}")
        workflow = nvt.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
        out = workflow.fit_transform(nvt.Dataset(r"{tmp_path / 'in.parquet'}", cpu=False)).compute()
        print(type(rmm.mr.get_current_device_resource()).__name__, len(out))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["CudaAsyncMemoryResource", "4"]
