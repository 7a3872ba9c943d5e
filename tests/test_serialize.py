"""Pickle-free encoding of op parameters and state."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pandas as pd
import pytest

from tabflow import ColumnSelector, ops
from tabflow.schema import Tags
from tabflow.serialize import (
    LoadError,
    SavedCode,
    SaveError,
    decode,
    encode,
    register_function,
)


def _round_trip(value, tmp_path):
    encoded = encode(value, str(tmp_path), "key")
    json.dumps(encoded)  # must be plain JSON
    return decode(json.loads(json.dumps(encoded)), str(tmp_path))


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        "text",
        3,
        2.5,
        (1, "a"),
        [1, [2, 3]],
        {"a": {"b": (1, 2)}},
        {1: "int key", (2, 3): "tuple key"},
        {3, 1, 2},
        Tags.CATEGORICAL,
        np.int32(7),
        np.dtype("float32"),
        np.int8,
        np.float32,
        float,
    ],
)
def test_plain_values(tmp_path, value):
    back = _round_trip(value, tmp_path)
    assert back == value and type(back) is type(value)


def test_special_values(tmp_path):
    back = _round_trip({"inf": math.inf, "nan": np.float32("nan"), "arr": np.arange(4, dtype="int16")}, tmp_path)
    assert back["inf"] == math.inf
    assert np.isnan(back["nan"]) and back["nan"].dtype == np.float32
    assert back["arr"].dtype == np.int16 and back["arr"].tolist() == [0, 1, 2, 3]
    assert _round_trip(ColumnSelector(["a", ["b", "c"]]), tmp_path) == ColumnSelector(["a", ["b", "c"]])
    op = _round_trip(ops.Clip(min_value=1), tmp_path)
    assert isinstance(op, ops.Clip) and op.min_value == 1


def test_frames_and_series_go_to_parquet(tmp_path):
    frame = pd.DataFrame({"v": ["a", "b"], "n": [1, 2]})
    series = pd.Series([1.5, 2.5], name="s")
    back = _round_trip({"f": frame, "s": series}, tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["key.f.parquet", "key.s.parquet"]
    assert back["f"]["v"].tolist() == ["a", "b"] and back["f"]["n"].tolist() == [1, 2]
    assert back["s"].name == "s" and back["s"].tolist() == [1.5, 2.5]
    os.remove(tmp_path / "key.f.parquet")
    with pytest.raises(LoadError, match="missing"):
        decode({"__parquet__": "key.f.parquet", "series": False, "name": None}, str(tmp_path))


def test_functions_by_registered_name_or_as_code(tmp_path):
    assert encode(np.log1p, str(tmp_path), "k") == {"__function__": "numpy:log1p"}
    assert decode({"__function__": "numpy:log1p"}, str(tmp_path)) is np.log1p

    @register_function(name="tests:double")
    def double(x):
        return 2 * x

    assert encode(double, str(tmp_path), "k") == {"__function__": "tests:double"}
    assert decode({"__function__": "tests:double"}, str(tmp_path)) is double
    # Never looked up by path: an imported module's function is not resolvable by name.
    with pytest.raises(LoadError, match="not registered"):
        decode({"__function__": "os.path:join"}, str(tmp_path))
    encoded = encode(lambda x: x + 1, str(tmp_path), "k")
    assert encoded["__code__"]["source"] == "lambda x: x + 1"
    untrusted = decode(encoded, str(tmp_path))
    assert isinstance(untrusted, SavedCode)
    assert decode(encoded, str(tmp_path), trust_code=True)(1) == 2


def test_unsaveable_value(tmp_path):
    with pytest.raises(SaveError, match="cannot save"):
        encode(object(), str(tmp_path), "k")


def test_unknown_tagged_value(tmp_path):
    with pytest.raises(LoadError, match="unrecognised"):
        decode({"__weird__": 1}, str(tmp_path))
