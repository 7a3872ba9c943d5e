"""LogOp: ``log(1 + x)`` of continuous columns, as float32."""

from __future__ import annotations

from typing import Any

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.kernels import Block, Kernel, elementwise_kernels, floats
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._numeric import map_values, require_numeric
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema, Tags
from tabflow.schema.dtypes import list_dtype

__all__ = ["LogOp"]


class LogOp(Operator):
    """Compute ``log(1 + x)`` in float32, compressing heavy-tailed counts and prices.

    Nulls stay null (NaN). List columns are transformed element by element and stay lists
    (``list<float32>``), as in NVTabular. The function is only defined for ``x >= -1``: ``x = -1`` gives
    ``-inf`` and ``x < -1`` gives NaN, silently, exactly as numpy does. Clip first when a
    column can hold such values, e.g. ``cols >> ops.Clip(min_value=0) >> ops.LogOp()``.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> wf = nvt.Workflow(["x"] >> ops.LogOp())
    >>> out = wf.fit_transform(pd.DataFrame({"x": [0, 9, None]}))
    >>> out["x"].round(4).tolist(), str(out["x"].dtype)
    ([0.0, 2.3026, nan], 'float32')
    """

    row_wise = True

    def __init__(self) -> None:
        pass

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        require_numeric(input_schema, col_selector, "LogOp", lists=True)

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        backend = backend_for(df)
        out = {}
        # Values below -1 are documented to give NaN; numpy's warning would only be noise.
        with np.errstate(invalid="ignore", divide="ignore"):
            for name in col_selector.names:
                # np.log on the series (not log1p) is a ufunc both engines dispatch natively;
                # float32 first, as NVTabular computed it.
                out[name] = map_values(backend, df[name], lambda values: np.log(backend.to_float(values, "float32") + 1))
        return backend.frame_from_dict(out, index=df.index)

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        def log(block: Block) -> Block:
            # float64 first (nulls as NaN), then float32 plus one: the steps transform takes.
            return Block(np.log(floats(block).astype(np.float32) + 1))

        return elementwise_kernels(
            col_selector.names, input_schema, lambda name, source: "float32", lambda names, source, target: log
        )

    @property
    def output_dtype(self) -> str:
        return "float32"

    @property
    def output_tags(self) -> list[Any]:
        return [Tags.CONTINUOUS]

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = super().compute_column_schema(col_name, input_schema)
        return column.with_dtype(list_dtype("float32") if input_schema[col_name].is_list else "float32")
