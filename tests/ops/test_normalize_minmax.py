"""NormalizeMinMax against a pandas reference (NVTabular 23.08's float64 output and constant rule)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops


@pytest.fixture
def frame(rng):
    n = 150
    x = rng.normal(0, 5, n)
    x[rng.choice(n, 12, replace=False)] = np.nan
    ints = pd.array(rng.integers(-100, 100, n), dtype="Int64")
    ints[[0, 7, 77]] = pd.NA
    return pd.DataFrame({"x": x, "i": ints, "const": np.full(n, 2, dtype="int32")})


def _reference(series: pd.Series) -> np.ndarray:
    values = series.to_numpy("float64", na_value=np.nan)
    low, high = np.nanmin(values), np.nanmax(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        # NVTabular 23.08: a column fitted as constant becomes x / (2x).
        return (values - low) / (high - low) if high > low else values / (2 * values)


def test_matches_reference(frame, to_engine):
    wf = nvt.Workflow(["x", "i", "const"] >> ops.NormalizeMinMax())
    out = to_host(wf.fit_transform(nvt.Dataset(to_engine(frame), npartitions=3)).compute())
    assert wf.output_schema.dtypes == {"x": "float64", "i": "float64", "const": "float64"}
    for name in ["x", "i", "const"]:
        assert out[name].dtype == np.float64
        np.testing.assert_allclose(out[name].to_numpy(), _reference(frame[name]), rtol=1e-12, atol=1e-14)
    assert out["x"].isna().tolist() == frame["x"].isna().tolist()
    assert out["i"].isna().tolist() == frame["i"].isna().tolist()
    assert out["x"].min() == 0.0 and out["x"].max() == 1.0
    assert (out["const"] == 0.5).all()


def test_constant_column_as_nvtabular_gives_half_and_nan_for_zero():
    wf = nvt.Workflow(["k", "z"] >> ops.NormalizeMinMax(out_dtype="float32"))
    wf.fit(pd.DataFrame({"k": [5.0, 5.0, 5.0], "z": [0, 0, 0]}))
    assert wf.ops[0].mins == {"k": 5.0, "z": 0.0} and wf.ops[0].maxs == {"k": 5.0, "z": 0.0}
    out = wf.transform(pd.DataFrame({"k": [5.0, 7.0, 0.0, np.nan], "z": [0, 0, 0, 0]}))
    assert out.dtypes.astype(str).tolist() == ["float32", "float32"]
    np.testing.assert_array_equal(out["k"], [0.5, 0.5, np.nan, np.nan])
    assert out["z"].isna().all()


def test_list_columns_are_scaled_element_wise():
    rows = [[2.0, 4.0], None, [6.0, None]]
    frame = pd.DataFrame({"l": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(pa.float64()))))})
    wf = nvt.Workflow(["l"] >> ops.NormalizeMinMax())
    out = wf.fit_transform(frame)
    np.testing.assert_equal(out["l"].tolist(), [[0.0, 0.5], [], [1.0, np.nan]])  # NaN: pandas' null item
    assert wf.output_schema["l"].dtype == "list<float64>"


def test_many_partitions_equal_one(frame):
    fitted = [
        nvt.Workflow(["x", "i"] >> ops.NormalizeMinMax()).fit(ds).ops[0]
        for ds in (
            nvt.Dataset(frame, npartitions=1),
            nvt.Dataset(frame, npartitions=7),
            dataset_with_empty_partitions(frame, 4),
        )
    ]
    for op in fitted[1:]:
        assert op.mins_ == fitted[0].mins_ and op.maxs_ == fitted[0].maxs_
    assert fitted[0].mins_["x"] == np.nanmin(frame["x"])


def test_unseen_values_all_null_column_and_out_dtype():
    train = pd.DataFrame({"x": [0.0, 10.0], "n": [np.nan, np.nan]})
    with pytest.warns(UserWarning, match=r"NormalizeMinMax: column\(s\) \['n'\] held no finite value"):
        wf = nvt.Workflow(["x", "n"] >> ops.NormalizeMinMax(out_dtype="float64")).fit(train)
    out = wf.transform(pd.DataFrame({"x": [20.0, -5.0], "n": [3.0, 4.0]}))
    assert out["x"].tolist() == [2.0, -0.5]
    assert out["n"].isna().all() and out["n"].dtype == np.float64


def test_save_load(frame, tmp_path):
    wf = nvt.Workflow(["x", "i"] >> ops.NormalizeMinMax()).fit(frame)
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), wf.transform(frame))


def test_errors(frame):
    with pytest.raises(ops.NotFittedError):
        ops.NormalizeMinMax().transform(nvt.ColumnSelector(["x"]), frame)
    df = pd.DataFrame({"tag": pd.array(["a"], dtype="string")})
    with pytest.raises(TypeError, match="'tag'"):
        nvt.Workflow(["tag"] >> ops.NormalizeMinMax()).fit(df)


def test_infinities_are_left_out_of_min_and_max(rng, to_engine):
    n = 200
    x = rng.normal(0, 5, n)
    x[rng.choice(n, 15, replace=False)] = np.nan
    x[[1, 100]] = np.inf
    x[[2]] = -np.inf
    frame = pd.DataFrame({"x": x, "const": np.where(np.arange(n) == 9, -np.inf, 2.0)})
    wf = nvt.Workflow(["x", "const"] >> ops.NormalizeMinMax(out_dtype="float64"))
    out = to_host(wf.fit_transform(dataset_with_empty_partitions(to_engine(frame), 3)).compute())
    for name in ["x", "const"]:
        values = frame[name].to_numpy()
        finite = values[np.isfinite(values)]
        low, high = finite.min(), finite.max()
        with np.errstate(invalid="ignore"):
            expected = (values - low) / (high - low) if high > low else values / (2 * values)
        np.testing.assert_allclose(out[name].to_numpy(), expected, rtol=1e-12)
        assert wf.ops[0].mins_[name] == low and wf.ops[0].maxs_[name] == high
    assert out["x"].isna().tolist() == np.isnan(x).tolist()
    assert out["x"][np.isfinite(x)].between(0, 1).all()
    assert out["x"][1] == np.inf and out["x"][2] == -np.inf
    # The finite part of "const" is constant: 0.5, and the infinity x / (2x) is NaN.
    assert np.isnan(out["const"][9]) and (out["const"].drop(9) == 0.5).all()


def test_column_without_finite_values_warns_and_is_null():
    train = pd.DataFrame({"x": [1.0, 2.0], "inf": [np.inf, np.nan]})
    with pytest.warns(UserWarning, match=r"NormalizeMinMax: column\(s\) \['inf'\] held no finite value"):
        wf = nvt.Workflow(["x", "inf"] >> ops.NormalizeMinMax()).fit(train)
    assert wf.transform(train)["inf"].isna().all()
