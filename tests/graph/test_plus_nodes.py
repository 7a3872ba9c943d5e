"""The structure ``+`` builds, as merlin builds it: one concatenation node per chain whose
parent is the leftmost operand and whose dependencies are the others; column groups from
lists holding nodes, one level deep; and a row filter inside one branch of ``+`` refused."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.graph import ConcatColumns
from tabflow.schema import Schema


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "a": [1.0, None, 3.0, 4.0, -2.0, 6.0],
            "b": [10, 20, 30, 40, 50, 60],
            "c": ["x", None, "y", "x", "z", "y"],
            "d": [0.5, 1.5, None, 2.5, 3.5, 4.5],
            "e": ["u", "v", "u", "u", None, "v"],
        }
    )


def _reference(frame):
    """The columns of ``_graph()`` computed with plain pandas."""
    return pd.DataFrame(
        {
            "a": frame["a"].fillna(0.0),
            "b": frame["b"] * 2,
            "c": frame["c"],
            "d_r": frame["d"],
            "e": frame["e"],
        }
    )


def _branches():
    return (
        ["a"] >> ops.FillMissing(0.0),
        ["b"] >> ops.LambdaOp(lambda col: col * 2),
        ["d"] >> ops.Rename(postfix="_r"),
    )


def test_a_chain_of_plus_is_one_node_with_the_first_operand_as_parent(frame):
    a, b, d = _branches()
    total = a + b + "c" + d + ["e"]
    assert isinstance(total.op, ConcatColumns)
    assert total.parents == [a]
    assert total.dependencies[:2] == [b, total.dependencies[1]] and total.dependencies[1].selector.names == ["c"]
    assert total.dependencies[2] is d and total.dependencies[3].selector.names == ["e"]
    assert [n for n in a.children] and total in a.children and total in d.children

    wf = nvt.Workflow(total)
    assert wf.output_node is total
    out = wf.fit_transform(nvt.Dataset(frame, npartitions=2)).compute()
    pd.testing.assert_frame_equal(out.reset_index(drop=True), _reference(frame), check_dtype=False)
    # The in-process path (a dict request) takes the dependencies' columns too.
    served = wf.transform({name: frame[name].to_numpy() for name in ["a", "b", "c", "d", "e"]})
    np.testing.assert_array_equal(served["d_r"], frame["d"].to_numpy())
    np.testing.assert_array_equal(served["b"], frame["b"].to_numpy() * 2)


def test_plus_of_plus_nodes_is_flattened_and_leaves_the_operands_alone(frame):
    a, b, d = _branches()
    left, right = a + b, d + "e"
    both = left + right
    assert both.parents == [a] and both.dependencies[:2] == [b, d]
    assert both.dependencies[2].selector.names == ["e"]
    # Neither operand changed: ``left`` still makes only a and b.
    assert left.dependencies == [b] and right.dependencies[0].selector.names == ["e"]
    assert nvt.Workflow(left).fit_transform(frame).columns.tolist() == ["a", "b"]

    nested = a + (b + "c")
    assert nested.parents == [a] and nested.dependencies[0] is b and nested.dependencies[1].selector.names == ["c"]

    # A name on the left: the selection is the parent, the node a dependency.
    reversed_ = "c" + a
    assert reversed_.parents[0].selector.names == ["c"] and reversed_.dependencies == [a]
    out = nvt.Workflow(reversed_).fit_transform(frame)
    pd.testing.assert_frame_equal(out, pd.DataFrame({"c": frame["c"], "a": frame["a"].fillna(0.0)}), check_dtype=False)

    # Adding nothing returns the node itself, as in merlin.
    assert a + [] is a and [] + a is a


def test_node_schemas_are_resolved_from_parents_and_dependencies():
    renamed = ["a", "b"] >> ops.Rename(postfix="_r")
    total = renamed + "c"
    total.dependencies[0].compute_schemas(Schema(["a", "b", "c"]))
    total.compute_schemas(Schema(["a", "b", "c"]))
    assert total.input_columns.names == total.output_columns.names == ["a_r", "b_r", "c"]
    picked = total["a_r"]
    picked.compute_schemas(Schema(["a", "b", "c"]))
    assert picked.input_columns.names == picked.output_columns.names == ["a_r"]


def test_removing_an_input_read_through_a_dependency(frame):
    a, b, d = _branches()
    wf = nvt.Workflow(a + b + "c" + d).fit(frame)
    wf.remove_inputs(["d"])
    out = wf.transform(frame)
    pd.testing.assert_frame_equal(out, _reference(frame)[["a", "b", "c"]], check_dtype=False)


def test_workflows_saved_with_every_operand_as_a_parent_still_load(frame, tmp_path):
    a, b, d = _branches()
    wf = nvt.Workflow(a + b + "c" + d).fit(frame)
    wf.save(tmp_path / "wf")
    document_file = tmp_path / "wf" / "workflow.json"
    document = json.loads(document_file.read_text())
    assert document["version"] == 3
    # Rewrite as the earlier format stored ``a + b + c + d``: one concatenation whose parents
    # are all the operands.
    for entry in document["nodes"]:
        if entry["kind"] == "concat":
            entry["parents"], entry["dependencies"] = entry["parents"] + entry["dependencies"], []
    document["version"] = 2
    document_file.write_text(json.dumps(document))
    loaded = nvt.Workflow.load(tmp_path / "wf", trust_code=True)
    assert len(loaded.output_node.parents) == 4 and not loaded.output_node.dependencies
    pd.testing.assert_frame_equal(loaded.transform(frame), _reference(frame)[["a", "b", "c", "d_r"]], check_dtype=False)


def test_a_list_holding_nodes_feeds_an_op_as_one_column_group():
    frame = pd.DataFrame(
        {"geo": ["US>CA", "US>NY", "CA>BC", "CA>ON", "US>CA", None], "user": ["A", "A", "A", "B", "B", "A"]}
    )
    country = ["geo"] >> ops.LambdaOp(lambda col: col.str.slice(0, 2)) >> ops.Rename(postfix="_country")
    crossed = [country, "user"] >> ops.Categorify(encode_type="combo")
    assert crossed.parents[0].label == "[ ]"
    out = nvt.Workflow(crossed).fit_transform(frame)
    assert out.columns.tolist() == ["geo_country_user"]
    # Equal (country, user) pairs get equal codes, different pairs different ones.
    pairs = pd.DataFrame({"country": frame["geo"].str.slice(0, 2), "user": frame["user"]})
    groups = pairs.fillna("<null>").groupby(["country", "user"]).ngroup()
    codes = out["geo_country_user"]
    assert codes.groupby(groups).nunique().eq(1).all() and groups.groupby(codes).nunique().eq(1).all()

    # The same group as the operand of ``+``, as in NVTabular.
    cats = country + "user" + [country + "user"] >> ops.Categorify(encode_type="combo")
    out = nvt.Workflow(cats).fit_transform(frame)
    assert out.columns.tolist() == ["geo_country", "user", "geo_country_user"]
    assert out["geo_country"].iloc[0] == out["geo_country"].iloc[1] != out["geo_country"].iloc[2]


def test_column_groups_nest_one_level_deep():
    country = ["geo"] >> ops.Rename(postfix="_country")
    grouped = [country + "user"] + country + "user"
    assert isinstance(grouped >> ops.Categorify(encode_type="combo"), nvt.WorkflowNode)
    with pytest.raises(ValueError, match="column groups nest one level deep"):
        [grouped] >> ops.Categorify(encode_type="combo")
    with pytest.raises(ValueError, match="column groups nest one level deep"):
        country + [country + [country, "user"]]
    with pytest.raises(ValueError, match="column groups nest one level deep"):
        country + [[["geo", "user"]]]
    # A list of names inside the group is its columns, not a second level.
    assert (country + [country, ["user"]]).dependencies[0].label == "[ ]"


def test_a_row_filter_inside_one_branch_of_plus_is_refused(frame):
    # NVTabular put the branches side by side by position: the 5 rows left by the filter
    # were paired with the first 5 of 6, shifting every value after the dropped row.
    filtered = ["c"] >> ops.Dropna()
    with pytest.raises(ValueError, match=r"cannot put columns \['c'\] and \['b'\] side by side.*5 vs 6"):
        nvt.Workflow(filtered + ["b"]).fit_transform(frame)
    # Filtering the whole selection keeps each row's values together.
    out = nvt.Workflow((["c"] + ["b"]) >> ops.Dropna()).fit_transform(frame)
    pd.testing.assert_frame_equal(out.reset_index(drop=True), frame[["c", "b"]].dropna().reset_index(drop=True), check_dtype=False)


def test_the_picture_shows_every_operand_of_plus_as_an_input():
    a, b, d = _branches()
    text = nvt.Workflow(a + b + d).output_node.graph.describe()
    last = text.splitlines()[-1]
    assert last.startswith("[6] +") and "<-" in last and "<=" not in last
    assert last.count("[") == 4
