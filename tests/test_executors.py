"""merlin's executors on tabflow graphs: LocalExecutor on frames, DaskExecutor on partitioned
collections (several partitions, empty ones, nulls) and fitting, against pandas references."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.graph import DaskExecutor, Graph, LocalExecutor
from tabflow.graph.operator import NotFittedError
from tabflow.schema import ColumnSchema, Schema


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "x": [1.0, None, 3.0, 7.0, -2.0, 4.0],
            "n": pd.array([1, None, 3, 4, 5, None], dtype="Int64"),
            "c": ["a", None, "b", "a", "c", "a"],
        }
    )


def _partitioned(frame):
    empty = frame.iloc[:0]
    return dd.from_map(lambda piece: piece, [empty, frame.iloc[:2], empty, frame.iloc[2:]], meta=empty, enforce_metadata=False)


def test_local_executor_matches_the_workflow(frame):
    conts = ["x"] >> ops.FillMissing(0.0) >> ops.Normalize()
    cats = ["c"] >> ops.Categorify()
    workflow = nvt.Workflow(conts + cats).fit(frame)
    out = LocalExecutor().transform(frame, workflow.graph, additional_columns=["n"])
    expected = workflow.transform(frame)
    pd.testing.assert_frame_equal(out[["x", "c"]], expected)
    pd.testing.assert_series_equal(out["n"], frame["n"])
    # A list of nodes: their outputs side by side.
    both = LocalExecutor().transform(frame, [conts, cats])
    pd.testing.assert_frame_equal(both, expected)
    cast = LocalExecutor().transform(frame, conts, output_dtypes={"x": np.float32})
    assert cast["x"].dtype == np.float32
    np.testing.assert_allclose(cast["x"], expected["x"].astype("float32"))


def test_local_executor_captures_and_checks_dtypes(frame):
    node = ["n"] >> ops.LambdaOp(lambda col: col * 2)
    graph = Graph(node).construct_schema(Schema([ColumnSchema("n", dtype="Int64")]))
    assert node.output_schema["n"].dtype == "unknown"
    out = LocalExecutor().transform(frame, graph, capture_dtypes=True)
    assert node.output_schema["n"].dtype == "Int64" == str(out["n"].dtype)
    pd.testing.assert_series_equal(out["n"], frame["n"] * 2)
    clipped = ["n"] >> ops.Clip(min_value=0)
    Graph(clipped).construct_schema(Schema([ColumnSchema("n", dtype="Int64")]))
    assert LocalExecutor().transform(frame, clipped, strict=True)["n"].dtype == "Int64"
    clipped.output_schema = Schema([ColumnSchema("n", dtype="float64")])  # a wrong plan
    with pytest.raises(TypeError, match="planned float64, got Int64"):
        LocalExecutor().transform(frame, clipped, strict=True)


def test_strict_dtype_check_names_dtypes_as_the_engine_does(frame, engine, to_engine):
    """Planned "Int64" is what an int64 column with nulls is on cuDF (no masked dtypes): the
    strict check compares as the engine names dtypes, and still refuses a wrong plan."""
    data = to_engine(frame[["n", "x"]])
    node = ["n", "x"] >> ops.Clip(min_value=0)
    Graph(node).construct_schema(Schema([ColumnSchema("n", dtype="Int64"), ColumnSchema("x", dtype="float64")]))
    assert node.output_schema.dtypes == {"n": "Int64", "x": "float64"}
    out = LocalExecutor().transform(data, node, strict=True)
    host = out.to_pandas() if engine == "cudf" else out
    assert host["n"].isna().tolist() == frame["n"].isna().tolist()
    node.output_schema = Schema([ColumnSchema("n", dtype="Int32"), ColumnSchema("x", dtype="float64")])  # a wrong plan
    with pytest.raises(TypeError, match="planned Int32, got"):
        LocalExecutor().transform(data, node, strict=True)


def test_executors_refuse_unfitted_or_unresolved_graphs(frame):
    unresolved = ["x"] >> ops.Normalize()
    with pytest.raises(ValueError, match="construct_schema"):
        LocalExecutor().transform(frame, unresolved)
    Graph(unresolved).construct_schema(Schema([ColumnSchema("x", dtype="float64")]))
    with pytest.raises(NotFittedError, match="Normalize"):
        LocalExecutor().transform(frame, unresolved)
    with pytest.raises(NotFittedError, match="Normalize"):
        DaskExecutor().transform(_partitioned(frame), unresolved)
    with pytest.raises(ValueError, match="target_format"):
        LocalExecutor().transform(frame, Graph(["x"] >> ops.Clip(0)).construct_schema(Schema([ColumnSchema("x", dtype="float64")])), target_format="torch")


def test_dask_executor_fits_and_transforms_every_partition(frame):
    node = ["x"] >> ops.FillMissing(0.0) >> ops.Normalize()
    graph = Graph(node)
    executor = DaskExecutor()
    executor.fit(nvt.Dataset(_partitioned(frame)), graph)
    filled = frame["x"].fillna(0.0)
    out_ddf = executor.transform(_partitioned(frame), graph, additional_columns=["c"])
    out = out_ddf.compute()
    expected = ((filled - filled.mean()) / filled.std()).astype(out["x"].dtype)
    np.testing.assert_allclose(out["x"].to_numpy(), expected.to_numpy(), rtol=1e-6)
    pd.testing.assert_series_equal(out["c"], frame["c"].astype(out["c"].dtype))
    assert dict(out_ddf.dtypes) == dict(out.dtypes)
    # refit=False with every statistic fitted keeps them.
    before = dict(node.op.fitted_state())
    executor.fit(nvt.Dataset(frame.assign(x=frame["x"] * 100)), graph, refit=False)
    assert repr(node.op.fitted_state()) == repr(before)
    executor.fit(nvt.Dataset(frame.assign(x=frame["x"] * 100)), graph)
    assert repr(node.op.fitted_state()) != repr(before)


def test_dask_executor_needs_dtypes_it_can_plan(frame):
    node = ["n"] >> ops.LambdaOp(lambda col: col + 1)
    graph = Graph(node).construct_schema(Schema([ColumnSchema("n", dtype="Int64")]))
    with pytest.raises(ValueError, match=r"\['n'\].*capture_dtypes=True"):
        DaskExecutor().transform(_partitioned(frame), graph)
    out = DaskExecutor().transform(_partitioned(frame), graph, capture_dtypes=True).compute()
    pd.testing.assert_series_equal(out["n"], frame["n"] + 1)
