"""Bucketize: replace continuous values by the index of the interval they fall in."""

from __future__ import annotations

from numbers import Real
from typing import Any, Mapping, Sequence

import numpy as np

from tabflow.backends import backend_for
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.hash_bucket import categorical_column
from tabflow.ops.normalize import _require_numeric
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema

__all__ = ["Bucketize"]


class Bucketize(Operator):
    """Bucket index of each value: the number of boundaries that are ``<=`` the value.

    With boundaries ``b_0 < b_1 < ... < b_{k-1}``, a value ``x`` gets bucket ``i`` when
    ``b_{i-1} <= x < b_i``: values below ``b_0`` get 0, values ``>= b_{k-1}`` get ``k``. A
    value equal to a boundary goes to the bucket on the boundary's right (``np.digitize``
    with ``right=False``, and NVTabular's Bucketize). Nulls stay null, so the output dtype is
    the nullable ``Int64``; follow with ``ops.FillMissing`` to give nulls a bucket.

    The output is tagged categorical with ``cardinality`` ``k + 1``.

    Parameters
    ----------
    boundaries : list of numbers, or dict of column -> list
        Increasing boundaries, for every column or per column.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"age": [5, 18, 30, 65, None]})
    >>> wf = nvt.Workflow(["age"] >> ops.Bucketize([18, 65]))
    >>> wf.fit_transform(df)["age"].tolist()
    [0, 1, 1, 2, <NA>]
    """

    def __init__(self, boundaries: Sequence[float] | Mapping[str, Sequence[float]]) -> None:
        self.boundaries = boundaries

    def _boundaries(self, name: str) -> list[float]:
        if isinstance(self.boundaries, Mapping):
            if name not in self.boundaries:
                raise KeyError(f"Bucketize boundaries have no entry for column {name!r}")
            bounds = self.boundaries[name]
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
        _require_numeric(input_schema, col_selector, "Bucketize")
        for name in col_selector.names:
            self._boundaries(name)

    def transform(self, col_selector: ColumnSelector, df: Any) -> Any:
        backend = backend_for(df)
        xp = backend.xp
        out = {}
        for name in col_selector.names:
            values = backend.to_float(df[name], "float64").values
            bounds = xp.asarray(self._boundaries(name), dtype=xp.float64)
            index = xp.searchsorted(bounds, values, side="right").astype(xp.int64)
            bucket = backend.astype(backend.series(index, index=df.index, name=name), "Int64")
            null = backend.series(xp.isnan(values), index=df.index, name=name)
            out[name] = bucket.mask(null)
        return backend.frame_from_dict(out, index=df.index)

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = super().compute_column_schema(col_name, input_schema)
        return categorical_column(column, len(self._boundaries(col_name)) + 1, False, dtype="Int64", hashed=False)
