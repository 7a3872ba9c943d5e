"""NormalizeMinMax: scale continuous columns to [0, 1] with the fitted minimum and maximum."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tabflow.backends import backend_for
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._compat import FittedAlias
from tabflow.ops.normalize import _require_numeric, warn_no_finite_values
from tabflow.ops.operator import StatOperator
from tabflow.schema import Schema, Tags

__all__ = ["NormalizeMinMax"]


class NormalizeMinMax(StatOperator):
    """Scale each column to ``(x - min) / (max - min)``.

    The minimum and maximum are fitted per partition and merged, so the result does not
    depend on how the data is partitioned. Nulls stay null (NaN). A constant column maps to
    0. Values outside the fitted range (seen only at transform time) fall outside [0, 1];
    clip them if that matters.

    Infinities: the minimum and maximum are those of the finite values; ``inf`` and ``-inf``
    are left out as nulls are (an infinite maximum would map every finite value to 0 or
    NaN). An infinite input stays ``inf``/``-inf`` after scaling. A column with no finite
    value when fitted warns at fit time (``UserWarning`` naming it) and stays entirely null.

    Parameters
    ----------
    out_dtype : str, default "float32"
        Output dtype.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> wf = nvt.Workflow(["x"] >> ops.NormalizeMinMax())
    >>> wf.fit_transform(pd.DataFrame({"x": [2.0, 4.0, None, 6.0]}))["x"].tolist()
    [0.0, 0.5, nan, 1.0]
    >>> wf.fit_transform(pd.DataFrame({"x": [2.0, 4.0, float("-inf"), 6.0]}))["x"].tolist()
    [0.0, 0.5, -inf, 1.0]
    """

    # NVTabular's names of the fitted statistics.
    mins = FittedAlias("mins_")
    maxs = FittedAlias("maxs_")

    def __init__(self, out_dtype: str | None = None) -> None:
        self.out_dtype = out_dtype

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        _require_numeric(input_schema, col_selector, "NormalizeMinMax")

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, tuple[float, float]]:
        backend = backend_for(df)
        extremes = {}
        for name in col_selector.names:
            values = backend.to_numpy(backend.to_float(df[name], "float64"), "float64")
            values = values[np.isfinite(values)]  # nulls (NaN) and infinities are left out
            # An empty (or all-null) partition contributes nothing: NaN is ignored when merging.
            extremes[name] = (float(values.min()), float(values.max())) if values.size else (math.nan, math.nan)
        return extremes

    def combine_partials(self, partials: list[dict]) -> dict[str, tuple[float, float]]:
        return {
            name: (
                float(np.fmin.reduce([p[name][0] for p in partials])),
                float(np.fmax.reduce([p[name][1] for p in partials])),
            )
            for name in partials[0]
        }

    def fit_finalize(self, partial: dict[str, tuple[float, float]]) -> None:
        empty = [name for name, m in partial.items() if math.isnan(m[0])]
        warn_no_finite_values("NormalizeMinMax", empty, "transform to all-null")
        self.mins_ = {name: m[0] for name, m in partial.items()}
        self.maxs_ = {name: m[1] for name, m in partial.items()}

    def transform(self, col_selector: ColumnSelector, df: Any) -> Any:
        self.check_is_fitted()
        backend = backend_for(df)
        out = {}
        for name in col_selector.names:
            values = backend.to_float(df[name], "float64")
            low, high = self.mins_[name], self.maxs_[name]
            span = high - low
            scaled = (values - low) / (span if span > 0 else 1.0)
            out[name] = scaled.astype(self.output_dtype)
        return backend.frame_from_dict(out, index=df.index)

    @property
    def output_dtype(self) -> str:
        return self.out_dtype or "float32"

    @property
    def output_tags(self) -> list[Any]:
        return [Tags.CONTINUOUS]
