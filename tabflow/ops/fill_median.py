"""FillMedian: replace nulls by each column's exact median, fitted without sorting the column."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tabflow.backends import backend_for, get_backend
from tabflow.backends.protocol import Frame
from tabflow.graph.kernels import Kernel
from tabflow.graph.operator import keeping_update_state
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._numeric import require_numeric, warn_no_finite_values
from tabflow.ops.fill_missing import FillsNulls, fill_columns, fill_kernels
from tabflow.ops.operator import StatOperator
from tabflow.schema import Schema

__all__ = ["FillMedian"]


class FillMedian(FillsNulls, StatOperator):
    """Replace nulls (and NaN) with the column's median, computed exactly.

    The median is fitted as a map-reduce over value counts: each partition counts its
    distinct non-null values, the counts are summed across partitions, and the median is
    read off the cumulative counts of the sorted distinct values (the mean of the two middle
    values for an even count, as :meth:`pandas.Series.median`). The result is exact and does
    not depend on the partitioning.

    Memory: a partial result holds one (value, count) pair per distinct value, 16 bytes
    each, and the final merge holds the union over the dataset. That is small for counts,
    ratings, ages and other low-cardinality columns; for a continuous column with mostly
    distinct values it approaches 16 bytes per row on the process that merges, which is
    still far less than the whole frame but more than an approximate sketch would use.

    Updates (:meth:`tabflow.Workflow.partial_fit`) stay exact: a workflow started with
    ``partial_fit`` keeps each column's value counts (``value_counts_``, 16 bytes per distinct
    value, saved with the workflow), and an update merges the new data's counts with them.
    For a column with mostly distinct values they grow with the rows seen; a plain
    :meth:`~tabflow.Workflow.fit` keeps none, and such a workflow cannot be updated.

    Float columns keep their dtype; integer columns become ``float64`` because the median of
    an even number of integers can be fractional.

    Infinities: the median is that of the finite values; ``inf`` and ``-inf`` are left out of
    it as nulls are, so a null is never filled with an infinity (nor with the NaN that the
    middle of ``-inf`` and ``inf`` would give). Infinite values themselves are not nulls and
    stay as they are. A column with no finite value when fitted has a NaN median: fitting
    warns (``UserWarning`` naming it) and its nulls stay null.

    Parameters
    ----------
    add_binary_cols : bool, default False
        Also output ``<col>_filled`` (bool, True where the value was null), as FillMissing.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> wf = nvt.Workflow(["x"] >> ops.FillMedian())
    >>> wf.fit_transform(pd.DataFrame({"x": [1.0, None, 2.0, 10.0]}))["x"].tolist()
    [1.0, 2.0, 2.0, 10.0]
    >>> wf.fit_transform(pd.DataFrame({"x": [1.0, None, 2.0, float("inf")]}))["x"].tolist()
    [1.0, 1.5, 2.0, inf]
    """

    row_wise = True

    def __init__(self, add_binary_cols: bool = False) -> None:
        self.add_binary_cols = add_binary_cols

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        require_numeric(input_schema, col_selector, "FillMedian")

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        backend = backend_for(df)
        partial = {}
        for name in col_selector.names:
            counts = backend.to_host(backend.value_counts(df[name]))
            values = counts.index.to_numpy(dtype="float64")
            keep = np.isfinite(values)  # NaN in a float column is a null; infinities are left out too
            partial[name] = (values[keep], counts.to_numpy(dtype="int64")[keep])
        return partial

    def combine_partials(self, partials: list[dict]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {name: _merge_counts([p[name] for p in partials]) for name in partials[0]}

    def fit_finalize(self, partial: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        merged = {name: _merge_counts([vc]) for name, vc in partial.items()}
        medians = {name: _median_from_counts(*vc) for name, vc in merged.items()}
        warn_no_finite_values("FillMedian", [n for n, m in medians.items() if math.isnan(m)], "keep their nulls")
        if keeping_update_state():
            # A median merges only through the counts it is read from: kept for the next update.
            host = get_backend("pandas")
            self.value_counts_ = {
                name: host.frame_from_dict({"value": values, "count": counts}) for name, (values, counts) in merged.items()
            }
        self.medians_ = medians

    update_needs = {
        "value_counts_": (
            "a median merges only through the counts of every distinct value, which Workflow.fit does not keep (16 bytes "
            "per distinct value); fit the workflow with Workflow.partial_fit, which keeps them, to update it later"
        ),
    }

    def fitted_partial(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The fitted distinct values of each column and their counts."""
        self.check_updatable()
        return {
            name: (table["value"].to_numpy(dtype="float64"), table["count"].to_numpy(dtype="int64"))
            for name, table in self.value_counts_.items()
        }

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        self.check_is_fitted()
        return fill_columns(df, col_selector.names, self.medians_, self.add_binary_cols, _median_dtype)

    def filled_dtype(self, dtype: str) -> str:
        return _median_dtype(dtype)

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        self.check_is_fitted()
        return fill_kernels(col_selector.names, input_schema, self.medians_, self.add_binary_cols, _median_dtype)


def _median_dtype(dtype: str, fill_value: Any = None) -> str:
    return dtype if dtype.startswith("float") else "float64"


def _merge_counts(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sum the counts of equal values; returns sorted distinct values and their counts."""
    values = np.concatenate([p[0] for p in parts]) if parts else np.empty(0)
    counts = np.concatenate([p[1] for p in parts]) if parts else np.empty(0, dtype="int64")
    distinct, position = np.unique(values, return_inverse=True)
    return distinct, np.bincount(position.ravel(), weights=counts, minlength=distinct.size).astype("int64")


def _median_from_counts(values: np.ndarray, counts: np.ndarray) -> float:
    total = int(counts.sum())
    if total == 0:
        return math.nan
    cumulative = np.cumsum(counts)
    # 0-based ranks of the middle element(s): equal for an odd total.
    low = values[np.searchsorted(cumulative, (total - 1) // 2, side="right")]
    high = values[np.searchsorted(cumulative, total // 2, side="right")]
    return float((low + high) / 2)
