"""JoinGroupby: per-group statistics joined back onto rows."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.backends import backend_for
from tabflow.testing import assert_frame_equal


def to_host(frame):
    return backend_for(frame).to_host(frame)

STATS = ["count", "sum", "mean", "std", "var", "min", "max"]
#: NVTabular 23.08's output dtypes; sum/min/max keep the continuous column's dtype.
NVT_DTYPES = {"count": "int32", "mean": "float32", "std": "float32", "var": "float32"}


@pytest.fixture
def data(rng):
    n = 600
    df = pd.DataFrame({
        "user": rng.choice(["u1", "u2", "u3", "u4"], n),
        "item": rng.integers(0, 5, n),
        "price": rng.normal(1e6, 3.0, n),  # large offset: a sum-of-squares variance would lose digits
        "qty": rng.integers(0, 10, n).astype("float64"),
    })
    df.loc[rng.random(n) < 0.1, "user"] = None
    df.loc[rng.random(n) < 0.1, "price"] = np.nan
    return df


def _reference(df, keys, conts, stats):
    grouped = df.groupby(keys, dropna=False)
    name = "_".join(keys)
    table = grouped.size().rename(f"{name}_count").astype("int32").to_frame()
    for c in conts:
        for stat in stats:
            if stat != "count":
                table[f"{name}_{c}_{stat}"] = grouped[c].agg(stat).astype(NVT_DTYPES.get(stat, df[c].dtype))
    joined = df[keys].merge(table.reset_index(), on=keys, how="left")
    cols = [f"{name}_count"] * ("count" in stats) + [f"{name}_{c}_{s}" for c in conts for s in stats if s != "count"]
    return joined[cols]


def test_matches_pandas_groupby(data, engine, to_engine):
    op = ops.JoinGroupby(cont_cols=["price", "qty"], stats=STATS)
    wf = nvt.Workflow(["user", ["user", "item"]] >> op)
    out = wf.fit_transform(nvt.Dataset(to_engine(data), npartitions=5)).compute()
    expected = pd.concat(
        [_reference(data, ["user"], ["price", "qty"], STATS), _reference(data, ["user", "item"], ["price", "qty"], STATS)], axis=1
    )
    assert_frame_equal(out, expected, check_exact=False, rtol=1e-6)
    assert wf.output_schema["user_count"].dtype == "int32"
    assert wf.output_schema["user_item_price_std"].dtype == "float32"
    assert wf.output_schema["user_item_price_sum"].dtype == "float64"


def test_after_shuffle_by_keys(data, engine, tmp_path):
    """Partitions regrouped by key keep their rows' labels: read from files, whose partitions
    each count from 0, their index repeats labels. A frame built from series is aligned on
    its index: cuDF reindexes every series not holding the frame's own index, and refuses
    repeated labels (the strict engine too), so the joined statistics must come back on the
    partition's index itself."""
    data = data.assign(rid=np.arange(len(data)))
    for k in range(4):
        data.iloc[k * 150:(k + 1) * 150].to_parquet(tmp_path / f"part_{k}.parquet", index=False)
    shuffled = nvt.Dataset(str(tmp_path), cpu=engine == "pandas").shuffle_by_keys("item")
    assert not all(part.index.is_unique for part in shuffled.to_iter())
    op = ops.JoinGroupby(cont_cols=["price"], stats=["count", "mean", "max"])
    wf = nvt.Workflow((["user", "item"] >> op) + ["rid"])
    out = to_host(wf.fit_transform(shuffled).compute()).sort_values("rid").reset_index(drop=True)
    expected = pd.concat(
        [_reference(data, ["user"], ["price"], ["count", "mean", "max"]), _reference(data, ["item"], ["price"], ["count", "mean", "max"])],
        axis=1,
    )
    assert_frame_equal(out.drop(columns=["rid"]), expected, check_exact=False, rtol=1e-6)


