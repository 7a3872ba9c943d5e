"""The column graph language: >>, +, -, nested groups, tags, dependencies and errors."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ColumnGroup, ColumnSelector, ops
from tabflow.ops import Operator
from tabflow.schema import Tags
from tabflow.selector import as_node


class Recorder(Operator):
    """Records the grouped names it is given and passes its columns through, plus one."""

    def __init__(self, tag: str = "r") -> None:
        self.tag = tag

    def transform(self, col_selector, df):
        Recorder.seen = col_selector.grouped_names
        return df[col_selector.names] + 1


class AddDependency(Operator):
    """Adds the dependency column ``y`` to each selected column."""

    def __init__(self, dependency: str = "y") -> None:
        self.dependency = dependency

    @property
    def dependencies(self):
        return [self.dependency]

    def transform(self, col_selector, df):
        assert self.dependency in df.columns
        return df[col_selector.names].add(df[self.dependency], axis=0)


@pytest.fixture
def frame():
    return pd.DataFrame({"a": [1, 2], "b": [10, 20], "c": [100, 200], "y": [5, 6]})


def test_selector_names_and_groups():
    sel = ColumnSelector(["a", ["b", "c"], "a"])
    assert sel.names == ["a", "b", "c"]
    assert sel.grouped_names == ["a", ("b", "c")]
    assert (sel + ["d"]).names == ["a", "d", "b", "c"]
    assert (sel - ["b"]).grouped_names == ["a"]
    with pytest.warns(DeprecationWarning, match="ColumnSelector"):  # NVTabular 23.08's deprecated name
        assert ColumnGroup(["a", ["b", "c"]]) == ColumnSelector(["a", ["b", "c"]])
    assert ColumnSelector.from_dict(sel.to_dict()) == sel
    with pytest.raises(TypeError, match="strings"):
        ColumnSelector([1])


def test_rshift_plus_minus(frame):
    graph = (["a", "b"] >> Recorder()) + ["c"]
    out = nvt.Workflow(graph).fit_transform(frame)
    assert out.columns.tolist() == ["a", "b", "c"]
    assert out["a"].tolist() == [2, 3] and out["c"].tolist() == [100, 200]
    dropped = nvt.Workflow(graph - ["b"]).fit_transform(frame)
    assert dropped.columns.tolist() == ["a", "c"]


def test_op_class_after_rshift(frame):
    out = nvt.Workflow(["a"] >> Recorder >> Recorder).fit_transform(frame)
    assert out["a"].tolist() == [3, 4]
    out = nvt.Workflow(ColumnSelector(["b"]) >> Recorder).fit_transform(frame)
    assert out["b"].tolist() == [11, 21]


def test_nested_groups_reach_the_op(frame):
    nvt.Workflow([["a", "b"], "c"] >> Recorder()).fit_transform(frame)
    assert Recorder.seen == ["c", ("a", "b")]


def test_tag_selector(frame):
    schema = nvt.Dataset(frame).schema
    tagged = nvt.schema.Schema(
        [c.with_tags(Tags.CONTINUOUS) if c.name in ("a", "c") else c for c in schema]
    )
    ds = nvt.Dataset(frame, schema=tagged)
    wf = nvt.Workflow(ColumnSelector(tags=[Tags.CONTINUOUS]) >> Recorder())
    out = wf.fit_transform(ds).compute()
    assert out.columns.tolist() == ["a", "c"] and out["c"].tolist() == [101, 201]


def test_dependencies(frame):
    out = nvt.Workflow(["a", "b"] >> AddDependency()).fit_transform(frame)
    assert out.columns.tolist() == ["a", "b"]
    assert out["a"].tolist() == [6, 8] and out["b"].tolist() == [15, 26]


def test_same_column_twice_is_fine_when_it_is_the_same(frame):
    node = ["a"] >> Recorder()
    out = nvt.Workflow(node + node + ["b", "b"]).fit_transform(frame)
    assert out.columns.tolist() == ["a", "b"] and out["a"].tolist() == [2, 3]
    # Dropping the computed column first makes room for the raw one.
    out = nvt.Workflow((node - ["a"]) + ["a"]).fit_transform(frame)
    assert out["a"].tolist() == [1, 2]
    out = nvt.Workflow(["a", "b"] + ["a"]).fit_transform(frame)
    assert out.columns.tolist() == ["a", "b"]


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        # merlin 23.08's test_concat_prefers_rhs_with_seen_root_output and its two siblings:
        # the right operand's column wins, whether it is a root column the left one also
        # read or one it did not.
        (lambda: (["a", "b"] >> Recorder()) + ["a"], {"b": [11, 21], "a": [1, 2]}),
        (lambda: (["a"] >> Recorder()) + ["b"], {"a": [2, 3], "b": [10, 20]}),
        (lambda: (["a"] >> Recorder()) + ["a", "b"], {"a": [1, 2], "b": [10, 20]}),
        (lambda: ["a", "b"] + (["a"] >> Recorder()), {"b": [10, 20], "a": [2, 3]}),
        # Three operands: the last one that gives the column.
        (lambda: (["a"] >> Recorder()) + ["a"] + (["a"] >> Recorder() >> Recorder()), {"a": [3, 4]}),
        # An op whose dependency brings a column of a parent's name reads the dependency's.
        (lambda: ["a"] >> Recorder() >> AddDependency("a"), {"a": [2, 4]}),
    ],
)
def test_a_column_several_operands_give_is_the_last_ones_as_in_merlin(frame, graph, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # merlin merges without a warning, and so does tabflow
        out = nvt.Workflow(graph()).fit_transform(frame)
    assert out.to_dict("list") == expected  # column order too: merlin's Schema.__add__ order


def test_a_column_several_operands_give_merges_their_schemas_as_in_merlin(frame):
    # merlin's ColumnSchema merge: the later operand's dtype and shape, both operands' tags
    # (a contradicted tag dropped) and properties (the later one's value for a shared key).
    left = ["a"] >> ops.AddMetadata(tags=[Tags.CATEGORICAL, Tags.USER], properties={"p": 1, "shared": "left"})
    right = ["a"] >> ops.LambdaOp(lambda col: col * 0.5, dtype="float32") >> ops.AddMetadata(
        tags=[Tags.CONTINUOUS, Tags.TARGET], properties={"q": 2, "shared": "right"}
    )
    workflow = nvt.Workflow(left + right)
    out = workflow.fit_transform(frame)
    column = workflow.output_schema["a"]
    assert column.dtype == "float32" and out["a"].tolist() == [0.5, 1.0]
    assert column.tags == {Tags.CONTINUOUS, Tags.USER, Tags.TARGET}
    assert column.properties == {"p": 1, "q": 2, "shared": "right"}
    # The other way round, the categorical scalar wins.
    flipped = nvt.Workflow(right + left)
    out = flipped.fit_transform(frame)
    assert flipped.output_schema["a"].dtype == "int64" and out["a"].tolist() == [1, 2]
    assert flipped.output_schema["a"].tags == {Tags.CATEGORICAL, Tags.USER, Tags.TARGET}


def test_a_column_retagged_in_a_later_operand_has_both_operands_tags(frame):
    cat = ["a", "b"] >> ops.Categorify()
    workflow = nvt.Workflow(cat + (cat["a"] >> ops.TagAsItemID()))
    out = workflow.fit_transform(frame)
    assert workflow.output_schema["a"].tags == {Tags.CATEGORICAL, Tags.ITEM, Tags.ID}
    assert workflow.output_schema["b"].tags == {Tags.CATEGORICAL}
    assert workflow.output_schema["a"].properties == nvt.Workflow(cat).fit(frame).output_schema["a"].properties
    assert out.columns.tolist() == ["b", "a"] and out["a"].tolist() == [3, 4]


def test_a_list_column_merged_with_a_fitted_value_count_keeps_it(frame):
    # MovieLens-style: encoded genres + (the same genres >> ValueCount()) carry the counts.
    lists = pd.DataFrame({"genres": [["x", "y"], ["y"], ["x", "z", "y"]]})
    encoded = ["genres"] >> ops.Categorify()
    workflow = nvt.Workflow(encoded + (encoded["genres"] >> ops.ValueCount() >> ops.TagAsItemFeatures()))
    workflow.fit(lists)
    genres = workflow.output_schema["genres"]
    assert genres.is_list and genres.is_ragged and dict(genres.value_count) == {"min": 1, "max": 3}
    assert {Tags.CATEGORICAL, Tags.ITEM} <= set(genres.tags)


def test_missing_column_names_it_and_the_available_ones(frame):
    with pytest.raises(KeyError, match=r"\['nope'\].*available columns are \['a', 'b', 'c', 'y'\]"):
        nvt.Workflow(["a", "nope"] >> Recorder()).fit(frame)


def test_as_node_and_errors():
    assert as_node("a").selector.names == ["a"]
    node = as_node(["a", ["b"] >> Recorder()])
    assert node.kind == "concat" and len(node.parents) == 2
    with pytest.raises(TypeError, match="`>>` expects an op"):
        ColumnSelector(["a"]) >> 3
    with pytest.raises(TypeError):
        as_node(3.5)


def test_selector_subgroups_as_merlin_keeps_them():
    import pandas as pd

    import tabflow as nvt
    from tabflow import ops
    from tabflow.graph import ColumnSelector, Node

    single = ColumnSelector(subgroups=ColumnSelector(["a", "b"]))
    assert single.subgroups == [ColumnSelector(["a", "b"])] and single.grouped_names == [("a", "b")]
    nested = ColumnSelector(["x", ["a", ["b", "c"]]])
    assert isinstance(nested.subgroups[0], ColumnSelector)
    assert isinstance(nested.subgroups[0].subgroups[0], ColumnSelector)
    assert nested.names == ["x", "a", "b", "c"]
    twice = ColumnSelector([("a", "b"), ("a", "b"), "c", "c"])
    assert twice.grouped_names == ["c", ("a", "b")] and twice.names == ["c", "a", "b"]
    with pytest.raises(ValueError, match="Node"):
        ColumnSelector(["a", Node(ColumnSelector(["b"]))])
    with pytest.raises(TypeError, match="Node"):
        ColumnSelector(Node(ColumnSelector(["b"])))
    # A group given twice is encoded once, as merlin's selector hands it to the op once.
    df = pd.DataFrame({"a": ["x", "y", None, "x"], "b": [1, 2, 2, None]})
    out = nvt.Workflow(ColumnSelector([["a", "b"], ["a", "b"]]) >> ops.Categorify(encode_type="combo")).fit_transform(df)
    assert out.columns.tolist() == ["a_b"]
    expected = nvt.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo")).fit_transform(df)
    pd.testing.assert_frame_equal(out, expected)
