"""Rename: NVTabular naming rules, schema carried over, saving."""

from __future__ import annotations

import pandas as pd
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops
from tabflow.schema import ColumnSchema, Schema, Tags
from tabflow.serialize import UntrustedCodeError


@nvt.register_function
def upper(name):
    return name.upper()


@pytest.fixture
def frame():
    return pd.DataFrame({"a": [1, 2, None], "b": [0.5, None, 1.5], "c": ["x", "y", "z"]})


def test_postfix_f_and_name(frame, to_engine):
    ds = nvt.Dataset(to_engine(frame), npartitions=2)
    out = to_host(nvt.Workflow(["a", "b"] >> ops.Rename(postfix="_raw")).fit_transform(ds).compute())
    assert out.columns.tolist() == ["a_raw", "b_raw"]
    pd.testing.assert_series_equal(out["b_raw"], frame["b"], check_names=False)
    out = nvt.Workflow(["a", "c"] >> ops.Rename(f=upper)).fit_transform(frame)
    assert out.columns.tolist() == ["A", "C"]
    out = nvt.Workflow(["c"] >> ops.Rename(name="city")).fit_transform(frame)
    assert out["city"].tolist() == ["x", "y", "z"]


def test_precedence_f_then_postfix_then_name(frame):
    out = nvt.Workflow(["a"] >> ops.Rename(f=upper, postfix="_p", name="n")).fit_transform(frame)
    assert out.columns.tolist() == ["A"]
    out = nvt.Workflow(["a"] >> ops.Rename(postfix="_p", name="n")).fit_transform(frame)
    assert out.columns.tolist() == ["a_p"]


def test_schema_is_carried_over(frame):
    schema = Schema([ColumnSchema("a", dtype="float64", tags={Tags.CONTINUOUS}, properties={"unit": "s"})])
    ds = dataset_with_empty_partitions(frame)
    ds = nvt.Dataset(ds.to_ddf(), schema=schema)
    wf = nvt.Workflow(["a"] >> ops.Rename(postfix="_sec"))
    wf.fit(ds)
    column = wf.output_schema["a_sec"]
    assert column.dtype == "float64" and Tags.CONTINUOUS in column.tags and column.properties == {"unit": "s"}


def test_save_load(frame, tmp_path):
    wf = nvt.Workflow(["a", "b"] >> ops.Rename(f=upper)).fit(frame)
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), wf.transform(frame))
    bang = nvt.Workflow(["a"] >> ops.Rename(f=lambda n: n + "!")).fit(frame)
    bang.save(str(tmp_path / "code"))
    loaded = nvt.Workflow.load(str(tmp_path / "code"))
    assert loaded.output_schema.column_names == ["a!"]  # from the saved schema: nothing ran
    with pytest.raises(UntrustedCodeError, match="Rename"):
        loaded.transform(frame)
    pd.testing.assert_frame_equal(nvt.Workflow.load(str(tmp_path / "code"), trust_code=True).transform(frame), bang.transform(frame))


@pytest.mark.parametrize(
    ("op", "error", "message"),
    [
        (ops.Rename(), ValueError, "one of f, postfix or name"),
        (ops.Rename(name="z"), ValueError, "single column but got 2"),
        (ops.Rename(f=lambda n: "same"), ValueError, "same name"),
        (ops.Rename(f=lambda n: None), TypeError, "string names"),
    ],
)
def test_errors(frame, op, error, message):
    with pytest.raises(error, match=message):
        nvt.Workflow(["a", "b"] >> op).fit(frame)
