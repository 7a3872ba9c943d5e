"""DropLowCardinality: drop columns that hold too few distinct values to be useful."""

from __future__ import annotations

from typing import Any

from tabflow.backends import backend_for
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import StatOperator
from tabflow.schema import Schema

__all__ = ["DropLowCardinality"]


class DropLowCardinality(StatOperator):
    """Drop every column with fewer than ``min_cardinality`` distinct non-null values.

    The default drops constant (and all-null) columns. List columns count distinct
    elements. Which columns are dropped is learnt by fitting, so the workflow's output
    schema is final only after ``fit``: before it, every selected column is listed.

    Fitting keeps at most ``min_cardinality`` distinct values per column and partition, so
    it stays cheap on high-cardinality columns.

    Parameters
    ----------
    min_cardinality : int, default 2

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"a": [1, 2, 3], "const": [7, 7, 7], "empty": [None, None, None]})
    >>> wf = nvt.Workflow(["a", "const", "empty"] >> ops.DropLowCardinality())
    >>> list(wf.fit_transform(df).columns)
    ['a']
    """

    def __init__(self, min_cardinality: int = 2) -> None:
        self.min_cardinality = min_cardinality

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if not isinstance(self.min_cardinality, int) or isinstance(self.min_cardinality, bool) or self.min_cardinality < 1:
            raise ValueError(f"DropLowCardinality min_cardinality must be an integer >= 1, got {self.min_cardinality!r}")

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, list[Any]]:
        backend = backend_for(df)
        partial = {}
        for name in col_selector.names:
            distinct = backend.to_host(backend.value_counts(df[name]).index[: self.min_cardinality])
            partial[name] = list(distinct)
        return partial

    def combine_partials(self, partials: list[dict]) -> dict[str, list[Any]]:
        combined = {}
        for name in partials[0]:
            # Only "at least min_cardinality distinct values" matters, so a few suffice.
            seen = dict.fromkeys(v for p in partials for v in p[name])
            combined[name] = list(seen)[: self.min_cardinality]
        return combined

    def fit_finalize(self, partial: dict[str, list[Any]]) -> None:
        self.dropped_columns_ = [name for name, values in partial.items() if len(values) < self.min_cardinality]

    def output_column_names(self, col_selector: ColumnSelector) -> ColumnSelector:
        dropped = set(getattr(self, "dropped_columns_", ()))
        return ColumnSelector([name for name in col_selector.names if name not in dropped])

    def transform(self, col_selector: ColumnSelector, df: Any) -> Any:
        self.check_is_fitted()
        return df[self.output_column_names(col_selector).names]
