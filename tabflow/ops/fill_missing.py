"""FillMissing: replace nulls by a constant, optionally flagging which values were null."""

from __future__ import annotations

from numbers import Number
from typing import Any, Callable

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.columns import input_dtype
from tabflow.graph.kernels import Block, Kernel, elementwise_kernels, floats, null_mask
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema
from tabflow.schema import dtypes as _dtypes

__all__ = ["FillMissing"]

#: Suffix of the indicator columns that ``add_binary_cols=True`` adds (NVTabular's naming).
FILLED_SUFFIX = "_filled"


class FillsNulls:
    """Output columns and schema of the fill ops: every input column filled, plus a boolean
    ``<name>_filled`` flag per column with ``add_binary_cols``. Subclasses say which dtype a
    filled column gets."""

    add_binary_cols: bool

    def filled_dtype(self, dtype: str) -> str:
        raise NotImplementedError

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        return filled_mapping(col_selector, self.add_binary_cols)

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = super().compute_column_schema(col_name, input_schema)  # type: ignore[misc]
        if col_name not in input_schema:
            return column.with_dtype("bool")
        return column.with_dtype(self.filled_dtype(column.dtype))


class FillMissing(FillsNulls, Operator):
    """Replace nulls (and NaN) with ``fill_val``.

    Output dtypes are fixed by the input dtype and ``fill_val``, never by the data:

    - float columns keep their dtype;
    - nullable integer columns (``Int64``, ...) become the plain numpy integer of the same
      width (``int64``) when ``fill_val`` is integral, since no null can remain; a fractional
      ``fill_val`` turns them into ``float64`` rather than rounding it;
    - nullable booleans become ``bool`` when ``fill_val`` is 0/1/True/False;
    - string columns are filled with ``str(fill_val)`` and stay strings;
    - non-nullable numpy columns cannot hold nulls and pass through unchanged.

    Parameters
    ----------
    fill_val : number or str, default 0
    add_binary_cols : bool, default False
        Also output ``<col>_filled``: a bool column, True where the value was null. All
        filled columns come first, then all indicator columns.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"x": pd.array([1, None, 3], dtype="Int64")})
    >>> out = nvt.Workflow(["x"] >> ops.FillMissing(add_binary_cols=True)).fit_transform(df)
    >>> out["x"].tolist(), str(out["x"].dtype), out["x_filled"].tolist()
    ([1, 0, 3], 'int64', [False, True, False])
    """

    row_wise = True

    def __init__(self, fill_val: Any = 0, add_binary_cols: bool = False) -> None:
        self.fill_val = fill_val
        self.add_binary_cols = add_binary_cols

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if not isinstance(self.fill_val, (Number, str)):
            raise TypeError(f"FillMissing fill_val must be a number or a string, got {self.fill_val!r}")
        _require_fillable(input_schema, col_selector, "FillMissing")
        if isinstance(self.fill_val, str):
            numeric = [n for n in col_selector.names if input_schema[n].dtype != "string"]
            if numeric:
                raise TypeError(
                    f"FillMissing fill_val {self.fill_val!r} is a string but column(s) {numeric} are not "
                    "string columns; use a numeric fill_val for them (a separate FillMissing)"
                )

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        return fill_columns(df, col_selector.names, {n: self.fill_val for n in col_selector.names}, self.add_binary_cols)

    def filled_dtype(self, dtype: str) -> str:
        return filled_dtype(dtype, self.fill_val)

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        names = col_selector.names
        return fill_kernels(names, input_schema, {n: self.fill_val for n in names}, self.add_binary_cols)


# Helpers shared with FillMedian: both ops fill and flag nulls the same way.


def filled_mapping(col_selector: ColumnSelector, add_binary_cols: bool) -> dict[str, list[str]]:
    mapping = {name: [name] for name in col_selector.names}
    if add_binary_cols:
        mapping.update({f"{name}{FILLED_SUFFIX}": [name] for name in col_selector.names})
    return mapping


