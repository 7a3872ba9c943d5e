"""DataStats: per-column summary statistics of a dataset, in NVTabular 23.08's ``output`` format."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tabflow.backends import backend_for, get_backend
from tabflow.backends.protocol import Frame
from tabflow.graph.operator import keeping_update_state
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._numeric import merge_moments
from tabflow.ops.operator import StatOperator
from tabflow.schema import Schema
from tabflow.schema.dtypes import element_dtype, is_float

__all__ = ["DataStats"]

_COLUMNS = ["column", "dtype", "count", "nulls", "null_fraction", "min", "max", "mean", "std",
            "cardinality", "list_min", "list_max", "list_mean"]


class DataStats(StatOperator):
    """Collect statistics of every selected column; the data passes through unchanged.

    :attr:`output` is NVTabular 23.08's dictionary, ``{column: {"dtype", "min", "max",
    "per_nan", "mean", "std"}}`` plus ``"cardinality"`` (distinct non-null values) for every
    column that is not of a float type:

    - ``per_nan``: the percentage of null rows (a null list is null, an empty one is not);
    - numbers: ``min``, ``max``, ``mean`` and sample ``std`` (ddof=1) of the non-null values
      (``min`` and ``max`` are ints for columns that are not floats);
    - strings: the same statistics of their lengths, as NVTabular measured strings;
    - lists: the statistics of their elements, and in addition ``list_min``, ``list_max``
      and ``list_mean``, the list lengths (a null list has length 0);
    - ``dtype``: the column's dtype name in the schema (``"int64"``, ``"Int64"``, ``"string"``,
      ``"list<int64>"``).

    Statistics a column does not have (no non-null value) are NaN. The fitted table
    :attr:`stats_` (one row per column, saved with the workflow) also holds the non-null
    ``count``, ``nulls`` and ``null_fraction``. Exact cardinalities keep the distinct values of
    each partition until they are merged, so mind columns of very high cardinality.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"x": [1.0, 2.0, None, 3.0], "c": ["a", "bb", "a", None]})
    >>> stats = ops.DataStats()
    >>> out = nvt.Workflow(["x", "c"] >> stats).fit_transform(df)
    >>> stats.output["x"]
    {'dtype': 'float64', 'min': 1.0, 'max': 3.0, 'per_nan': 25.0, 'mean': 2.0, 'std': 1.0}
    >>> stats.output["c"]["cardinality"], stats.output["c"]["max"]
    (2, 2)
    """

    row_wise = True

    def __init__(self) -> None:
        pass

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        # The schema names the dtypes reported; reading them here keeps them engine-neutral.
        self._dtypes = {name: str(input_schema[name].dtype) for name in col_selector.names}

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, dict[str, Any]]:
        backend = backend_for(df)
        partial = {}
        for name in col_selector.names:
            column = df[name]
            entry: dict[str, Any] = {"rows": len(column)}
            # Reductions run where the data is (engine arrays); only numbers and the distinct
            # values leave the device.
            if backend.is_list_dtype(column.dtype):
                lengths = backend.list_lengths(column)
                entry["lengths"] = (int(lengths.min()), int(lengths.max()), int(lengths.sum()), len(lengths)) if len(lengths) else None
                entry["list_nulls"] = int(backend.null_mask(column).sum())
                column = backend.list_values_series(column)
            entry["count"] = int(len(column) - int(backend.null_mask(column).sum()))
            canonical = backend.canonical_dtype(column.dtype)
            if not is_float(canonical):
                # Every non-float column gets a cardinality, as in NVTabular.
                entry["distinct"] = list(backend.to_host(backend.value_counts(column).index).tolist())
            measured = column.str.len() if backend.is_string_dtype(column.dtype) else column
            values = backend.column_values(measured, "float64", na_value=np.nan)
            values = values[~backend.xp.isnan(values)]
            mean = float(values.mean()) if values.size else 0.0
            entry["moments"] = (float(values.size), mean, float(((values - mean) ** 2).sum()) if values.size else 0.0)
            entry["range"] = (float(values.min()), float(values.max())) if values.size else None
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
            out["moments"] = merge_moments([e["moments"] for e in entries])
            ranges = [e["range"] for e in entries if e["range"] is not None]
            out["range"] = (min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else None
            if "distinct" in entries[0]:
                out["distinct"] = list(dict.fromkeys(v for e in entries for v in e["distinct"]))
            combined[name] = out
        return combined

    def fit_finalize(self, partial: dict[str, dict[str, Any]]) -> None:
        if keeping_update_state():
            # The merged moments, ranges and distinct values, which the summary table rounds
            # or counts: what the next update merges with (distinct values as a series, saved
            # as parquet).
            host = get_backend("pandas")
            self.totals_ = {
                name: {**entry, "distinct": host.series(entry["distinct"])} if "distinct" in entry else dict(entry)
                for name, entry in partial.items()
            }
        rows = []
        for name, entry in partial.items():
            is_list = "lengths" in entry
            total = entry["rows"]
            nulls = entry["list_nulls"] if is_list else total - entry["count"]
            row: dict[str, Any] = {"column": name, "dtype": getattr(self, "_dtypes", {}).get(name), "count": total - nulls,
                                   "nulls": nulls, "null_fraction": nulls / total if total else np.nan}
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

    update_needs = {
        "totals_": (
            "its cardinalities merge only through the distinct values, which Workflow.fit does not keep; fit the "
            "workflow with Workflow.partial_fit, which keeps them, to update it later"
        ),
    }

    def fitted_partial(self) -> dict[str, dict[str, Any]]:
        """The merged statistics of every column, as the fit's last merge left them."""
        self.check_updatable()
        return {
            name: {**entry, "distinct": entry["distinct"].tolist()} if "distinct" in entry else dict(entry)
            for name, entry in self.totals_.items()
        }

    @property
    def output(self) -> dict[str, dict[str, Any]]:
        """NVTabular 23.08's ``{column: {dtype, min, max, per_nan, mean, std[, cardinality]}}``
        (plus ``list_min``, ``list_max``, ``list_mean`` for list columns), plain Python values."""
        self.check_is_fitted()
        output = {}
        table = self.stats_.astype(object).where(self.stats_.notna(), None)  # missing values as None
        for record in table.to_dict("records"):
            stats: dict[str, Any] = {
                "dtype": str(record["dtype"]),
                "min": _number(record["min"]),
                "max": _number(record["max"]),
                "per_nan": 100.0 * _number(record["null_fraction"]),
                "mean": _number(record["mean"]),
                "std": _number(record["std"]),
            }
            if not is_float(element_dtype(stats["dtype"])):
                # Integers, booleans and string lengths: whole numbers, given as ints as NVTabular did.
                stats.update({k: int(stats[k]) for k in ("min", "max") if not math.isnan(stats[k])})
                stats["cardinality"] = int(record["cardinality"]) if _present(record["cardinality"]) else 0
            if _present(record["list_min"]):
                stats.update(list_min=int(record["list_min"]), list_max=int(record["list_max"]),
                             list_mean=float(record["list_mean"]))
            output[str(record["column"])] = stats
        return output

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        self.check_is_fitted()
        return df[col_selector.names]


def _present(value: Any) -> bool:
    return value is not None


def _number(value: Any) -> float:
    return float(value) if value is not None else math.nan
