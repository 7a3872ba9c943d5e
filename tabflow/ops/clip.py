"""Clip: bound numeric columns to [min_value, max_value]."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.columns import input_dtype
from tabflow.graph.kernels import Block, Kernel, elementwise_kernels, floats
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._numeric import require_numeric
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema
from tabflow.schema.dtypes import unmasked_dtype

__all__ = ["Clip"]


class Clip(Operator):
    """Clip values below ``min_value`` / above ``max_value``; nulls stay null.

    The dtype is kept, with one exception: an integer column clipped at a bound with a
    fractional part (``min_value=0.5``) becomes ``float64``, because the bound itself is not
    representable and silently rounding it would let values escape the interval. Integral
    float bounds (``0.0``) keep integer columns integer. The output dtype depends only on the
    input dtype and the bounds, never on the data.

    Parameters
    ----------
    min_value, max_value : number, optional
        At least one is required; ``min_value <= max_value`` when both are given.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> wf = nvt.Workflow(["x"] >> ops.Clip(min_value=0, max_value=10))
    >>> wf.fit_transform(pd.DataFrame({"x": [-3, 5, 42]}))["x"].tolist()
    [0, 5, 10]
    >>> wf = nvt.Workflow(["x"] >> ops.Clip(min_value=0.5))
    >>> out = wf.fit_transform(pd.DataFrame({"x": [0, 2]}))
    >>> str(out["x"].dtype), out["x"].tolist()
    ('float64', [0.5, 2.0])
    """

    row_wise = True

    def __init__(self, min_value: float | None = None, max_value: float | None = None) -> None:
        self.min_value = min_value
        self.max_value = max_value

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if self.min_value is None and self.max_value is None:
            raise ValueError("Clip needs min_value, max_value or both")
        for label, bound in (("min_value", self.min_value), ("max_value", self.max_value)):
            if bound is not None and (not isinstance(bound, Number) or isinstance(bound, bool) or math.isnan(bound)):
                raise TypeError(f"Clip {label} must be a number, got {bound!r}")
        if self.min_value is not None and self.max_value is not None and self.min_value > self.max_value:
            raise ValueError(f"Clip min_value ({self.min_value}) is greater than max_value ({self.max_value})")
        require_numeric(input_schema, col_selector, "Clip")

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        out = {}
        for name in col_selector.names:
            column = df[name]
            source = input_dtype(df, name)
            target = self._clipped_dtype(source)
            if target != source:
                column = backend.to_float(column, target)
            lower, upper = _bounds_for(target, self.min_value, self.max_value)
            out[name] = column.clip(lower=lower, upper=upper)
        return backend.frame_from_dict(out, index=df.index)

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        def make(names: list[str], source: str, target: str) -> Any:
            lower, upper = _bounds_for(target, self.min_value, self.max_value)
            value_type = np.dtype(unmasked_dtype(target)).type
            if any(bound is not None and value_type(bound) != bound for bound in (lower, upper)):
                return None  # pandas would widen the column to hold the bound

            def clip(block: Block) -> Block:
                # pandas' clip keeps a value unless it compares beyond a bound, so NaN and -0.0
                # stay as they are (np.clip would not promise that).
                values, nulls = block.values, block.nulls
                if target != source:
                    values, nulls = floats(block), None
                if lower is not None:
                    values = np.where(values < lower, lower, values)
                if upper is not None:
                    values = np.where(values > upper, upper, values)
                return Block(values, nulls)

            return clip

        return elementwise_kernels(
            col_selector.names, input_schema, lambda name, source: self._clipped_dtype(source), make
        )

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = super().compute_column_schema(col_name, input_schema)
        return column.with_dtype(self._clipped_dtype(column.dtype))

    def _clipped_dtype(self, dtype: str) -> str:
        if _is_integer(dtype) and any(_fractional(b) for b in (self.min_value, self.max_value)):
            return "float64"
        return dtype


def _is_integer(dtype: str) -> bool:
    return dtype.lower().lstrip("u").startswith("int")


def _fractional(bound: float | None) -> bool:
    return bound is not None and not float(bound).is_integer()


def _bounds_for(dtype: str, lower: float | None, upper: float | None) -> tuple[Any, Any]:
    """Bounds as values of the column's type, so that clipping never widens the dtype.

    For integer columns the bounds are limited to the dtype's range (a bound outside it
    clips nothing) and made integers; float bounds on float columns are used as given.
    """
    if not _is_integer(dtype):
        return lower, upper
    info = np.iinfo(dtype.lower())
    lower = None if lower is None else int(min(max(math.ceil(lower), info.min), info.max))
    upper = None if upper is None else int(max(min(math.floor(upper), info.max), info.min))
    return lower, upper
