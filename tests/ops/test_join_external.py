"""JoinExternal: join a side table, keeping row order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.testing import assert_frame_equal


@pytest.fixture
def data(rng):
    n = 300
    return pd.DataFrame({"item": rng.integers(0, 60, n), "user": rng.integers(0, 9, n), "x": rng.random(n)})


@pytest.fixture
def items(rng):
    ids = rng.permutation(50)  # ids 50-59 of the data are missing from the side table
    return pd.DataFrame({"item_id": ids, "price": rng.random(50), "brand": rng.integers(0, 5, 50), "name": [f"n{i}" for i in ids]})


def _reference(data, items, how, on="item", on_ext="item_id"):
    """pandas' merge in the data's row order (what NVTabular's transform returns), text as
    tabflow holds it: pandas' nullable string dtype, ``<NA>`` where a left join matched nothing
    (pandas' default text dtype marks it NaN: ``object`` on pandas 2, ``str`` on pandas 3)."""
    out = data.reset_index().merge(items, left_on=on, right_on=on_ext, how=how)
    text = out.select_dtypes(include=["object", "string"]).columns
    out = out.astype(dict.fromkeys(text, "string"))
    return out.sort_values("index", kind="stable").drop(columns="index")


@pytest.mark.parametrize("how", ["left", "inner"])
def test_matches_merge_and_keeps_order(data, items, how, engine, to_engine):
    op = ops.JoinExternal(to_engine(items), on="item", on_ext="item_id", how=how)
    wf = nvt.Workflow(["item", "user", "x"] >> op)
    out = wf.fit_transform(nvt.Dataset(to_engine(data), npartitions=4)).compute()
    expected = _reference(data, items, how)
    if how == "left":
        expected = expected.astype({"brand": "Int64", "item_id": "Int64"})
    # All external columns, the differently named key included, after the input columns.
    assert list(out.columns) == ["item", "user", "x", "item_id", "price", "brand", "name"]
    assert_frame_equal(out, expected[list(out.columns)], check_dtype=False)
    assert wf.output_schema["brand"].dtype == ("Int64" if how == "left" else "int64")
    assert len(out) == (len(data) if how == "left" else int(data["item"].lt(50).sum()))


@pytest.mark.parametrize("how", ["left", "inner"])
def test_on_ext_key_listed_in_columns_ext_is_an_output_column(data, items, how):
    op = ops.JoinExternal(items, on="item", on_ext="item_id", columns_ext=["item_id", "price"], how=how)
    wf = nvt.Workflow(["item", "user"] >> op)
    out = wf.fit_transform(nvt.Dataset(data, npartitions=3)).compute()
    expected = _reference(data, items[["item_id", "price"]], how)[["item", "user", "item_id", "price"]]
    assert list(out.columns) == list(wf.output_schema.column_names) == ["item", "user", "item_id", "price"]
    # Unmatched rows of a left join hold a null key, as pandas' merge gives (NaN there).
    assert out["item_id"].isna().tolist() == expected["item_id"].isna().tolist()
    assert out["item_id"].isna().any() == (how == "left")
    matched = out["item_id"].notna()
    assert (out["item_id"][matched] == out["item"][matched]).all()
    assert_frame_equal(out, expected.astype({"item_id": "Int64"} if how == "left" else {}), check_dtype=False)
    assert str(out["item_id"].dtype) == wf.output_schema["item_id"].dtype == ("Int64" if how == "left" else "int64")


def test_keys_not_in_columns_ext_and_same_name_keys(data, items):
    op = ops.JoinExternal(items, on="item", on_ext="item_id", columns_ext=["price"])
    out = nvt.Workflow(["item"] >> op).fit_transform(data)
    assert list(out.columns) == ["item", "price"]
    # A key named as in the input appears once, whether listed or not.
    same = items.rename(columns={"item_id": "item"})
    for columns_ext in (None, ["item", "brand"], ["brand", "item"]):
        op = ops.JoinExternal(same, on="item", columns_ext=columns_ext)
        out = nvt.Workflow(["item", "user"] >> op).fit_transform(data)
        expected = _reference(data, same, "left", on="item", on_ext="item")
        names = ["item", "user", *[c for c in (columns_ext or same.columns) if c != "item"]]
        assert list(out.columns) == names
        assert_frame_equal(out, expected[names], check_dtype=False)


def test_several_keys_with_other_dtypes(rng):
    n = 200
    data = pd.DataFrame({
        "a": rng.integers(0, 4, n).astype("int32"),
        "b": pd.Series(rng.choice(["u", "v", "w"], n), dtype="str"),
    })
    ext = pd.DataFrame({
        "a_ext": np.repeat(np.arange(3, dtype=np.int64), 2),
        "b_ext": pd.Series(["u", "v"] * 3, dtype="str"),
        "score": np.arange(6, dtype=np.float64),
    })
    op = ops.JoinExternal(ext, on=["a", "b"], on_ext=["a_ext", "b_ext"], columns_ext=["a_ext", "b_ext", "score"])
    wf = nvt.Workflow(["a", "b"] >> op)
    out = wf.fit_transform(nvt.Dataset(data, npartitions=2)).compute()
    expected = _reference(data, ext, "left", on=["a", "b"], on_ext=["a_ext", "b_ext"])
    assert list(out.columns) == ["a", "b", "a_ext", "b_ext", "score"]
    assert_frame_equal(out, expected.astype({"a_ext": "Int64"}), check_dtype=False)
    # The external key keeps its own dtype (int64, nullable after a left join), not the data's int32.
    assert wf.output_schema["a_ext"].dtype == str(out["a_ext"].dtype) == "Int64"
    assert out["a"].dtype == np.int32


def test_left_join_keeps_index_and_dtype_per_partition(data, items):
    wf = nvt.Workflow(["item"] >> ops.JoinExternal(items, on="item", on_ext="item_id", columns_ext=["brand"]))
    frame = data.set_index(pd.Index(np.arange(len(data)) * 2 + 5))
    out = wf.fit_transform(frame)
    assert out.index.equals(frame.index)
    # A partition whose keys all match still gets the masked dtype declared in the schema.
    assert str(wf.transform(frame[frame["item"] < 50])["brand"].dtype) == "Int64"


def test_duplicates_in_external_table(data, items):
    doubled = pd.concat([items, items.assign(price=-1.0)], ignore_index=True)
    op = ops.JoinExternal(doubled, on="item", on_ext="item_id", drop_duplicates_ext=True)
    out = nvt.Workflow(["item"] >> op).fit_transform(data)
    assert len(out) == len(data)
    assert (out["price"].dropna() >= 0).all()


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_path_and_save_load(data, items, tmp_path, kind):
    path = str(tmp_path / f"items.{kind}")
    items.to_parquet(path) if kind == "parquet" else items.to_csv(path, index=False)
    wf = nvt.Workflow(["item", "user"] >> ops.JoinExternal(path, on="item", on_ext="item_id", columns_ext=["price"]))
    expected = wf.fit_transform(data)
    np.testing.assert_allclose(expected["price"], _reference(data, items, "left")["price"])
    wf.save(str(tmp_path / "wf"))
    assert_frame_equal(nvt.Workflow.load(str(tmp_path / "wf")).transform(data), expected)


def test_frame_saved_with_workflow(data, items, tmp_path):
    wf = nvt.Workflow(["item"] >> ops.JoinExternal(items, on="item", on_ext="item_id"))
    expected = wf.fit_transform(data)
    wf.save(str(tmp_path / "wf"))
    assert_frame_equal(nvt.Workflow.load(str(tmp_path / "wf")).transform(data), expected)


def test_clear_errors(data, items):
    with pytest.raises(KeyError, match="sku"):
        nvt.Workflow(["item"] >> ops.JoinExternal(items, on="item", on_ext="sku")).fit(data)
    with pytest.raises(KeyError, match="user"):
        nvt.Workflow(["item"] >> ops.JoinExternal(items, on="user", on_ext="item_id")).fit(data)
    with pytest.raises(ValueError, match="'x'"):
        nvt.Workflow(["item", "x"] >> ops.JoinExternal(items.rename(columns={"price": "x"}), on="item", on_ext="item_id")).fit(data)
    with pytest.raises(ValueError, match="outer"):
        nvt.Workflow(["item"] >> ops.JoinExternal(items, on="item", on_ext="item_id", how="outer")).fit(data)


def test_extra_keywords_are_accepted_as_in_nvtabular_and_change_nothing():
    ext = pd.DataFrame({"c": [1, 2], "v": [10.0, 20.0]})
    df = pd.DataFrame({"c": [2, 1, 3]})
    with pytest.warns(UserWarning, match=r"JoinExternal\(suffixes\) has no effect"):
        op = ops.JoinExternal(ext, on="c", suffixes=("_x", "_y"))
    assert op.kwargs == {"suffixes": ("_x", "_y")} and "suffixes" not in op.get_params()
    out = nvt.Workflow(["c"] >> op).fit_transform(df)
    pd.testing.assert_frame_equal(out, nvt.Workflow(["c"] >> ops.JoinExternal(ext, on="c")).fit_transform(df))
