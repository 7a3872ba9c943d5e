"""NVTabular 23.08's way of fitting a statistics op: ``fit(col_selector, ddf)`` returns Dask
objects over the whole input frame, and ``fit_finalize`` receives them computed.

tabflow's ops fit as map / combine / finalize (:class:`tabflow.ops.StatOperator`); custom
ops written for NVTabular override ``fit`` instead and keep their statistics under any
attribute name. :data:`LEGACY_FIT` is registered with the workflow
(:func:`tabflow.workflow.register_frame_fitter`) so that such ops are fitted in a pass of
their own, and records the attributes ``fit_finalize`` set so that saving keeps them;
loading takes them back under those names (:func:`tabflow.serialize.register_fitted_names`).

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow import ops
>>> class Mean(ops.StatOperator):
...     def fit(self, col_selector, ddf):
...         return ddf[col_selector.names].mean()
...     def fit_finalize(self, dask_stats):
...         self.means = dask_stats.to_dict()
...     def transform(self, col_selector, df):
...         return df[col_selector.names] - pd.Series(self.means)
>>> op = Mean()
>>> LEGACY_FIT.accepts(op)
True
>>> nvt.Workflow(["x"] >> op).fit_transform(pd.DataFrame({"x": [1.0, 3.0]}))["x"].tolist()
[-1.0, 1.0]
>>> op.fitted_state()
{'means': {'x': 2.0}}
"""

from __future__ import annotations

from typing import Any

from tabflow.ops.operator import Operator, StatOperator
from tabflow.serialize import register_fitted_names
from tabflow.workflow import register_frame_fitter

__all__ = ["LegacyFit", "LEGACY_FIT"]


class LegacyFit:
    """Fits ops that override NVTabular's ``StatOperator.fit`` and not ``fit_partition``."""

    def accepts(self, op: Operator) -> bool:
        return self.accepts_class(type(op))

    @staticmethod
    def accepts_class(cls: type) -> bool:
        return (
            issubclass(cls, StatOperator)
            and callable(getattr(cls, "fit", None))
            and cls.fit_partition is StatOperator.fit_partition
        )

    def fit(self, op: Operator, col_selector: Any, ddf: Any) -> Any:
        return op.fit(col_selector, ddf)  # type: ignore[attr-defined]

    def finish(self, op: Operator, computed: Any) -> None:
        assert isinstance(op, StatOperator)
        before = dict(vars(op))
        op.fit_finalize(computed)
        # NVTabular ops keep statistics under any attribute name; the ones fit_finalize set
        # are recorded so that saving the workflow keeps them.
        params = set(op._param_names())
        op.mark_fitted(
            name
            for name, value in vars(op).items()
            if not name.startswith("_") and name not in params and (name not in before or before[name] is not value)
        )


#: The fitter registered with the workflow.
LEGACY_FIT = LegacyFit()
register_frame_fitter(LEGACY_FIT)
# The statistics names fit_finalize chose are loaded back as they were saved.
register_fitted_names(LEGACY_FIT.accepts_class)
