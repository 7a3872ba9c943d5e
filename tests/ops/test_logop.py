"""LogOp against numpy's log(1 + x) in float32."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops


@pytest.fixture
def frame(rng):
    n = 120
    x = rng.exponential(100.0, n)
    x[[4, 40]] = np.nan
    masked = pd.array(rng.integers(0, 10_000, n), dtype="Int64")
    masked[[1, 2]] = pd.NA
    return pd.DataFrame({"x": x, "m": masked})


def _reference(series: pd.Series) -> np.ndarray:
    return np.log(series.to_numpy("float32", na_value=np.nan) + np.float32(1))


def test_matches_numpy(frame, to_engine):
    wf = nvt.Workflow(["x", "m"] >> ops.LogOp())
    out = to_host(wf.fit_transform(nvt.Dataset(to_engine(frame), npartitions=3)).compute())
    assert wf.output_schema.dtypes == {"x": "float32", "m": "float32"}
    for name in ["x", "m"]:
        assert out[name].dtype == np.float32
        np.testing.assert_allclose(out[name].to_numpy(), _reference(frame[name]), rtol=1e-6)
        assert out[name].isna().tolist() == frame[name].isna().tolist()


def test_values_below_minus_one_and_no_warning():
    df = pd.DataFrame({"x": [-2.0, -1.0, 0.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = nvt.Workflow(["x"] >> ops.LogOp()).fit_transform(df)
    assert np.isnan(out["x"][0]) and out["x"][1] == -np.inf and out["x"][2] == 0.0


def test_empty_partitions_and_save_load(frame, tmp_path):
    wf = nvt.Workflow(["x", "m"] >> ops.LogOp())
    out = to_host(wf.fit_transform(dataset_with_empty_partitions(frame)).compute())
    pd.testing.assert_frame_equal(out, wf.transform(frame))
    wf.save(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(nvt.Workflow.load(str(tmp_path / "wf")).transform(frame), out)


def test_string_column_is_rejected():
    df = pd.DataFrame({"url": pd.array(["a"], dtype="string")})
    with pytest.raises(TypeError, match="'url'"):
        nvt.Workflow(["url"] >> ops.LogOp()).fit(df)


def test_list_columns_are_transformed_element_wise(engine, to_engine):
    # NVTabular 23.08: log(1 + x) of every element, in float32, lists kept.
    rows = [[0.0, np.e - 1], None, [], [9.0, None]]
    frame = pd.DataFrame({"l": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(pa.float64()))))})
    wf = nvt.Workflow(["l"] >> ops.LogOp())
    out = to_host(wf.fit_transform(to_engine(frame)))
    # A frame in gives pandas' form of a list column: one float32 array per row, NaN for a null item.
    if engine == "pandas":
        assert out["l"].dtype == object and {r.dtype for r in out["l"]} == {np.dtype("float32")}
    got = [np.asarray(r, dtype=float) for r in out["l"].tolist()]  # cuDF's null items: None
    assert [len(r) for r in got] == [2, 0, 0, 2]
    np.testing.assert_allclose(got[0], [0.0, 1.0], rtol=1e-6)
    assert got[3][0] == pytest.approx(np.log1p(9.0), rel=1e-6) and np.isnan(got[3][1])
    assert wf.output_schema["l"].dtype == "list<float32>"
