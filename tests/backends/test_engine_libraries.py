"""What the layers above get of the engines' libraries, from the backends only."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from tabflow.backends import array_library, cuda_memory_info, frame_library, gpu_available, reset_gpu_memory


def test_the_frame_library_is_the_engines_module():
    assert frame_library("pandas") is pd
    frame = frame_library("pandas").DataFrame({"a": [1, None]})
    assert frame["a"].isna().tolist() == [False, True]
    with pytest.raises(ValueError, match="engine"):
        frame_library("polars")


def test_the_array_library_holds_the_engines_columns(monkeypatch):
    assert array_library("pandas") is np
    values = array_library("pandas").asarray(pd.Series([1.5, None]).to_numpy())
    assert np.isnan(values[1]) and values[0] == 1.5
    with pytest.raises(ValueError, match="'polars'"):
        array_library("polars")
    monkeypatch.setitem(sys.modules, "cupy", None)  # CuPy not installed
    with pytest.raises(ImportError, match="CuPy.*gpu-cu12"):
        array_library("cudf")


@pytest.mark.skipif(gpu_available(), reason="cuDF is usable here")
def test_without_cudf_the_gpu_library_is_an_import_error_naming_the_extras():
    with pytest.raises(ImportError, match="gpu-cu12"):
        frame_library("cudf")


def test_without_gpu_libraries_there_is_no_device_memory_and_nothing_to_reset(monkeypatch):
    for name in ("cupy", "pynvml", "rmm"):
        monkeypatch.setitem(sys.modules, name, None)
    assert cuda_memory_info() is None and cuda_memory_info(3) is None
    assert reset_gpu_memory(managed_memory=True) is None


# The reason the GPU engine gives when its libraries are installed but fail: the error itself,
# and a remedy for what failed, never numpy blamed for everything. Each case is a fake package
# on the path of a fresh interpreter.
_FAILURES = {
    "numpy": ({"cudf": 'raise AttributeError("module \'numpy\' has no attribute \'row_stack\'")'},
              "cannot be imported: AttributeError: module 'numpy' has no attribute 'row_stack'", "numpy<2.5"),
    "shared library": ({"cudf": 'raise OSError("libcudf.so: cannot open shared object file: No such file or directory")'},
                       "cannot be imported: OSError: libcudf.so", "shared library did not load"),
    "driver": ({"cudf": 'raise RuntimeError("CUDA driver version is insufficient for CUDA runtime version")'},
               "cannot be imported: RuntimeError: CUDA driver version", "CUDA driver is missing or older"),
    "cupy": ({"cudf": "import cupy", "cupy": 'raise ImportError("cupy_backends.cuda.api.runtime: version mismatch")'},
             "cannot be imported: ImportError: cupy_backends", "CuPy does not match"),
    "first compile": ({"cudf": "", "numba": "", "numba/cuda": "", "numba/cuda/np": "",
                       "numba/cuda/np/arrayobj": 'raise AttributeError("module \'numpy\' has no attribute \'row_stack\'")'},
                      "cuDF imports, but numba-cuda cannot compile GPU functions", "numpy<2.5"),
}


@pytest.mark.parametrize("case", sorted(_FAILURES))
def test_a_gpu_library_that_fails_is_reported_with_what_failed(tmp_path, case):
    import os
    import subprocess

    modules, error, remedy = _FAILURES[case]
    site = tmp_path / "site"
    for name, source in modules.items():
        package = site / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(source + "\n")
    script = "from tabflow.backends import gpu_unavailable_reason; print(gpu_unavailable_reason())"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    reason = done.stdout.strip()
    assert error in reason and remedy in reason and "cpu=True" in reason, reason
    if case != "numpy" and case != "first compile":
        assert "numpy<2.5" not in reason, reason  # numpy is not blamed for what it did not do
