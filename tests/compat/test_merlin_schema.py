"""merlin.schema 23.08 idioms, run against tabflow.schema with only the import changed.

Each expected value is what merlin-core 23.08 (``merlin/schema/schema.py``, ``tags.py``,
``merlin/dtypes``) returns for the same call, written out as a plain literal. Where tabflow
differs on purpose the test says so and pins tabflow's behaviour.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ColumnSelector, ops
from tabflow.schema import ColumnSchema, Domain, Schema, Shape, Tags, TagSet
from tabflow.schema.tags import TagsType  # noqa: F401 - merlin's import path works

CATEGORICAL, CONTINUOUS, ID, USER, ITEM, TARGET = (
    Tags.CATEGORICAL, Tags.CONTINUOUS, Tags.ID, Tags.USER, Tags.ITEM, Tags.TARGET
)


# ------------------------------------------------------------------------ 1. editing a schema
def test_setitem_tags_a_target_the_merlin_way():
    s = Schema([ColumnSchema("x", dtype="float32"), ColumnSchema("label", dtype="int8")])
    s["label"] = s["label"].with_tags(Tags.TARGET)
    assert s.select_by_tag(Tags.TARGET).column_names == ["label"]
    assert s.column_names == ["x", "label"]  # replaced in place, order kept
    s["new"] = ColumnSchema("new", dtype="int64")
    assert s.column_names == ["x", "label", "new"]


def test_setitem_on_a_dataset_schema_reaches_the_loader():
    from tabflow.loader.torch import Loader

    ds = nvt.Dataset(pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "label": [0, 1, 0, 1]}))
    ds.schema["label"] = ds.schema["label"].with_tags(Tags.TARGET)
    loader = Loader(ds, batch_size=2)
    assert loader.label_names == ["label"]
    inputs, target = next(iter(loader))
    assert set(inputs) == {"x"} and target.tolist() == [0, 1]


def test_column_schemas_is_the_live_mapping():
    s = Schema([ColumnSchema("a"), ColumnSchema("b")])
    assert s.column_schemas is s.column_schemas
    s.column_schemas["w"] = ColumnSchema("w")
    del s.column_schemas["a"]
    assert s.column_names == ["b", "w"]
    s.column_schemas["b"] = s["b"].with_tags(CATEGORICAL)
    assert s["b"].tags == {CATEGORICAL}


def test_column_schemas_refuses_a_mismatched_entry():
    # tabflow checks what merlin stores silently: the key must be the column's name.
    s = Schema([ColumnSchema("a")])
    with pytest.raises(ValueError, match="with_name"):
        s["b"] = ColumnSchema("a")
    with pytest.raises(TypeError):
        s.column_schemas["b"] = "b"


# -------------------------------------------------------------------------- 2. ColumnSchema
def test_positional_order_is_merlins():
    c = ColumnSchema("a", [CATEGORICAL], {"cardinality": 3}, "int32", False, False)
    assert (c.name, c.tags, c.properties, c.dtype, c.is_list, c.is_ragged) == (
        "a", {CATEGORICAL}, {"cardinality": 3}, "int32", False, False
    )


@pytest.mark.parametrize(
    "given, expected",
    [
        (np.int32, "int32"),
        (np.dtype("float32"), "float32"),
        (np.float64, "float64"),
        (int, "int64"),
        (float, "float64"),
        (bool, "bool"),
        (str, "string"),
        ("float", "float64"),
        ("int64", "int64"),
        ("f4", "float32"),
        (pd.Int64Dtype(), "Int64"),
        (pd.StringDtype(), "string"),
        ("datetime64[ns]", "datetime64[ns]"),
    ],
)
def test_dtypes_are_normalised(given, expected):
    assert ColumnSchema("a", dtype=given).dtype == expected
    assert ColumnSchema("a").with_dtype(given).dtype == expected
    assert ColumnSchema("a", dtype=given) == ColumnSchema("a", dtype=expected)


def test_no_dtype_is_unknown_not_float64():
    assert ColumnSchema("a").dtype == "unknown"
    assert Schema(["a"])["a"].dtype == "unknown"


def test_an_unknown_input_dtype_is_resolved_from_the_data():
    df = pd.DataFrame({"x": [1.0, 4.0], "n": [1, 2]})
    for op, out_dtype in ((ops.LogOp(), "float32"), (ops.Clip(min_value=0), "unknown"), (ops.LambdaOp(lambda c: c + 1), "unknown")):
        wf = nvt.Workflow(["x", "n"] >> op).fit_schema(Schema(["x", "n"]))
        assert wf.output_schema["x"].dtype == out_dtype
        out = wf.transform(df)
        assert wf.output_schema["n"].dtype != "unknown" and "unknown" not in wf.input_dtypes.values()
        assert out["n"].dtype.kind in "if"
    # Statistics ops are fitted on data, whose dtypes are always known.
    wf = nvt.Workflow(["n"] >> ops.Categorify()).fit(df)
    assert wf.input_dtypes == {"n": "int64"} and wf.output_dtypes == {"n": "int64"}
    assert nvt.Dataset(df, schema=Schema(["x", "n"])).schema.dtypes == {"x": "float64", "n": "int64"}


def test_list_flags_shape_and_value_count():
    fixed = ColumnSchema("a", dtype="int64", is_list=True, is_ragged=False, properties={"value_count": {"max": 3}})
    assert fixed.shape.dims[1].max == 3 and fixed.shape.dims[1].min == 3
    assert fixed.value_count.min == 3 and fixed.value_count["max"] == 3
    assert fixed.is_list and not fixed.is_ragged
    # tabflow's dtype names carry list-ness.
    assert fixed.dtype == "list<int64>" and fixed.element_dtype == "int64"

    ragged = ColumnSchema("b", dtype="int64", properties={"value_count": {"min": 1, "max": 4}})
    assert ragged.is_list and ragged.is_ragged and ragged.shape.as_tuple == ((0, None), (1, 4))

    assert ColumnSchema("c", dtype="float32", dims=(None, 5)).value_count == Domain(5, 5)
    assert ColumnSchema("c", dtype="float32", dims=(None, 5)).properties == {"value_count": {"min": 5, "max": 5}}
    unknown_length = ColumnSchema("d", dtype="int64", is_list=True)
    assert unknown_length.is_ragged and unknown_length.value_count is None
    assert unknown_length.shape == Shape((None, None))
    scalar = ColumnSchema("e", dtype="int64")
    assert not scalar.is_list and not scalar.is_ragged and not scalar.shape.is_list


def test_inconsistent_list_flags_are_errors():
    with pytest.raises(ValueError):
        ColumnSchema("a", dtype="int64", is_list=False, is_ragged=True)
    with pytest.raises(ValueError):
        ColumnSchema("a", dtype="int64", dims=(None, 3), is_ragged=True)
    with pytest.raises(ValueError):
        ColumnSchema("a", dtype="int64", dims=(None, 3), properties={"value_count": {"min": 1, "max": 3}})


def test_with_shape():
    c = ColumnSchema("a", dtype="int64").with_shape((None, 4))
    assert (c.is_list, c.is_ragged, c.value_count.max, c.dtype) == (True, False, 4, "list<int64>")
    back = c.with_shape(Shape((None,)))
    assert (back.is_list, back.value_count, back.dtype, "value_count" in back.properties) == (False, None, "int64", False)


def test_value_count_is_a_domain_and_a_mapping():
    c = ColumnSchema("a", dtype="list<int64>", value_count={"min": 0, "max": 5})
    assert c.value_count.max == 5 and c.value_count["max"] == 5
    assert c.value_count == {"min": 0, "max": 5} and dict(c.value_count) == {"min": 0, "max": 5}
    assert ColumnSchema("a", dtype="int64").value_count is None


def test_domains():
    c = ColumnSchema("a", dtype="int64", properties={"domain": {"min": 0, "max": 10}})
    assert c.int_domain.max == 10 and c.float_domain is None
    f = ColumnSchema("f", dtype="float32", properties={"domain": {"min": 0.5, "max": 1.5, "name": "f"}})
    assert f.float_domain == Domain(0.5, 1.5, "f") and f.int_domain is None
    assert ColumnSchema("g", dtype="int64").int_domain is None


def test_with_properties_takes_a_dict():
    c = ColumnSchema("a").with_properties({"p": 1})
    assert c.properties == {"p": 1}
    assert c.with_properties(q=2).properties == {"p": 1, "q": 2}  # tabflow's keyword form too
    with pytest.raises(TypeError):
        ColumnSchema("a").with_properties(["p"])
    listed = ColumnSchema("a", dtype="int64").with_properties({"value_count": {"min": 2, "max": 2}})
    assert listed.is_list and not listed.is_ragged and listed.value_count == Domain(2, 2)


def test_with_tags_takes_one_tag_or_a_list():
    c = ColumnSchema("a")
    assert c.with_tags(CATEGORICAL).tags == {CATEGORICAL}
    assert c.with_tags([CATEGORICAL, USER]).tags == {CATEGORICAL, USER}
    assert c.with_tags("ITEM").tags == {ITEM}


@pytest.mark.parametrize(
    "start, added, expected",
    [
        ([CONTINUOUS], [CATEGORICAL], {CATEGORICAL}),
        ([CATEGORICAL], [CONTINUOUS], {CONTINUOUS}),
        ([Tags.EMBEDDING], [CATEGORICAL], {CATEGORICAL}),
        ([CONTINUOUS], [ID], {ID}),
        ([ID, USER], [CONTINUOUS], {CONTINUOUS, USER}),
        ([CATEGORICAL, ID], [Tags.EMBEDDING], {Tags.EMBEDDING}),
        ([CATEGORICAL, USER], [TARGET], {CATEGORICAL, USER, TARGET}),
        ([CONTINUOUS], [Tags.USER_ID], {USER, ID}),
    ],
)
def test_tag_override_follows_merlins_collision_table(start, added, expected):
    assert ColumnSchema("a", tags=start).with_tags(added).tags == expected
    assert TagSet(start).override(added) == expected


def test_contradictory_tags_are_refused_at_construction():
    with pytest.raises(ValueError, match="incompatible"):
        ColumnSchema("a", tags=[CATEGORICAL, CONTINUOUS])
    with pytest.raises(ValueError):
        ColumnSchema("a", tags=[CONTINUOUS, Tags.ITEM_ID])


def test_compound_and_string_tags_are_normalised():
    assert ColumnSchema("a", tags=[Tags.USER_ID]).tags == {USER, ID}
    assert ColumnSchema("a", tags=[Tags.ITEM_ID]).tags == {ITEM, ID}
    assert ColumnSchema("a", tags=[Tags.SESSION_ID]).tags == {Tags.SESSION, ID}
    assert ColumnSchema("a", tags=[Tags.TEXT_TOKENIZED]).tags == {Tags.TEXT, Tags.TOKENIZED}
    assert ColumnSchema("a", tags=["CONTINUOUS"]).tags == {CONTINUOUS}
    assert ColumnSchema("a", tags=["Categorical", "my_tag"]).tags == {CATEGORICAL, "my_tag"}
    tags = ColumnSchema("a", tags=["user_id"]).tags
    assert isinstance(tags, TagSet) and "USER" in tags and Tags.USER in tags
    assert TagSet([CATEGORICAL]) + Tags.ITEM == {CATEGORICAL, ITEM}
    assert TagSet([CATEGORICAL, ITEM]) - Tags.ITEM == {CATEGORICAL}


def test_tags_members_and_values_match_merlin():
    merlin_23_08 = {
        "CATEGORICAL": "categorical", "CONTINUOUS": "continuous", "LIST": "list", "SEQUENCE": "sequence",
        "TEXT": "text", "TOKENIZED": "tokenized", "TIME": "time", "EMBEDDING": "embedding", "ID": "id",
        "USER": "user", "ITEM": "item", "SESSION": "session", "CONTEXT": "context", "TARGET": "target",
        "REGRESSION": "regression", "CLASSIFICATION": "classification", "BINARY": "binary",
        "MULTI_CLASS": "multi_class", "USER_ID": "user_id", "ITEM_ID": "item_id", "SESSION_ID": "session_id",
        "TEXT_TOKENIZED": "text_tokenized", "BINARY_CLASSIFICATION": "binary_classification",
        "MULTI_CLASS_CLASSIFICATION": "multi_class_classification",
    }
    ours = {member.name: member.value for member in Tags}
    assert {k: ours[k] for k in merlin_23_08} == merlin_23_08
    assert set(ours) - set(merlin_23_08) == {"HASHED"}  # tabflow's extra tag (HashBucket)


def test_str_of_a_column_schema_is_its_name():
    assert str(ColumnSchema("a", dtype="int64")) == "a"
    assert f"{ColumnSchema('b')}" == "b"


# ----------------------------------------------------------------------------------- 3. ops
def _continuous_dataset():
    ds = nvt.Dataset(pd.DataFrame({"x": [0.5, 3.0, 7.5, 12.0], "label": [0, 1, 0, 1]}))
    ds.schema["x"] = ds.schema["x"].with_tags(CONTINUOUS)
    return ds


@pytest.mark.parametrize(
    "op", [ops.Categorify(), ops.Bucketize([2, 8]), ops.HashBucket(10)], ids=["Categorify", "Bucketize", "HashBucket"]
)
def test_an_encoded_continuous_column_is_no_longer_continuous(op):
    ds = _continuous_dataset()
    wf = nvt.Workflow(["x"] >> op)
    wf.fit(ds)
    tags = wf.output_schema["x"].tags
    assert CATEGORICAL in tags and CONTINUOUS not in tags


def test_the_loader_puts_an_encoded_continuous_column_in_one_place():
    from tabflow.loader.torch import Loader

    ds = _continuous_dataset()
    ds.schema["label"] = ds.schema["label"].with_tags(TARGET)
    wf = nvt.Workflow((["x"] >> ops.Bucketize([2, 8])) + ["label"])
    out = wf.fit_transform(ds)
    loader = Loader(out, batch_size=2)
    assert loader.cat_names == ["x"] and loader.cont_names == []


# -------------------------------------------------------------------------------- 4. Schema
def test_schema_from_a_dict_and_from_none():
    s = Schema({"a": ColumnSchema("a", dtype="int64"), "b": ColumnSchema("b", tags=[CATEGORICAL])})
    assert s["a"].dtype == "int64" and s["b"].tags == {CATEGORICAL} and s.column_names == ["a", "b"]
    assert len(Schema(None)) == 0 and len(Schema()) == 0
    with pytest.raises(TypeError):
        Schema("ab")


def test_adding_none_and_merging_overlapping_columns():
    s = Schema([ColumnSchema("a")])
    assert s + None is s and None + s is s
    left = Schema([ColumnSchema("a", dtype="int64", properties={"p": 1}), ColumnSchema("b")])
    right = Schema([ColumnSchema("c"), ColumnSchema("a", tags=[CATEGORICAL], dtype="int32", properties={"q": 2})])
    merged = left + right
    # merlin: left-only columns first, then the right schema's, a shared one merged.
    assert merged.column_names == ["b", "c", "a"]
    assert merged["a"].dtype == "int32" and merged["a"].tags == {CATEGORICAL}
    assert merged["a"].properties == {"p": 1, "q": 2}
    assert (Schema([ColumnSchema("a", tags=[CONTINUOUS])]) + Schema([ColumnSchema("a", tags=[CATEGORICAL])]))["a"].tags == {CATEGORICAL}
    assert (s - None) is s


def _tagged() -> Schema:
    return Schema(
        [
            ColumnSchema("a", dtype="int64", tags=[CATEGORICAL]),
            ColumnSchema("b", dtype="float32", tags=[CONTINUOUS]),
            ColumnSchema("u", dtype="int64", tags=[USER, ID, CATEGORICAL]),
            ColumnSchema("v", dtype="int64", tags=[USER]),
        ]
    )


def test_select_and_exclude_with_a_selector():
    s = _tagged()
    assert s.select(ColumnSelector(tags=[CONTINUOUS])).column_names == ["b"]
    assert s.select(ColumnSelector(["a"], tags=[CONTINUOUS])).column_names == ["a", "b"]
    assert s.select(ColumnSelector(["a", "missing"])).column_names == ["a"]  # merlin skips unknown names
    assert s.apply(ColumnSelector(tags=[Tags.USER_ID])).column_names == ["u"]
    assert s.excluding(ColumnSelector(["a"])).column_names == ["b", "u", "v"]
    assert s.apply_inverse(ColumnSelector(tags=[CATEGORICAL])).column_names == ["b", "v"]
    assert s.select(None) is s and s.excluding(None) is s


def test_select_by_tag():
    s = _tagged()
    assert s.select_by_tag(Tags.USER_ID).column_names == ["u"]  # a compound tag: all its parts
    assert s.select_by_tag([USER, ID]).column_names == ["u", "v"]  # a list: any
    assert s.select_by_tag([USER, CATEGORICAL], pred_fn=all).column_names == ["u"]
    assert s.select_by_tag([USER, CATEGORICAL], all).column_names == ["u"]  # merlin's positional pred_fn
    assert s.select_by_tag(CONTINUOUS, pred_fn=None).column_names == ["b"]
    assert s.select_by_tag("CONTINUOUS").column_names == ["b"]
    assert s.excluding_by_tag(Tags.USER_ID).column_names == ["a", "b", "v"]
    assert s.remove_by_tag([USER, CONTINUOUS]).column_names == ["a"]
    # merlin raises building a TagSet of CATEGORICAL and CONTINUOUS; tabflow selects either.
    assert s.select_by_tag([CATEGORICAL, CONTINUOUS]).column_names == ["a", "b", "u"]


def test_to_pandas_and_html():
    s = Schema([ColumnSchema("c", tags=[CATEGORICAL], dtype="int64", properties={"cardinality": 5, "domain": {"min": 0, "max": 4}})])
    table = s.to_pandas()
    assert table.shape[0] == len(s)
    assert table.loc[0, "name"] == "c" and table.loc[0, "dtype"] == "int64"
    assert table.loc[0, "properties.cardinality"] == 5 and table.loc[0, "properties.domain.max"] == 4
    assert "<table" in s._repr_html_()
    assert Schema().to_pandas().shape[0] == 0


# ------------------------------------------------------------------------- 5. saved schemas
#: A schema document as tabflow wrote it before merlin's tag rules (format version 1).
OLD_DOCUMENT = """
{
  "format": "tabflow.schema",
  "version": 1,
  "columns": [
    {"name": "x", "dtype": "Int64", "tags": ["categorical", "continuous"],
     "properties": {"cardinality": 4}, "is_list": false, "value_count": null},
    {"name": "u", "dtype": "int64", "tags": ["user_id"], "properties": {}, "is_list": false, "value_count": null},
    {"name": "genres", "dtype": "list<int64>", "tags": ["categorical", "list"],
     "properties": {"value_count": {"min": 1, "max": 3}}, "is_list": true, "value_count": {"min": 1, "max": 3}},
    {"name": "s", "dtype": "int32", "tags": [], "properties": {"value_count": {"min": 2, "max": 2}},
     "is_list": false, "value_count": null},
    {"name": "y", "dtype": "int8", "tags": ["target", "multi_class"], "properties": {}, "is_list": false,
     "value_count": null},
    {"name": "f", "tags": [], "properties": {}, "is_list": false, "value_count": null}
  ]
}
"""


def test_an_old_schema_document_still_loads(tmp_path):
    path = tmp_path / "_schema.json"
    path.write_text(OLD_DOCUMENT)
    s = Schema.from_json(str(path))
    assert s.column_names == ["x", "u", "genres", "s", "y", "f"]
    # Tags are kept as written, even the contradictory pair an older tabflow produced.
    assert s["x"].tags == {CATEGORICAL, CONTINUOUS} and s["x"].properties == {"cardinality": 4}
    assert s["x"].with_tags(CATEGORICAL).tags == {CATEGORICAL}
    assert s["u"].tags == {USER, ID}
    g = s["genres"]
    assert (g.dtype, g.is_list, g.is_ragged, g.value_count) == ("list<int64>", True, True, {"min": 1, "max": 3})
    # A value count left behind in the properties of a scalar column is dropped.
    assert (s["s"].is_list, s["s"].properties) == (False, {})
    # Version 1 wrote MULTI_CLASS_CLASSIFICATION as "multi_class".
    assert s["y"].tags == {TARGET, Tags.MULTI_CLASS_CLASSIFICATION}
    # A dtype left out meant float64 then.
    assert s["f"].dtype == "float64"
    again = Schema.from_dict(json.loads(json.dumps(s.to_dict())))
    assert again == s and s.to_dict()["version"] == 2


def test_round_trip_keeps_everything(tmp_path):
    s = Schema(
        [
            ColumnSchema("a", [CATEGORICAL, Tags.ITEM_ID], {"cardinality": 7}, np.int32),
            ColumnSchema("l", dtype="float32", dims=(None, (1, 4))),
            ColumnSchema("m", dtype="int64", is_list=True, is_ragged=False, properties={"value_count": {"max": 2}}),
            ColumnSchema("y", tags=[Tags.MULTI_CLASS], dtype="int8"),
            ColumnSchema("z"),
        ]
    )
    path = str(tmp_path / "schema.json")
    s.to_json(path)
    back = Schema.from_json(path)
    assert back == s
    assert back["l"].shape.as_tuple == ((0, None), (1, 4)) and back["m"].value_count == Domain(2, 2)
    assert back["y"].tags == {Tags.MULTI_CLASS} and back["z"].dtype == "unknown"


def test_a_saved_workflow_keeps_loading(tmp_path):
    df = pd.DataFrame({"x": [0.5, 3.0, 7.5], "c": ["a", "b", "a"]})
    ds = nvt.Dataset(df)
    ds.schema["x"] = ds.schema["x"].with_tags(CONTINUOUS)
    wf = nvt.Workflow((["x"] >> ops.Bucketize([2])) + (["c"] >> ops.Categorify()))
    wf.fit(ds)
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    assert loaded.output_schema["x"].tags == {CATEGORICAL}
    assert loaded.transform(df)["x"].tolist() == wf.transform(df)["x"].tolist()


# ------------------------------------------------------------ merlin-core's own unit tests' idioms
def test_a_dtype_with_a_shape_gives_the_column_its_shape():
    import tabflow.dtypes as md

    assert ColumnSchema("col", dtype=md.int32.with_shape((3, 4, 5))).shape == Shape((3, 4, 5))
    column = ColumnSchema("ids", dtype=md.int64.with_shape((None, 3)))
    assert (column.dtype, column.is_list, column.is_ragged, dict(column.value_count)) == ("list<int64>", True, False, {"min": 3, "max": 3})
    assert ColumnSchema("ids", dtype=md.int64.with_shape((None, 3)), dims=(None,)).dtype == "int64"  # dims wins, as in merlin
    assert ColumnSchema("x", dtype=md.float32).shape == Shape((None,))


def test_schema_of_something_else_names_what_it_takes():
    with pytest.raises(TypeError, match=r"Schema\(column_schemas\) takes a list of ColumnSchema objects.*got int"):
        Schema(12345)
    with pytest.raises(TypeError, match="ColumnSchema objects or names, got int"):
        Schema([1])


def test_assert_transformable_equal_compares_frames_and_tensor_tables():
    from tabflow.table import TensorTable
    from tabflow.testing import assert_transformable_equal

    frame = pd.DataFrame({"a": [1, 2]})
    assert_transformable_equal(frame, frame.copy())
    assert_transformable_equal(TensorTable({"a": np.array([1, 2])}), TensorTable({"a": np.array([1, 2])}))
    with pytest.raises(AssertionError):
        assert_transformable_equal(frame, pd.DataFrame({"a": [1, 3]}))
    with pytest.raises(AssertionError, match="a TensorTable and a DataFrame are not equal"):
        assert_transformable_equal(TensorTable({"a": np.array([1, 2])}), frame)
