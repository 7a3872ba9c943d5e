"""Groupby: session-style aggregation, correct across partitions after shuffle_by_keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.backends import backend_for
from tabflow.testing import assert_frame_equal

AGGS = {"item": ["list", "count", "first", "last"], "price": ["sum", "mean", "min", "max", "std"], "ts": ["first"]}


@pytest.fixture
def data(rng):
    n = 500
    df = pd.DataFrame({
        "session": rng.integers(0, 40, n),
        "ts": rng.permutation(n),
        "item": rng.integers(100, 120, n),
        "price": rng.random(n),
        "tag": rng.choice(["x", "y", "z"], n),
    })
    df.loc[rng.random(n) < 0.05, "price"] = np.nan
    return df


def _reference(df, ascending=True):
    ordered = df.sort_values(["session", "ts"], ascending=[True, ascending], kind="stable")
    grouped = ordered.groupby("session", sort=True)
    # NVTabular: "first"/"last" are the rows with the smallest/largest ts whatever the order.
    in_time = df.sort_values(["session", "ts"], kind="stable").groupby("session", sort=True)
    out = pd.DataFrame({
        "item_list": grouped["item"].agg(list),
        "item_count": grouped["item"].count(),
        "item_first": in_time["item"].nth(0).to_numpy(),
        "item_last": in_time["item"].nth(-1).to_numpy(),
        "price_sum": grouped["price"].sum(),
        "price_mean": grouped["price"].mean(),
        "price_min": grouped["price"].min(),
        "price_max": grouped["price"].max(),
        "price_std": grouped["price"].std(),
        "ts_first": in_time["ts"].nth(0).to_numpy(),
    })
    return out.reset_index()


def _plain(frame):
    frame = frame.copy()
    frame["item_list"] = frame["item_list"].map(list)
    return frame.sort_values("session").reset_index(drop=True)


@pytest.mark.parametrize("ascending", [True, False])
def test_matches_pandas_after_shuffle_by_keys(data, ascending, engine, to_engine):
    ds = nvt.Dataset(to_engine(data), npartitions=6).shuffle_by_keys(["session"])
    op = ops.Groupby(groupby_cols=["session"], sort_cols=["ts"], aggs=AGGS, ascending=ascending)
    wf = nvt.Workflow(["session", "item", "price", "ts"] >> op)
    out = wf.fit_transform(ds).to_ddf(arrow_lists=True).compute()
    out = backend_for(out).to_host(out).reset_index(drop=True)
    assert_frame_equal(_plain(out), _reference(data, ascending), check_dtype=False)
    assert wf.output_schema["item_list"].dtype == "list<int64>"
    assert str(out["item_list"].dtype).startswith("list<item: int64>")


def test_list_of_strings_default_aggs_and_null_keys(data):
    data = data.astype({"session": "Int64"})
    data.loc[:9, "session"] = pd.NA
    wf = nvt.Workflow(["session", "tag"] >> ops.Groupby(groupby_cols="session", sort_cols="ts"))
    out = wf.fit_transform(data)
    assert out.columns.tolist() == ["session", "tag_list"]
    assert out["session"].isna().tolist()[-1] and out["session"].isna().sum() == 1  # null keys: one group, last
    nulls = data[data["session"].isna()].sort_values("ts")["tag"].tolist()
    assert list(out["tag_list"].iloc[-1]) == nulls
    assert wf.output_schema["tag_list"].dtype == "list<string>"


def test_empty_partition_has_declared_dtypes(data):
    wf = nvt.Workflow(["session", "item", "tag"] >> ops.Groupby(groupby_cols="session", aggs=["list", "count"]))
    wf.fit(data)
    empty = wf.transform(data.iloc[:0])
    assert len(empty) == 0
    assert {c: wf.output_schema[c].dtype for c in empty.columns} == {
        "session": "int64", "item_list": "list<int64>", "item_count": "int32", "tag_list": "list<string>", "tag_count": "int32",
    }
    assert str(empty["tag_list"].dtype) == str(wf.transform(data)["tag_list"].dtype)


def test_save_load_round_trip(data, tmp_path):
    wf = nvt.Workflow(["session", "item"] >> ops.Groupby(groupby_cols="session", sort_cols="ts", aggs=["list", "last"]))
    expected = wf.fit_transform(data)
    wf.save(str(tmp_path / "wf"))
    assert_frame_equal(nvt.Workflow.load(str(tmp_path / "wf")).transform(data), expected)


def test_clear_errors(data):
    with pytest.raises(ValueError, match="mode"):
        nvt.Workflow(["session", "item"] >> ops.Groupby(groupby_cols="session", aggs="mode")).fit(data)
    with pytest.raises(KeyError, match="user"):
        nvt.Workflow(["item"] >> ops.Groupby(groupby_cols="user")).fit(data)
    with pytest.raises(KeyError, match="nope"):
        nvt.Workflow(["session", "item"] >> ops.Groupby(groupby_cols="session", aggs={"nope": "list"})).fit(data)


def test_group_columns_only_when_selected_median_nunique_and_nvtabular_dtypes(data):
    op = ops.Groupby(groupby_cols="session", aggs={"price": ["median", "mean"], "item": ["nunique", "count"]})
    wf = nvt.Workflow(["item", "price"] >> op)
    out = wf.fit_transform(data).sort_values("item_count", kind="stable")
    assert "session" not in out.columns and wf.output_schema.column_names == ["price_median", "price_mean", "item_nunique", "item_count"]
    grouped = data.groupby("session", sort=True)
    expected = pd.DataFrame({
        "price_median": grouped["price"].median().astype("float32"), "price_mean": grouped["price"].mean().astype("float32"),
        "item_nunique": grouped["item"].nunique().astype("int32"), "item_count": grouped["item"].count().astype("int32"),
    }).reset_index(drop=True)
    actual = wf.transform(data).reset_index(drop=True)
    pd.testing.assert_frame_equal(actual, expected)
    assert wf.output_dtypes == {"price_median": "float32", "price_mean": "float32", "item_nunique": "int32", "item_count": "int32"}
