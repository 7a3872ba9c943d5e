"""NVTabular's ``StatOperator.fit(col_selector, ddf)`` protocol lives in
:mod:`tabflow.compat.legacy_fit`, registered with the workflow: such ops fit in a pass of
their own, keep their statistics under any attribute name through saving, and feed ops
fitted after them; the workflow's hook fits whatever a registered fitter accepts. Expected
values come from plain pandas."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

import tabflow as nvt
from tabflow import ops
from tabflow.compat.legacy_fit import LEGACY_FIT
from tabflow.workflow import _FRAME_FITTERS, register_frame_fitter


class NullCount(ops.StatOperator):
    """NVTabular-style op: statistics from dask objects, kept under a name without ``_``."""

    def __init__(self, scale=1.0):
        self.scale = scale

    def fit(self, col_selector, ddf):
        return ddf[col_selector.names].isna().sum(), ddf[col_selector.names].max()

    def fit_finalize(self, dask_stats):
        nulls, maxes = dask_stats
        self.null_counts = {k: int(v) for k, v in nulls.items()}
        self.maxes = {k: float(v) for k, v in maxes.items()}

    def transform(self, col_selector, df):
        return pd.DataFrame({n: df[n].fillna(self.maxes[n]) * self.scale for n in col_selector.names}, index=df.index)


def _data():
    frame = pd.DataFrame({"x": [1.0, np.nan, 4.0, 2.0, np.nan, 9.0], "y": [np.nan, 3.0, 1.0, 7.0, 5.0, 0.5]})
    parts = [frame.iloc[:2], frame.iloc[2:2], frame.iloc[2:]]  # an empty partition in the middle
    return frame, dd.concat([dd.from_pandas(p, npartitions=1) for p in parts])


def test_a_legacy_op_fits_on_every_partition_and_feeds_the_ops_after_it(tmp_path):
    frame, ddf = _data()
    assert ddf.npartitions == 3
    op = NullCount(scale=2.0)
    wf = nvt.Workflow(["x", "y"] >> op >> ops.Normalize())
    out = wf.fit_transform(nvt.Dataset(ddf)).compute().reset_index(drop=True)
    assert op.null_counts == frame.isna().sum().to_dict()
    assert op.maxes == frame.max().to_dict()
    filled = frame.fillna(frame.max()) * 2.0
    expected = (filled - filled.mean()) / filled.std(ddof=1)
    np.testing.assert_allclose(out[["x", "y"]], expected, rtol=1e-6)

    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    reloaded = loaded.output_node.parents[0].op
    assert reloaded.fitted and reloaded.fitted_state() == {"maxes": op.maxes, "null_counts": op.null_counts}
    pd.testing.assert_frame_equal(loaded.transform(frame), wf.transform(frame))


def test_the_workflow_and_statoperator_know_only_map_combine_finalize():
    assert LEGACY_FIT in _FRAME_FITTERS
    assert LEGACY_FIT.accepts(NullCount())
    assert not LEGACY_FIT.accepts(ops.Normalize())
    assert not LEGACY_FIT.accepts(ops.LogOp())
    assert not hasattr(ops.StatOperator, "fit") and not hasattr(ops.StatOperator, "uses_legacy_fit")


class Quantiles(ops.StatOperator):
    """Clips each column below its maximum; fitted by a registered whole-frame fitter other
    than NVTabular's, so the hook is not tied to the legacy protocol."""

    def transform(self, col_selector, df):
        return pd.DataFrame({n: df[n].clip(upper=self.upper_[n]) for n in col_selector.names}, index=df.index)


class QuantileFitter:
    def accepts(self, op):
        return isinstance(op, Quantiles)

    def fit(self, op, col_selector, ddf):
        return ddf[col_selector.names].max()

    def finish(self, op, computed):
        op.upper_ = {k: float(v) - 1.0 for k, v in computed.items()}
        op.mark_fitted()


def test_a_registered_frame_fitter_fits_the_ops_it_accepts():
    frame, ddf = _data()
    fitter = register_frame_fitter(QuantileFitter())
    try:
        assert register_frame_fitter(fitter) is fitter and _FRAME_FITTERS.count(fitter) == 1
        op = Quantiles()
        out = nvt.Workflow(["x", "y"] >> op).fit_transform(nvt.Dataset(ddf)).compute().reset_index(drop=True)
    finally:
        _FRAME_FITTERS.remove(fitter)
    upper = frame.max() - 1.0
    assert op.fitted and op.upper_ == upper.to_dict()
    pd.testing.assert_frame_equal(out, frame.clip(upper=upper, axis=1))
