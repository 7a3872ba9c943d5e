"""Clip: bounds, dtype rules and errors against numpy/pandas references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops


@pytest.fixture
def frame(rng):
    n = 100
    masked = pd.array(rng.integers(-20, 20, n), dtype="Int64")
    masked[[1, 50, 99]] = pd.NA
    floats = rng.normal(0, 10, n).astype("float32")
    floats[[2, 3]] = np.nan
    return pd.DataFrame(
        {
            "i": rng.integers(-20, 20, n),
            "m": masked,
            "f": floats,
            "u": rng.integers(0, 255, n).astype("uint8"),
        }
    )


def _run(frame, op, columns, npartitions=3):
    wf = nvt.Workflow(columns >> op)
    out = wf.fit_transform(nvt.Dataset(frame, npartitions=npartitions)).compute()
    return wf, to_host(out)


def test_integer_bounds_keep_dtypes(frame, to_engine):
    wf, out = _run(to_engine(frame), ops.Clip(min_value=-5, max_value=5), ["i", "m", "f", "u"])
    assert {c: str(out[c].dtype) for c in out.columns} == {"i": "int64", "m": "Int64", "f": "float32", "u": "uint8"}
    assert wf.output_schema.dtypes == {"i": "int64", "m": "Int64", "f": "float32", "u": "uint8"}
    np.testing.assert_array_equal(out["i"], np.clip(frame["i"], -5, 5))
    np.testing.assert_array_equal(out["u"], np.clip(frame["u"], 0, 5))
    np.testing.assert_allclose(out["f"], np.clip(frame["f"], -5, 5))
    assert out["m"].isna().tolist() == frame["m"].isna().tolist()
    expected = frame["m"].astype("float64").clip(-5, 5)
    np.testing.assert_array_equal(out["m"].to_numpy("float64", na_value=np.nan), expected.to_numpy())


def test_integral_float_bounds_keep_integers(frame):
    wf, out = _run(frame, ops.Clip(min_value=0.0, max_value=10.0), ["i", "m"])
    assert str(out["i"].dtype) == "int64" and str(out["m"].dtype) == "Int64"
    assert wf.output_schema.dtypes == {"i": "int64", "m": "Int64"}
    np.testing.assert_array_equal(out["i"], np.clip(frame["i"], 0, 10))


def test_fractional_bound_makes_integers_float(frame):
    wf, out = _run(frame, ops.Clip(min_value=0.5), ["i", "m", "f"])
    assert wf.output_schema.dtypes == {"i": "float64", "m": "float64", "f": "float32"}
    assert {c: str(out[c].dtype) for c in out.columns} == wf.output_schema.dtypes
    np.testing.assert_array_equal(out["i"], np.clip(frame["i"].astype("float64"), 0.5, None))
    expected = frame["m"].to_numpy("float64", na_value=np.nan).clip(0.5, None)
    np.testing.assert_array_equal(out["m"].to_numpy(), expected)


def test_upper_bound_only_and_out_of_range_bounds(frame):
    _, out = _run(frame, ops.Clip(max_value=3), ["i"])
    np.testing.assert_array_equal(out["i"], np.minimum(frame["i"], 3))
    _, out = _run(frame, ops.Clip(min_value=-1000, max_value=1000), ["u"])
    assert out["u"].dtype == np.uint8
    np.testing.assert_array_equal(out["u"], frame["u"])


def test_empty_partitions_and_save_load(frame, tmp_path):
    wf = nvt.Workflow(["i", "m", "f"] >> ops.Clip(min_value=-3, max_value=7.5))
    out = to_host(wf.fit_transform(dataset_with_empty_partitions(frame)).compute())
    expected = wf.transform(frame)
    pd.testing.assert_frame_equal(out, expected)
    wf.save(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(nvt.Workflow.load(str(tmp_path / "wf")).transform(frame), expected)


@pytest.mark.parametrize(
    ("op", "error", "message"),
    [
        (ops.Clip(), ValueError, "min_value, max_value or both"),
        (ops.Clip(min_value=5, max_value=1), ValueError, "greater than max_value"),
        (ops.Clip(min_value="0"), TypeError, "must be a number"),
        (ops.Clip(min_value=float("nan")), TypeError, "must be a number"),
    ],
)
def test_bad_bounds(frame, op, error, message):
    with pytest.raises(error, match=message):
        nvt.Workflow(["i"] >> op).fit(frame)


def test_string_column_is_rejected():
    df = pd.DataFrame({"city": pd.array(["a", None], dtype="string")})
    with pytest.raises(TypeError, match="'city'"):
        nvt.Workflow(["city"] >> ops.Clip(min_value=0)).fit(df)
