"""ReduceDtypeSize: smallest integer dtype for the fitted range, floats to float_dtype."""

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
    masked = pd.array(rng.integers(-100, 100, n), dtype="Int64")
    masked[[0, 5]] = pd.NA
    return pd.DataFrame(
        {
            "i8": rng.integers(-128, 128, n),
            "i16": np.r_[rng.integers(0, 10, n - 1), 30_000],
            "i32": np.r_[rng.integers(0, 10, n - 1), -70_000],
            "i64": np.r_[rng.integers(0, 10, n - 1), 2**40],
            "masked": masked,
            "u8": rng.integers(0, 200, n).astype("uint8"),
            "f": rng.normal(size=n),
            "huge": np.r_[rng.normal(size=n - 1), 1e300],
        }
    )


EXPECTED = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "masked": "Int8",
            "u8": "uint8", "f": "float32", "huge": "float64"}


def test_dtypes_and_values(frame, engine, to_engine):
    workflow = nvt.Workflow(list(frame.columns) >> ops.ReduceDtypeSize())
    out = to_host(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=3)).compute())
    assert {c: str(t) for c, t in out.dtypes.items()} == EXPECTED
    assert workflow.output_schema.dtypes == EXPECTED
    for name in frame.columns:
        pd.testing.assert_series_equal(out[name], frame[name].astype(EXPECTED[name]))


def test_many_partitions_equal_one(frame):
    one = nvt.Workflow(list(frame.columns) >> ops.ReduceDtypeSize()).fit(nvt.Dataset(frame, npartitions=1))
    many = nvt.Workflow(list(frame.columns) >> ops.ReduceDtypeSize()).fit(dataset_with_empty_partitions(frame, 7))
    assert one.output_schema == many.output_schema


def test_all_null_column_and_float_dtype(frame):
    df = pd.DataFrame({"n": pd.array([None, None], dtype="Int64"), "f": [1.0, 2.0]})
    workflow = nvt.Workflow(["n", "f"] >> ops.ReduceDtypeSize(float_dtype="float16"))
    out = workflow.fit_transform(df)
    assert str(out["n"].dtype) == "Int8" and str(out["f"].dtype) == "float16"


def test_save_load_and_errors(frame, tmp_path):
    workflow = nvt.Workflow(list(frame.columns) >> ops.ReduceDtypeSize()).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == workflow.output_schema
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))
    with pytest.raises(TypeError, match="'s'"):
        nvt.Workflow(["s"] >> ops.ReduceDtypeSize()).fit(pd.DataFrame({"s": ["a"]}))
    with pytest.raises(TypeError, match="float_dtype"):
        nvt.Workflow(["f"] >> ops.ReduceDtypeSize(float_dtype="int8")).fit(frame)


def test_nvtabular_names_of_the_fitted_state():
    df = pd.DataFrame({"a": [1, 2, 300], "f": [0.5, 1.5, 2.5]})
    op = ops.ReduceDtypeSize()
    assert op.ranges == {} and op.dtypes == {}  # NVTabular's empty dicts before fitting
    nvt.Workflow(["a", "f"] >> op).fit(df)
    assert op.ranges == {"a": (1, 300), "f": (0.5, 2.5)}
    assert op.dtypes == {"a": "int16", "f": "float32"}
    assert op.dtypes == nvt.Workflow(["a", "f"] >> op).fit(df).output_schema.dtypes
