"""Bucketize: np.digitize-style int32 bucket indices, nulls kept null."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops
from tabflow.schema import Schema, Tags


@pytest.fixture
def frame(rng):
    n = 300
    x = rng.normal(0, 10, n)
    x[[2, 30, 31]] = np.nan
    x[[5, 6]] = [0.0, 10.0]  # exactly on boundaries
    ints = pd.array(rng.integers(-20, 20, n), dtype="Int64")
    ints[[1, 2]] = pd.NA
    return pd.DataFrame({"x": x, "i": ints})


def _reference(values, bounds):
    values = np.asarray(pd.Series(values).astype("float64"))
    out = pd.array(np.digitize(np.nan_to_num(values), bounds, right=False), dtype="Int32")
    out[np.isnan(values)] = pd.NA
    return out


def test_matches_numpy_digitize(frame, engine, to_engine):
    bounds = {"x": [-10.0, 0.0, 10.0], "i": [0, 5]}
    workflow = nvt.Workflow(["x", "i"] >> ops.Bucketize(bounds))
    out = to_host(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=3)).compute())
    for name in ("x", "i"):
        pd.testing.assert_extension_array_equal(out[name].array, _reference(frame[name], bounds[name]))
    assert out["x"][5] == 2 and out["x"][6] == 3  # a boundary value goes to the right bucket


def test_schema_and_partitions(frame):
    workflow = nvt.Workflow(["x"] >> ops.Bucketize([0.0, 1.0]))
    one = workflow.fit_transform(nvt.Dataset(frame, npartitions=1)).compute()
    many = workflow.fit_transform(dataset_with_empty_partitions(frame, 4)).compute()
    pd.testing.assert_frame_equal(to_host(one), to_host(many))
    column = workflow.output_schema["x"]
    assert column.dtype == "Int32" and Tags.CATEGORICAL in column.tags
    assert column.properties["cardinality"] == 3


def test_int32_output_nulls_kept_and_categorical_replaces_continuous(engine, to_engine):
    # NVTabular 23.08: int32 buckets, tag CATEGORICAL replacing CONTINUOUS. tabflow keeps a
    # null a null (23.08 put it in the last bucket), so inputs that can hold nulls give the
    # nullable Int32; plain integers give int32.
    df = pd.DataFrame({"f": [-5.0, 0.0, 5.0, 10.0, np.nan], "n": [-5, 0, 5, 10, 15]})
    source = nvt.Dataset(to_engine(df)).schema
    source = Schema([source["f"].with_tags(Tags.CONTINUOUS), source["n"]])
    wf = nvt.Workflow(["f", "n"] >> ops.Bucketize([0, 10]))
    wf.fit_schema(source)
    assert wf.output_schema.dtypes == {"f": "Int32", "n": "int32"}
    assert set(wf.output_schema["f"].tags) == {Tags.CATEGORICAL}
    out = to_host(wf.fit_transform(to_engine(df)))
    assert out["f"].tolist() == [0, 1, 1, 2, pd.NA]
    assert out["n"].tolist() == [0, 1, 1, 2, 2]
    assert str(out["n"].dtype) == "int32" and str(out["f"].dtype) == "Int32"


def _boundaries_of(name):
    return {"f": [0, 10], "n": [5]}[name]


def test_boundaries_may_be_a_callable_of_the_column_name():
    df = pd.DataFrame({"f": [-5.0, 0.0, 5.0, 10.0, 15.0], "n": [-5, 0, 5, 10, 15]})
    out = nvt.Workflow(["f", "n"] >> ops.Bucketize(_boundaries_of)).fit_transform(df)
    assert out["f"].tolist() == np.digitize(df["f"], [0, 10], right=False).tolist()
    assert out["n"].tolist() == np.digitize(df["n"], [5], right=False).tolist()


def test_save_load_round_trip(frame, tmp_path):
    workflow = nvt.Workflow(["x", "i"] >> ops.Bucketize({"x": [0.0], "i": [-3, 3]})).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))


def test_errors(frame):
    with pytest.raises(ValueError, match="'x'.*increasing"):
        nvt.Workflow(["x"] >> ops.Bucketize([1.0, 0.0])).fit(frame)
    with pytest.raises(KeyError, match="no entry for column .+i"):
        nvt.Workflow(["x", "i"] >> ops.Bucketize({"x": [0.0]})).fit(frame)
    with pytest.raises(TypeError, match="'s'"):
        nvt.Workflow(["s"] >> ops.Bucketize([0.0])).fit(pd.DataFrame({"s": ["a"]}))