def filled_dtype(dtype: str, fill_val: Any) -> str:
    """Canonical dtype of a column of ``dtype`` once its nulls are replaced by ``fill_val``."""
    if dtype == "string" or not isinstance(fill_val, Number):
        return dtype
    value: Any = fill_val  # a Number: float() and comparisons with ints hold for the numbers fills take
    integral = float(value).is_integer()
    if dtype == "boolean":
        return "bool" if value in (0, 1) else "float64"
    if dtype.startswith(("Int", "UInt")):
        return dtype.lower() if integral else "float64"
    return dtype


def fill_columns(
    df: Any,
    names: list[str],
    fill_values: dict[str, Any],
    add_binary_cols: bool,
    target_dtype: Callable[[str, Any], str] = filled_dtype,
) -> Any:
    """Fill each column with its value, cast to ``target_dtype(source dtype, value)``.

    The source dtype is the planned one (:func:`~tabflow.graph.columns.input_dtype`): on cuDF
    an ``Int64`` column is an ``int64`` column, and planning from that would make a partition
    without nulls ``int64`` where the schema says ``float64`` (``FillMissing(0.5)``), one with
    nulls a fill that cuDF refuses, and a nullable boolean filled with 2 ``True`` instead of 2.0.
    """
    backend = backend_for(df)
    out, flags = {}, {}
    for name in names:
        column, value = df[name], fill_values[name]
        source = input_dtype(df, name)
        target = target_dtype(source, value)
        if add_binary_cols:
            flags[f"{name}{FILLED_SUFFIX}"] = column.isna()
        if source == "string":
            value = str(value)
        elif target == "bool":
            value = bool(value)
        elif target != source and target.startswith("float"):
            # Convert first: a masked integer column cannot take a fractional fill value.
            column = backend.to_float(column, target)
        out[name] = backend.fill_nulls(column, value, target)
    return backend.frame_from_dict({**out, **flags}, index=df.index)


def fill_kernels(
    names: list[str],
    input_schema: Schema,
    fill_values: dict[str, Any],
    add_binary_cols: bool,
    target_dtype: Callable[[str, Any], str] = filled_dtype,
) -> list[Kernel] | None:
    """The array kernels of :func:`fill_columns` (None where a fill value would make pandas
    change the dtype or refuse)."""

    def make(group: list[str], source: str, target: str) -> Any:
        fills = [fill_values[name] for name in group]
        if _dtypes.is_string(source):
            filling = np.array([[str(value)] for value in fills], dtype=object)
            return lambda block: Block(np.where(block.values == None, filling, block.values))  # noqa: E711
        if source == target and not _dtypes.is_float(source):
            return lambda block: block  # a plain integer or boolean column has no nulls to fill
        if any(isinstance(value, bool) for value in fills) and target != "bool":
            return None
        value_type = np.dtype(target).type
        if np.dtype(target).kind in "iu" and any(
            not float(value).is_integer() or not np.iinfo(target).min <= value <= np.iinfo(target).max for value in fills
        ):
            return None  # transform refuses (or pandas changes the dtype)
        with np.errstate(over="ignore"):  # 1e300 for a float32 column: inf, as transform gives
            filling = np.array([[value_type(value)] for value in fills])
        if target != source and target.startswith("float"):
            # Masked integers or booleans filled with a float: converted first, as transform does.
            def fill_floats(block: Block) -> Block:
                values = floats(block)
                return Block(np.where(np.isnan(values), filling, values))

            return fill_floats
        return lambda block: Block(np.where(null_mask(block, source), filling, block.values))

    kernels = elementwise_kernels(names, input_schema, lambda name, source: target_dtype(source, fill_values[name]), make)
    if kernels is None or not add_binary_cols:
        return kernels
    flags = [
        Kernel(kernel.inputs, tuple(f"{name}{FILLED_SUFFIX}" for name in kernel.outputs), "bool", _flagger(str(input_schema[kernel.outputs[0]].dtype)))
        for kernel in kernels
    ]
    return kernels + flags


def _flagger(source: str) -> Callable[[Block], Block]:
    return lambda block: Block(null_mask(block, source).copy())


def _require_fillable(input_schema: Schema, col_selector: ColumnSelector, op_name: str) -> None:
    for name in col_selector.names:
        if input_schema[name].is_list:
            raise TypeError(
                f"{op_name} cannot fill list column {name!r} ({input_schema[name].dtype}); "
                "nulls inside lists are left to the list ops"
            )
