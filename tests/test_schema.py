"""Schema and ColumnSchema: tags, properties, selection and the JSON round trip."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tabflow.schema import ColumnSchema, Schema, Tags


def test_column_schema_tags_and_properties():
    c = ColumnSchema("C1", dtype="int64", tags=["categorical", "custom"])
    assert Tags.CATEGORICAL in c.tags and "custom" in c.tags
    c2 = c.with_tags(Tags.ITEM_ID, [Tags.ITEM]).with_properties(cardinality=10).without_tags("custom")
    # ITEM_ID is stored as its parts, ITEM and ID (merlin's TagSet).
    assert c2.tags == {Tags.CATEGORICAL, Tags.ID, Tags.ITEM}
    assert c2.properties == {"cardinality": 10} and c.properties == {}
    assert c2.with_name("C2").name == "C2"


def test_list_dtype_sets_is_list():
    c = ColumnSchema("tags", dtype="list<int64>")
    assert c.is_list and c.element_dtype == "int64"
    scalar = c.with_dtype("int32")
    assert not scalar.is_list and scalar.element_dtype == "int32" and scalar.value_count is None


def test_schema_selection():
    s = Schema(
        [
            ColumnSchema("a", dtype="int64", tags={Tags.CATEGORICAL}),
            ColumnSchema("b", dtype="float32", tags={Tags.CONTINUOUS}),
            ColumnSchema("y", dtype="int8", tags={Tags.TARGET, Tags.BINARY_CLASSIFICATION}),
        ]
    )
    assert s.select_by_tag(Tags.CONTINUOUS, Tags.TARGET).column_names == ["b", "y"]
    assert s.select(["y", "a"]).column_names == ["y", "a"]
    assert s.without(["a"]).column_names == ["b", "y"]
    assert (s.select(["a"]) + s).column_names == ["a", "b", "y"]
    assert s.dtypes == {"a": "int64", "b": "float32", "y": "int8"}
    assert "a" in s and "z" not in s and len(s) == 3
    with pytest.raises(KeyError, match="'z'.*columns are"):
        s["z"]


def test_json_round_trip(tmp_path):
    s = Schema(
        [
            ColumnSchema("a", dtype="Int64", tags={Tags.CATEGORICAL}, properties={"cardinality": 7, "nested": {"k": [1, 2]}}),
            ColumnSchema("l", dtype="list<float32>", value_count={"min": 0, "max": 5}),
            "plain",
        ]
    )
    path = str(tmp_path / "schema.json")
    s.to_json(path)
    assert os.listdir(tmp_path) == ["schema.json"]  # no temp file left behind
    back = Schema.from_json(path)
    assert back == s
    assert back["l"].value_count == {"min": 0, "max": 5}
    assert back["plain"].dtype == "unknown"
    assert repr(back).startswith("Schema([a:Int64")


def _tagged_schema() -> Schema:
    return Schema(
        [
            ColumnSchema("genres", dtype="list<int64>", tags={Tags.CATEGORICAL, Tags.ITEM}),
            ColumnSchema("g", dtype="int64", tags={Tags.CATEGORICAL}),
            ColumnSchema("x", dtype="float32", tags={Tags.CONTINUOUS}),
            ColumnSchema("y", dtype="int8", tags={Tags.TARGET}),
        ]
    )


def test_a_single_name_is_one_column_not_its_characters():
    # 'genres' as a set of characters would drop 'g' and keep 'genres'.
    s = _tagged_schema()
    assert s.without("genres").column_names == ["g", "x", "y"]
    assert s.select("genres").column_names == ["genres"]
    assert s.excluding_by_name("genres").column_names == ["g", "x", "y"]
    assert s.remove_col("g").column_names == ["genres", "x", "y"]
    assert s.select_by_name("genres").column_names == ["genres"]


def test_merlin_style_selection_and_lookup():
    s = _tagged_schema()
    assert s.select_by_name(["y", "missing", "g"]).column_names == ["y", "g"]
    assert s[["x", "g"]].column_names == ["x", "g"]
    assert s.get("x").dtype == "float32" and s.get("missing") is None
    assert s.select_by_tag(Tags.TARGET).first.name == "y"
    with pytest.raises(ValueError, match="no columns"):
        Schema().first
    assert (s - s.select(["g", "y"])).column_names == ["genres", "x"]
    assert s.copy() == s and s.copy() is not s


def test_tag_selection_takes_lists_and_a_predicate():
    s = _tagged_schema()
    assert s.select_by_tag([Tags.CATEGORICAL, Tags.CONTINUOUS]).column_names == ["genres", "g", "x"]
    assert s.select_by_tag(["categorical", Tags.ITEM], pred_fn=all).column_names == ["genres"]
    assert s.excluding_by_tag(Tags.CATEGORICAL).column_names == ["x", "y"]
    assert s.remove_by_tag([Tags.CATEGORICAL, Tags.TARGET]).column_names == ["x"]
    assert s.select_by_tag().column_names == []


def test_schemas_pickle_and_copy():
    # Dask sends schemas (inside ops and graphs) to workers by pickling them.
    import copy
    import pickle

    from tabflow.schema import Domain, TagSet

    c = ColumnSchema("a", ["user_id", "categorical"], {"p": 1}, "int64", dims=(None, (1, 3)))
    loaded = ColumnSchema.from_dict({"name": "x", "tags": ["categorical", "continuous"], "dtype": "int64"})
    for column in (c, loaded):
        for clone in (pickle.loads(pickle.dumps(column)), copy.deepcopy(column)):
            assert clone == column and type(clone.tags) is TagSet
    assert isinstance(pickle.loads(pickle.dumps(c)).value_count, Domain)


def test_canonical_dtype_names():
    import numpy as np
    import pyarrow as pa

    from tabflow.schema import dtypes

    assert dtypes.canonical_dtype(pa.list_(pa.int32())) == "list<int32>"
    assert dtypes.canonical_dtype(np.dtype("U")) == "string"
    assert dtypes.canonical_dtype("datetime64[ns, UTC]") == "datetime64[ns, UTC]"  # kept for the engine
    assert dtypes.canonical_dtype("unknown") == dtypes.UNKNOWN and dtypes.is_unknown("list<unknown>")
    with pytest.raises(TypeError):
        dtypes.canonical_dtype([Tags.CATEGORICAL])


def test_a_multi_source_output_takes_tags_source_by_source():
    import pandas as pd

    import tabflow as nvt
    from tabflow import ops

    class Sum(ops.Operator):
        def transform(self, col_selector, df):
            return pd.DataFrame({"ab": df[col_selector.names].sum(axis=1)})

        def column_mapping(self, col_selector):
            return {"ab": list(col_selector.names)}

    ds = nvt.Dataset(pd.DataFrame({"a": [1, 2], "b": [1.0, 2.0]}))
    ds.schema["a"] = ds.schema["a"].with_tags([Tags.CATEGORICAL, Tags.USER])
    ds.schema["b"] = ds.schema["b"].with_tags(Tags.CONTINUOUS)
    wf = nvt.Workflow(["a", "b"] >> Sum()).fit(ds)
    assert wf.output_schema["ab"].tags == {Tags.USER, Tags.CONTINUOUS}


# ------------------------------------------------------------------ shapes of any rank
from tabflow.schema import Dimension, Shape  # noqa: E402
from tabflow.schema.shape import DefaultShapes  # noqa: E402


@pytest.mark.parametrize(
    "dims, ragged, dtype, counts",
    [
        ((None,), False, "float32", None),
        ((None, 3), False, "list<float32>", (3, 3)),
        ((None, 3, 4), False, "list<list<float32>>", (3, 3)),
        ((None, None, 4), True, "list<list<float32>>", None),
        ((None, (1, 5), 2, 2), True, "list<list<list<float32>>>", (1, 5)),
        ((None, 3, None), True, "list<list<float32>>", (3, 3)),
    ],
)
def test_shapes_of_any_rank(dims, ragged, dtype, counts):
    column = ColumnSchema("m", dtype="float32", dims=dims)
    assert column.shape == Shape(dims) and len(column.shape) == len(dims)
    assert (column.dtype, column.is_list, column.is_ragged) == (dtype, len(dims) > 1, ragged)
    assert (None if column.value_count is None else (column.value_count.min, column.value_count.max)) == counts
    # Every copy keeps the dimensions the list fields do not describe.
    for copy in (column.with_name("n"), column.with_tags("categorical"), column.with_properties({"p": 1})):
        assert copy.shape == column.shape and copy.dtype == column.dtype
    again = ColumnSchema.from_dict(json.loads(json.dumps(column.to_dict())))
    assert again == column and again.shape.as_tuple == column.shape.as_tuple


def test_shape_and_dimension_model():
    assert Shape((None, 3, 4)) == Shape((Dimension(), Dimension(3, 3), (4, 4)))
    assert Shape((None, 3, 4)) != Shape((None, 3, 5)) and Shape() == Shape((None, 3, 5))
    assert Shape(DefaultShapes.LIST) == Shape((None, None)) and Shape(DefaultShapes.SCALAR).as_tuple == ((0, None),)
    assert Shape((8, 3, 4)).is_fixed and not Shape((None, 3, 4)).is_fixed and not Shape((None, 3, 4)).is_ragged
    assert Shape((None, np.int64(3))).as_tuple == ((0, None), 3)
    assert Shape((None, 3, 4)).with_dim_max(2, 6).as_tuple == ((0, None), 3, (4, 6))
    with pytest.raises(ValueError, match="below its minimum"):
        Dimension(3, 2)
    with pytest.raises(ValueError, match="integer"):
        Shape((None, 2.5))


def test_list_dtype_depth_follows_the_shape():
    c = ColumnSchema("a", dtype="float64").with_shape((None, 3, 4))
    assert c.dtype == "list<list<float64>>" and c.element_dtype == "float64"
    assert c.with_shape((None, 3)).dtype == "list<float64>" and c.with_shape((None,)).dtype == "float64"
    # A list dtype keeps the shape (as merlin's with_dtype does); a scalar dtype drops the lists.
    assert c.with_dtype("int32", is_list=True).shape.as_tuple == ((0, None), 3, 4)
    assert c.with_dtype("int32").shape.as_tuple == ((0, None),)
    # New value counts describe the second dimension only.
    wider = c.with_properties({"value_count": {"min": 1, "max": 5}})
    assert wider.shape.as_tuple == ((0, None), (1, 5), 4) and wider.is_ragged
    # Data of lists of lists without counts: every inner length unknown.
    assert ColumnSchema("n", dtype="list<list<int64>>").shape.as_tuple == ((0, None), (0, None), (0, None))
    merged = (Schema([c]) + Schema([ColumnSchema("a", dtype="int64", dims=(None, 2, 2, 2))]))["a"]
    assert merged.shape.as_tuple == ((0, None), 2, 2, 2) and merged.dtype == "list<list<list<int64>>>"


def test_schema_files_keep_shapes_of_any_rank(tmp_path):
    from tabflow.compat.tf_metadata import schema_from_tfmd_json, tfmd_json

    s = Schema([
        ColumnSchema("m", dtype="float32", dims=(None, 3, 2), tags=["continuous"]),
        ColumnSchema("r", dtype="int32", dims=(None, None, 4), tags=["categorical"]),
        ColumnSchema("l", dtype="int64", dims=(None, (1, 5))),
        ColumnSchema("b", dtype="int64", dims=((1, 64), 2)),
        ColumnSchema("s", dtype="float64"),
    ])
    s.to_json(str(tmp_path / "_schema.json"))
    assert Schema.from_json(str(tmp_path / "_schema.json")) == s
    back = schema_from_tfmd_json(json.loads(json.dumps(tfmd_json(s))))
    assert back == s
    assert [c.shape.as_tuple for c in back] == [c.shape.as_tuple for c in s]
