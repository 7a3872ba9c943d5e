"""Host arrays for the serving plan: every shortcut agrees with the pandas engine's conforming.

``conform_array``, ``from_cells`` and ``from_python`` cast request values with NumPy where
``PandasBackend.conform_column`` casts pandas columns; both must keep or refuse the same
values, and give the same numbers, nulls and dtype.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from tabflow.backends import _host_arrays, get_backend

# pandas' own text dtype (``str`` on pandas 3), what tabflow holds strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")

PANDAS = get_backend("pandas")
TARGETS = ["int64", "int32", "uint8", "Int64", "Int16", "UInt32", "float64", "float32", "bool", "boolean"]
SOURCES = {
    "float64": [0.0, -0.0, 1.0, 2.5, np.nan, np.inf, -np.inf, 2.0**53, 2.0**63, -(2.0**63), 1e20, 255.0, -1.0, 40000.0],
    "int64": [0, 1, -1, 255, 256, 2**31, -(2**31) - 1, 2**53 + 1, 2**62, -(2**63), 2**63 - 1],
    "int32": [0, 1, -1, 255, 2**31 - 1],
    "uint64": [0, 1, 2**63, 2**64 - 1],
    "float32": [0.0, 1.5, np.nan, 3.0, 16777217.0],
    "bool": [True, False],
}


def reference(values: np.ndarray, target: str):
    """What the batch path does: conform_column, then the column's arrays (None: not cast)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        conformed = PANDAS.conform_column(pd.Series(values), target)
    if conformed.dtype != PANDAS.engine_dtype(target):
        return None
    return _host_arrays.from_pandas(conformed, target)


def assert_same(got, expected) -> None:
    if got is None or expected is None:
        assert got is None and expected is None, (got, expected)
        return
    (values, nulls), (expected_values, expected_nulls) = got, expected
    assert values.dtype == expected_values.dtype
    assert (nulls is None) == (expected_nulls is None)
    keep = ~expected_nulls if expected_nulls is not None else np.ones(values.shape, dtype=bool)
    if expected_nulls is not None:
        np.testing.assert_array_equal(nulls, expected_nulls)
    if values.dtype == object:
        assert values[keep].tolist() == expected_values[keep].tolist()
    else:
        assert values[keep].tobytes() == expected_values[keep].tobytes()  # -0.0 too


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_conform_array_casts_as_conform_column_does(source, target):
    rng = np.random.default_rng(0)
    pool = np.array(SOURCES[source], dtype=source)
    for _ in range(60):
        values = rng.choice(pool, int(rng.integers(1, 4)))
        got = _host_arrays.conform_array(values, target)
        if got is None and target in ("bool", "boolean") and source != "bool":
            continue  # numbers to booleans are left to conform_column
        assert_same(got, reference(values, target))


@pytest.mark.parametrize("target", TARGETS + ["string"])
def test_python_values_are_held_as_a_pandas_frame_holds_them(target):
    rng = np.random.default_rng(1)
    pool = [0, 1, -3, 7, 2**40, 2**53 + 1, 1.0, 2.5, -0.0, float("nan"), None, True, "x", "", np.float32(0.1)]
    for _ in range(200):
        values = [pool[k] for k in rng.integers(0, len(pool), int(rng.integers(1, 4)))]
        got = _host_arrays.from_python(values, (len(values),), target)
        if got is None:
            continue  # left to pd.DataFrame and conform_column: exact by construction
        column = pd.DataFrame({"x": values})["x"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            conformed = PANDAS.conform_column(column, target)
        assert conformed.dtype == PANDAS.engine_dtype(target), (values, target)
        assert_same(got, _host_arrays.from_pandas(conformed, target))


def test_cells_read_one_by_one_are_conformed_as_their_column():
    frame = pd.DataFrame({
        "f": [1.0, np.nan, 3.0],
        "i": pd.array([4, None, 6], dtype="Int64"),
        "s": pd.array(["a", None, ""], dtype="string"),
        "t": pd.Series(["a", "b", None]),  # pandas' default str dtype
    })
    for name, target in (("f", "Int64"), ("i", "Int64"), ("s", "string"), ("t", "string"), ("f", "float32")):
        cells = [frame[name].iat[row] for row in range(len(frame))]
        got = _host_arrays.from_cells(cells, (len(frame),), frame[name].dtype, target)
        assert_same(got, _host_arrays.conform(frame[name], target))
    assert _host_arrays.from_cells([1.5], (1,), np.dtype("float64"), "Int64") is None


def test_strings_round_trip_with_nulls():
    values, nulls = _host_arrays.conform(pd.Series(["a", None, float("nan"), ""], dtype=object), "string")
    assert values.tolist() == ["a", None, None, ""] and nulls is None
    pd.testing.assert_series_equal(
        pd.Series(_host_arrays.to_pandas(values, nulls, "string")), pd.Series(["a", None, None, ""], dtype=STRING)
    )


def test_frames_of_parts_equal_frames_of_columns():
    index = pd.Index([7, 7, 9], name="request")
    ints, floats = np.arange(6).reshape(2, 3), np.array([[0.5, -0.0, np.nan]])
    strings = {"s": pd.array(["a", None, ""], dtype="string"), "n": pd.array([1, None, 3], dtype="Int64")}
    labels = _host_arrays.column_labels(["a", "b", "s", "n", "f"])
    out = _host_arrays.frame_of_parts([ints, strings, floats], labels, index)
    expected = pd.DataFrame({"a": ints[0], "b": ints[1], **strings, "f": floats[0]}, index=index)
    pd.testing.assert_frame_equal(out, expected, check_exact=True)
    if int(pd.__version__.split(".")[0]) >= 3:  # pandas 2's concat copies the blocks it joins
        assert np.shares_memory(out["a"].to_numpy(), ints)  # taken over, not copied
    out.columns.name = "features"
    assert labels.name is None
    one = _host_arrays.frame_of_parts([floats[:, :0]], _host_arrays.column_labels(["f"]), pd.RangeIndex(0))
    pd.testing.assert_frame_equal(one, pd.DataFrame({"f": np.array([], dtype=float)}, index=pd.RangeIndex(0)))
    pd.testing.assert_frame_equal(_host_arrays.frame_of_parts([], labels[:0], index), pd.DataFrame(index=index))


def test_frame_cells_are_the_cells_iat_gives():
    frame = pd.DataFrame({"s": pd.array(["a", None], dtype="string"), "n": [2**60 + 1, 3], "f": [0.5, np.nan]})
    cells = _host_arrays.frame_cells(frame, [0, 1, 2])
    for row in range(2):
        for position in range(3):
            expected = frame.iat[row, position]
            got = cells[row][position]
            assert type(got) is type(expected) and (got is expected or got == expected or got != got), (row, position)
