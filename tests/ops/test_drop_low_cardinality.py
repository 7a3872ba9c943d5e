"""DropLowCardinality: the output columns depend on the fitted cardinalities."""

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
    n = 90
    return pd.DataFrame(
        {
            "many": rng.integers(0, 1000, n),
            "const": np.full(n, 7),
            "nulls": pd.array([None] * n, dtype="Int64"),
            "const_with_nulls": pd.array(["a"] * (n - 3) + [None] * 3, dtype="string"),
            "two": pd.array(["a", "b"] * (n // 2), dtype="string"),
            "tags": pd.Series(pd.arrays.ArrowExtensionArray(pa.array([[1, 1]] * (n - 1) + [[2]], pa.list_(pa.int64())))),
        }
    )


def _reference(frame, k):
    kept = []
    for name in frame.columns:
        column = frame[name]
        values = column.explode() if name == "tags" else column
        if values.nunique(dropna=True) >= k:
            kept.append(name)
    return kept


@pytest.mark.parametrize("k", [1, 2, 3])
def test_matches_nunique(frame, k, engine, to_engine):
    workflow = nvt.Workflow(list(frame.columns) >> ops.DropLowCardinality(min_cardinality=k))
    out = to_host(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=5)).compute())
    assert list(out.columns) == _reference(frame, k)
    assert workflow.output_schema.column_names == _reference(frame, k)
    pd.testing.assert_frame_equal(out, frame[_reference(frame, k)])


def test_many_partitions_equal_one(frame):
    # Each partition alone sees only one value of "two" when split this way.
    ordered = frame.sort_values("two", kind="stable").reset_index(drop=True)
    one = nvt.Workflow(list(frame.columns) >> ops.DropLowCardinality()).fit(nvt.Dataset(ordered, npartitions=1))
    many = nvt.Workflow(list(frame.columns) >> ops.DropLowCardinality()).fit(dataset_with_empty_partitions(ordered, 7))
    assert one.output_schema == many.output_schema
    assert "two" in many.output_schema.column_names


def test_schema_before_fit_lists_all_columns(frame):
    workflow = nvt.Workflow(["many", "const"] >> ops.DropLowCardinality())
    workflow.fit_schema(nvt.Dataset(frame).schema)
    assert workflow.output_schema.column_names == ["many", "const"]


def test_save_load_round_trip(frame, tmp_path):
    workflow = nvt.Workflow(list(frame.columns) >> ops.DropLowCardinality()).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema.column_names == workflow.output_schema.column_names
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))


def test_bad_parameter():
    with pytest.raises(ValueError, match="min_cardinality"):
        nvt.Workflow(["a"] >> ops.DropLowCardinality(0)).fit(pd.DataFrame({"a": [1]}))
