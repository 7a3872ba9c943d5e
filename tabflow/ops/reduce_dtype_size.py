"""ReduceDtypeSize: store each numeric column in the smallest dtype that holds its values."""

from __future__ import annotations

from typing import Any

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.columns import input_dtype
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._numeric import require_numeric
from tabflow.ops.operator import StatOperator
from tabflow.schema import ColumnSchema, Schema

__all__ = ["ReduceDtypeSize"]

_INT_DTYPES = ("int8", "int16", "int32", "int64")


class ReduceDtypeSize(StatOperator):
    """Fit each column's min and max, then cast integers to the smallest signed integer
    dtype that holds that range and floats to ``float_dtype``.

    A column is never widened: an integer column keeps its dtype when no smaller signed
    dtype holds its range (so ``uint8`` stays ``uint8``). Nullable integers stay nullable (``Int64`` -> ``Int8`` ...). An all-null or empty integer
    column becomes 8-bit. Floats outside ``float_dtype``'s range would become infinite, so a
    float column is only narrowed when its fitted range fits. Output dtypes are known after
    fitting; before it the schema lists the input dtypes.

    Parameters
    ----------
    float_dtype : str, default "float32"

    Attributes
    ----------
    ranges_ : dict of str to [min, max]
        Fitted range of each column (NVTabular's ``ranges``, as tuples).
    dtypes_ : dict of str to str
        Output dtype of each column (NVTabular's ``dtypes``).

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"small": [1, 100], "big": [0, 70_000], "x": [0.5, 1.5]})
    >>> out = nvt.Workflow(["small", "big", "x"] >> ops.ReduceDtypeSize()).fit_transform(df)
    >>> [str(t) for t in out.dtypes]
    ['int8', 'int32', 'float32']
    """

    row_wise = True

    def __init__(self, float_dtype: str = "float32") -> None:
        self.float_dtype = float_dtype

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if np.dtype(self.float_dtype).kind != "f":
            raise TypeError(f"ReduceDtypeSize float_dtype must be a float dtype, got {self.float_dtype!r}")
        require_numeric(input_schema, col_selector, "ReduceDtypeSize")

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, tuple[str, float | None, float | None, str]]:
        backend = backend_for(df)
        partial = {}
        for name in col_selector.names:
            column = df[name]
            dtype = input_dtype(df, name)
            kind = "f" if "float" in dtype else "i"
            low, high = column.min(), column.max()
            missing = bool(backend.to_host(column.isna()).all()) if len(column) else True
            # Integers stay Python ints: float64 cannot tell 2**63 - 1 from 2**63.
            cast = float if kind == "f" else int
            partial[name] = (kind, None if missing else cast(low), None if missing else cast(high), dtype)
        return partial

    def combine_partials(self, partials: list[dict]) -> dict[str, tuple[str, float | None, float | None, str]]:
        combined = {}
        for name in partials[0]:
            known = [p[name] for p in partials if p[name][1] is not None]
            # A fitted partial (an update's) knows no input dtype: the new data's gives it.
            kind, dtype = partials[0][name][0], next(p[name][3] for p in partials if p[name][3] is not None)
            combined[name] = (kind, min(k[1] for k in known), max(k[2] for k in known), dtype) if known else (kind, None, None, dtype)
        return combined

    def fit_finalize(self, partial: dict[str, tuple[str, float | None, float | None, str]]) -> None:
        self.ranges_ = {name: [low, high] for name, (_, low, high, _) in partial.items()}
        self.dtypes_ = {name: self._target(dtype, name) for name, (_, _, _, dtype) in partial.items()}

    def fitted_partial(self) -> dict[str, tuple[str, float | None, float | None, str | None]]:
        """The fitted range of each column; its input dtype comes with the new data's partial,
        so an update widens the output dtype where the merged range needs it."""
        self.check_updatable()
        return {
            name: ("f" if "float" in self.dtypes_[name] else "i", low, high, None) for name, (low, high) in self.ranges_.items()
        }

    def _target(self, dtype: str, name: str) -> str:
        low, high = getattr(self, "ranges_", {}).get(name, (None, None))
        if "float" in dtype:
            info = np.finfo(self.float_dtype)
            if low is not None and (low < float(info.min) or high > float(info.max)):
                return dtype
            return str(np.dtype(self.float_dtype))
        low, high = (0, 0) if low is None else (low, high)
        fitting = [c for c in _INT_DTYPES if np.iinfo(c).min <= low and high <= np.iinfo(c).max]
        # Never widen (a uint8 column does not become int16) and keep values beyond int64.
        if not fitting or np.dtype(fitting[0]).itemsize >= np.dtype(dtype.lower()).itemsize:
            return dtype
        return fitting[0].capitalize() if dtype[0].isupper() else fitting[0]

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        self.check_is_fitted()
        backend = backend_for(df)
        out = {}
        for name in col_selector.names:
            column = df[name]
            out[name] = backend.astype(column, self._target(input_dtype(df, name), name))
        return backend.frame_from_dict(out, index=df.index)

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = super().compute_column_schema(col_name, input_schema)
        if not self.fitted:
            return column
        return column.with_dtype(self._target(str(input_schema[col_name].dtype), col_name))
