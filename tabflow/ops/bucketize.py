"""Bucketize: replace continuous values by the index of the interval they fall in."""

from __future__ import annotations

from numbers import Real
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.columns import input_dtype
from tabflow.graph.kernels import Block, Kernel, elementwise_kernels, floats
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._numeric import require_numeric
from tabflow.ops._schema_hooks import SchemaFromColumns
from tabflow.ops.hash_bucket import categorical_column
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema
from tabflow.schema.dtypes import is_integer, is_masked, nullable_dtype

__all__ = ["Bucketize"]


class Bucketize(SchemaFromColumns, Operator):
    """Bucket index of each value: the number of boundaries that are ``<=`` the value.

    With boundaries ``b_0 < b_1 < ... < b_{k-1}``, a value ``x`` gets bucket ``i`` when
    ``b_{i-1} <= x < b_i``: values below ``b_0`` get 0, values ``>= b_{k-1}`` get ``k``. A
    value equal to a boundary goes to the bucket on the boundary's right (``np.digitize``
    with ``right=False``, and NVTabular's Bucketize).

    The output is int32, as in NVTabular 23.08, tagged categorical (which replaces a
    continuous tag) with ``cardinality`` ``k + 1``. Nulls stay null (NVTabular put them in
    the last bucket): an input that can hold nulls (floats, masked integers) gives the
    nullable ``Int32`` (plain int32 with nulls on the cuDF engine), an input that cannot
    (``int64``) gives ``int32``. Follow with ``ops.FillMissing`` to give nulls a bucket.

    Parameters
    ----------
    boundaries : list of numbers, dict of column -> list, or callable
        Increasing boundaries: for every column, per column, or ``boundaries(column_name)``
        returning the list (as NVTabular accepted).

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"age": [5, 18, 30, 65, None]})
    >>> wf = nvt.Workflow(["age"] >> ops.Bucketize([18, 65]))
    >>> out = wf.fit_transform(df)
    >>> out["age"].tolist(), str(out["age"].dtype)
    ([0, 1, 1, 2, <NA>], 'Int32')
    >>> nvt.Workflow(["n"] >> ops.Bucketize(lambda col: [0, 10])).fit_transform(
    ...     pd.DataFrame({"n": [-5, 0, 5, 10, 15]}))["n"].tolist()
    [0, 1, 1, 2, 2]
    """

    row_wise = True

    def __init__(self, boundaries: Sequence[float] | Mapping[str, Sequence[float]] | Callable[[str], Sequence[float]]) -> None:
        self.boundaries = boundaries

    def _boundaries(self, name: str) -> list[float]:
        if isinstance(self.boundaries, Mapping):
            if name not in self.boundaries:
                raise KeyError(f"Bucketize boundaries have no entry for column {name!r}")
            bounds = self.boundaries[name]
        elif callable(self.boundaries):
            bounds = self.boundaries(name)
        else:
            bounds = self.boundaries
        if isinstance(bounds, (str, bytes)) or not isinstance(bounds, Sequence) and not hasattr(bounds, "tolist"):
            raise TypeError(f"Bucketize boundaries for column {name!r} must be a list of numbers, got {bounds!r}")
        bounds = list(bounds.tolist() if hasattr(bounds, "tolist") else bounds)
        if not bounds or not all(isinstance(b, Real) and not isinstance(b, bool) and not np.isnan(b) for b in bounds):
            raise ValueError(f"Bucketize boundaries for column {name!r} must be a non-empty list of numbers, got {bounds!r}")
        if any(b >= a for a, b in zip(bounds[1:], bounds[:-1])):
            raise ValueError(f"Bucketize boundaries for column {name!r} must be strictly increasing, got {bounds!r}")
        return [float(b) for b in bounds]

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        require_numeric(input_schema, col_selector, "Bucketize")
        for name in col_selector.names:
            self._boundaries(name)

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        xp = backend.xp
        out = {}
        for name in col_selector.names:
            values = backend.column_values(df[name], "float64", na_value=np.nan)
            bounds = xp.asarray(self._boundaries(name), dtype=xp.float64)
            index = xp.searchsorted(bounds, values, side="right").astype(xp.int32)
            bucket = backend.astype(backend.series(index, index=df.index, name=name), _output_dtype(input_dtype(df, name)))
            null = xp.isnan(values)
            if bool(null.any()):
                # Only a column whose dtype can hold nulls has any (on cuDF, every column).
                bucket = bucket.mask(backend.series(null, index=df.index, name=name))
            out[name] = bucket
        return backend.frame_from_dict(out, index=df.index)

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        if callable(self.boundaries) and not isinstance(self.boundaries, Mapping):
            return None  # a user function: transform asks it for the boundaries every time

        def make(names: list[str], source: str, target: str) -> Any:
            bounds = [np.asarray(self._boundaries(name), dtype=np.float64) for name in names]

            def bucketize(block: Block) -> Block:
                values = floats(block)
                index = np.stack([np.searchsorted(b, row, side="right") for b, row in zip(bounds, values)]).astype(np.int32)
                return Block(index.reshape(values.shape), np.isnan(values) if is_masked(target) else None)

            return bucketize

        return elementwise_kernels(col_selector.names, input_schema, lambda name, source: _output_dtype(source), make)

    def _full_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = self._source_column_schema(col_name, input_schema)
        dtype = _output_dtype(str(input_schema[col_name].dtype))
        return categorical_column(column, len(self._boundaries(col_name)) + 1, False, dtype=dtype)


def _output_dtype(input_dtype: str) -> str:
    """int32, or its nullable name when the input can hold nulls (floats, masked integers)."""
    plain_integer = is_integer(input_dtype) and not is_masked(input_dtype)
    return "int32" if plain_integer else nullable_dtype("int32")
