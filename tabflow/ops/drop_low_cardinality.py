"""DropLowCardinality: drop encoded categorical columns whose domain is too small to be useful."""

from __future__ import annotations

from typing import Any

from tabflow.backends.protocol import Frame
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import Operator
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["DropLowCardinality"]


class DropLowCardinality(Operator):
    """Drop the categorical columns whose schema ``domain`` has ``max < min_cardinality``.

    NVTabular 23.08's rule, read from the schema alone (no statistics are fitted): a column
    tagged categorical whose ``domain`` property is known, as ops such as
    :class:`~tabflow.ops.Categorify` (``max`` = cardinality - 1, padding, null and OOV
    indices included), :class:`~tabflow.ops.HashBucket` or :class:`~tabflow.ops.Bucketize`
    record it, is dropped when ``domain["max"]`` is below ``min_cardinality``. Every other
    column (not categorical, or with no domain) passes through. With the default 4, a column
    that Categorify encoded from a single value (or none) is dropped: its indices are
    padding, null, OOV and that value (``max`` 3).

    Parameters
    ----------
    min_cardinality : int, default 4
        NVTabular 23.08's default.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"one": ["a", "a", "a"], "two": ["a", "b", "a"], "x": [1.0, 1.0, 1.0]})
    >>> features = (["one", "two"] >> ops.Categorify()) + ["x"]
    >>> list(nvt.Workflow(features >> ops.DropLowCardinality()).fit_transform(df).columns)
    ['two', 'x']
    """

    row_wise = True

    def __init__(self, min_cardinality: int = 4) -> None:
        self.min_cardinality = min_cardinality

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        value = self.min_cardinality
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"DropLowCardinality min_cardinality must be an integer >= 0, got {value!r}")

    def _keeps(self, column: ColumnSchema) -> bool:
        if Tags.CATEGORICAL not in column.tags:
            return True
        domain: Any = column.properties.get("domain")
        high = domain.get("max") if hasattr(domain, "get") else None
        return high is None or high >= self.min_cardinality

    def compute_output_schema(self, input_schema: Schema, col_selector: ColumnSelector, prev_output_schema: Any = None) -> Schema:
        return Schema([input_schema[name] for name in col_selector.names if self._keeps(input_schema[name])])

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        # Which columns go is decided by the schema (compute_output_schema); the workflow
        # keeps the declared output columns of what transform returns.
        return df[col_selector.names]
