"""The hooks through which a layer above reaches ops without the ops naming it: checks run on
every op a user builds, attribute aliases, and which ops load fitted attributes under any
public name; each exercised here with an op and a hook of its own, not NVTabular's."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import serialize
from tabflow.exceptions import LoadError
from tabflow.graph import operator
from tabflow.graph.operator import register_attribute_alias, register_construction_check


class Scale(nvt.ops.StatOperator):
    """Divides by the largest absolute value, kept as ``peak_`` ({column: float})."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict

    def fit_partition(self, col_selector, df):
        return {name: float(np.nanmax(np.abs(df[name].to_numpy(dtype=float, na_value=np.nan)), initial=0.0)) for name in col_selector.names}

    def combine_partials(self, partials):
        return {name: max(p[name] for p in partials) for name in partials[0]}

    def fit_finalize(self, partial):
        self.peak_ = partial

    def transform(self, col_selector, df):
        return df[col_selector.names] / pd.Series(self.peak_)


def _warn_when_strict(op):
    if getattr(op, "strict", False):
        warnings.warn("strict is noted", UserWarning, stacklevel=3)


@pytest.fixture
def check(monkeypatch):
    monkeypatch.setattr(operator, "_CONSTRUCTION_CHECKS", [])
    register_construction_check(_warn_when_strict)


def test_a_check_runs_once_per_op_a_user_builds_pointing_at_their_line(check, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op = Scale(strict=True)
        Scale()
        clone = op.clone()
        frame = pd.DataFrame({"x": [1.0, -4.0, None, 2.0]})
        workflow = nvt.Workflow(["x"] >> op).fit(frame)
        workflow.save(str(tmp_path / "wf"))
        nvt.Workflow.load(str(tmp_path / "wf"))
    assert [str(w.message) for w in caught] == ["strict is noted"]
    assert caught[0].filename == __file__
    assert clone.strict is True


def test_an_alias_reads_the_fitted_attribute_and_subclasses_inherit_it(monkeypatch):
    class Peaks(Scale):
        pass

    register_attribute_alias(Scale, "peaks", lambda op: getattr(op, "peak_", None) or {})
    frame = pd.DataFrame({"x": [1.0, -4.0, None, 2.0], "z": [0.5, 0.25, 0.0, None]})
    op = Peaks()
    assert op.peaks == {}
    nvt.Workflow(["x", "z"] >> op).fit(nvt.Dataset(frame, npartitions=2))
    assert op.peaks == {"x": 4.0, "z": 0.5} == {c: float(frame[c].abs().max()) for c in frame}
    with pytest.raises(AttributeError):
        Scale().missing


class Legacy(nvt.ops.StatOperator):
    """Fitted by a whole-frame fit of its own, its statistics kept as ``total``."""

    def fit_partition(self, col_selector, df):
        return float(df[col_selector.names].sum().sum())

    def combine_partials(self, partials):
        return sum(partials)

    def fit_finalize(self, partial):
        self.total = partial

    def transform(self, col_selector, df):
        return df[col_selector.names] / self.total


def test_fitted_names_without_underscore_load_only_for_registered_ops(monkeypatch, tmp_path):
    frame = pd.DataFrame({"x": [1.0, 3.0, None, 4.0]})
    workflow = nvt.Workflow(["x"] >> Legacy()).fit(nvt.Dataset(frame, npartitions=3))
    # As a fitter registered with the workflow records what it fitted.
    workflow.ops[0].mark_fitted(["total"])
    workflow.save(str(tmp_path / "wf"))
    with pytest.raises(LoadError, match="'total'"):
        nvt.Workflow.load(str(tmp_path / "wf"))
    monkeypatch.setattr(serialize, "_ANY_FITTED_NAMES", list(serialize._ANY_FITTED_NAMES))
    serialize.register_fitted_names(lambda cls: issubclass(cls, Legacy))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.ops[0].total == 8.0
    pd.testing.assert_frame_equal(loaded.transform(frame), frame / 8.0)


class _Prepared(nvt.ops.Operator):
    """Doubles its columns with a factor derived on first use (counted, and slow to make)."""

    _derived_attributes = ("_prepared",)

    def __init__(self, factor: float = 2.0) -> None:
        self.factor = factor

    def _factor(self, builds: list) -> float:
        def build() -> float:
            import time

            builds.append(1)
            time.sleep(0.05)  # every thread asks while the first one builds
            return self.factor

        return self._derived("_prepared", "factor", build)


def test_a_derived_attribute_is_built_once_whichever_threads_ask_and_left_out_of_pickles():
    import pickle
    import threading

    op, builds, got = _Prepared(3.0), [], []
    barrier = threading.Barrier(6)

    def ask():
        barrier.wait()
        got.append(op._factor(builds))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1 and got == [3.0] * 6
    copy = pickle.loads(pickle.dumps(op))
    assert "_prepared" not in copy.__dict__  # derived again where the copy runs
    assert copy._factor(builds) == 3.0 and len(builds) == 2


def test_setting_or_clearing_fitted_state_forgets_what_was_derived_and_parameters_do_not():
    class Scaled(nvt.ops.StatOperator):
        _derived_attributes = ("_prepared",)

        def __init__(self, factor: float = 1.0) -> None:
            self.factor = factor

        def scale(self) -> float:
            return self._derived("_prepared", "scale", lambda: self.scale_ * 10)

    op = Scaled()
    op.scale_ = 2
    assert op.scale() == 20
    op.factor = 5.0  # a parameter: what was derived from the fitted state stands
    op._private = 1
    assert op.__dict__["_prepared"] == {"scale": 20}
    op.scale_ = 3  # new fitted state, as a fit or a user sets it
    assert "_prepared" not in op.__dict__ and op.scale() == 30
    del op.scale_
    assert "_prepared" not in op.__dict__
    op.scale_ = 4
    assert op.scale() == 40
    op.clear()
    assert "_prepared" not in op.__dict__ and not op.fitted


def test_different_derived_entries_build_side_by_side():
    # One table per column: while one thread builds one entry, another builds the next
    # (each waiting for the other inside its build proves they overlap), and a build may
    # use another entry. No lock is left behind.
    import threading

    from tabflow.graph import operator as operator_module

    op = _Prepared(2.0)
    both_building = threading.Barrier(2, timeout=10)

    def build(key: str):
        def make() -> str:
            both_building.wait()
            return key * 2

        return op._derived("_prepared", key, make)

    got = {}
    threads = [threading.Thread(target=lambda k=k: got.update({k: build(k)})) for k in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got == {"a": "aa", "b": "bb"}
    nested = op._derived("_prepared", "c", lambda: op._derived("_prepared", "a", lambda: "never") + "!")
    assert nested == "aa!"
    assert operator_module._DERIVED_LOCKS == {}
