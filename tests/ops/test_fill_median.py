"""FillMedian: exact medians against pandas, partition independence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops


@pytest.fixture
def frame(rng):
    n = 301
    x = rng.normal(size=n).round(2)
    x[rng.choice(n, 30, replace=False)] = np.nan
    masked = pd.array(rng.integers(0, 50, n), dtype="Int64")
    masked[rng.choice(n, 20, replace=False)] = pd.NA
    return pd.DataFrame({"x": x, "m": masked, "f": rng.integers(0, 4, n).astype("float32")})


def test_exact_median_matches_pandas(frame, to_engine):
    wf = nvt.Workflow(["x", "m", "f"] >> ops.FillMedian())
    out = to_host(wf.fit_transform(nvt.Dataset(to_engine(frame), npartitions=4)).compute())
    medians = wf.ops[0].medians_
    for name in ["x", "m", "f"]:
        assert medians[name] == frame[name].astype("float64").median()
    assert wf.output_schema.dtypes == {"x": "float64", "m": "float64", "f": "float32"}
    assert {c: str(out[c].dtype) for c in out.columns} == wf.output_schema.dtypes
    np.testing.assert_array_equal(out["x"], frame["x"].fillna(medians["x"]))
    np.testing.assert_array_equal(out["m"], frame["m"].astype("float64").fillna(medians["m"]))


@pytest.mark.parametrize("values", [[1, 2, 3, 4], [5, 1, 3], [2, 2, 2, 9], [7], [1, 1, 2, 2]])
def test_odd_even_and_ties(values):
    df = pd.DataFrame({"v": pd.array([*values, None], dtype="Int64")})
    op = nvt.Workflow(["v"] >> ops.FillMedian()).fit(nvt.Dataset(df, npartitions=2)).ops[0]
    assert op.medians_["v"] == float(np.median(values))


def test_many_partitions_equal_one(frame):
    fitted = [
        nvt.Workflow(["x", "m"] >> ops.FillMedian()).fit(ds).ops[0].medians_
        for ds in (
            nvt.Dataset(frame, npartitions=1),
            nvt.Dataset(frame, npartitions=7),
            dataset_with_empty_partitions(frame, 5),
        )
    ]
    assert fitted[0] == fitted[1] == fitted[2]


def test_binary_columns_and_all_null_column():
    df = pd.DataFrame({"x": [1.0, np.nan, 3.0], "n": [np.nan, np.nan, np.nan]})
    wf = nvt.Workflow(["x", "n"] >> ops.FillMedian(add_binary_cols=True))
    with pytest.warns(UserWarning, match=r"FillMedian: column\(s\) \['n'\] held no finite value"):
        out = wf.fit_transform(df)
    assert out.columns.tolist() == ["x", "n", "x_filled", "n_filled"]
    assert out["x"].tolist() == [1.0, 2.0, 3.0]
    assert out["x_filled"].tolist() == [False, True, False]
    assert out["n"].isna().all()


def test_save_load(frame, tmp_path):
    wf = nvt.Workflow(["x", "m"] >> ops.FillMedian(add_binary_cols=True)).fit(frame)
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.ops[0].medians_ == wf.ops[0].medians_
    pd.testing.assert_frame_equal(loaded.transform(frame), wf.transform(frame))


def test_errors(frame):
    with pytest.raises(ops.NotFittedError):
        ops.FillMedian().transform(nvt.ColumnSelector(["x"]), frame)
    df = pd.DataFrame({"s": pd.array(["a", None], dtype="string")})
    with pytest.raises(TypeError, match="'s'"):
        nvt.Workflow(["s"] >> ops.FillMedian()).fit(df)


def test_infinities_are_left_out_of_the_median_and_kept(rng, to_engine):
    n = 301
    x = rng.normal(size=n).round(2)
    x[rng.choice(n, 30, replace=False)] = np.nan
    # More +inf than anything else: counted as values they would drag the median up.
    x[rng.choice(np.flatnonzero(~np.isnan(x)), 40, replace=False)] = np.inf
    x[:3] = [-np.inf, np.nan, np.inf]
    frame = pd.DataFrame({"x": x, "both": np.where(np.arange(n) % 2 == 0, -np.inf, np.inf)})
    frame.loc[[1, 2, 3], "both"] = [np.nan, 1.0, 2.0]
    wf = nvt.Workflow(["x", "both"] >> ops.FillMedian())
    out = to_host(wf.fit_transform(dataset_with_empty_partitions(to_engine(frame), 4)).compute())
    for name in ["x", "both"]:
        values = frame[name].to_numpy()
        median = float(np.median(values[np.isfinite(values)]))
        assert wf.ops[0].medians_[name] == median
        # Nulls get the finite median; infinities are values, not nulls, and stay.
        np.testing.assert_array_equal(out[name].to_numpy(), np.where(np.isnan(values), median, values))
    assert wf.ops[0].medians_["both"] == 1.5  # not the NaN that (-inf + inf) / 2 would give


def test_column_without_finite_values_warns_and_keeps_its_nulls():
    train = pd.DataFrame({"inf": [np.inf, -np.inf, np.nan]})
    with pytest.warns(UserWarning, match=r"FillMedian: column\(s\) \['inf'\] held no finite value"):
        wf = nvt.Workflow(["inf"] >> ops.FillMedian()).fit(train)
    assert wf.transform(train)["inf"].tolist()[:2] == [np.inf, -np.inf] and np.isnan(wf.transform(train)["inf"][2])
