"""NormalizeMinMax: scale continuous columns to [0, 1] with the fitted minimum and maximum."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from tabflow.backends import backend_for
from tabflow.backends.protocol import Frame
from tabflow.graph.kernels import Kernel
from tabflow.graph.selector import ColumnSelector
from tabflow.ops._numeric import (
    dtype_name,
    finite_values,
    float_kernels,
    float_output_dtype,
    map_arrays,
    map_values,
    require_numeric,
    warn_no_finite_values,
)
from tabflow.ops.operator import StatOperator
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["NormalizeMinMax"]


class NormalizeMinMax(StatOperator):
    """Scale each column to ``(x - min) / (max - min)``.

    The minimum and maximum are fitted per partition and merged, so the result does not
    depend on how the data is partitioned. Nulls stay null (NaN). Values outside the fitted
    range (seen only at transform time) fall outside [0, 1]; clip them if that matters.
    List columns are scaled element by element with the range of all their elements.

    A column that was constant when fitted (``min == max``) has no range: as in NVTabular
    23.08 every value ``x`` becomes ``x / (2 * x)``, that is 0.5, except 0 (and infinities),
    which become NaN.

    Infinities: the minimum and maximum are those of the finite values; ``inf`` and ``-inf``
    are left out as nulls are (an infinite maximum would map every finite value to 0 or
    NaN). An infinite input stays ``inf``/``-inf`` after scaling. A column with no finite
    value when fitted warns at fit time (``UserWarning`` naming it) and stays entirely null.

    Parameters
    ----------
    out_dtype : str or numpy dtype, optional
        Output dtype; float64 when None, as in NVTabular 23.08.

    Attributes
    ----------
    mins_, maxs_ : dict of str to float
        Fitted range (also readable as NVTabular's ``mins`` and ``maxs``).

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> wf = nvt.Workflow(["x"] >> ops.NormalizeMinMax())
    >>> out = wf.fit_transform(pd.DataFrame({"x": [2.0, 4.0, None, 6.0]}))
    >>> out["x"].tolist(), str(out["x"].dtype)
    ([0.0, 0.5, nan, 1.0], 'float64')
    >>> wf.fit_transform(pd.DataFrame({"x": [2.0, 4.0, float("-inf"), 6.0]}))["x"].tolist()
    [0.0, 0.5, -inf, 1.0]
    >>> wf.fit(pd.DataFrame({"x": [5.0, 5.0]})).transform(pd.DataFrame({"x": [5.0, 7.0, 0.0]}))["x"].tolist()
    [0.5, 0.5, nan]
    """

    row_wise = True

    def __init__(self, out_dtype: Any = None) -> None:
        self.out_dtype = out_dtype

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        require_numeric(input_schema, col_selector, "NormalizeMinMax", lists=True)

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, tuple[float, float]]:
        backend = backend_for(df)
        extremes = {}
        for name in col_selector.names:
            values = finite_values(backend, df[name])  # nulls, NaN and infinities are left out
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

    def fitted_partial(self) -> dict[str, tuple[float, float]]:
        """The fitted range of each column (NaN where no finite value was seen)."""
        self.check_updatable()
        return {name: (float(low), float(self.maxs_[name])) for name, low in self.mins_.items()}

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        self.check_is_fitted()
        # x / (2x) is 0/0 for x = 0 and inf/inf for infinities: NaN is the documented result.
        if isinstance(df, Mapping):  # NVTabular's dict of NumPy / CuPy arrays
            with np.errstate(invalid="ignore", divide="ignore"):
                return map_arrays(df, col_selector.names, self._scale, self.output_dtype)
        backend = backend_for(df)
        dtype = self.output_dtype
        out = {}
        with np.errstate(invalid="ignore", divide="ignore"):
            for name in col_selector.names:
                out[name] = map_values(backend, df[name], lambda values: backend.astype(self._scale(name, values), dtype))  # noqa: B023 - called before the loop moves on
        return backend.frame_from_dict(out, index=df.index)

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        self.check_is_fitted()

        def scale(names: list[str]) -> Any:
            return lambda values: np.stack([self._scale(name, row) for name, row in zip(names, values)])

        return float_kernels(col_selector.names, input_schema, self.output_dtype, scale)

    def _scale(self, name: str, values: Any) -> Any:
        low, high = self.mins_[name], self.maxs_[name]
        span = high - low
        if span > 0:
            return (values - low) / span
        if span == 0:
            # NVTabular 23.08's rule for a column fitted as constant.
            return values / (2 * values)
        return values * math.nan  # no finite value when fitted: all-null

    @property
    def output_dtype(self) -> str:
        return dtype_name(self.out_dtype) if self.out_dtype is not None else "float64"

    @property
    def output_tags(self) -> list[Any]:
        return [Tags.CONTINUOUS]

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = super().compute_column_schema(col_name, input_schema)
        return column.with_dtype(float_output_dtype(self.out_dtype, input_schema[col_name].dtype))
