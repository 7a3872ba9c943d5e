"""Columns as host NumPy arrays, for the serving plan (:mod:`tabflow.graph.serving`).

A column is a pair ``(values, nulls)`` of NumPy arrays, one layout per canonical dtype:

- NumPy numbers and ``bool``: ``values`` of that dtype, ``nulls`` None (a float's null is NaN);
- masked integers (``Int64``, ``UInt8``, ...) and ``boolean``: ``values`` of the plain dtype
  (anything under a null), ``nulls`` a bool array, True where the value is null;
- ``string``: ``values`` an object array of ``str``, None where null; ``nulls`` None.

Every other dtype (lists, date-times, masked floats, categoricals) has no array layout: the
plan keeps such columns as pandas arrays. The conversions here are exact both ways, and
:func:`conform` casts a request column to its fitted dtype exactly as
:meth:`PandasBackend.conform_column <tabflow.backends.pandas_backend.PandasBackend.conform_column>`
does (the common numeric cases with NumPy, the rest through that method). This module is
the plan's only contact with pandas: requests come in and frames go out here.

Examples
--------
>>> import pandas as pd
>>> from tabflow.backends import _host_arrays
>>> values, nulls = _host_arrays.from_pandas(pd.Series([4, None], dtype="Int64"), "Int64")
>>> values.tolist(), nulls.tolist()
([4, 0], [False, True])
>>> _host_arrays.to_pandas(values, nulls, "Int64").tolist()
[4, <NA>]
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from tabflow.backends import _pandas_blocks
from tabflow.backends.pandas_backend import BACKEND
from tabflow.schema import dtypes

__all__ = [
    "value_dtype", "has_mask", "engine_dtype", "canonical_dtype", "from_pandas", "to_pandas", "hash_values", "conform",
    "conform_pandas", "from_cells", "conform_array", "from_python", "is_frame", "is_request", "request_frame", "frame",
    "frame_column", "range_index", "frame_layout", "frame_cells", "cells_by_iat", "column_labels", "frame_of_parts",
    "frame_of_parts_by_pandas",
]

# Integers beyond these magnitudes may not survive a trip through float64 / float32, the
# types pandas gives a list mixing them with floats or None.
_EXACT_FLOAT_INTEGERS = {"float64": 2**53, "float32": 2**24}
# Request values that are columns of values, not one value.
SEQUENCES = (list, tuple, np.ndarray, pd.Series, pd.api.extensions.ExtensionArray)


@lru_cache(maxsize=None)
def value_dtype(canonical: str) -> np.dtype | None:
    """NumPy dtype of ``values`` for a canonical dtype, None when it has no array layout.

    Examples
    --------
    >>> from tabflow.backends._host_arrays import value_dtype
    >>> value_dtype("Int32"), value_dtype("string"), value_dtype("list<int64>")
    (dtype('int32'), dtype('O'), None)
    """
    if dtypes.is_string(canonical):
        return np.dtype(object)
    plain = dtypes.MASKED.get(canonical, canonical)
    if canonical in ("Float32", "Float64") or not isinstance(plain, str) or dtypes.is_list(plain):
        return None
    try:
        dtype = np.dtype(plain)
    except TypeError:
        return None
    return dtype if dtype.kind in "iufb" else None


@lru_cache(maxsize=None)
def has_mask(canonical: str) -> bool:
    """True when a column of this dtype carries a ``nulls`` array (masked integers, boolean)."""
    return dtypes.is_masked(canonical) and canonical not in ("Float32", "Float64")


@lru_cache(maxsize=None)
def engine_dtype(canonical: str) -> Any:
    """The pandas dtype of a canonical dtype (the engine's, cached)."""
    return BACKEND.engine_dtype(canonical)


def from_pandas(column: Any, canonical: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``(values, nulls)`` of a pandas series or array whose dtype is ``canonical``'s."""
    array = column.array if isinstance(column, pd.Series) else column
    if dtypes.is_string(canonical):
        return np.asarray(array.to_numpy(dtype=object, na_value=None), dtype=object), None
    if has_mask(canonical):
        dtype = value_dtype(canonical)
        assert dtype is not None  # every masked dtype has a NumPy value dtype
        return array.to_numpy(dtype=dtype, na_value=dtype.type(0)), np.asarray(array.isna(), dtype=bool)
    return np.asarray(array), None


def to_pandas(values: np.ndarray, nulls: np.ndarray | None, canonical: str) -> Any:
    """A 1-D column as the array a pandas frame of the engine's dtype holds (NumPy array for
    NumPy dtypes, a pandas extension array otherwise)."""
    if dtypes.is_string(canonical):
        return pd.array(values, dtype=engine_dtype(canonical))
    if canonical == "boolean":
        return pd.arrays.BooleanArray(np.ascontiguousarray(values, dtype=bool), np.ascontiguousarray(nulls))
    if has_mask(canonical):
        return pd.arrays.IntegerArray(np.ascontiguousarray(values), np.ascontiguousarray(nulls))
    return values


def hash_values(values: np.ndarray, nulls: np.ndarray | None, canonical: str) -> np.ndarray:
    """tabflow's stable uint64 hash of each value of a 1-D column: the pandas engine's
    ``hash_values`` of the same column, so buckets equal the batch path's."""
    return BACKEND.hash_values(pd.Series(to_pandas(values, nulls, canonical)))


# ------------------------------------------------------------------------- conforming
def conform(series: pd.Series, canonical: str) -> tuple[np.ndarray, np.ndarray | None] | None:
    """``(values, nulls)`` of a request column cast to its fitted dtype ``canonical``, or None
    when :meth:`conform_column` would leave it in another dtype (a value would change).

    A ValueError from ``conform_column`` (a word in a numeric column) propagates.
    """
    target = engine_dtype(canonical)
    dtype = series.dtype
    if dtype == target:
        return from_pandas(series, canonical)
    if isinstance(dtype, np.dtype) and dtype.kind in "iufb":
        converted = conform_array(series.to_numpy(), canonical)
        if converted is not None:
            return converted
    elif dtypes.is_string(canonical) and BACKEND.is_string_dtype(dtype):
        values = _strings(series.array.to_numpy(dtype=object, na_value=None))
        if values is not None:
            return values, None
    conformed = BACKEND.conform_column(series, canonical)
    if conformed.dtype != target:
        return None
    return from_pandas(conformed, canonical)


def conform_pandas(series: pd.Series, canonical: str) -> Any:
    """A request column without array layout, conformed to ``canonical`` as the batch path
    does, as a pandas array (a copy); None when it keeps another dtype."""
    target = engine_dtype(canonical)
    if series.dtype != target:
        series = BACKEND.conform_column(series, canonical)
        if series.dtype != target:
            return None
    return series.array.copy()


def canonical_dtype(dtype: Any) -> str:
    """The canonical name of a pandas dtype."""
    return BACKEND.canonical_dtype(dtype)


def from_cells(cells: Sequence[Any], shape: tuple[int, ...], source: Any, canonical: str) -> tuple[np.ndarray, np.ndarray | None] | None:
    """What :func:`conform` gives for cells read one by one (``frame.iat``, in ``shape``
    order) from columns of pandas dtype ``source``; None when only the column can tell
    (then :func:`conform` decides)."""
    target = engine_dtype(canonical)
    if dtypes.is_string(canonical):
        if source != target and not BACKEND.is_string_dtype(source):
            return None
        strings = _strings(cells)
        return (strings.reshape(shape), None) if strings is not None else None
    if source == target:
        if not has_mask(canonical):
            return np.array(cells, dtype=value_dtype(canonical)).reshape(shape), None
        nulls = [cell is pd.NA for cell in cells]
        values = np.array([0 if null else cell for cell, null in zip(cells, nulls)], dtype=value_dtype(canonical))
        return values.reshape(shape), np.array(nulls, dtype=bool).reshape(shape)
    if isinstance(source, np.dtype) and source.kind in "iufb":
        return conform_array(np.array(cells, dtype=source).reshape(shape), canonical)
    if source == np.dtype(object):
        # Python values in a column pandas could not type (a None beside ints, as
        # ``pd.DataFrame([row])`` holds a JSON body): parsed as numbers, as conform_column
        # does, where from_python is certain of the result.
        return from_python(cells, shape, canonical)
    return None


def conform_array(values: np.ndarray, canonical: str) -> tuple[np.ndarray, np.ndarray | None] | None:
    """NumPy ``values`` (numbers or booleans, any shape) cast to ``canonical`` where no value
    changes, as ``conform_column`` casts; None for a cast it would not make or that is left
    to it (numbers to booleans and strings).

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends._host_arrays import conform_array
    >>> conform_array(np.array([3.0, np.nan]), "Int64")
    (array([3, 0]), array([False,  True]))
    >>> conform_array(np.array([3.5]), "Int64") is None
    True
    """
    target = value_dtype(canonical)
    source = values.dtype
    if target is None or target.kind not in "iuf" and source != target:
        return None
    masked = has_mask(canonical)
    if source == target:
        return values, (np.zeros(values.shape, dtype=bool) if masked else None)
    with np.errstate(all="ignore"):
        if target.kind == "f":
            if source.kind == "f":
                return values.astype(target), None  # rounded to the fitted precision, as conform_column does
            cast = values.astype(target)
            return (cast, None) if bool((cast.astype(source) == values).all()) else None
        if source.kind == "f":
            nulls = np.isnan(values)
            if not masked and nulls.any():
                return None  # a null where the fitted dtype has none
            filled = np.where(nulls, 0.0, values)
            info = np.iinfo(target)
            # float(info.max) rounds up to 2**63 for int64, so the upper bound is exclusive;
            # infinities fail it too. In range, a fraction fails the round trip.
            if not bool(((filled >= info.min) & (filled < float(info.max) + 1)).all()):
                return None
            cast = filled.astype(target)
            if not bool((cast == filled).all()):
                return None
            return cast, (nulls if masked else None)
    if source.kind == "b" or _fits(values, target):
        return values.astype(target), (np.zeros(values.shape, dtype=bool) if masked else None)
    return None


def _fits(values: np.ndarray, target: np.dtype) -> bool:
    if values.size == 0:
        return True
    info = np.iinfo(target)
    return bool(int(values.min()) >= info.min and int(values.max()) <= info.max)


def _strings(values: Sequence[Any]) -> np.ndarray | None:
    """Values as an object array of strings with None for nulls (NaN and NA too), or None
    when they hold anything else (conform_column then decides)."""
    cleaned = list(values)
    for position, value in enumerate(cleaned):
        if value is None or type(value) is str:
            continue
        if isinstance(value, str):
            cleaned[position] = str(value)
        elif value is pd.NA or (isinstance(value, float) and math.isnan(value)):
            cleaned[position] = None
        else:
            return None
    out = np.empty(len(cleaned), dtype=object)
    out[:] = cleaned
    return out


# ------------------------------------------------------------------ Python values
def from_python(values: Sequence[Any], shape: tuple[int, ...], canonical: str) -> tuple[np.ndarray, np.ndarray | None] | None:
    """Python values (a flat sequence, in ``shape`` order) as a column of ``canonical``, exactly
    as ``pd.DataFrame`` would hold them once conformed; None when that is not certain (a
    bool in a number column, a word, an integer a float would round, ...).

    Examples
    --------
    >>> from tabflow.backends._host_arrays import from_python
    >>> from_python([3, None], (2,), "Int64")
    (array([3, 0]), array([False,  True]))
    >>> from_python([3.5], (1,), "Int64") is None
    True
    """
    target = value_dtype(canonical)
    if target is None:
        return None
    if target.kind == "O":
        strings = _strings(values)
        return (strings.reshape(shape), None) if strings is not None else None
    masked = has_mask(canonical)
    if target.kind == "b":
        if not all(type(v) is bool or isinstance(v, np.bool_) or (masked and v is None) for v in values):
            return None
        nulls = [v is None for v in values]
        flags = np.array([bool(v) if v is not None else False for v in values], dtype=bool).reshape(shape)
        return flags, (np.array(nulls, dtype=bool).reshape(shape) if masked else None)
    limit = _EXACT_FLOAT_INTEGERS["float32" if target == np.float32 else "float64"]
    integers = True  # Python ints and None only: no float needed on the way
    for value in values:
        kind = type(value)
        if kind is int:
            if not -limit < value < limit:
                return None
        elif value is None:
            continue
        elif kind is float or isinstance(value, np.floating):
            integers = False
        elif isinstance(value, np.integer) and not isinstance(value, np.bool_):
            if not -limit < value < limit:
                return None
        else:
            return None  # bool, str, Decimal, pd.NA, ...: pandas decides
    if integers and target.kind in "iu":
        # pandas holds such a list as int64, or as float64 when a None is in it; exact either way.
        nulls = [value is None for value in values]
        if any(nulls) and not masked:
            return None
        try:
            filled = np.array([0 if null else value for value, null in zip(values, nulls)], dtype=target).reshape(shape)
        except OverflowError:
            return None  # out of the fitted dtype's range
        return filled, (np.array(nulls, dtype=bool).reshape(shape) if masked else None)
    floats = np.array(values, dtype=np.float64).reshape(shape)
    return conform_array(floats.astype(np.float32) if target == np.float32 else floats, canonical)


# ------------------------------------------------------------------ requests, frames
def is_frame(obj: Any) -> bool:
    """True for a pandas DataFrame."""
    return isinstance(obj, pd.DataFrame)


def is_request(obj: Any, max_rows: int) -> bool:
    """True for a dict, or a pandas frame of at most ``max_rows`` rows."""
    return isinstance(obj, Mapping) or (isinstance(obj, pd.DataFrame) and len(obj) <= max_rows)


def request_frame(request: Mapping[str, Any], names: Sequence[str] | None = None) -> pd.DataFrame:
    """The frame a dict request stands for: ``pd.DataFrame`` of its columns (``names``, by
    default all), one row when every value is a scalar.

    Examples
    --------
    >>> from tabflow.backends._host_arrays import request_frame
    >>> request_frame({"a": 1, "b": None}).to_dict("list")
    {'a': [1], 'b': [None]}
    """
    columns = {name: request[name] for name in (request if names is None else names)}
    if not any(isinstance(value, SEQUENCES) for value in columns.values()):
        columns = {name: [value] for name, value in columns.items()}
    return pd.DataFrame(columns)


def range_index(rows: int) -> pd.RangeIndex:
    """The index of a frame built from a dict request."""
    return pd.RangeIndex(rows)


def frame(columns: Mapping[str, Any], index: Any) -> pd.DataFrame:
    """A frame of 1-D columns (NumPy or pandas arrays) with ``index``."""
    return BACKEND.frame_from_dict(columns, index=index)


def frame_layout(frame: pd.DataFrame) -> tuple[list[Any], list[Any]]:
    """A frame's column labels and dtypes, as lists (the dtypes read from its blocks where
    :mod:`~tabflow.backends._pandas_blocks` can, ~0.3 us a column against ~1 us)."""
    dtypes = _pandas_blocks.dtypes(frame)
    return frame.columns.tolist(), frame.dtypes.tolist() if dtypes is None else dtypes


def frame_cells(frame: pd.DataFrame, positions: Sequence[int]) -> list[dict[int, Any]]:
    """The cells of a few rows at column ``positions``: ``cells[row][position]``, each the
    value ``frame.iat[row, position]`` gives.

    Read from the frame's blocks where :mod:`~tabflow.backends._pandas_blocks` can (~1 us a
    cell), else one by one with ``frame.iat`` (~4 us a cell). ``frame.iloc[row]`` would
    hand out a row for ~2.8 us a column, but only once pandas has found the row's common
    dtype, ~50 us on the first row read from a frame of 39 extension columns (and it casts
    int64 cells to float64 beside float64 columns).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends._host_arrays import frame_cells
    >>> frame = pd.DataFrame({"s": pd.array(["a", None], dtype="string"), "n": [2**60 + 1, 3]})
    >>> frame_cells(frame, [0, 1])
    [{0: 'a', 1: np.int64(1152921504606846977)}, {0: <NA>, 1: np.int64(3)}]
    """
    cells = _pandas_blocks.cells(frame, positions)
    return cells_by_iat(frame, positions) if cells is None else cells


def cells_by_iat(frame: pd.DataFrame, positions: Sequence[int]) -> list[dict[int, Any]]:
    """:func:`frame_cells` through pandas' public ``frame.iat``.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends._host_arrays import cells_by_iat
    >>> cells_by_iat(pd.DataFrame({"n": pd.array([None, 7], dtype="Int64")}), [0])
    [{0: <NA>}, {0: np.int64(7)}]
    """
    cell = frame.iat
    return [{position: cell[row, position] for position in positions} for row in range(len(frame))]


def column_labels(names: Sequence[Any]) -> pd.Index:
    """The column labels ``pd.DataFrame`` gives a frame of columns ``names`` (built once:
    :func:`frame_of_parts` takes them)."""
    return pd.Index(list(names))


def frame_of_parts(parts: Sequence[np.ndarray | Mapping[Any, Any]], columns: pd.Index, index: Any) -> pd.DataFrame:
    """A frame from parts in column order: 2-D NumPy arrays of one dtype, one row per column
    (pandas 3 takes them over without a copy; pandas 2 copies what it joins), and dicts of 1-D
    columns (NumPy or pandas arrays); ``columns`` from :func:`column_labels`.

    On pandas 3 the parts become the frame's blocks (~10 us for a frame of a few parts, see
    :mod:`~tabflow.backends._pandas_blocks`). Through ``pd.DataFrame`` pandas takes ~5 us a
    column to build a frame from 1-D columns, but ~7 us a whole 2-D array, plus ~20 us to
    join frames side by side.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from tabflow.backends._host_arrays import column_labels, frame_of_parts
    >>> parts = [np.array([[1, 2], [3, 4]]), {"s": pd.array(["x", None], dtype="string")}, np.array([[0.5, 1.5]])]
    >>> frame_of_parts(parts, column_labels(["a", "b", "s", "f"]), pd.RangeIndex(2))
       a  b     s    f
    0  1  3     x  0.5
    1  2  4  <NA>  1.5
    """
    if not parts or not (_pandas_blocks.BUILDS_BLOCKS and isinstance(index, pd.Index)):
        return frame_of_parts_by_pandas(parts, columns, index)
    blocks: list[tuple[Any, int]] = []
    start = 0
    for part in parts:
        if isinstance(part, np.ndarray):
            blocks.append((part, start))
            start += len(part)
        else:
            for column in part.values():
                blocks.append((column, start))
                start += 1
    # A new Index over the shared labels: a caller naming them (out.columns.name = ...)
    # changes its own frame only.
    return _pandas_blocks.frame_from_columns(blocks, columns.view(), index)


def frame_of_parts_by_pandas(parts: Sequence[np.ndarray | Mapping[Any, Any]], columns: pd.Index, index: Any) -> pd.DataFrame:
    """:func:`frame_of_parts` through pandas' public ``pd.DataFrame`` and ``pd.concat``.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from tabflow.backends._host_arrays import column_labels, frame_of_parts_by_pandas
    >>> frame_of_parts_by_pandas([np.array([[1, 2]]), {"f": np.array([0.5, 1.5])}], column_labels(["a", "f"]), pd.RangeIndex(2))
       a    f
    0  1  0.5
    1  2  1.5
    """
    if not parts:
        return frame({}, index)
    labels = columns.view()  # as frame_of_parts: the caller's frame gets its own Index
    if len(parts) == 1 and isinstance(parts[0], np.ndarray):
        return pd.DataFrame(parts[0].T, index=index, columns=labels, copy=False)
    frames = [
        pd.DataFrame(part.T, index=index, copy=False) if isinstance(part, np.ndarray) else pd.DataFrame(part, index=index, copy=False)
        for part in parts
    ]
    # Joined under positions, then named: pandas builds joined labels slowly.
    out = frames[0] if len(frames) == 1 else pd.concat(frames, axis=1, ignore_index=True)
    out.columns = labels
    return out


def frame_column(series: pd.Series) -> Any:
    """A frame's column as dict responses hold it: a NumPy array for NumPy dtypes, else the
    pandas array."""
    return series.to_numpy() if isinstance(series.dtype, np.dtype) else series.array
