"""merlin's graph API on tabflow's nodes: structural ops (``node.op`` of ``+``, ``-``, ``[]`` and
selections), nodes built by hand with them, ``Graph.remove_inputs`` on hand-built nodes, and
missing columns reported as merlin reports them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.graph import (
    ColumnSelector,
    ConcatColumns,
    Graph,
    Node,
    SelectionOp,
    SubsetColumns,
    SubtractionOp,
    postorder_iter_nodes,
)
from tabflow.graph import ops as graph_ops
from tabflow.schema import ColumnSchema, Schema


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "a": [1.0, None, 3.0, 4.0, -2.0],
            "b": [10, 20, 30, 40, 50],
            "c": ["x", None, "y", "x", "z"],
        }
    )


def test_structural_nodes_have_merlin_ops():
    node = ["a", "b"] >> ops.FillMissing()
    assert isinstance((node + "c").op, ConcatColumns)
    assert isinstance((node - "a").op, SubtractionOp) and (node - "a").op.selector.names == ["a"]
    assert isinstance(node["a"].op, SubsetColumns)
    assert isinstance(node.parents[0].op, SelectionOp) and node.parents[0].op.selector.names == ["a", "b"]
    assert isinstance(node.op, ops.FillMissing)
    # merlin's module path for them
    assert graph_ops.ConcatColumns is ConcatColumns and graph_ops.SubtractionOp is SubtractionOp


def test_workflow_ops_and_saving_skip_structural_nodes(frame, tmp_path):
    node = (["a"] >> ops.FillMissing(0.0)) + ["b"] - ["b"]
    wf = nvt.Workflow(node)
    assert [type(op).__name__ for op in wf.ops] == ["FillMissing"]
    wf.fit(frame)
    wf.save(tmp_path / "wf")
    loaded = nvt.Workflow.load(tmp_path / "wf")
    pd.testing.assert_frame_equal(loaded.transform(frame), wf.transform(frame))
    assert isinstance(loaded.output_node.op, SubtractionOp)


def test_nodes_built_by_hand_with_structural_ops(frame):
    select_a = Node(ColumnSelector(["a"]), op=SelectionOp())
    select_bc = Node(op=SelectionOp(ColumnSelector(["b", "c"])))
    filled = select_a >> ops.FillMissing(0.0)
    both = Node(op=ConcatColumns(), parents=[filled, select_bc])
    subset = Node(ColumnSelector(["a", "c"]), op=SubsetColumns(), parents=[both])
    dropped = Node(op=SubtractionOp(["c"]), parents=[subset])
    out = nvt.Workflow(dropped).fit_transform(frame)
    pd.testing.assert_frame_equal(out, frame[["a"]].fillna(0.0))
    assert [type(n.op).__name__ for n in postorder_iter_nodes(dropped)] == [
        "SelectionOp", "FillMissing", "SelectionOp", "ConcatColumns", "SubsetColumns", "SubtractionOp",
    ]


def test_structural_op_equality():
    assert SelectionOp(["a"]) == SelectionOp(ColumnSelector(["a"])) != SelectionOp(["b"])
    assert ConcatColumns() == ConcatColumns() and ConcatColumns() != SubsetColumns()
    left, right = ["a"] >> ops.LogOp(), ["b"] >> ops.LogOp()
    assert (left + right).op == (left + right).op


def test_remove_inputs_on_nodes_built_by_hand():
    # merlin's test graph: ["y"] feeds a node both as parent and as dependency.
    dep_node = Node(selector=ColumnSelector(["y"]))
    dep_node.input_schema = Schema([ColumnSchema("y")])
    dep_node.output_schema = Schema([ColumnSchema("y")])
    node_xy = Node(selector=ColumnSelector(["x", "y"]))
    node_xy.input_schema = Schema([ColumnSchema("x"), ColumnSchema("y")])
    node_xy.output_schema = Schema([ColumnSchema("z")])
    plus_node = Node(selector=ColumnSelector(["z", "y"]))
    plus_node.input_schema = Schema([ColumnSchema("y"), ColumnSchema("z")])
    plus_node.output_schema = Schema([ColumnSchema("o")])
    plus_node.add_parent(dep_node)
    plus_node.add_parent(node_xy)
    plus_node.add_dependency(dep_node)
    graph = Graph(plus_node)
    assert len(graph.leaf_nodes) == 2
    graph.remove_inputs(["y"])
    assert graph.leaf_nodes == [node_xy]
    assert node_xy.input_schema.column_names == ["x"] and dep_node.output_schema.column_names == []


def test_remove_inputs_then_fit_reads_the_column_again(frame):
    wf = nvt.Workflow((["a"] >> ops.FillMissing(0.0)) + ["b"])
    wf.fit(frame)
    wf.remove_inputs(["b"])
    assert wf.transform(frame[["a"]]).columns.tolist() == ["a"]
    wf.fit(frame)
    assert wf.transform(frame).columns.tolist() == ["a", "b"]


@pytest.mark.parametrize("catch", [ValueError, KeyError])
def test_missing_column_is_a_value_error_naming_it(frame, catch):
    wf = nvt.Workflow(["a", "missing"] >> ops.FillMissing())
    with pytest.raises(catch, match="missing"):
        wf.fit(nvt.Dataset(frame, npartitions=2))
    with pytest.raises(catch, match="nope"):
        nvt.Workflow((["a"] >> ops.FillMissing())["nope"]).fit(frame)
    fitted = nvt.Workflow(["a", "b"] >> ops.FillMissing()).fit(frame)
    with pytest.raises(catch, match="'b'"):
        fitted.transform(frame[["a"]])
    with pytest.raises(catch, match="'b'"):
        fitted.transform({"a": np.array([1.0])})
