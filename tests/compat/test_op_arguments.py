"""NVTabular-only arguments: accepted, documented in one place, a warning when set, no effect."""

from __future__ import annotations

import threading
import warnings

import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.compat.op_arguments import INERT_ARGUMENTS

INERT = {
    ops.Categorify: {"search_sorted": True, "cat_cache": "device", "on_host": False, "tree_width": 8},
    ops.JoinGroupby: {
        "split_out": 2, "split_every": 4, "tree_width": 8, "cat_cache": "device", "out_path": "/tmp/stats", "on_host": False,
    },
    ops.TargetEncoding: {
        "split_out": 2, "split_every": 4, "cat_cache": "device", "on_host": False, "tree_width": 8,
    },
    ops.JoinExternal: {"cache": "device"},
    ops.TagAsUserID: {"tags": ["user"]},
}
REQUIRED = {
    ops.JoinGroupby: {"cont_cols": ["x"]},
    ops.TargetEncoding: {"target": "x"},
    ops.JoinExternal: {"df_ext": pd.DataFrame({"k": [1], "v": [2.0]}), "on": "k"},
}


@pytest.mark.parametrize("op_class", list(INERT), ids=lambda c: c.__name__)
def test_inert_arguments_are_documented_apart_and_defaults_are_nvtabulars(op_class):
    doc = op_class.__doc__
    own, other = doc.split("Other Parameters")
    for name in INERT[op_class]:
        assert f"{name} : optional" in other and f"\n    {name} :" not in own.partition("Parameters")[2]
        declared = INERT_ARGUMENTS[op_class][name].default
        assert op_class(**REQUIRED.get(op_class, {})).get_params()[name] == declared


@pytest.mark.parametrize("op_class", list(INERT), ids=lambda c: c.__name__)
def test_setting_an_inert_argument_warns_at_construction_and_changes_nothing(op_class):
    for name, value in INERT[op_class].items():
        expected = FutureWarning if name == "tree_width" and op_class is ops.Categorify else UserWarning
        with pytest.warns(expected, match=rf"{op_class.__name__}\({name}=.*no effect"):
            op = op_class(**REQUIRED.get(op_class, {}), **{name: value})
        assert op.get_params()[name] == value  # stored unchanged, as every parameter
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        op_class(**REQUIRED.get(op_class, {}))  # defaults: silent


@pytest.mark.parametrize("op_class", list(INERT), ids=lambda c: c.__name__)
def test_each_construction_warns_as_python_filters_say(op_class):
    # An ordinary warning: under "always" (pytest.warns, test runners) every construction
    # warns, as NVTabular's tree_width warning did; under Python's default filter a line of
    # code that builds such ops in a loop warns once.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            for name, value in INERT[op_class].items():
                op_class(**REQUIRED.get(op_class, {}), **{name: value})
            op_class(**REQUIRED.get(op_class, {}))
    named = [str(w.message).split("(")[1].split("=")[0] for w in caught]
    assert sorted(named) == sorted(list(INERT[op_class]) * 3)
    assert all(__file__ == w.filename for w in caught)  # pointing at the line that built the op
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            op_class(**REQUIRED.get(op_class, {}), **INERT[op_class])
    assert len(caught) == len(INERT[op_class])


def test_clones_do_not_warn_again_and_other_threads_still_warn():
    op = None
    with pytest.warns(UserWarning, match="on_host"):
        op = ops.JoinGroupby(cont_cols=["x"], on_host=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clone = op.clone()
    assert clone.on_host is False and clone is not op
    # Rebuilding is per thread: an op a user builds meanwhile in another thread still warns.
    from tabflow.graph.operator import rebuilding_ops

    heard = []

    def build() -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ops.Categorify(on_host=False)
        heard.extend(str(w.message) for w in caught)

    with rebuilding_ops():
        thread = threading.Thread(target=build)
        thread.start()
        thread.join()
    assert heard == ["Categorify(on_host=False) has no effect in tabflow: " + INERT_ARGUMENTS[ops.Categorify]["on_host"].why]


def test_a_loaded_workflow_does_not_warn_again(tmp_path):
    frame = pd.DataFrame({"c": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]})
    with pytest.warns(UserWarning, match="on_host"):
        workflow = nvt.Workflow(["c"] >> ops.JoinGroupby(cont_cols=["x"], on_host=False)).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = nvt.Workflow.load(str(tmp_path / "wf"))
        clone = loaded.ops[0].clone()
    assert clone.on_host is False
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))


def test_extra_nvtabular_keywords_warn_at_each_construction():
    table = pd.DataFrame({"k": [1], "v": [2.0]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op = ops.JoinExternal(table, on="k", suffixes=("_a", "_b"))
        ops.JoinExternal(table, on="k", validate="m:1", suffixes=("_a", "_b"))
        ops.JoinExternal(table, on="k")
        op.clone()
    assert [str(w.message).split(" has")[0] for w in caught] == ["JoinExternal(suffixes)", "JoinExternal(suffixes, validate)"]


def test_inert_arguments_give_the_same_output():
    frame = pd.DataFrame({"c": ["a", "b", "a", None], "x": [1.0, 2.0, 3.0, 4.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        odd = nvt.Workflow(["c"] >> ops.Categorify(**INERT[ops.Categorify])).fit_transform(frame)
        grouped = nvt.Workflow(["c"] >> ops.JoinGroupby(cont_cols=["x"], stats=["mean"], **INERT[ops.JoinGroupby]))
        odd_groups = grouped.fit_transform(frame)
        encoded = nvt.Workflow(["c"] >> ops.TargetEncoding("x", **INERT[ops.TargetEncoding])).fit_transform(frame)
    pd.testing.assert_frame_equal(odd, nvt.Workflow(["c"] >> ops.Categorify()).fit_transform(frame))
    plain = nvt.Workflow(["c"] >> ops.JoinGroupby(cont_cols=["x"], stats=["mean"])).fit_transform(frame)
    pd.testing.assert_frame_equal(odd_groups, plain)
    pd.testing.assert_frame_equal(encoded, nvt.Workflow(["c"] >> ops.TargetEncoding("x")).fit_transform(frame))
