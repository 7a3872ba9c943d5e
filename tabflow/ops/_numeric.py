"""Helpers shared by the numeric ops: input checks, moments, element-wise list maths.

Kept apart from any one op so that ``normalize`` can re-export ``NormalizeMinMax`` (as
NVTabular's ``nvtabular.ops.normalize`` does) without the two modules importing each other.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from tabflow.graph.kernels import Block, Kernel, elementwise_kernels, floats
from tabflow.graph.selector import ColumnSelector
from tabflow.schema import Schema
from tabflow.schema import dtypes as _dtypes

__all__ = [
    "require_numeric", "warn_no_finite_values", "merge_moments", "finite_values", "map_values", "map_arrays",
    "dtype_name", "float_output_dtype",
]


def require_numeric(input_schema: Schema, col_selector: ColumnSelector, op_name: str, lists: bool = False) -> None:
    """TypeError naming the first selected column that is not numeric (or, with ``lists``,
    a list of numbers)."""
    for name in col_selector.names:
        dtype = str(input_schema[name].dtype)
        element = _dtypes.element_dtype(dtype) if lists else dtype
        if not _dtypes.is_numeric(element):
            kinds = "numeric columns or lists of numbers" if lists else "numeric columns"
            raise TypeError(
                f"{op_name} needs {kinds} but {name!r} has dtype {dtype}; "
                "encode it first (e.g. ops.Categorify for strings, ops.HexToInt for hex ids)"
            )


def warn_no_finite_values(op_name: str, names: list[str], consequence: str) -> None:
    """UserWarning naming the columns that held no finite value when ``op_name`` was fitted."""
    if names:
        warnings.warn(
            f"{op_name}: column(s) {names} held no finite value when fitted (only nulls or infinities, or no "
            f"rows), so they {consequence}; fit on data with values, or leave these columns out",
            UserWarning,
            stacklevel=3,
        )


def merge_moments(moments: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """(count, mean, M2) of several parts merged exactly (Chan et al.'s parallel update)."""
    count, mean, m2 = 0.0, 0.0, 0.0
    for n_b, mean_b, m2_b in moments:
        if n_b == 0:
            continue
        total = count + n_b
        delta = mean_b - mean
        mean += delta * n_b / total
        m2 += m2_b + delta * delta * count * n_b / total
        count = total
    return count, mean, m2


def finite_values(backend: Any, column: Any) -> Any:
    """The finite values of a numeric or list column (of its elements) as a float64 engine
    array (``backend.xp``): nulls, NaN and infinities are left out.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends import get_backend
    >>> finite_values(get_backend("pandas"), pd.Series([1.0, None, float("inf"), 4.0])).tolist()
    [1.0, 4.0]
    """
    if backend.is_list_dtype(column.dtype):
        column = backend.list_values_series(column)
    values = backend.column_values(column, "float64", na_value=np.nan)
    return values[backend.xp.isfinite(values)]


def map_values(backend: Any, column: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` applied to a numeric column, or to every element of a list column.

    ``fn`` receives a float64 series (missing values as the engine's missing marker, see
    ``Backend.to_float``) and returns a series of the same length;
    a list column keeps its row structure (a null list becomes an empty list), as NVTabular's
    ops flatten list columns, compute on the values, and rebuild the lists.
    """
    if not backend.is_list_dtype(column.dtype):
        return fn(backend.to_float(column, "float64"))
    offsets = backend.list_offsets(column)
    values = backend.to_float(backend.list_values_series(column), "float64")
    return backend.list_from_values_offsets(fn(values), offsets, index=column.index, name=column.name)


def map_arrays(arrays: Mapping[str, Any], names: Sequence[str], fn: Callable[[str, Any], Any], dtype: str) -> dict[str, Any]:
    """NVTabular's dict-of-arrays form of a numeric op's ``transform`` (its Normalize ops
    declared ``Supports.CPU_DICT_ARRAY`` and ``GPU_DICT_ARRAY``): ``{name: fn(name, values)}``
    for the selected columns, ``fn`` given float64 values, its result cast to ``dtype``.

    Works on NumPy and CuPy arrays alike (a CuPy array stays on its device); a list or tuple
    is read as a NumPy array.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.ops._numeric import map_arrays
    >>> map_arrays({"x": np.array([1, 3]), "y": [0.5]}, ["x"], lambda name, values: values / 2, "float32")
    {'x': array([0.5, 1.5], dtype=float32)}
    """
    out = {}
    for name in names:
        values = arrays[name]
        if not hasattr(values, "astype"):
            values = np.asarray(values)
        out[name] = fn(name, values.astype("float64")).astype(dtype)
    return out


def dtype_name(dtype: Any) -> str:
    """The canonical name of a dtype given any way NVTabular scripts give one: a string, a
    numpy dtype or type (``np.float32``), or a Python type (``float``)."""
    return _dtypes.canonical_dtype(dtype)


def float_output_dtype(out_dtype: Any, input_dtype: str, default: str = "float64") -> str:
    """Canonical output dtype of a float-valued op: ``out_dtype`` (default ``default``),
    as a list of it when the input column is a list."""
    name = dtype_name(out_dtype) if out_dtype is not None else default
    return _dtypes.list_dtype(name) if _dtypes.is_list(str(input_dtype)) else name


def float_kernels(
    names: list[str], input_schema: Schema, dtype: str, rows_function: Callable[[list[str]], Callable[[np.ndarray], np.ndarray]],
) -> list[Kernel] | None:
    """Serving kernels of an op that maps each column's values (as float64, nulls NaN) to a
    float output of ``dtype``: ``rows_function(names)`` gives the function of a
    ``(len(names), rows)`` float64 array that computes them. An integer ``dtype`` gets no
    kernel, since NaN would turn into arbitrary numbers (the op's ``transform`` serves then).

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.graph.kernels import Block
    >>> from tabflow.ops._numeric import float_kernels
    >>> from tabflow.schema import ColumnSchema, Schema
    >>> schema = Schema([ColumnSchema("x", dtype="float64")])
    >>> (kernel,) = float_kernels(["x"], schema, "float32", lambda names: lambda values: values * 2)
    >>> kernel.fn(Block(np.array([[1.5, np.nan]]))).values.tolist()
    [[3.0, nan]]
    """

    def make(block_names: list[str], source: str, target: str) -> Any:
        if np.dtype(target).kind != "f":
            return None
        compute = rows_function(block_names)
        return lambda block: Block(compute(floats(block)).astype(target, copy=False))

    return elementwise_kernels(names, input_schema, lambda name, source: dtype, make)
