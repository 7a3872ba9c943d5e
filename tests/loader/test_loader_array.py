"""The framework-neutral array loader on each engine: NumPy batches from host data, NumPy or
CuPy batches from cuDF data, the same values either way (strings as Python objects, a null
string None on every engine)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow.loader.array import Loader
from tabflow.schema import Tags


@pytest.fixture
def frame():
    rng = np.random.default_rng(5)
    n = 90
    words = rng.choice(["ab", "cde", "f"], n).astype(object)
    words[[4, 40, 77]] = None
    return pd.DataFrame({
        "row_id": np.arange(n),
        "x": rng.random(n).astype("float32"),
        "word": pd.array(words, dtype="string"),
        "tags": pd.Series([list(range(k % 3)) for k in range(n)], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
        "y": rng.integers(0, 2, n).astype("float32"),
    })


def _dataset(frame, engine, tmp_path):
    # Files, so that every partition is read by the engine's own reader.
    tmp_path.mkdir(parents=True, exist_ok=True)
    for k in range(3):
        frame.iloc[k * 30:(k + 1) * 30].to_parquet(tmp_path / f"part_{k}.parquet", index=False)
    dataset = nvt.Dataset(str(tmp_path), engine="parquet", cpu=engine == "pandas")
    dataset.schema["y"] = dataset.schema["y"].with_tags(Tags.TARGET)
    return dataset


def _host(array):
    return array.get() if hasattr(array, "get") and not isinstance(array, np.ndarray) else np.asarray(array)


def _batches(loader):
    inputs, targets = [], []
    with loader:
        for batch_inputs, y in loader:
            inputs.append({name: _host(value) for name, value in batch_inputs.items()})
            targets.append(_host(y))
    return {name: np.concatenate([b[name] for b in inputs if "offsets" not in name]) for name in inputs[0] if "offsets" not in name}, inputs, np.concatenate(targets)


def test_batches_hold_the_rows_values_on_the_host(frame, engine, tmp_path, request):
    if engine == "cudf":
        request.getfixturevalue("cuda_device")  # cuDF's columns reach torch by DLPack, even for the CPU
    columns, batches, y = _batches(Loader(_dataset(frame, engine, tmp_path), batch_size=16, device="cpu"))
    assert all(isinstance(value, np.ndarray) for batch in batches for value in batch.values())
    order = columns["row_id"]
    assert sorted(order.tolist()) == list(range(len(frame)))
    expected = frame.set_index("row_id").loc[order]
    np.testing.assert_array_equal(columns["x"], expected["x"].to_numpy())
    np.testing.assert_array_equal(y, expected["y"].to_numpy())
    # Strings are Python objects; a null string is None on every engine (never NaN or pd.NA).
    assert columns["word"].dtype == object
    assert columns["word"].tolist() == [None if pd.isna(w) else w for w in expected["word"]]
    assert sum(w is None for w in columns["word"]) == 3
    lengths = [np.diff(b["tags__offsets"]) for b in batches]
    assert np.concatenate(lengths).tolist() == [len(t) for t in expected["tags"]]


@pytest.mark.gpu
@pytest.mark.usefixtures("cuda_device", "cudf_engine")
def test_cudf_batches_are_cupy_arrays_on_the_gpu(frame, tmp_path):
    import cupy

    with Loader(_dataset(frame, "cudf", tmp_path), batch_size=16) as loader:
        inputs, y = loader.peek()
    assert isinstance(inputs["x"], cupy.ndarray) and isinstance(y, cupy.ndarray)
    assert isinstance(inputs["word"], np.ndarray)  # strings have no device array: host objects
    on_host = _batches(Loader(_dataset(frame, "pandas", tmp_path / "host"), batch_size=16))[0]
    on_gpu = _batches(Loader(_dataset(frame, "cudf", tmp_path), batch_size=16))[0]
    for name in on_host:
        np.testing.assert_array_equal(on_gpu[name], on_host[name], err_msg=name)
