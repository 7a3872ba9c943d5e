"""Normalize: standardise continuous columns to zero mean and unit variance."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from tabflow.backends import backend_for
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._compat import FittedAlias
from tabflow.ops.operator import StatOperator
from tabflow.schema import Schema, Tags

__all__ = ["Normalize"]


class Normalize(StatOperator):
    """Standardise each column: ``(x - mean) / std`` with the sample standard deviation.

    Means and variances are fitted as per-partition (count, mean, M2) moments merged with
    Chan's parallel formula, so fitting on many partitions gives the same result as one.
    Nulls stay null (NaN). A constant column (std 0) is only centred.

    Infinities: the mean and standard deviation are those of the finite values; ``inf`` and
    ``-inf`` are left out of them as nulls are (one infinity would otherwise make every
    output ``-inf`` or NaN). An infinite input stays ``inf``/``-inf`` after normalisation,
    and finite inputs are normalised as usual. A column with no finite value when fitted has
    no statistics: fitting warns (``UserWarning`` naming it) and it transforms to all-null.

    Parameters
    ----------
    out_dtype : str, default "float32"
        Output dtype.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> wf = nvt.Workflow(["x"] >> ops.Normalize())
    >>> wf.fit_transform(pd.DataFrame({"x": [1.0, 2.0, 3.0, None]}))["x"].tolist()
    [-1.0, 0.0, 1.0, nan]
    >>> wf.fit_transform(pd.DataFrame({"x": [1.0, 2.0, 3.0, float("inf")]}))["x"].tolist()
    [-1.0, 0.0, 1.0, inf]
    """

    # NVTabular's names of the fitted statistics.
    means = FittedAlias("means_")
    stds = FittedAlias("stds_")

    def __init__(self, out_dtype: str | None = None) -> None:
        self.out_dtype = out_dtype

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        _require_numeric(input_schema, col_selector, "Normalize")

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, tuple[float, float, float]]:
        backend = backend_for(df)
        moments = {}
        for name in col_selector.names:
            values = backend.to_numpy(backend.to_float(df[name], "float64"), "float64")
            values = values[np.isfinite(values)]  # nulls (NaN) and infinities are not counted
            count = float(values.size)
            mean = float(values.mean()) if count else 0.0
            moments[name] = (count, mean, float(((values - mean) ** 2).sum()) if count else 0.0)
        return moments

    def combine_partials(self, partials: list[dict]) -> dict[str, tuple[float, float, float]]:
        return {name: _merge_moments([p[name] for p in partials]) for name in partials[0]}

    def fit_finalize(self, partial: dict[str, tuple[float, float, float]]) -> None:
        # A column without a single finite value at fit time has no statistics: it transforms
        # to null, which must not go unnoticed.
        warn_no_finite_values("Normalize", [name for name, m in partial.items() if not m[0]], "transform to all-null")
        self.means_ = {name: m[1] if m[0] else float("nan") for name, m in partial.items()}
        self.stds_ = {name: float(np.sqrt(m[2] / (m[0] - 1))) if m[0] > 1 else 0.0 for name, m in partial.items()}

    def transform(self, col_selector: ColumnSelector, df: Any) -> Any:
        self.check_is_fitted()
        backend = backend_for(df)
        dtype = self.out_dtype or "float32"
        out = {}
        for name in col_selector.names:
            values = backend.to_float(df[name], "float64")
            std = self.stds_[name]
            scaled = (values - self.means_[name]) / (std if std > 0 else 1.0)
            out[name] = scaled.astype(dtype)
        return backend.frame_from_dict(out, index=df.index)

    @property
    def output_dtype(self) -> str:
        return self.out_dtype or "float32"

    @property
    def output_tags(self) -> list[Any]:
        return [Tags.CONTINUOUS]


def _merge_moments(moments: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    count, mean, m2 = 0.0, 0.0, 0.0
    for n_b, mean_b, m2_b in moments:
        if n_b == 0:
            continue
        total = count + n_b
        delta = mean_b - mean
        mean += delta * n_b / total
        m2 += m2_b + delta * delta * count * n_b / total
        count = total
    return count, mean, m2


def warn_no_finite_values(op_name: str, names: list[str], consequence: str) -> None:
    """UserWarning naming the columns that held no finite value when ``op_name`` was fitted."""
    if names:
        warnings.warn(
            f"{op_name}: column(s) {names} held no finite value when fitted (only nulls or infinities, or no "
            f"rows), so they {consequence}; fit on data with values, or leave these columns out",
            UserWarning,
            stacklevel=3,
        )


def _require_numeric(input_schema: Schema, col_selector: ColumnSelector, op_name: str) -> None:
    from tabflow.schema.dtypes import is_numeric

    for name in col_selector.names:
        dtype = input_schema[name].dtype
        if not is_numeric(dtype):
            raise TypeError(
                f"{op_name} needs numeric columns but {name!r} has dtype {dtype}; "
                "encode it first (e.g. ops.Categorify for strings, ops.HexToInt for hex ids)"
            )
