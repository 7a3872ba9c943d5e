"""The TensorFlow Metadata reader and writer (NVTabular's ``schema.pbtxt`` / ``.merlin/schema.json``)."""

from __future__ import annotations

import struct

import pytest

from tabflow.compat.tf_metadata import (
    decode_struct,
    schema_from_proto_text,
    schema_from_tfmd_json,
    tfmd_json,
)
from tabflow.exceptions import LoadError
from tabflow.schema import ColumnSchema, Schema, Tags


def _field(number: int, wire: int, payload: bytes) -> bytes:
    key = bytes([number << 3 | wire])
    return key + (bytes([len(payload)]) + payload if wire == 2 else payload)


def _entry(key: str, value: bytes) -> bytes:
    return _field(1, 2, _field(1, 2, key.encode()) + _field(2, 2, value))


def test_struct_wire_format_every_kind_of_value():
    number = _field(2, 1, struct.pack("<d", 2.5))
    text = _field(3, 2, b"path/x.parquet")
    flag = _field(4, 0, b"\x01")
    null = _field(1, 0, b"\x00")
    nested = _field(5, 2, _entry("inner", number))
    listed = _field(6, 2, _field(1, 2, number) + _field(1, 2, text))
    data = b"".join(_entry(k, v) for k, v in [("n", number), ("s", text), ("b", flag), ("z", null), ("d", nested), ("l", listed)])
    assert decode_struct(data) == {"n": 2.5, "s": "path/x.parquet", "b": True, "z": None, "d": {"inner": 2.5}, "l": [2.5, "path/x.parquet"]}
    with pytest.raises(LoadError, match="truncated"):
        decode_struct(data[:-3])


def test_text_format_tolerates_what_protobuf_allows():
    text = r'''
    # a comment
    feature <
      name: 'qu\"ote\101'  # octal escape
      type: FLOAT
      float_domain { min: -1.5 max: 2e3 }
      annotation { tag: ["continuous", "user"] comment: "ignored" }
      unknown_field { deeply { nested: 1 } }
    >;
    feature { name: "a" "b" value_count { max: 3 } type: INT }
    '''
    schema = schema_from_proto_text(text)
    assert schema.column_names == ['qu"oteA', "ab"]
    first = schema['qu"oteA']
    assert first.dtype == "float64" and first.tags == {Tags.CONTINUOUS, Tags.USER}
    assert first.properties == {"domain": {"min": -1.5, "max": 2000}}
    assert schema["ab"].is_list and schema["ab"].value_count["max"] == 3 and schema["ab"].dtype == "list<int64>"


@pytest.mark.parametrize("text, message", [
    ('feature { name: "a"', "missing '}'"),
    ("feature { name: @ }", "cannot parse"),
    ("feature { " * 100 + "}" * 100, "nesting too deep"),
])
def test_malformed_text_is_a_load_error(text, message):
    with pytest.raises(LoadError, match=message):
        schema_from_proto_text(text, "x/schema.pbtxt")


def test_json_round_trip_keeps_tags_properties_and_lists():
    schema = Schema([
        ColumnSchema("c", dtype="int32", tags=[Tags.CATEGORICAL, Tags.ITEM],
                     properties={"domain": {"min": 0, "max": 9, "name": "c"}, "embedding_sizes": {"cardinality": 10, "dimension": 4}}),
        ColumnSchema("g", dtype="list<int64>", is_list=True, value_count={"min": 2, "max": 2}, tags=[Tags.LIST]),
        ColumnSchema("w", dtype="float32", properties={"domain": {"min": 0.5, "max": 1.5}}),
        ColumnSchema("s", dtype="string"),
    ])
    document = tfmd_json(schema)
    back = schema_from_tfmd_json(document)
    assert back == schema
    features = {f["name"]: f for f in document["feature"]}
    assert features["g"]["annotation"]["extraMetadata"][0]["is_ragged"] is False  # min == max: fixed length
    assert features["w"]["floatDomain"] == {"min": 0.5, "max": 1.5}
    assert features["s"]["type"] == "BYTES"


def test_contradictory_tags_of_old_files_are_read():
    schema = schema_from_proto_text('feature { name: "c" type: INT annotation { tag: "continuous" tag: "categorical" } }')
    assert Tags.CATEGORICAL in schema["c"].tags


def test_json_feature_without_a_name_is_a_load_error():
    with pytest.raises(LoadError, match="without a name"):
        schema_from_tfmd_json({"feature": [{"type": "INT"}]})


def _dim_text(dim):
    if isinstance(dim, tuple):
        items = " ".join("values { null_value: NULL_VALUE }" if d is None else f"values {{ number_value: {float(d)} }}" for d in dim)
        return f"values {{ list_value {{ {items} }} }}"
    return f"values {{ number_value: {float(dim)} }}"


def test_merlin_dims_of_any_rank_are_read_from_proto_text():
    # As merlin 23.08 writes a column of shape (None, 3, 2) and one of shape (None, None, 4).
    def feature(name, dims, ragged, value_count=""):
        listed = " ".join(_dim_text(d) for d in dims)
        return f'''feature {{ name: "{name}" {value_count} type: FLOAT annotation {{ extra_metadata {{
          [type.googleapis.com/google.protobuf.Struct] {{
            fields {{ key: "_dims" value {{ list_value {{ {listed} }} }} }}
            fields {{ key: "is_list" value {{ bool_value: true }} }}
            fields {{ key: "is_ragged" value {{ bool_value: {str(ragged).lower()} }} }}
            fields {{ key: "dtype_item_size" value {{ number_value: 32.0 }} }} }} }} }} }}'''

    text = feature("m", [(0, None), 3, 2], False, "value_count { min: 3 max: 3 }") + feature("r", [(0, None), (0, None), 4], True)
    schema = schema_from_proto_text(text)
    assert schema["m"].shape.as_tuple == ((0, None), 3, 2) and schema["m"].dtype == "list<list<float32>>"
    assert not schema["m"].is_ragged and schema["m"].value_count == {"min": 3, "max": 3}
    assert schema["r"].shape.as_tuple == ((0, None), (0, None), 4) and schema["r"].is_ragged
    assert schema["r"].value_count is None and "_dims" not in schema["r"].properties


def test_a_malformed_merlin_dims_is_a_load_error_naming_the_column():
    text = '''feature { name: "bad" type: INT annotation { extra_metadata {
      [type.googleapis.com/google.protobuf.Struct] {
        fields { key: "_dims" value { list_value { values { list_value { values { number_value: 3.0 } values { number_value: 1.0 } } } } } } } } } }'''
    with pytest.raises(LoadError, match="'bad'"):
        schema_from_proto_text(text)
