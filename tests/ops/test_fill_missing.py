"""FillMissing: fill values, dtype rules, indicator columns."""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops


@pytest.fixture
def frame(rng):
    n = 80
    x = rng.normal(size=n).astype("float32")
    x[[0, 10, 20]] = np.nan
    masked = pd.array(rng.integers(0, 9, n), dtype="Int64")
    masked[[5, 6]] = pd.NA
    strings = rng.choice(["a", "b"], n).astype(object)
    strings[[3, 4]] = None
    flags = pd.array(rng.integers(0, 2, n).astype(bool), dtype="boolean")
    flags[[9]] = pd.NA
    return pd.DataFrame(
        {
            "x": x,
            "m": masked,
            "plain": rng.integers(0, 5, n),
            "s": pd.array(strings, dtype="string"),
            "b": flags,
        }
    )


def test_fills_and_declares_dtypes(frame, to_engine):
    wf = nvt.Workflow(["x", "m", "plain", "b"] >> ops.FillMissing(fill_val=1))
    out = to_host(wf.fit_transform(nvt.Dataset(to_engine(frame), npartitions=3)).compute())
    expected_dtypes = {"x": "float32", "m": "int64", "plain": "int64", "b": "bool"}
    assert wf.output_schema.dtypes == expected_dtypes
    assert {c: str(out[c].dtype) for c in out.columns} == expected_dtypes
    np.testing.assert_array_equal(out["x"], frame["x"].fillna(1))
    np.testing.assert_array_equal(out["m"], frame["m"].fillna(1).astype("int64"))
    np.testing.assert_array_equal(out["plain"], frame["plain"])
    np.testing.assert_array_equal(out["b"], frame["b"].fillna(True).astype(bool))


def test_fractional_fill_on_integers_gives_float(frame):
    wf = nvt.Workflow(["m"] >> ops.FillMissing(fill_val=-0.5))
    out = wf.fit_transform(frame)
    assert wf.output_schema["m"].dtype == "float64" and out["m"].dtype == np.float64
    np.testing.assert_array_equal(out["m"], frame["m"].to_numpy("float64", na_value=-0.5))


def test_output_dtypes_follow_the_plan_on_every_partition(frame, engine, to_engine):
    """The fill's dtype comes from the planned dtype, not the partition's: on cuDF an Int64
    column is int64 (no masked dtypes), so planning from the data made partitions without
    nulls int64 under a float64 schema and refused the fill (0.5 into int64) in the others;
    a nullable boolean filled with 2 gave True, not 2.0. The strict engine answers ops as
    cuDF does, so this fails there, and on cuDF, without the plan."""
    frame = frame.iloc[:40].copy()
    frame["m"] = pd.array([None if i in (3, 33) else i for i in range(40)], dtype="Int64")  # nulls in 2 of 4 partitions
    frame["b"] = pd.array([None if i == 31 else i % 2 == 0 for i in range(40)], dtype="boolean")
    dataset = nvt.Dataset(to_engine(frame[["m", "b"]]), npartitions=4)
    assert dataset.schema["m"].dtype == "Int64" and dataset.schema["b"].dtype == "boolean"
    wf = nvt.Workflow((["m"] >> ops.FillMissing(fill_val=0.5)) + (["b"] >> ops.FillMissing(fill_val=2)))
    result = wf.fit_transform(dataset)
    assert wf.output_schema.dtypes == {"m": "float64", "b": "float64"}
    partitions = [to_host(part) for part in dask.compute(*result.to_ddf().to_delayed())]
    assert [{c: str(p[c].dtype) for c in p.columns} for p in partitions] == [{"m": "float64", "b": "float64"}] * 4
    out = to_host(result.compute())
    np.testing.assert_array_equal(out["m"], frame["m"].to_numpy("float64", na_value=0.5))
    np.testing.assert_array_equal(out["b"], frame["b"].astype("Float64").fillna(2.0).to_numpy("float64"))
    assert out["b"].tolist()[31] == 2.0


def test_binary_columns(frame):
    wf = nvt.Workflow(["x", "m"] >> ops.FillMissing(fill_val=0, add_binary_cols=True))
    out = to_host(wf.fit_transform(dataset_with_empty_partitions(frame)).compute())
    assert out.columns.tolist() == ["x", "m", "x_filled", "m_filled"]
    assert wf.output_schema.dtypes == {"x": "float32", "m": "int64", "x_filled": "bool", "m_filled": "bool"}
    assert out["x_filled"].dtype == bool
    assert out["x_filled"].tolist() == frame["x"].isna().tolist()
    assert out["m_filled"].tolist() == frame["m"].isna().tolist()
    assert not out[["x", "m"]].isna().any().any()


def test_strings(frame):
    out = nvt.Workflow(["s"] >> ops.FillMissing(fill_val="missing")).fit_transform(frame)
    assert out["s"].tolist() == frame["s"].fillna("missing").tolist()
    # A numeric fill value on a string column is written as text.
    out = nvt.Workflow(["s"] >> ops.FillMissing()).fit_transform(frame)
    assert out["s"].tolist() == frame["s"].fillna("0").tolist()


def test_save_load(frame, tmp_path):
    wf = nvt.Workflow(["x", "m", "s"] >> ops.FillMissing(fill_val=3, add_binary_cols=True)).fit(frame)
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), wf.transform(frame))


def test_errors(frame):
    with pytest.raises(TypeError, match=r"\['x'\]"):
        nvt.Workflow(["x", "s"] >> ops.FillMissing(fill_val="none")).fit(frame)
    with pytest.raises(TypeError, match="number or a string"):
        nvt.Workflow(["x"] >> ops.FillMissing(fill_val=[0])).fit(frame)
