"""Frames read and built through their blocks give what pandas' public calls give.

Every kind of column pandas stores (NumPy blocks of one or many columns, masked numbers,
strings of both storages and both null conventions, Arrow types, date-times with and without
a zone, categoricals, periods, intervals, sparse arrays), in consolidated and unconsolidated
frames, views and column selections: the dtypes read from the blocks are ``frame.dtypes``,
the cells ``frame.iat``'s, and a frame built from blocks equals ``pd.DataFrame`` of the same
columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from tabflow.backends import _host_arrays, _pandas_blocks

PANDAS_3 = int(pd.__version__.split(".")[0]) >= 3
# Strings whose null is NaN: pandas 3's default ``str``, pandas 2's "pyarrow_numpy" storage.
STR_NAN = pd.StringDtype("pyarrow", na_value=np.nan) if PANDAS_3 else pd.StringDtype("pyarrow_numpy")


def every_kind_of_column(rows: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    nulls = [k % 3 == 1 for k in range(rows)]

    def masked(values, dtype):
        return pd.array([None if null else value for value, null in zip(values, nulls)], dtype=dtype)

    words = [["a", "", "é z", "b"][k % 4] for k in range(rows)]
    columns = {
        "i64": rng.integers(-(2**62), 2**62, rows),
        "i8": rng.integers(-100, 100, rows).astype(np.int8),
        "u64": np.array([2**64 - 1 - k for k in range(rows)], dtype=np.uint64),
        "f64": np.array([np.nan, -0.0, np.inf, 1.5] * rows)[:rows],
        "f32": rng.normal(size=rows).astype(np.float32),
        "bool": np.array([k % 2 == 0 for k in range(rows)]),
        "object": pd.Series([None, 3, "x", 2.5] * rows, dtype=object)[:rows].to_numpy(),
        "complex": np.arange(rows) + 1j,
        "Int64": masked(range(rows), "Int64"),
        "UInt8": masked(range(rows), "UInt8"),
        "Float32": masked([0.5 * k for k in range(rows)], "Float32"),
        "boolean": masked([k % 2 == 0 for k in range(rows)], "boolean"),
        "string_python": masked(words, pd.StringDtype("python")),
        "string_pyarrow": masked(words, pd.StringDtype("pyarrow")),
        "str_nan": pd.array([None if null else word for word, null in zip(words, nulls)], dtype=STR_NAN),
        "arrow_int": pd.array([None if null else k for k, null in zip(range(rows), nulls)], dtype=pd.ArrowDtype(pa.int32())),
        "arrow_list": pd.array([None if null else [k, k + 1] for k, null in zip(range(rows), nulls)], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
        "datetime": pd.date_range("2024-01-01", periods=rows, freq="h").to_numpy(),
        "datetime_tz": pd.date_range("2024-01-01", periods=rows, freq="D", tz="Europe/Paris"),
        "timedelta": pd.to_timedelta(np.arange(rows), unit="s").to_numpy(),
        "category": pd.Categorical([None if null else word for word, null in zip(words, nulls)]),
        "period": pd.period_range("2024-01", periods=rows, freq="M"),
        "interval": pd.interval_range(0, rows),
        "sparse": pd.arrays.SparseArray([0, 0, 1, 0] * rows)[:rows],
    }
    frame = pd.DataFrame(columns)
    frame.index = pd.RangeIndex(10, 10 + rows)
    return frame


def frames_to_read() -> dict[str, pd.DataFrame]:
    frame = every_kind_of_column()
    unconsolidated = frame[["i64", "f64"]].copy()
    for k in range(3):  # each insert adds a block of its own
        unconsolidated[f"extra{k}"] = np.arange(len(frame)) * k
    unconsolidated.insert(1, "front", np.ones(len(frame)))
    return {
        "every kind": frame,
        "one row": frame.iloc[[2]],
        "a column selection": frame[["Int64", "i64", "string_pyarrow", "f32", "i8"]],
        "reversed columns": frame[frame.columns[::-1]],
        "rows sliced": frame.iloc[1:3],
        "unconsolidated": unconsolidated,
        "repeated labels": pd.concat([frame[["i64", "Int64"]], frame[["i64"]]], axis=1),
        "no rows": frame.iloc[:0],
        "no columns": frame[[]],
        "built from a JSON body": pd.DataFrame([{"a": 1, "b": None, "c": "x", "d": 2.5, "e": True}, {"a": 2, "b": 3, "c": None, "d": None, "e": None}]),
    }


def same_cell(got, expected) -> bool:
    if got is expected:
        return True
    if type(got) is not type(expected):
        return False
    if isinstance(expected, float) and np.isnan(expected):
        return np.isnan(got)
    equal = got == expected
    return bool(equal) if not isinstance(equal, np.ndarray) else bool(equal.all())


def assert_cells_of(frame: pd.DataFrame, cells: list[dict], positions: list[int]) -> None:
    assert len(cells) == len(frame)
    for row in range(len(frame)):
        assert list(cells[row]) == positions
        for position in positions:
            expected = frame.iat[row, position]
            got = cells[row][position]
            assert same_cell(got, expected), (frame.columns[position], row, got, expected)


@pytest.mark.parametrize("name", sorted(frames_to_read()))
def test_dtypes_and_cells_are_what_pandas_public_calls_give(name):
    frame = frames_to_read()[name]
    assert _pandas_blocks.READS_BLOCKS, "the pandas versions the suite runs on read blocks"
    assert _pandas_blocks.dtypes(frame) == frame.dtypes.tolist()
    positions = list(range(frame.shape[1]))[::-1]
    assert_cells_of(frame, _pandas_blocks.cells(frame, positions), positions)
    assert_cells_of(frame, _host_arrays.frame_cells(frame, positions), positions)
    assert _host_arrays.frame_layout(frame) == (frame.columns.tolist(), frame.dtypes.tolist())


def test_frames_it_does_not_know_take_the_public_route(monkeypatch):
    class Subclassed(pd.DataFrame):
        pass

    frame = every_kind_of_column(2)
    assert _pandas_blocks.dtypes(Subclassed(frame)) is None and _pandas_blocks.cells(Subclassed(frame), [0]) is None
    monkeypatch.setattr(_pandas_blocks, "READS_BLOCKS", False)
    assert _pandas_blocks.dtypes(frame) is None and _pandas_blocks.cells(frame, [0, 1]) is None
    # ... where the host-array helpers read the same through iat and dtypes.
    assert _host_arrays.frame_layout(frame) == (frame.columns.tolist(), frame.dtypes.tolist())
    assert_cells_of(frame, _host_arrays.frame_cells(frame, [0, 8, 12]), [0, 8, 12])


def built_columns(rows: int = 3) -> list[tuple[str, object]]:
    frame = every_kind_of_column(rows)
    columns: list[tuple[str, object]] = []
    for name in frame.columns:
        column = frame[name]
        columns.append((name, column.to_numpy() if isinstance(column.dtype, np.dtype) else column.array))
    return columns


@pytest.mark.skipif(not PANDAS_3, reason="pandas 2 builds answer frames through pd.DataFrame")
def test_frames_built_from_blocks_equal_frames_of_the_same_columns():
    columns = built_columns()
    index = pd.Index(["r0", "r1", "r0"], name="request")
    ints = np.arange(6, dtype=np.int64).reshape(2, 3)
    parts = [(ints, 0)] + [(array, 2 + k) for k, (_, array) in enumerate(columns)] + [(pd.arrays.NumpyExtensionArray(np.arange(3.0)), 2 + len(columns))]
    labels = pd.Index(["a", "b"] + [name for name, _ in columns] + ["numpy_extension"])
    out = _pandas_blocks.frame_from_columns(parts, labels, index)
    expected = pd.DataFrame({"a": ints[0], "b": ints[1], **dict(columns), "numpy_extension": np.arange(3.0)}, index=index)
    pd.testing.assert_frame_equal(out, expected, check_exact=True)
    assert np.shares_memory(out["a"].to_numpy(), ints)  # taken over, not copied
    # A normal frame: it takes new columns, writes and joins as any other.
    out["new"] = 1
    out.loc["r1", "a"] = 99
    assert out["a"].tolist() == [0, 99, 2] and out.shape == (3, len(labels) + 1)
    assert pd.concat([out, out]).shape == (6, len(labels) + 1)


def test_frames_of_parts_are_the_same_on_every_route(monkeypatch):
    columns = dict(built_columns())
    index = pd.RangeIndex(5, 8)
    floats = np.array([[0.5, np.nan, -0.0]], dtype=np.float32)
    parts = [np.arange(6).reshape(2, 3), columns, floats]
    labels = _host_arrays.column_labels(["a", "b", *columns, "f"])
    via_blocks = _host_arrays.frame_of_parts([part.copy() if isinstance(part, np.ndarray) else part for part in parts], labels, index)
    monkeypatch.setattr(_pandas_blocks, "BUILDS_BLOCKS", False)
    public = _host_arrays.frame_of_parts(parts, labels, index)
    pd.testing.assert_frame_equal(via_blocks, public, check_exact=True)
    assert via_blocks.columns is not labels and public.columns is not labels
