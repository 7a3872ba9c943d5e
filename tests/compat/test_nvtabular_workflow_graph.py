"""NVTabular 23.08 / merlin.dag behaviour of whole workflows and graphs: removing inputs,
clearing statistics, subgraphs, the Graph object, node properties, ``"*"`` and tag
selectors. Expected values come from plain pandas.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ColumnSelector, ops
from tabflow.exceptions import UntrustedCodeError
from tabflow.graph import (
    Graph,
    Subgraph,
    iter_nodes,
    postorder_iter_nodes,
    preorder_iter_nodes,
)
from tabflow.schema import Schema, Tags


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "c": ["a", "b", "a", None, "c", "a"],
            "s": ["x", "y", "x", "z", "z", "x"],
            "x": [1.0, np.nan, 3.0, 4.0, 0.5, 2.0],
            "y": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "label": [0, 1, 0, 1, 1, 0],
        }
    )


def _normalized(values):
    values = pd.Series(values, dtype="float64")
    return (values - values.mean()) / values.std()


# -------------------------------------------------------------------------- remove_inputs
def test_remove_inputs_drops_the_label_and_what_is_computed_from_it(frame):
    cats = ["c", "s"] >> ops.Categorify()
    cross = [["c", "label"]] >> ops.HashedCross(num_buckets=11)
    label_norm = ["label"] >> ops.Normalize() >> ops.Rename(postfix="_n")
    wf = nvt.Workflow(cats + cross + label_norm + ["y", "label"]).fit(frame)
    full = wf.transform(frame)
    assert "c_X_label" in full.columns and "label_n" in full.columns

    wf.remove_inputs(["label"])
    assert "label" not in wf.input_schema.column_names
    assert wf.output_schema.column_names == ["c", "s", "y"]
    request = frame.drop(columns=["label"])
    served = wf.transform(request)
    # The fitted statistics stay: the kept columns are exactly what the full workflow gave.
    pd.testing.assert_frame_equal(served, full[["c", "s", "y"]])


def test_remove_inputs_then_fit_reads_the_columns_again(frame):
    wf = nvt.Workflow((["x"] >> ops.FillMissing()) + ["label"]).fit(frame)
    wf.remove_inputs("label")
    assert wf.transform(frame).columns.tolist() == ["x"]
    wf.fit(frame)
    assert wf.transform(frame).columns.tolist() == ["x", "label"]


def test_remove_inputs_before_fit_is_a_clear_error():
    with pytest.raises(nvt.ops.operator.NotFittedError, match="fit"):
        nvt.Workflow(["x"] >> ops.Normalize()).remove_inputs(["x"])


def test_dtypes_are_empty_before_fit_and_clear_stats_forgets_statistics(frame):
    norm = ops.Normalize()
    wf = nvt.Workflow(["y"] >> norm)
    assert wf.input_dtypes == {} and wf.output_dtypes == {}
    wf.fit(frame)
    assert wf.input_dtypes == {"y": "float64"} and wf.output_dtypes == {"y": "float64"}  # Normalize gives float64, as NVTabular
    assert norm.fitted
    wf.clear_stats()
    assert not norm.fitted
    with pytest.raises(nvt.ops.operator.NotFittedError):
        wf.transform(frame)


@pytest.fixture
def writing_into_a_copy_of_a_slice_raises():
    """pandas 2 as fastai leaves it (``mode.chained_assignment = "raise"``): assigning into a
    frame pandas marks as a copy of a slice raises. pandas 3 has no such mark (and deprecates
    the option)."""
    if int(pd.__version__.split(".")[0]) >= 3:
        yield
        return
    with pd.option_context("mode.chained_assignment", "raise"):
        yield


@pytest.mark.parametrize("rows", [6, 3000], ids=["served", "batch"])
@pytest.mark.parametrize("columns", [["y"], ["x", "y"], ["label", "y"]], ids="+".join)
def test_an_op_that_writes_into_its_input_leaves_the_callers_frame_alone(
    frame, rows, columns, writing_into_a_copy_of_a_slice_raises
):
    class AddInPlace(ops.Operator):
        def transform(self, col_selector, df):
            for name in col_selector.names:
                df.loc[df[name].isna(), name] = 0.0
                df[name] = df[name] + 100
            return df

    frame = pd.concat([frame] * (rows // len(frame)), ignore_index=True)
    before = frame.copy()
    expected = before[columns].fillna(0.0) + 100
    # A frame in memory (a small one goes through the serving plan), the partitions of a
    # Dataset, and an op that gets another op's output.
    workflow = nvt.Workflow(columns >> AddInPlace())
    pd.testing.assert_frame_equal(workflow.transform(frame), expected)
    partitions = workflow.transform(nvt.Dataset(frame, npartitions=2)).compute()
    pd.testing.assert_frame_equal(partitions.reset_index(drop=True), expected)
    twice = nvt.Workflow(columns >> AddInPlace() >> AddInPlace()).transform(frame)
    pd.testing.assert_frame_equal(twice, expected + 100)
    pd.testing.assert_frame_equal(frame, before)


def test_save_accepts_modules_byvalue(frame, tmp_path):
    wf = nvt.Workflow(["y"] >> ops.Normalize()).fit(frame)
    wf.save(str(tmp_path / "wf"), modules_byvalue=["some_module"])
    pd.testing.assert_frame_equal(nvt.Workflow.load(str(tmp_path / "wf")).transform(frame), wf.transform(frame))


# ------------------------------------------------------------------------------ subgraphs
@pytest.mark.parametrize("saved", [False, True])
def test_workflow_subgraphs_as_in_nvtabular(frame, tmp_path, saved):
    cat_features = ["c", "s"] >> ops.Categorify()
    cont_features = ["x", "y"] >> ops.FillMissing() >> ops.LogOp >> ops.Normalize()
    wf = nvt.Workflow(Subgraph("cat_graph", cat_features) + Subgraph("cont_graph", cont_features) + ["label"])
    wf.fit(nvt.Dataset(frame, npartitions=2))
    if saved:
        wf.save(str(tmp_path / "wf"))
        wf = nvt.Workflow.load(str(tmp_path / "wf"))
    out = wf.transform(frame)
    assert out.columns.tolist() == ["c", "s", "x", "y", "label"]
    filled = frame["x"].fillna(0.0)  # FillMissing fills 0 by default
    np.testing.assert_allclose(out["x"], _normalized(np.log1p(filled)), rtol=1e-5)

    assert wf.subworkflows == ["cat_graph", "cont_graph"]
    cats, conts = wf.get_subworkflow("cat_graph"), wf.get_subworkflow("cont_graph")
    assert isinstance(cats, nvt.Workflow) and isinstance(conts, nvt.Workflow)
    if not saved:
        assert cats.output_node is cat_features and conts.output_node is cont_features
    pd.testing.assert_frame_equal(cats.transform(frame), out[["c", "s"]])
    pd.testing.assert_frame_equal(conts.transform(nvt.Dataset(frame)).compute(), out[["x", "y"]])
    with pytest.raises(ValueError, match="No subgraph named 'not_exist'"):
        wf.get_subworkflow("not_exist")


def test_a_subgraph_fed_by_a_node_reads_that_nodes_columns():
    df = pd.DataFrame({"x": [1.0, 4.0, 9.0], "y": [0.0, 1.0, 2.0]})
    sub = Subgraph("sub", ["x"] >> ops.LogOp())
    # Inside the subgraph "x" is the renamed parent's column, not the data's.
    wf = nvt.Workflow(["x", "y"] >> ops.Clip(min_value=2.0) >> sub >> ops.Rename(postfix="_out"))
    out = wf.fit_transform(df)
    assert out.columns.tolist() == ["x_out"]
    np.testing.assert_allclose(out["x_out"], np.log1p(df["x"].clip(lower=2.0)), rtol=1e-6)


def test_a_looping_subgraph_runs_until_its_condition_and_its_code_needs_trust(tmp_path):
    class PlusOne(ops.Operator):
        def transform(self, col_selector, df):
            return df[col_selector.names] + 1.0

    sub = Subgraph("loop", ["x"] >> PlusOne(), loop_until=lambda frame: (frame["x"] > 5.0).all())
    wf = nvt.Workflow(["x", "y"] >> ops.Clip(min_value=0.0) >> sub)
    df = pd.DataFrame({"x": [0.0, 2.0, 7.0], "y": [1.0, 1.0, 1.0]})
    expected = df["x"].copy()
    while not (expected > 5.0).all():
        expected = expected + 1.0
    assert wf.fit_transform(df)["x"].tolist() == expected.tolist()

    wf.save(str(tmp_path / "wf"))
    trusted = nvt.Workflow.load(str(tmp_path / "wf"), trust_code=True)
    assert trusted.transform(df)["x"].tolist() == expected.tolist()
    untrusted = nvt.Workflow.load(str(tmp_path / "wf"))
    with pytest.raises(UntrustedCodeError, match="subgraph 'loop'"):
        untrusted.transform(df)


# ---------------------------------------------------------------------------------- Graph
def test_graph_finds_nested_subgraphs_and_walks_every_node_once():
    sg1 = ["a", "b"] >> ops.Clip(min_value=0)
    sg2 = ["a", "c"] >> ops.Clip(min_value=0) >> ops.Rename(postfix="_2")
    sg3 = ["a", "d"] >> ops.Clip(max_value=1) >> ops.Rename(postfix="_3")
    combined1 = Subgraph("sub1", sg1) + Subgraph("sub2", sg2)
    combined2 = Subgraph("combined1", combined1) + Subgraph("sub3", sg3)
    graph = Graph(Subgraph("combined3", combined2 + ["x"]))

    assert list(graph.subgraphs) == ["sub1", "sub2", "combined1", "sub3", "combined3"]
    assert graph.subgraph("sub1").output_node is sg1
    assert graph.subgraph("combined1").output_node is combined1
    with pytest.raises(ValueError, match="No subgraph named 'sub9'"):
        graph.subgraph("sub9")

    post = list(postorder_iter_nodes(graph.output_node))
    pre = list(preorder_iter_nodes(graph.output_node))
    breadth = list(iter_nodes([graph.output_node]))
    assert len(post) == len(pre) == len(breadth) == len(graph.nodes)
    assert {n.id for n in post} == {n.id for n in pre} == {n.id for n in breadth}
    position = {node.id: i for i, node in enumerate(post)}
    assert all(position[p.id] < position[n.id] for n in post for p in n.parents_with_dependencies)
    assert pre[0] is graph.output_node

    clips = Graph.get_nodes_by_op_type([graph.output_node], ops.Clip)
    assert {type(n.op) for n in clips} == {ops.Clip} and len(clips) == 3

    graph.construct_schema(Schema(["a", "b", "c", "d", "x"]))
    assert graph.output_schema.column_names == ["a", "b", "a_2", "c_2", "a_3", "d_3", "x"]
    assert sorted(graph.input_schema.column_names) == ["a", "b", "c", "d", "x"]
    assert [leaf.selector.names for leaf in graph.leaf_nodes] == [["a", "b"], ["a", "c"], ["a", "d"], ["x"]]


def test_two_subgraphs_with_one_name_are_an_error():
    wf = nvt.Workflow(Subgraph("s", ["a"]) + Subgraph("s", ["b"]))
    with pytest.raises(ValueError, match="two subgraphs named 's'"):
        wf.subworkflows


# ------------------------------------------------------------------------------ node API
def test_node_properties_of_merlin(frame):
    cats = ["c", "s"] >> ops.Categorify()
    joined = ["x"] >> ops.FillMissing()
    wf = nvt.Workflow(cats + joined).fit(frame)
    assert cats.input_columns.names == ["c", "s"]
    assert cats.column_mapping == {"c": ["c"], "s": ["s"]}
    assert cats.parents_with_dependencies == cats.parents
    assert nvt.Node.construct_from(["a"]).selector.names == ["a"]
    assert wf.output_node.output_columns.names == ["c", "s", "x"]

    node = nvt.Node(["y"])
    grown = ["x"] >> ops.Rename(postfix="_r")
    grown.add_parent(node)
    grown.compute_schemas(Schema(["x", "y"]))
    assert grown.output_schema.column_names == ["x_r", "y_r"]


# -------------------------------------------------------------------- "*" and tag selectors
def test_star_selects_every_input_column_and_survives_saving(frame, tmp_path):
    wf = nvt.Workflow(ColumnSelector("*") >> ops.Rename(postfix="_r"))
    out = wf.fit_transform(frame[["y", "label"]])
    assert out.columns.tolist() == ["y_r", "label_r"]
    wf.save(str(tmp_path / "wf"))
    assert nvt.Workflow.load(str(tmp_path / "wf")).transform(frame[["y", "label"]]).columns.tolist() == ["y_r", "label_r"]
    star = ColumnSelector("*")
    assert star.all is True and ColumnSelector(["a"]).all is False and bool(star)
    assert (star + ["a"]).all and star == ColumnSelector("*") and star != ColumnSelector(["*"])


def test_adding_a_tag_to_a_selector_selects_the_tagged_columns(frame):
    schema = Schema(["c", "s", "y"])
    schema["c"] = schema["c"].with_tags([Tags.CATEGORICAL])
    selector = ColumnSelector(["y"]) + Tags.CATEGORICAL
    assert selector.names == ["y"] and selector.tags == [Tags.CATEGORICAL]
    assert selector.resolve(schema).names == ["y", "c"]
    assert (Tags.CATEGORICAL + ColumnSelector(["y"])).tags == [Tags.CATEGORICAL]


def test_filter_columns_removes_the_other_selectors_names():
    selector = ColumnSelector(["a", "b", ["c", "d"], ["e", "f"]])
    assert selector.filter_columns(ColumnSelector(["a", "c"])).grouped_names == ["b", ("e", "f")]
    assert ColumnSelector("*").filter_columns(ColumnSelector(["a"])).names == ["a"]
