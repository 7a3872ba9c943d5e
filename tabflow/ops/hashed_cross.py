"""HashedCross: hash crosses of categorical columns into a fixed number of buckets."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._schema_hooks import SchemaFromColumns
from tabflow.ops.hash_bucket import (
    bucket_dtype,
    buckets_for,
    categorical_column,
    require_hashable,
)
from tabflow.ops.list_slice import element_rows
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema

__all__ = ["HashedCross"]

#: Separator of the crossed column names in the output name (NVTabular's).
CROSS_SEPARATOR = "_X_"


class HashedCross(SchemaFromColumns, Operator):
    """One int32 column per cross: ``combine(hash(a), hash(b), ...) % num_buckets``.

    Each column is hashed with tabflow's stable hash (:mod:`tabflow.backends._hashing`) and the
    hashes are folded left to right with the order-dependent
    :func:`~tabflow.backends._hashing.hash_combine`, so ``a x b`` and ``b x a`` are different
    features. Nulls take part with the null hash, so a row with a null still gets a bucket.

    Crosses come from column groups: ``[["a", "b"], ["a", "c", "d"]] >> HashedCross(1000)``
    outputs ``a_X_b`` and ``a_X_c_X_d`` (NVTabular's naming); a flat selection
    ``["a", "b"] >> HashedCross(...)`` is a single cross of all its columns.

    A cross may hold one list column: it is crossed element by element with the scalar
    columns of the row, giving a ``list<int32>`` column with the list's lengths.

    The output is int32 as in NVTabular 23.08 (int64 only above ``2**31`` buckets) and, unlike
    NVTabular's (which kept no tag), tagged categorical with ``cardinality`` and
    ``embedding_sizes`` properties, so that loaders and ``get_embedding_sizes`` treat it as
    the categorical feature it is.

    Parameters
    ----------
    num_buckets : int or dict
        Buckets of every cross, or per cross keyed by the output name (``"a_X_b"``) or the
        tuple of its columns (``("a", "b")``).

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"a": ["x", "y", "x"], "b": [1, 2, 1], "c": [5, 5, 6]})
    >>> wf = nvt.Workflow([["a", "b"], ["a", "c"]] >> ops.HashedCross(100))
    >>> out = wf.fit_transform(df)
    >>> list(out.columns), bool(out["a_X_b"][0] == out["a_X_b"][2])
    (['a_X_b', 'a_X_c'], True)
    """

    row_wise = True

    def __init__(self, num_buckets: int | Mapping[Any, int]) -> None:
        self.num_buckets = num_buckets

    # ----------------------------------------------------------------- crosses
    @staticmethod
    def _crosses(col_selector: ColumnSelector) -> list[tuple[str, ...]]:
        groups = [g for g in col_selector.grouped_names if isinstance(g, tuple)]
        if not groups:
            return [tuple(col_selector.names)]
        loose = [g for g in col_selector.grouped_names if isinstance(g, str)]
        if loose:
            raise ValueError(
                f"HashedCross got single column(s) {loose} next to column groups; put each cross "
                "in its own list, e.g. [['a', 'b'], ['a', 'c']]"
            )
        return groups

    def _buckets(self, cross: tuple[str, ...]) -> int:
        name = CROSS_SEPARATOR.join(cross)
        if isinstance(self.num_buckets, Mapping) and name not in self.num_buckets and cross in self.num_buckets:
            return buckets_for(self.num_buckets, cross, "HashedCross")
        return buckets_for(self.num_buckets, name, "HashedCross")

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        return {CROSS_SEPARATOR.join(cross): list(cross) for cross in self._crosses(col_selector)}

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        for cross in self._crosses(col_selector):
            if len(cross) < 2:
                raise ValueError(f"HashedCross needs at least two columns per cross, got {list(cross)}")
            self._buckets(cross)
            for name in cross:
                require_hashable(input_schema[name], "HashedCross")
            lists = [name for name in cross if input_schema[name].is_list]
            if len(lists) > 1:
                raise ValueError(
                    f"HashedCross can cross at most one list column per cross; {lists} are all lists"
                )

    # --------------------------------------------------------------- transform
    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        out = {}
        for cross in self._crosses(col_selector):
            name = CROSS_SEPARATOR.join(cross)
            hashed, offsets = _cross_hashes(backend, df, cross)
            count = self._buckets(cross)
            buckets = (hashed % np.uint64(count)).astype(bucket_dtype(count))
            if offsets is None:
                out[name] = backend.series(buckets, index=df.index, name=name)
            else:
                out[name] = backend.list_from_values_offsets(buckets, offsets, index=df.index, name=name)
        return backend.frame_from_dict(out, index=df.index)

    def _full_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        cross = tuple(input_schema.column_names)  # the crossed columns, in order
        is_list = any(input_schema[name].is_list for name in cross)
        count = self._buckets(cross)
        return categorical_column(ColumnSchema(col_name, dtype="int64"), count, is_list, dtype=bucket_dtype(count))


def _cross_hashes(backend: Any, df: Any, cross: tuple[str, ...]) -> tuple[Any, Any]:
    """Combined hashes of a cross, per row or per list element (then with the offsets)."""
    from tabflow.backends.kernels import (
        hash_combine,  # numba: imported on first use, not with tabflow
    )

    xp = backend.xp
    offsets = None
    for name in cross:
        if backend.is_list_dtype(df[name].dtype):
            offsets = backend.list_offsets(df[name])
    combined = None
    for name in cross:
        column = df[name]
        if backend.is_list_dtype(column.dtype):
            hashed = backend.hash_values(backend.list_values_series(column))
        else:
            hashed = backend.hash_values(column)
            if offsets is not None:
                # Each row's scalar hash meets every element of that row's list.
                hashed = hashed[element_rows(xp, xp.asarray(offsets, dtype=xp.int64))]
        combined = hashed if combined is None else hash_combine(combined, hashed)
    return combined, offsets
