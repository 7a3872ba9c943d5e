"""merlin.schema.io.tensorflow_metadata.TensorflowMetadata, with tabflow's Schema in merlin's place.

The fixture files in ``merlin_io_data/`` were written by merlin-core 23.08; ``_MERLIN_PBTXT``
below is written by hand in the layout merlin's ``to_proto_text`` prints (an expanded Struct,
zero bounds left out as proto3 does).
"""

from __future__ import annotations

import os

import pytest

from tabflow.compat import TensorflowMetadata
from tabflow.exceptions import LoadError
from tabflow.schema import ColumnSchema, Schema, Tags
from tabflow.schema.io import tensorflow_metadata as merlin_path

DATA = os.path.join(os.path.dirname(__file__), "merlin_io_data")

_MERLIN_PBTXT = '''feature {
  name: "item_id"
  type: INT
  int_domain {
    name: "item_id"
    max: 499
    is_categorical: true
  }
  annotation {
    tag: "item"
    tag: "id"
    tag: "categorical"
    extra_metadata {
      [type.googleapis.com/google.protobuf.Struct] {
        fields { key: "dtype_item_size" value { number_value: 64.0 } }
        fields { key: "is_list" value { bool_value: false } }
        fields { key: "is_ragged" value { bool_value: false } }
        fields { key: "freq_threshold" value { number_value: 0.0 } }
        fields { key: "start_index" value { number_value: 3.0 } }
        fields { key: "cat_path" value { string_value: "categories/unique.item_id.parquet" } }
        fields { key: "embedding_sizes" value { struct_value {
          fields { key: "cardinality" value { number_value: 500.0 } }
          fields { key: "dimension" value { number_value: 48.0 } } } } }
      }
    }
  }
}
feature {
  name: "history"
  type: INT
  value_count {
    min: 1
    max: 20
  }
  annotation {
    tag: "list"
    extra_metadata {
      [type.googleapis.com/google.protobuf.Struct] {
        fields { key: "dtype_item_size" value { number_value: 32.0 } }
        fields { key: "is_list" value { bool_value: true } }
        fields { key: "is_ragged" value { bool_value: true } }
      }
    }
  }
}
feature {
  name: "price"
  type: FLOAT
  float_domain {
    name: "price"
    min: 0.5
    max: 99.25
  }
  annotation {
    tag: "continuous"
    extra_metadata {
      [type.googleapis.com/google.protobuf.Struct] {
        fields { key: "dtype_item_size" value { number_value: 32.0 } }
        fields { key: "is_list" value { bool_value: false } }
        fields { key: "is_ragged" value { bool_value: false } }
      }
    }
  }
}
'''


def _rich_schema() -> Schema:
    return Schema([
        ColumnSchema("user", dtype="int32", tags=[Tags.USER_ID, Tags.CATEGORICAL],
                     properties={"domain": {"min": 0, "max": 100, "name": "user"},
                                 "embedding_sizes": {"cardinality": 101, "dimension": 16},
                                 "note": "café \"quoted\"\n", "weights": [1, 2.5, None, True], "nothing": None}),
        ColumnSchema("label", dtype="float32", tags=[Tags.TARGET], properties={"domain": {"min": 0.0, "max": 1.5}}),
        ColumnSchema("genres", dtype="int64", tags=[Tags.CATEGORICAL], is_list=True, value_count={"min": 1, "max": 5}),
        ColumnSchema("window", dtype="float64", is_list=True, value_count={"min": 3, "max": 3}),
        ColumnSchema("name", dtype="string"),
    ])


def test_merlins_import_path_is_the_same_class():
    assert merlin_path.TensorflowMetadata is TensorflowMetadata


@pytest.mark.parametrize("form", ["proto_text", "json"])
def test_round_trip_keeps_domains_properties_tags_and_shapes(tmp_path, form):
    schema = _rich_schema()
    getattr(TensorflowMetadata.from_merlin_schema(schema), f"to_{form}_file")(str(tmp_path))
    expected_name = "schema.pbtxt" if form == "proto_text" else "schema.json"
    assert os.listdir(tmp_path) == [expected_name]
    back = getattr(TensorflowMetadata, f"from_{form}_file")(str(tmp_path)).to_merlin_schema()
    assert back == schema
    assert back["user"].properties["note"] == "café \"quoted\"\n"
    assert back["window"].shape == schema["window"].shape
    assert back["genres"].value_count == {"min": 1, "max": 5}


def test_file_name_is_honoured(tmp_path):
    metadata = TensorflowMetadata.from_merlin_schema(_rich_schema())
    metadata.to_proto_text_file(str(tmp_path), file_name="other.pbtxt")
    assert TensorflowMetadata.from_proto_text_file(str(tmp_path), file_name="other.pbtxt") == metadata
    with pytest.raises(LoadError, match="schema.pbtxt"):
        TensorflowMetadata.from_proto_text_file(str(tmp_path))


@pytest.mark.parametrize("name", ["schema_expanded.pbtxt", "schema_serialized.pbtxt"])
def test_files_merlin_wrote_round_trip_through_both_forms(name):
    schema = TensorflowMetadata.from_proto_text_file(DATA, file_name=name).to_merlin_schema()
    assert schema["user"].properties["embedding_sizes"] == {"cardinality": 101, "dimension": 16}
    assert schema["genres"].is_list and schema["genres"].value_count == {"min": 1, "max": 5}
    metadata = TensorflowMetadata.from_merlin_schema(schema)
    assert TensorflowMetadata.from_proto_text(metadata.to_proto_text()).to_merlin_schema() == schema
    assert TensorflowMetadata.from_json(metadata.to_json()).to_merlin_schema() == schema
    assert TensorflowMetadata.from_json_file(DATA, file_name="merlin_schema.json").to_merlin_schema() == schema


def test_hand_written_merlin_pbtxt():
    schema = TensorflowMetadata.from_proto_text(_MERLIN_PBTXT).to_merlin_schema()
    item = schema["item_id"]
    assert item.dtype == "int64"
    assert set(item.tags) == {Tags.ITEM, Tags.ID, Tags.CATEGORICAL}
    # The zero lower bound proto3 leaves out reads back as 0, as merlin reads it.
    assert item.properties["domain"] == {"name": "item_id", "min": 0, "max": 499}
    assert item.properties["embedding_sizes"] == {"cardinality": 500, "dimension": 48}
    assert item.properties["cat_path"] == "categories/unique.item_id.parquet"
    assert (schema["history"].dtype, schema["history"].value_count) == ("list<int32>", {"min": 1, "max": 20})
    assert schema["price"].properties["domain"] == {"name": "price", "min": 0.5, "max": 99.25}
    assert TensorflowMetadata.from_proto_text(TensorflowMetadata(schema).to_proto_text()).to_merlin_schema() == schema


def test_bad_input_names_the_problem(tmp_path):
    with pytest.raises(LoadError, match="not valid JSON"):
        TensorflowMetadata.from_json("{feature")
    with pytest.raises(TypeError, match="tabflow.schema.Schema"):
        TensorflowMetadata.from_merlin_schema({"a": 1})
    bad = Schema([ColumnSchema("x", dtype="float32", properties={"scale": float("nan")})])
    with pytest.raises(ValueError, match="'scale'"):
        TensorflowMetadata(bad).to_proto_text_file(str(tmp_path))
    assert os.listdir(tmp_path) == []
