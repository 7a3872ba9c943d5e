"""HexToInt: hex strings to nullable Int64."""

from __future__ import annotations

import pandas as pd
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops


def _reference(value):
    if value is None or value == "":
        return pd.NA
    parsed = int(value, 16)
    return parsed - 2**64 if parsed >= 2**63 else parsed


@pytest.fixture
def frame(rng):
    values = [f"{int(v):08x}" for v in rng.integers(0, 2**32, 200)]
    values[:8] = ["0", "ABCDEF", "0x1f", "0XfF", "7fffffffffffffff", "8000000000000000", "ffffffffffffffff", ""]
    values[10] = None
    return pd.DataFrame({"C1": pd.array(values, dtype="string")})


def test_matches_python_int(frame, engine, to_engine):
    workflow = nvt.Workflow(["C1"] >> ops.HexToInt())
    out = to_host(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=3)).compute())
    expected = pd.array([_reference(v) for v in frame["C1"].astype(object).where(frame["C1"].notna(), None)], dtype="Int64")
    pd.testing.assert_extension_array_equal(out["C1"].array, expected)
    assert workflow.output_schema["C1"].dtype == "Int64"


def test_dtype_is_nullable_even_without_nulls(frame):
    workflow = nvt.Workflow(["C1"] >> ops.HexToInt())
    clean = frame.iloc[20:30]
    assert str(workflow.fit_transform(clean)["C1"].dtype) == "Int64"
    parts = workflow.fit_transform(dataset_with_empty_partitions(frame)).compute()
    assert str(parts["C1"].dtype) == "Int64" and len(parts) == len(frame)


@pytest.mark.parametrize("bad", ["xyz", "12 3", "0x", "1" * 17, "é1"])
def test_bad_value_is_quoted_with_the_column(frame, bad):
    broken = frame.copy()
    broken.loc[15, "C1"] = bad
    with pytest.raises(ValueError, match=r"'C1'") as info:
        nvt.Workflow(["C1"] >> ops.HexToInt()).fit_transform(broken)
    assert repr(bad) in str(info.value)


def test_non_string_column_is_rejected():
    with pytest.raises(TypeError, match="'n'"):
        nvt.Workflow(["n"] >> ops.HexToInt()).fit(pd.DataFrame({"n": [1, 2]}))


def test_save_load_round_trip(frame, tmp_path):
    workflow = nvt.Workflow(["C1"] >> ops.HexToInt()).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))
