"""NVTabular 23.08 behaviour of the graph language and ops, pinned against pandas references.

Each test names the NVTabular behaviour it pins (read from NVTabular/merlin 23.08's source)
and computes the expected result with plain pandas/numpy.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow import ops


def _lists(series):
    return [list(v) for v in series.tolist()]


# ------------------------------------------------------------------------------- ListSlice
def test_list_slice_one_positive_argument_keeps_the_first_items():
    rows = [[1, 2, 3, 4], [5], []]
    df = pd.DataFrame({"l": pd.Series(rows, dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
    assert _lists(nvt.Workflow(["l"] >> ops.ListSlice(2)).fit_transform(df)["l"]) == [r[:2] for r in rows]
    assert _lists(nvt.Workflow(["l"] >> ops.ListSlice(-2)).fit_transform(df)["l"]) == [r[-2:] for r in rows]
    padded = nvt.Workflow(["l"] >> ops.ListSlice(3, pad=True)).fit_transform(df)["l"]
    assert _lists(padded) == [(r[:3] + [0, 0, 0])[:3] for r in rows]


# ------------------------------------------------------------------------ column groups
def test_a_list_operand_of_plus_is_one_column_group():
    # merlin: `node + [other_node, "c"]` adds the list as one group, so combo encodes the
    # combination of the node's outputs and c.
    df = pd.DataFrame({"a": ["x", "y", "x", "x"], "b": ["p", "p", "q", "p"], "c": ["u", "u", "u", "v"]})
    node = ["a", "b"] >> ops.Rename(postfix="")
    out = nvt.Workflow((node + "c" + [node + "c"]) >> ops.Categorify(encode_type="combo")).fit_transform(df)
    assert list(out.columns) == ["a", "b", "c", "a_b_c"]
    combos = list(zip(df["a"], df["b"], df["c"]))
    counts = pd.Series(combos).value_counts()
    order = sorted(counts.index, key=lambda k: (-counts[k], k))
    assert out["a_b_c"].tolist() == [3 + order.index(k) for k in combos]
    # A plain list of names is not a group: each column is encoded on its own.
    separate = nvt.Workflow((node + ["c"]) >> ops.Categorify(encode_type="combo")).fit_transform(df)
    assert list(separate.columns) == ["a", "b", "c"]


def test_combo_null_sorts_before_its_ties():
    df = pd.DataFrame({"a": pd.Series(["x", None, "x", None], dtype="str"), "b": ["p", "p", "q", "q"]})
    out = nvt.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo")).fit_transform(df)
    # Four combinations seen once each: (None, p), (None, q), (x, p), (x, q) in that order.
    assert out["a_b"].tolist() == [5, 3, 6, 4]


def test_single_table_gives_disjoint_index_ranges():
    df = pd.DataFrame({"a": ["x", "y", "x", None], "b": ["p", "q", "r", "p"]})
    wf = nvt.Workflow(["a", "b"] >> ops.Categorify(single_table=True))
    out = wf.fit_transform(df)
    a_codes, b_codes = set(out["a"]), set(out["b"])
    assert not a_codes & b_codes
    # a: null 1, OOV 2, x 3, y 4; b's block follows: null 5, OOV 6, p 7, q 8, r 9.
    assert out["a"].tolist() == [3, 4, 3, 1] and out["b"].tolist() == [7, 8, 9, 7]
    sizes = nvt.ops.get_embedding_sizes(wf)
    assert sizes["a"][0] == sizes["b"][0] == 10
    op = wf.ops[0]
    assert op.decode(out, "b").tolist() == ["p", "q", "r", "p"]


# --------------------------------------------------------------------------- graph
def test_node_getitem_subtraction_and_pandas_index():
    df = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0], "c": ["x", "y"]})
    logs = ["a", "b"] >> ops.LogOp()
    assert list(nvt.Workflow(logs["a"]).fit_transform(df).columns) == ["a"]
    assert list(nvt.Workflow(logs[["b", "a"]]).fit_transform(df).columns) == ["b", "a"]
    other = ["b"] >> ops.Rename(postfix="")
    out = nvt.Workflow((logs + "c") - other).fit_transform(df)
    assert list(out.columns) == ["a", "c"]
    np.testing.assert_allclose(out["a"], np.log1p(df["a"]))
    norm = nvt.Workflow(df.columns[:2] >> ops.Normalize()).fit_transform(df)
    assert list(norm.columns) == ["a", "b"]
    with pytest.raises(KeyError, match="zz"):
        nvt.Workflow(logs["zz"]).fit(df)


def test_workflow_node_and_schema_names_at_top_level():
    assert nvt.WorkflowNode is nvt.Node
    assert nvt.Schema is nvt.schema.Schema and nvt.ColumnSchema is nvt.schema.ColumnSchema
    node = nvt.WorkflowNode(["a", "b"])
    assert node.selector.names == ["a", "b"]
    from tabflow.ops.categorify import get_embedding_sizes

    assert get_embedding_sizes is nvt.ops.get_embedding_sizes


def test_transform_without_fit_when_no_op_needs_statistics():
    df = pd.DataFrame({"a": [1, 2], "b": [3.0, 4.0]})
    wf = nvt.Workflow(nvt.ColumnSelector(["a"]) >> ops.Clip(min_value=2))
    out = wf.transform(nvt.Dataset(df)).compute()
    assert out["a"].tolist() == [2, 2]
    with pytest.raises(ops.NotFittedError):
        nvt.Workflow(["b"] >> ops.Normalize()).transform(df)


def test_join_groupby_cont_cols_as_a_node():
    df = pd.DataFrame({"user": ["a", "b", "a"], "price": [1.0, None, 3.0]})
    filled = ["price"] >> ops.FillMissing(fill_val=5.0)
    out = nvt.Workflow(["user"] >> ops.JoinGroupby(cont_cols=filled, stats=["count", "mean"])).fit_transform(df)
    assert out["user_price_mean"].tolist() == [2.0, 5.0, 2.0]
    assert out["user_count"].tolist() == [2, 1, 2]


# ----------------------------------------------------------------------------- Groupby
def test_groupby_keys_only_when_selected_first_last_in_ascending_order():
    df = pd.DataFrame({"s": [1, 1, 1, 2, 2], "t": [3, 1, 2, 5, 4], "x": [10, 11, 12, 13, 14]})
    op = ops.Groupby(groupby_cols="s", sort_cols="t", aggs={"x": ["list", "first", "last"]}, ascending=False)
    out = nvt.Workflow(["x"] >> op).fit_transform(df)
    assert list(out.columns) == ["x_list", "x_first", "x_last"]  # s read, not output
    assert _lists(out["x_list"]) == [[10, 12, 11], [13, 14]]  # descending t
    assert out["x_first"].tolist() == [11, 14] and out["x_last"].tolist() == [10, 13]  # smallest / largest t
    stats = ops.Groupby(groupby_cols="s", aggs={"x": ["median", "nunique", "count", "mean"]})
    out = nvt.Workflow(["s", "x"] >> stats).fit_transform(df)
    grouped = df.groupby("s")["x"]
    assert out["x_median"].tolist() == grouped.median().tolist() and out["x_median"].dtype == np.float32
    assert out["x_nunique"].tolist() == grouped.nunique().tolist() and out["x_count"].dtype == np.int32


# ---------------------------------------------------------------------- fitted statistics
def test_fitted_statistics_under_nvtabulars_names():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0, None], "l": pd.Series([[1], [1, 2, 3], [], None], dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
    normalize, minmax, median, counts = ops.Normalize(), ops.NormalizeMinMax(), ops.FillMedian(), ops.ValueCount()
    assert normalize.means == {} and minmax.mins == {}  # NVTabular starts with empty dicts
    nvt.Workflow(
        (["x"] >> normalize) + (["x"] >> minmax >> ops.Rename(postfix="_mm"))
        + (["x"] >> median >> ops.Rename(postfix="_m")) + (["l"] >> counts)
    ).fit(df)
    assert normalize.means == {"x": 2.0} and normalize.stds == {"x": 1.0}
    assert minmax.mins == {"x": 1.0} and minmax.maxs == {"x": 3.0}
    assert median.medians == {"x": 2.0}
    assert counts.stats == {"l": {"value_count": {"min": 0, "max": 3}}}


def test_tree_width_warns_when_the_op_is_built():
    with pytest.warns(FutureWarning, match="tree_width"):
        op = ops.Categorify(tree_width=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nvt.Workflow(["c"] >> op).fit(pd.DataFrame({"c": ["a", "b"]}))  # not again at fit
