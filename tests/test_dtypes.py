"""tabflow.dtypes: merlin 23.08's dtype objects, read from every dtype form a schema takes and
compared with the canonical names schemas built from real data hold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
import tabflow.dtypes as md
from tabflow.schema import ColumnSchema, Schema


@pytest.mark.parametrize(
    "given, expected",
    [
        (int, md.int64), (float, md.float64), (bool, md.boolean), (str, md.string),
        (np.int64, md.int64), (np.dtype("uint16"), md.uint16), (np.float16, md.float16),
        ("int32", md.int32), ("float64", md.float64), ("string", md.string), ("str", md.string),
        ("object", md.string), ("struct", md.struct), ("Int64", md.int64), ("boolean", md.boolean),
        ("UInt8", md.uint8), ("Float32", md.float32), (pd.Int16Dtype(), md.int16),
        (pd.StringDtype(), md.string), (pa.int8(), md.int8), (pa.large_string(), md.string),
        ("datetime64[ns]", md.datetime64ns), (np.dtype("datetime64[s]"), md.datetime64s),
        ("datetime64[us, UTC]", md.datetime64us), ("unknown", md.unknown),
    ],
)
def test_dtype_reads_every_form(given, expected):
    assert md.dtype(given) == expected
    assert md.dtype(given).name == expected.name


def test_merlin_names_and_attributes():
    assert (md.string.name, md.boolean.name, md.object_.name) == ("str", "bool", "object")
    assert md.int32.element_type is md.ElementType.Int and md.int32.signed and md.int32.element_size == 32
    assert md.uint32.element_type is md.ElementType.UInt and not md.uint32.signed
    assert md.datetime64D.element_unit is md.ElementUnit.Day
    assert md.int8.is_integer and md.uint64.is_integer and not md.float32.is_integer
    assert md.float16.is_float and not md.boolean.is_float
    assert md.float32.to_numpy == np.dtype("float32") and md.int64.to_python is int
    assert md.string.to_numpy == np.dtype("str") and md.boolean.to_python is bool
    with pytest.raises(ValueError, match="tensorflow"):
        md.int8.to("tensorflow")
    with pytest.raises(ValueError, match="unknown"):
        md.unknown.to_numpy


def test_none_and_unknown_types():
    with pytest.raises(TypeError, match="None"):
        md.dtype(None)

    class Mine:
        pass

    assert md.dtype(Mine) is md.unknown
    assert md.dtype(md.float32) is md.float32


def test_lists_and_shapes():
    ragged = md.dtype("list<int64>")
    assert ragged.shape.is_list and ragged.shape.is_ragged and ragged.without_shape.shape.is_unknown
    assert ragged.canonical_name == "list<int64>" and ragged.without_shape.canonical_name == "int64"
    fixed = md.float32.with_shape((None, 3))
    assert fixed.shape.as_tuple == ((0, None), 3) and not fixed.shape.is_ragged
    with pytest.raises(TypeError, match="Shape"):
        md.int8.with_shape([None, 3])
    # The schema stores the canonical name; a list-shaped DType makes a list column.
    column = ColumnSchema("l", dtype=md.int32.with_shape((None, None)))
    assert column.dtype == "list<int32>" and column.is_list and column.is_ragged


def test_schema_dtypes_compare_with_dtype_objects():
    df = pd.DataFrame(
        {
            "i8": np.array([1, 2, 3], dtype="int8"),
            "n": pd.array([1, None, 3], dtype="Int32"),
            "f": [0.5, np.nan, 1.0],
            "s": ["a", None, "c"],
            "b": [True, False, True],
            "t": pd.to_datetime(["2020-01-01", None, "2021-01-01"]).astype("datetime64[ms]"),
        }
    )
    schema = nvt.Dataset(df, npartitions=2).schema
    assert isinstance(schema, Schema)
    assert [md.dtype(schema[c].dtype) for c in df.columns] == [
        md.int8, md.int32, md.float64, md.string, md.boolean, md.datetime64ms,
    ]
    assert schema["i8"].dtype == md.int8 and md.int8 == schema["i8"].dtype
    assert schema["s"].dtype == md.string and schema["s"].dtype != md.int8
    # Round trip: a schema built from DType objects holds the names read from the data.
    rebuilt = Schema([ColumnSchema(c, dtype=md.dtype(schema[c].dtype)) for c in ["i8", "f", "s", "b"]])
    assert [rebuilt[c].dtype for c in ["i8", "f", "s", "b"]] == ["int8", "float64", "string", "bool"]


def test_hash_matches_equality():
    assert len({md.int32, md.dtype("int32"), md.dtype(np.int32), md.int64}) == 2
