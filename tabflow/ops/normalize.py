"""Normalize: standardise continuous columns to zero mean and unit variance.

NVTabular 23.08 defined ``NormalizeMinMax`` in this module too; it is importable from here.
"""

from __future__ import annotations

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
    merge_moments,
    require_numeric,
    warn_no_finite_values,
)
from tabflow.ops.normalize_minmax import NormalizeMinMax
from tabflow.ops.operator import StatOperator
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["Normalize", "NormalizeMinMax"]


class Normalize(StatOperator):
    """Standardise each column: ``(x - mean) / std`` with the sample standard deviation.

    Means and variances are fitted as per-partition (count, mean, M2) moments merged with
    Chan's parallel formula, so fitting on many partitions gives the same result as one.
    Nulls stay null (NaN). A constant column (std 0) is only centred. List columns are
    normalised element by element with the statistics of all their elements, as in
    NVTabular, and stay lists.

    Infinities: the mean and standard deviation are those of the finite values; ``inf`` and
    ``-inf`` are left out of them as nulls are (one infinity would otherwise make every
    output ``-inf`` or NaN). An infinite input stays ``inf``/``-inf`` after normalisation,
    and finite inputs are normalised as usual. A column with no finite value when fitted has
    no statistics: fitting warns (``UserWarning`` naming it) and it transforms to all-null.

    Parameters
    ----------
    out_dtype : str or numpy dtype, optional
        Output dtype; float64 when None, as in NVTabular 23.08 (the loaders turn it into
        float32 tensors).

    Attributes
    ----------
    means_, stds_ : dict of str to float
        Fitted statistics (also readable as NVTabular's ``means`` and ``stds``).
    counts_ : dict of str to int
        The finite values each column's statistics come from, which an update
        (:meth:`tabflow.Workflow.partial_fit`) merges with the new data's by Chan's formula.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> wf = nvt.Workflow(["x"] >> ops.Normalize())
    >>> out = wf.fit_transform(pd.DataFrame({"x": [1.0, 2.0, 3.0, None]}))
    >>> out["x"].tolist(), str(out["x"].dtype)
    ([-1.0, 0.0, 1.0, nan], 'float64')
    >>> wf.fit_transform(pd.DataFrame({"x": [1.0, 2.0, 3.0, float("inf")]}))["x"].tolist()
    [-1.0, 0.0, 1.0, inf]
    >>> wf.output_node.op.means, wf.output_node.op.stds
    ({'x': 2.0}, {'x': 1.0})
    """

    row_wise = True

    def __init__(self, out_dtype: Any = None) -> None:
        self.out_dtype = out_dtype

    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        require_numeric(input_schema, col_selector, "Normalize", lists=True)

    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, tuple[float, float, float]]:
        return {name: finite_moments(backend_for(df), df[name]) for name in col_selector.names}

    def combine_partials(self, partials: list[dict]) -> dict[str, tuple[float, float, float]]:
        return {name: merge_moments([p[name] for p in partials]) for name in partials[0]}

    def fit_finalize(self, partial: dict[str, tuple[float, float, float]]) -> None:
        # A column without a single finite value at fit time has no statistics: it transforms
        # to null, which must not go unnoticed.
        warn_no_finite_values("Normalize", [name for name, m in partial.items() if not m[0]], "transform to all-null")
        self.means_ = {name: m[1] if m[0] else float("nan") for name, m in partial.items()}
        self.stds_ = {name: float(np.sqrt(m[2] / (m[0] - 1))) if m[0] > 1 else 0.0 for name, m in partial.items()}
        self.counts_ = {name: int(m[0]) for name, m in partial.items()}

    update_needs = {
        "counts_": (
            "it was fitted by a tabflow that kept no counts of the values its means and deviations come from "
            "(a workflow saved by an earlier release); fit it again"
        ),
    }

    def fitted_partial(self) -> dict[str, tuple[float, float, float]]:
        """The fitted (count, mean, M2) of each column; M2 from the sample deviation."""
        self.check_updatable()
        return {
            name: (float(n), self.means_[name] if n else 0.0, self.stds_[name] ** 2 * (n - 1) if n > 1 else 0.0)
            for name, n in self.counts_.items()
        }

    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        self.check_is_fitted()
        if isinstance(df, Mapping):  # NVTabular's dict of NumPy / CuPy arrays
            return map_arrays(df, col_selector.names, self._standardize, self.output_dtype)
        backend = backend_for(df)
        dtype = self.output_dtype
        out = {}
        for name in col_selector.names:
            out[name] = map_values(backend, df[name], lambda values: backend.astype(self._standardize(name, values), dtype))  # noqa: B023 - called before the loop moves on
        return backend.frame_from_dict(out, index=df.index)

    def _standardize(self, name: str, values: Any) -> Any:
        """One column's float64 values standardised (a constant column is only centred)."""
        std = self.stds_[name]
        return (values - self.means_[name]) / (std if std > 0 else 1.0)

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        self.check_is_fitted()

        def standardize(names: list[str]) -> Any:
            means = np.array([[self.means_[name]] for name in names], dtype=np.float64)
            scales = np.array([[self.stds_[name] if self.stds_[name] > 0 else 1.0] for name in names], dtype=np.float64)
            return lambda values: (values - means) / scales

        return float_kernels(col_selector.names, input_schema, self.output_dtype, standardize)

    @property
    def output_dtype(self) -> str:
        return dtype_name(self.out_dtype) if self.out_dtype is not None else "float64"

    @property
    def output_tags(self) -> list[Any]:
        return [Tags.CONTINUOUS]

    def compute_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        column = super().compute_column_schema(col_name, input_schema)
        return column.with_dtype(float_output_dtype(self.out_dtype, input_schema[col_name].dtype))


def finite_moments(backend: Any, column: Any) -> tuple[float, float, float]:
    """(count, mean, M2) of the finite values of a numeric or list column.

    Computed where the column lives (engine arrays and ``backend.xp``): only the three
    numbers leave the device.
    """
    values = finite_values(backend, column)
    count = float(values.size)
    if not count:
        return 0.0, 0.0, 0.0
    mean = float(values.mean())
    return count, mean, float(((values - mean) ** 2).sum())

