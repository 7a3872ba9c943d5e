"""Bucketize: np.digitize-style bucket indices, nulls kept null."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops
from tabflow.schema import Tags


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
    out = pd.array(np.digitize(np.nan_to_num(values), bounds, right=False), dtype="Int64")
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
    assert column.dtype == "Int64" and Tags.CATEGORICAL in column.tags
    assert column.properties["cardinality"] == 3


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
