"""ValueCount: min/max list length in the schema, data unchanged."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops


@pytest.fixture
def frame(rng):
    rows = [list(map(int, rng.integers(0, 9, k))) for k in rng.integers(1, 6, 100)]
    rows[10] = [1] * 9
    fixed = [[1, 2]] * 100
    return pd.DataFrame(
        {
            "hist": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(pa.int64())))),
            "pair": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(fixed, pa.list_(pa.int64())))),
        }
    )


def test_records_lengths_and_keeps_data(frame, engine, to_engine):
    workflow = nvt.Workflow(["hist", "pair"] >> ops.ValueCount())
    out = to_host(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=4)).to_ddf(arrow_lists=True).compute())
    pd.testing.assert_frame_equal(out, frame)
    lengths = frame["hist"].map(len)
    assert workflow.output_schema["hist"].value_count == {"min": int(lengths.min()), "max": 9}
    assert workflow.output_schema["pair"].value_count == {"min": 2, "max": 2}
    assert workflow.output_schema["pair"].properties["value_count"] == {"min": 2, "max": 2}


def test_many_partitions_equal_one(frame):
    one = nvt.Workflow(["hist"] >> ops.ValueCount()).fit(nvt.Dataset(frame, npartitions=1))
    many = nvt.Workflow(["hist"] >> ops.ValueCount()).fit(dataset_with_empty_partitions(frame, 7))
    assert one.output_schema == many.output_schema


def test_null_list_counts_as_zero():
    df = pd.DataFrame({"l": pd.Series(pd.arrays.ArrowExtensionArray(pa.array([[1], None], pa.list_(pa.int64()))))})
    workflow = nvt.Workflow(["l"] >> ops.ValueCount()).fit(df)
    assert workflow.output_schema["l"].value_count == {"min": 0, "max": 1}


def test_save_load_and_errors(frame, tmp_path):
    workflow = nvt.Workflow(["hist"] >> ops.ValueCount()).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == workflow.output_schema
    with pytest.raises(TypeError, match="'x'"):
        nvt.Workflow(["x"] >> ops.ValueCount()).fit(pd.DataFrame({"x": [1]}))
    with pytest.raises(ops.NotFittedError):
        ops.ValueCount().transform(nvt.ColumnSelector(["hist"]), frame)
