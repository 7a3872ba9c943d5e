"""ValueCount: record the shortest and longest list of each list column in the schema."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.operator import StatOperator
from tabflow.schema import ColumnSchema, Schema

__all__ = ["ValueCount"]


class ValueCount(StatOperator):
    """Fit the minimum and maximum list length of list columns; the data passes unchanged.

    After fitting, each output column's schema has ``value_count = {"min": m, "max": M}``
    (also under ``properties["value_count"]``), which the loader uses to tell fixed-length
    lists (``m == M``) from ragged ones. A null list counts as length 0. Before the first
    fit the columns carry no ``value_count``.

    Examples
    --------
    >>> import pandas as pd, pyarrow as pa
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> items = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([[1, 2], [3], [4, 5, 6]])))
    >>> wf = nvt.Workflow(["items"] >> ops.ValueCount()).fit(pd.DataFrame({"items": items}))
    >>> counts = wf.output_schema["items"].value_count
    >>> counts["min"], counts["max"]
    (1, 3)
    """

    row_wise = True

    def __init__(self) -> None:
        pass

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        for name in col_selector.names:
            if not input_schema[name].is_list:
                raise TypeError(f"ValueCount needs list columns but {name!r} has dtype {input_schema[name].dtype}")

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, tuple[int, int] | None]:
        backend = backend_for(df)
        partial = {}
        for name in col_selector.names:
            lengths = backend.list_lengths(df[name])
            # An empty partition has no lengths; None keeps it out of the min/max.
            partial[name] = (int(lengths.min()), int(lengths.max())) if len(lengths) else None
        return partial

    def combine_partials(self, partials: list[dict]) -> dict[str, tuple[int, int] | None]:
        combined = {}
        for name in partials[0]:
            known = [p[name] for p in partials if p[name] is not None]
            combined[name] = (min(k[0] for k in known), max(k[1] for k in known)) if known else None
        return combined

    def fit_finalize(self, partial: dict[str, tuple[int, int] | None]) -> None:
        self.stats_ = {
            name: {"min": bounds[0], "max": bounds[1]} if bounds else {"min": 0, "max": 0}
            for name, bounds in partial.items()
        }

    def fitted_partial(self) -> dict[str, tuple[int, int] | None]:
        """The fitted shortest and longest list of each column."""
        self.check_updatable()
        return {name: (int(bounds["min"]), int(bounds["max"])) for name, bounds in self.stats_.items()}

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        self.check_is_fitted()
        return df[col_selector.names]

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = super().compute_column_schema(col_name, input_schema)
        counts = getattr(self, "stats_", {}).get(col_name)
        if counts is None:
            return column
        return replace(column, value_count=dict(counts), properties={**column.properties, "value_count": dict(counts)})