def test_sum_min_max_keep_an_integer_columns_dtype_nullable_for_unseen_keys():
    df = pd.DataFrame({"c": ["a", "b", "a"], "n": pd.array([1, 5, 3], dtype="int32")})
    wf = nvt.Workflow(["c"] >> ops.JoinGroupby(cont_cols=["n"], stats=["count", "sum", "max", "mean"]))
    out = wf.fit_transform(df)
    assert wf.output_schema.dtypes == {"c_count": "int32", "c_n_sum": "Int32", "c_n_max": "Int32", "c_n_mean": "float32"}
    assert out.dtypes.astype(str).tolist() == ["int32", "Int32", "Int32", "float32"]
    assert out["c_n_sum"].tolist() == [4, 5, 4] and out["c_n_mean"].tolist() == [2.0, 5.0, 2.0]
    unseen = wf.transform(pd.DataFrame({"c": ["z"], "n": pd.array([1], dtype="int32")}))
    assert unseen["c_count"].tolist() == [0] and unseen["c_n_sum"].isna().all()


def test_many_partitions_equal_one(data):
    fitted = []
    for npartitions in (1, 7):
        op = ops.JoinGroupby(cont_cols="price", stats=["count", "mean", "var", "min"])
        nvt.Workflow(["user"] >> op).fit(nvt.Dataset(data, npartitions=npartitions))
        fitted.append(op.stats_["user"].sort_values("user", na_position="last").reset_index(drop=True))
    pd.testing.assert_frame_equal(fitted[0], fitted[1], check_exact=False, rtol=1e-10)


def test_empty_partitions_and_unseen_keys(data):
    ddf = dd.from_pandas(data.assign(row=np.arange(len(data))), npartitions=4, sort=False)
    ddf = ddf[ddf["row"] >= len(data) // 4]  # the first partition becomes empty
    assert (ddf.map_partitions(len).compute() == 0).any()
    wf = nvt.Workflow(["user"] >> ops.JoinGroupby(cont_cols=["qty"], stats=["count", "sum"]))
    out = wf.fit_transform(nvt.Dataset(ddf)).compute()
    kept = data.iloc[len(data) // 4 :]
    assert_frame_equal(out, _reference(kept, ["user"], ["qty"], ["count", "sum"]))
    new = wf.transform(pd.DataFrame({"user": ["nobody", None], "qty": [1.0, 2.0]}))
    assert new["user_count"].tolist() == [0, int(kept["user"].isna().sum())]
    assert np.isnan(new["user_qty_sum"].iloc[0])


def test_keeps_index_for_concatenation(data):
    wf = nvt.Workflow((["user"] >> ops.JoinGroupby(cont_cols=["qty"], stats=["mean"])) + ["item"])
    frame = data.set_index(pd.Index(np.arange(len(data))[::-1] * 3))
    out = wf.fit_transform(frame)
    assert out.index.equals(frame.index)
    assert out["item"].tolist() == frame["item"].tolist()


def test_save_load_round_trip(data, tmp_path):
    wf = nvt.Workflow(["user", ["user", "item"]] >> ops.JoinGroupby(cont_cols=["price"], stats=["count", "std"]))
    expected = wf.fit_transform(data)
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert_frame_equal(loaded.transform(data), expected)


def test_clear_errors():
    df = pd.DataFrame({"c": ["a"], "s": ["x"], "x": [1.0]})
    with pytest.raises(TypeError, match="'s'"):
        nvt.Workflow(["c"] >> ops.JoinGroupby(cont_cols=["s"], stats=["sum"])).fit(df)
    with pytest.raises(KeyError, match="nope"):
        nvt.Workflow(["c"] >> ops.JoinGroupby(cont_cols=["nope"], stats=["sum"])).fit(df)
    with pytest.raises(ValueError, match="median"):
        nvt.Workflow(["c"] >> ops.JoinGroupby(cont_cols=["x"], stats=["median"])).fit(df)
    with pytest.raises(ops.NotFittedError):
        nvt.Workflow(["c"] >> ops.JoinGroupby()).transform(df)
