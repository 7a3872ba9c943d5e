"""DataStats: per-column summary statistics of a dataset, as a table."""

from __future__ import annotations

from typing import Any

import numpy as np

from tabflow.backends import backend_for, get_backend
from tabflow.graph.selector import ColumnSelector
from tabflow.ops.normalize import _merge_moments
from tabflow.ops.operator import StatOperator
from tabflow.schema import Schema, Tags

__all__ = ["DataStats"]

_COLUMNS = ["column", "dtype", "count", "nulls", "null_fraction", "min", "max", "mean", "std",
            "cardinality", "list_min", "list_max", "list_mean"]


class DataStats(StatOperator):
    """Collect statistics of every selected column; the data passes through unchanged.

    For every column: ``dtype``, ``count`` (non-null values), ``nulls`` and
    ``null_fraction``. Numeric columns: ``min``, ``max``, ``mean`` and sample ``std``.
    String columns, and columns tagged categorical: ``cardinality`` (distinct non-null
    values). List columns: ``list_min`` / ``list_max`` / ``list_mean`` lengths (a null list
    has length 0), and the statistics above over their elements.

    After fitting, :attr:`stats_` is a pandas DataFrame with one row per column (``output``
    gives it indexed by column name). Exact cardinalities keep the distinct values of each
    partition until they are merged, so use this op on categorical columns of moderate
    cardinality.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"x": [1.0, 2.0, None], "c": ["a", "b", "a"]})
    >>> stats = ops.DataStats()
    >>> out = nvt.Workflow(["x", "c"] >> stats).fit_transform(df)
    >>> row = stats.output.loc["x"]
    >>> int(row["count"]), int(row["nulls"]), float(row["mean"])
    (2, 1, 1.5)
    >>> int(stats.output.loc["c", "cardinality"])
    2
    """

    def __init__(self) -> None:
        pass

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        # Which columns get a cardinality depends on tags, known only from the schema.
        self._categorical = {
            name for name in col_selector.names
            if Tags.CATEGORICAL in input_schema[name].tags or input_schema[name].element_dtype == "string"
        }
        self._dtypes = {name: str(input_schema[name].dtype) for name in col_selector.names}

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, dict[str, Any]]:
        backend = backend_for(df)
        partial = {}
        for name in col_selector.names:
            column = df[name]
            entry: dict[str, Any] = {"rows": len(column)}
            if backend.is_list_dtype(column.dtype):
                lengths = backend.list_lengths(column)
                entry["lengths"] = (int(lengths.min()), int(lengths.max()), int(lengths.sum()), len(lengths)) if len(lengths) else None
                entry["list_nulls"] = int(backend.to_host(column.isna()).sum())
                column = backend.list_values_series(column)
            entry["count"] = int(len(column) - backend.to_host(column.isna()).sum())
            if backend.is_numeric_dtype(column.dtype):
                values = backend.to_host(backend.to_numpy(column, "float64", na_value=np.nan))
                values = values[~np.isnan(values)]
                mean = float(values.mean()) if values.size else 0.0
                entry["moments"] = (float(values.size), mean, float(((values - mean) ** 2).sum()) if values.size else 0.0)
                entry["range"] = (float(values.min()), float(values.max())) if values.size else None
            if name in getattr(self, "_categorical", ()):
                entry["distinct"] = set(backend.to_host(backend.value_counts(column).index).tolist())
            partial[name] = entry
        return partial

    def combine_partials(self, partials: list[dict]) -> dict[str, dict[str, Any]]:
        combined = {}
        for name in partials[0]:
            entries = [p[name] for p in partials]
            out: dict[str, Any] = {"rows": sum(e["rows"] for e in entries), "count": sum(e["count"] for e in entries)}
            if "lengths" in entries[0]:
                known = [e["lengths"] for e in entries if e["lengths"] is not None]
                out["lengths"] = (
                    min(k[0] for k in known), max(k[1] for k in known), sum(k[2] for k in known), sum(k[3] for k in known)
                ) if known else None
                out["list_nulls"] = sum(e["list_nulls"] for e in entries)
            if "moments" in entries[0]:
                out["moments"] = _merge_moments([e["moments"] for e in entries])
                ranges = [e["range"] for e in entries if e["range"] is not None]
                out["range"] = (min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else None
            if "distinct" in entries[0]:
                out["distinct"] = set().union(*(e["distinct"] for e in entries))
            combined[name] = out
        return combined

    def fit_finalize(self, partial: dict[str, dict[str, Any]]) -> None:
        rows = []
        for name, entry in partial.items():
            is_list = "lengths" in entry
            total = entry["rows"]
            nulls = entry["list_nulls"] if is_list else total - entry["count"]
            row: dict[str, Any] = {"column": name, "dtype": getattr(self, "_dtypes", {}).get(name), "count": total - nulls,
                                   "nulls": nulls, "null_fraction": nulls / total if total else np.nan}
            if "moments" in entry:
                n, mean, m2 = entry["moments"]
                row["mean"] = mean if n else np.nan
                row["std"] = float(np.sqrt(m2 / (n - 1))) if n > 1 else np.nan
                row["min"], row["max"] = entry["range"] if entry["range"] else (np.nan, np.nan)
            if "distinct" in entry:
                row["cardinality"] = len(entry["distinct"])
            if is_list and entry["lengths"] is not None:
                low, high, length_sum, length_rows = entry["lengths"]
                row.update(list_min=low, list_max=high, list_mean=length_sum / length_rows)
            rows.append(row)
        # The table is small and lives on the host (pandas) whatever engine fitted it.
        table = get_backend("pandas").frame_from_dict({c: [row.get(c) for row in rows] for c in _COLUMNS})
        text = get_backend("pandas").engine_dtype("string")
        self.stats_ = table.astype({
            "column": text, "dtype": text, "count": "int64", "nulls": "int64", "null_fraction": "float64", "min": "float64",
            "max": "float64", "mean": "float64", "std": "float64", "cardinality": "Int64",
            "list_min": "Int64", "list_max": "Int64", "list_mean": "float64",
        })

    @property
    def output(self) -> Any:
        """:attr:`stats_` indexed by column name."""
        self.check_is_fitted()
        return self.stats_.set_index("column")

    def transform(self, col_selector: ColumnSelector, df: Any) -> Any:
        self.check_is_fitted()
        return df[col_selector.names]
