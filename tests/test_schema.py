"""Schema and ColumnSchema: tags, properties, selection and the JSON round trip."""

from __future__ import annotations

import os

import pytest

from tabflow.schema import ColumnSchema, Schema, Tags


def test_column_schema_tags_and_properties():
    c = ColumnSchema("C1", dtype="int64", tags=["categorical", "custom"])
    assert Tags.CATEGORICAL in c.tags and "custom" in c.tags
    c2 = c.with_tags(Tags.ITEM_ID, [Tags.ITEM]).with_properties(cardinality=10).without_tags("custom")
    assert c2.tags == {Tags.CATEGORICAL, Tags.ITEM_ID, Tags.ITEM}
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
    assert back["plain"].dtype == "float64"
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
