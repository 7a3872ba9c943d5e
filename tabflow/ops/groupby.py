"""Groupby: one output row per group, with list and summary aggregations (session features)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.columns import input_dtype
from tabflow.graph.selector import ColumnSelector
from tabflow.ops import _groupstats as gs
from tabflow.ops._schema_hooks import SchemaFromColumns
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema, Tags
from tabflow.schema import dtypes as dtype_names

__all__ = ["Groupby"]

_AGGS = ("list", "first", "last", "count", "nunique", "sum", "mean", "median", "min", "max", "std", "var")
# NVTabular 23.08's output dtypes for these aggregations.
_FLOAT32_AGGS = ("mean", "median", "std", "var", "sum")
_INT32_AGGS = ("count", "nunique")


class Groupby(SchemaFromColumns, Operator):
    """Group rows by ``groupby_cols`` and aggregate the other selected columns.

    Within each group, rows are ordered by ``sort_cols`` (stable, so rows with equal sort
    values keep their order) before aggregating: ``"list"`` collects the values into a list
    column (in descending order with ``ascending=False``), ``"first"``/``"last"`` take the
    value of the row with the smallest/largest sort values (whatever ``ascending`` says, as
    in NVTabular; even when the value is null), ``"count"`` counts non-null values,
    ``"nunique"`` distinct non-null values, and ``"sum"``, ``"mean"``, ``"median"``,
    ``"min"``, ``"max"``, ``"std"`` and ``"var"`` (ddof=1) summarise them. Counts are int32
    and ``sum``/``mean``/``median``/``std``/``var`` float32, NVTabular's dtypes (a sum of
    integers is float32 too, exact up to 2**24). Output columns are
    the group columns that are selected, then ``<col><name_sep><agg>``. Output groups are
    sorted by key, null keys last.

    The op replaces the rows of each partition by its groups, so every group must lie in one
    partition: use ``dataset.shuffle_by_keys(groupby_cols)`` first when the data is not
    already split at group boundaries. Because the rows change, use it on its own (or with
    ops downstream of it), not concatenated with row-level features.

    Parameters
    ----------
    groupby_cols : str or list of str
        Key columns; read as dependencies when not selected.
    sort_cols : str or list of str, optional
        Columns ordering the rows inside a group; read as dependencies.
    aggs : str, list of str or dict, default "list"
        Aggregations for every non-key selected column, or ``{column: aggs}`` (columns not in
        the dict are dropped).
    name_sep : str, default "_"
    ascending : bool, default True
        Direction of ``sort_cols`` for the ``"list"`` aggregation.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"s": [2, 1, 2, 1], "ts": [4, 3, 1, 2], "item": [10, 11, 12, 13]})
    >>> op = ops.Groupby(groupby_cols="s", sort_cols="ts", aggs={"item": ["list", "count"]})
    >>> out = nvt.Workflow(["s", "item"] >> op).fit_transform(df)
    >>> [v.tolist() for v in out["item_list"]], out["item_count"].tolist()
    ([[13, 11], [12, 10]], [2, 2])
    """

    def __init__(
        self,
        groupby_cols: str | Sequence[str] | None = None,
        sort_cols: str | Sequence[str] | None = None,
        aggs: str | Sequence[str] | dict = "list",
        name_sep: str = "_",
        ascending: bool = True,
    ) -> None:
        self.groupby_cols = groupby_cols
        self.sort_cols = sort_cols
        self.aggs = aggs
        self.name_sep = name_sep
        self.ascending = ascending

    @property
    def dependencies(self) -> list[Any] | None:
        return [*gs.as_names(self.groupby_cols), *gs.as_names(self.sort_cols)] or None

    def _plan(self, col_selector: ColumnSelector) -> dict[str, tuple[str, str]]:
        """``{output name: (input column, aggregation)}`` for the aggregated columns."""
        keys = gs.as_names(self.groupby_cols)
        if isinstance(self.aggs, dict):
            per_column = {c: [a] if isinstance(a, str) else list(a) for c, a in self.aggs.items()}
        else:
            aggs = [self.aggs] if isinstance(self.aggs, str) else list(self.aggs)
            per_column = {c: aggs for c in col_selector.names if c not in keys}
        return {f"{c}{self.name_sep}{a}": (c, a) for c, aggs in per_column.items() for a in aggs}

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        keys = gs.as_names(self.groupby_cols)
        if not keys:
            raise ValueError("Groupby needs groupby_cols")
        gs.require_columns(input_schema, [*keys, *gs.as_names(self.sort_cols)], "groupby/sort", "Groupby")
        for column, agg in self._plan(col_selector).values():
            if agg not in _AGGS:
                raise ValueError(f"Groupby: unknown aggregation {agg!r} for column {column!r}; use one of {list(_AGGS)}")
            gs.require_columns(input_schema, [column], "aggregated", "Groupby")

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        keys, sort_cols = gs.as_names(self.groupby_cols), gs.as_names(self.sort_cols)
        ordered = backend.sort_rows(
            df, [*keys, *sort_cols], ascending=[True] * len(keys) + [bool(self.ascending)] * len(sort_cols),
        ).reset_index(drop=True)
        starts, offsets = _group_starts(ordered, keys, backend)
        ids = backend.series(np.repeat(np.arange(len(starts)), np.diff(offsets)), index=ordered.index)
        out = {k: ordered[k].iloc[starts].reset_index(drop=True) for k in self._output_keys(col_selector)}
        # "first" is the row with the smallest sort values, also when the rows (and lists)
        # are in descending order.
        smallest, largest = (starts, offsets[1:] - 1) if self.ascending else (offsets[1:] - 1, starts)
        for name, (column, agg) in self._plan(col_selector).items():
            values = ordered[column]
            if agg == "list":
                result = backend.list_from_values_offsets(values, offsets)
            elif agg in ("first", "last"):
                result = values.iloc[smallest if agg == "first" else largest]
            else:
                result = values.groupby(ids, sort=True).agg(agg)
            out[name] = result.reset_index(drop=True)
        frame = backend.frame_from_dict(out)
        dtypes = self._dtypes({n: input_dtype(df, n) for n in df.columns}, col_selector)
        return frame.astype({n: backend.engine_dtype(d) for n, d in dtypes.items() if backend.canonical_dtype(frame[n].dtype) != d})

    def _output_keys(self, col_selector: ColumnSelector) -> list[str]:
        """Group columns in the output: those selected (as NVTabular; the others are read as
        dependencies only)."""
        return [k for k in gs.as_names(self.groupby_cols) if k in col_selector.names]

    def _dtypes(self, canon: dict[str, str], col_selector: ColumnSelector) -> dict[str, str]:
        """Canonical output dtypes from the canonical input dtypes."""
        out = {k: canon[k] for k in self._output_keys(col_selector)}
        for name, (column, agg) in self._plan(col_selector).items():
            if column not in canon:
                # A schema fragment without the aggregated column (merlin's per-column hooks
                # ask with a column's own sources only); validate_input names it when fitting.
                continue
            dtype = canon[column]
            if agg == "list":
                # List elements hold no masked dtypes: nulls inside lists are the list's.
                out[name] = dtype_names.list_dtype(dtype_names.unmasked_dtype(dtype))
            elif agg in _INT32_AGGS:
                out[name] = "int32"
            elif agg in _FLOAT32_AGGS:
                out[name] = "float32"
            else:
                out[name] = dtype
        return out

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        mapping = {k: [k] for k in self._output_keys(col_selector)}
        mapping.update({name: [column] for name, (column, _) in self._plan(col_selector).items()})
        return mapping

    def compute_output_schema(self, input_schema: Schema, col_selector: ColumnSelector, prev_output_schema: Any = None) -> Schema:
        dtypes = self._dtypes(input_schema.dtypes, col_selector)
        columns = []
        for name, dtype in dtypes.items():
            if name in input_schema and name in self._output_keys(col_selector):
                columns.append(input_schema[name])
            else:
                source = input_schema[self._plan(col_selector)[name][0]]
                tags = {*source.tags, Tags.LIST} if dtype.startswith("list<") else source.tags
                columns.append(ColumnSchema(name, dtype=dtype, tags=tags, properties=source.properties))
        return Schema(columns)


def _group_starts(ordered: Any, keys: list[str], backend: Any) -> tuple[np.ndarray, np.ndarray]:
    """Row positions where each group starts, and group offsets (starts plus the row count)."""
    n = len(ordered)
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for key in keys:
        current, previous = ordered[key], ordered[key].shift(1)
        both_null = current.isna() & previous.isna()
        differs = (current != previous).fillna(True).astype(bool) & ~both_null
        change |= backend.to_numpy(differs, dtype=bool)
    starts = np.flatnonzero(change)
    return starts, np.append(starts, n).astype(np.int64)
