"""JoinExternal: add the columns of an external table (a frame or a file) by joining on keys."""

from __future__ import annotations

import os
from typing import Any, Sequence

from tabflow.backends import backend_for, get_backend
from tabflow.backends.protocol import Frame
from tabflow.graph.selector import ColumnSelector
from tabflow.ops import _groupstats as gs
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema
from tabflow.schema.dtypes import nullable_dtype

__all__ = ["JoinExternal"]


class JoinExternal(Operator):
    """Join an external table onto the selected columns, keeping the rows' order.

    The output holds the selected columns followed by ``columns_ext`` in its order (or all
    the external table's columns), as in NVTabular: an external key named differently from
    its input key (``on_ext``) is an output column when it is listed there (or when
    ``columns_ext`` is None), and a key named like its input key appears once. With
    ``how="left"`` every row is kept, in its order and with its index; rows without a match
    get nulls in every external column, keys included, so the external integer and boolean
    columns become their nullable (masked) dtypes. With
    ``how="inner"`` unmatched rows are dropped: the op changes the number of rows, so apply
    it to every column the rest of the graph needs and build the other features downstream
    of it (``joined = all_columns >> ops.JoinExternal(...)``, then ``joined >> ...``).
    A key repeated in the external table repeats the row unless ``drop_duplicates_ext``.
    Null keys match null keys.

    The external table is saved with the workflow: a frame as a parquet file, a path as the
    path itself (the file must still be there when the loaded workflow runs).

    Parameters
    ----------
    df_ext : DataFrame (pandas or cuDF), Dataset or str
        The table, or the path of a parquet file/directory or CSV file.
    on : str or list of str
        Key column(s) of the input.
    how : {"left", "inner"}, default "left"
    on_ext : str or list of str, optional
        Key column(s) of the external table when named differently from ``on``.
    columns_ext : list of str, optional
        External columns to add, in this order (the keys are read for the join in any
        case, and added only when listed here).
    drop_duplicates_ext : bool, optional
        Keep only the first external row of each key.
    kind_ext : {"parquet", "csv"}, optional
        Format of a path ``df_ext`` (default from the file name).
    **kwargs
        Accepted as NVTabular 23.08 accepted them (it kept them unused): no effect, a
        ``UserWarning`` names them.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> items = pd.DataFrame({"item": [2, 1], "price": [9.5, 3.0]})
    >>> wf = nvt.Workflow(["item", "user"] >> ops.JoinExternal(items, on="item"))
    >>> wf.fit_transform(pd.DataFrame({"item": [1, 2, 3], "user": [7, 8, 9]}))["price"].tolist()
    [3.0, 9.5, nan]

    A key named differently in the external table is kept when ``columns_ext`` lists it:

    >>> items = items.rename(columns={"item": "item_id"})
    >>> op = ops.JoinExternal(items, on="item", on_ext="item_id", columns_ext=["item_id", "price"])
    >>> nvt.Workflow(["item"] >> op).fit_transform(pd.DataFrame({"item": [1, 3]}))
       item  item_id  price
    0     1        1    3.0
    1     3     <NA>    NaN
    """

    _derived_attributes = ("_prepared",)

    def __init__(
        self,
        df_ext: Any,
        on: str | Sequence[str],
        how: str = "left",
        on_ext: str | Sequence[str] | None = None,
        columns_ext: Sequence[str] | None = None,
        drop_duplicates_ext: bool | None = None,
        kind_ext: str | None = None,
        cache: str = "host",
        **kwargs: Any,
    ) -> None:
        self.df_ext = df_ext
        self.on = on
        self.how = how
        self.on_ext = on_ext
        self.columns_ext = columns_ext
        self.drop_duplicates_ext = drop_duplicates_ext
        self.kind_ext = kind_ext
        self.cache = cache
        # NVTabular 23.08 accepted and stored extra keywords without using them; so does tabflow
        # (they are not parameters: a saved or cloned op does not keep them).
        self.kwargs = kwargs

    def _keys(self) -> tuple[list[str], list[str]]:
        left = gs.as_names(self.on)
        return left, gs.as_names(self.on_ext) if self.on_ext is not None else left

    def _ext_columns(self, table: Any) -> list[str]:
        """External output columns: ``columns_ext`` (or all), less keys named like their input key."""
        on, on_ext = self._keys()
        same_name = {r for k, r in zip(on, on_ext) if k == r}
        names = self.columns_ext if self.columns_ext is not None else list(table.columns)
        return [name for name in dict.fromkeys(names) if name not in same_name]

    def _host_table(self) -> Any:
        """The external table on the host, read once and kept (never part of saved state)."""
        table = getattr(self, "_host", None)
        if table is None:
            source = self.df_ext
            if isinstance(source, (str, os.PathLike)):
                table = get_backend("pandas").read_table(os.fspath(source), self.kind_ext)
            elif hasattr(source, "to_ddf"):
                table = source.compute()
            else:
                table = source
            table = get_backend("pandas").with_list_columns(backend_for(table).to_host(table))
            _, on_ext = self._keys()
            missing = [c for c in [*on_ext, *(self.columns_ext or [])] if c not in table.columns]
            if missing:
                raise KeyError(f"JoinExternal: column(s) {missing} are not in the external table ({list(table.columns)})")
            if self.columns_ext is not None:
                table = table[[*on_ext, *[c for c in self.columns_ext if c not in on_ext]]]
            if self.drop_duplicates_ext:
                table = table.drop_duplicates(subset=on_ext, keep="first")
            self._host = table
        return table

    def _ext_schema(self) -> Schema:
        backend = get_backend("pandas")
        table = self._host_table()
        columns = []
        for name in self._ext_columns(table):
            dtype = backend.canonical_dtype(table[name].dtype)
            columns.append(ColumnSchema(str(name), dtype=nullable_dtype(dtype) if self.how == "left" else dtype))
        return Schema(columns)

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if self.how not in ("left", "inner"):
            raise ValueError(f"JoinExternal how must be 'left' or 'inner', got {self.how!r}")
        on, on_ext = self._keys()
        if len(on) != len(on_ext) or not on:
            raise ValueError(f"JoinExternal needs as many keys in on_ext {on_ext} as in on {on}")
        missing = [k for k in on if k not in col_selector.names]
        if missing:
            raise KeyError(f"JoinExternal: key column(s) {missing} must be among the selected columns {col_selector.names}")
        clashes = [c for c in self._ext_schema().column_names if c in col_selector.names]
        if clashes:
            raise ValueError(f"JoinExternal: external column(s) {clashes} are already in the input; rename or drop them")

    def _engine_table(self, backend: Any) -> Any:
        """Join keys under private names, then the output columns in their declared dtypes.

        The keys are copies so that matching can cast them to the data's key dtypes while an
        external key that is also an output column keeps its own dtype and, in a left join,
        is null where nothing matched (as pandas' ``merge(left_on=, right_on=)`` gives).
        """
        def build() -> Any:
            host = self._host_table()
            _, on_ext = self._keys()
            # A copy of its own (not a slice of ``host``): columns are added to it below.
            table = host[list(on_ext)].copy()
            table.columns = _join_keys(len(on_ext))
            for column in self._ext_schema():
                table[column.name] = get_backend("pandas").astype(host[column.name], column.dtype)
            return backend.from_host(table)

        return self._derived("_prepared", backend.name, build)

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        on, _ = self._keys()
        keys = _join_keys(len(on))
        table = self._engine_table(backend)
        casts = {r: table[r].astype(df[k].dtype) for k, r in zip(on, keys) if table[r].dtype != df[k].dtype}
        if casts:
            table = table.assign(**casts)
        joined = backend.merge_keep_order(df[col_selector.names], table, on, keys, how=self.how)
        return joined[[*col_selector.names, *self._ext_schema().column_names]]

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        mapping = {name: [name] for name in col_selector.names}
        mapping.update({name: self._keys()[0] for name in self._ext_schema().column_names})
        return mapping

    def compute_output_schema(self, input_schema: Schema, col_selector: ColumnSelector, prev_output_schema: Schema | None = None) -> Schema:
        return Schema([*(input_schema[n] for n in col_selector.names), *self._ext_schema()])


def _join_keys(n: int) -> list[str]:
    return [f"__tabflow_join_key_{i}__" for i in range(n)]
