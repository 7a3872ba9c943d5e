"""ListSlice: truncate (and optionally pad) the lists of list columns."""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral
from typing import Any

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["ListSlice"]


class ListSlice(Operator):
    """Keep a slice of every list, as NVTabular's ListSlice does.

    With one positive argument, ``ListSlice(n)`` keeps the first ``n`` items (``row[:n]``);
    with a negative one, ``ListSlice(-n)`` keeps the last ``n`` (the most recent events of a
    session); with two, ``ListSlice(start, end)`` keeps ``row[start:end]`` with Python slice
    semantics (negative bounds count from the end of each list).

    With ``pad=True`` every output list has exactly the slice's length (``n`` for
    ``ListSlice(n)`` and ``ListSlice(-n)``, ``end - start`` for two bounds of the same sign):
    shorter lists are padded on the right with ``pad_value``. The schema then records that
    fixed length as ``value_count`` min and max. A null list is treated as empty. The output
    columns are tagged ``list``, as in NVTabular.

    Parameters
    ----------
    start : int
        The start of the slice, or, alone and positive, its end (``ListSlice(n)`` is
        ``row[:n]``).
    end : int, optional
    pad : bool, default False
    pad_value : scalar, default 0
        Must fit the list's element type.

    Examples
    --------
    >>> import pandas as pd, pyarrow as pa
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> items = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([[1, 2, 3, 4], [5]])))
    >>> df = pd.DataFrame({"items": items})
    >>> nvt.Workflow(["items"] >> ops.ListSlice(2)).fit_transform(df)["items"].map(lambda row: row.tolist()).tolist()
    [[1, 2], [5]]
    >>> nvt.Workflow(["items"] >> ops.ListSlice(-2)).fit_transform(df)["items"].map(lambda row: row.tolist()).tolist()
    [[3, 4], [5]]
    >>> nvt.Workflow(["items"] >> ops.ListSlice(1, 3)).fit_transform(df)["items"].map(lambda row: row.tolist()).tolist()
    [[2, 3], []]
    >>> nvt.Workflow(["items"] >> ops.ListSlice(3, pad=True)).fit_transform(df)["items"].map(lambda row: row.tolist()).tolist()
    [[1, 2, 3], [5, 0, 0]]
    """

    row_wise = True

    def __init__(self, start: int, end: int | None = None, pad: bool = False, pad_value: Any = 0) -> None:
        self.start = start
        self.end = end
        self.pad = pad
        self.pad_value = pad_value

    def _bounds(self) -> tuple[int, int | None]:
        """The slice as (start, end): one positive argument is the end (NVTabular's rule)."""
        if self.end is None and self.start > 0:
            return 0, self.start
        return self.start, self.end

    def _padded_length(self) -> int | None:
        if not self.pad:
            return None
        start, end = self._bounds()
        if end is None:
            if start >= 0:
                raise ValueError("ListSlice(0, pad=True) keeps whole lists: give the padded length, e.g. ListSlice(n, pad=True)")
            return -start
        if (start < 0) != (end < 0):
            raise ValueError(
                f"ListSlice(pad=True) needs start and end of the same sign to know the padded length, "
                f"got start={start}, end={end}"
            )
        if end <= start:
            raise ValueError(f"ListSlice(pad=True) needs end > start, got start={start}, end={end}")
        return end - start

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        for label, value in (("start", self.start), ("end", self.end)):
            if (value is not None or label == "start") and (not isinstance(value, Integral) or isinstance(value, bool)):
                raise TypeError(f"ListSlice {label} must be an integer, got {value!r}")
        self._padded_length()
        for name in col_selector.names:
            if not input_schema[name].is_list:
                raise TypeError(f"ListSlice needs list columns but {name!r} has dtype {input_schema[name].dtype}")

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        out = {}
        start, end = self._bounds()
        for name in col_selector.names:
            out[name] = _slice_column(backend, df[name], start, end, self._padded_length(), self.pad_value)
        return backend.frame_from_dict(out, index=df.index)

    @property
    def output_tags(self) -> list[Any]:
        return [Tags.LIST]  # as NVTabular 23.08's ListSlice

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = super().compute_column_schema(col_name, input_schema)
        length = self._padded_length()
        # Lengths recorded upstream (ops.ValueCount) no longer hold after slicing.
        properties = {k: v for k, v in column.properties.items() if k != "value_count"}
        if length is None:
            return replace(column, value_count=None, properties=properties)
        fixed = {"min": length, "max": length}
        return replace(column, value_count=fixed, properties={**properties, "value_count": fixed})


def element_rows(xp: Any, offsets: Any) -> Any:
    """Row number of every flattened list element (numpy or cupy: no ``repeat`` by array,
    which cupy lacks)."""
    total = int(offsets[-1]) if len(offsets) else 0
    return xp.searchsorted(offsets[1:], xp.arange(total, dtype=offsets.dtype), side="right")


def _slice_column(backend: Any, series: Any, start: int, end: int | None, length: int | None, pad_value: Any) -> Any:
    xp = backend.xp
    offsets = backend.list_offsets(series)
    values = backend.list_values_series(series)
    offsets = xp.asarray(offsets, dtype=xp.int64)
    sizes = offsets[1:] - offsets[:-1]
    # Python slice bounds per row, clamped into [0, size].
    first = xp.clip(sizes + start if start < 0 else xp.full_like(sizes, start), 0, sizes)
    last = sizes if end is None else xp.clip(sizes + end if end < 0 else xp.full_like(sizes, end), 0, sizes)
    kept = xp.maximum(last - first, 0)
    if length is not None:
        kept = xp.minimum(kept, length)
        out_sizes = xp.full_like(sizes, length)
    else:
        out_sizes = kept
    out_offsets = xp.zeros(sizes.shape[0] + 1, dtype=xp.int64)
    out_offsets[1:] = xp.cumsum(out_sizes)
    total = int(out_offsets[-1])
    # For output slot j of row r: position inside the row and the source element.
    row = element_rows(xp, out_offsets)
    within = xp.arange(total, dtype=xp.int64) - out_offsets[:-1][row]
    real = within < kept[row]
    source = xp.where(real, offsets[:-1][row] + first[row] + within, 0)
    if len(values) == 0:
        # Nothing to take from: every slot is padding.
        taken = backend.series(xp.full(total, pad_value), dtype=values.dtype)
        return backend.list_from_values_offsets(taken, out_offsets, index=series.index, name=series.name)
    taken = values.iloc[source].reset_index(drop=True)
    if length is not None:
        taken = taken.where(backend.series(real, index=taken.index), pad_value)
    return backend.list_from_values_offsets(taken, out_offsets, index=series.index, name=series.name)
