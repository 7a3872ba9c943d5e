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
