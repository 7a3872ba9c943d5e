"""DifferenceLag: within-group differences with a lag."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.testing import assert_frame_equal


@pytest.fixture
def data(rng):
    n = 400
    df = pd.DataFrame({"user": np.sort(rng.integers(0, 30, n)), "ts": rng.integers(0, 1000, n), "price": rng.random(n)})
    df = df.sort_values(["user", "ts"], kind="stable").reset_index(drop=True)
    df.loc[rng.random(n) < 0.05, "price"] = np.nan
    return df


def _reference(df, col, shift, key="user"):
    # NVTabular 23.08's output dtype is float32 (the difference itself is taken in float64).
    return (df[col].astype("float64") - df.groupby(key)[col].shift(shift)).astype("float32")


@pytest.mark.parametrize("shift", [1, 2, -1])
def test_matches_groupwise_diff(data, shift, engine, to_engine):
    wf = nvt.Workflow(["ts", "price"] >> ops.DifferenceLag("user", shift=shift))
    out = wf.fit_transform(to_engine(data))
    expected = pd.DataFrame({
        f"ts_difference_lag_{shift}": _reference(data, "ts", shift),
        f"price_difference_lag_{shift}": _reference(data, "price", shift),
    })
    assert_frame_equal(out, expected)


def test_several_shifts_null_keys_and_empty_partitions(data):
    data = data.astype({"user": "float64"})
    data.loc[5:7, "user"] = np.nan
    wf = nvt.Workflow(["ts"] >> ops.DifferenceLag(["user"], shift=[1, 3]))
    out = wf.fit_transform(data)
    assert out.columns.tolist() == ["ts_difference_lag_1", "ts_difference_lag_3"]
    assert out.loc[5:8, "ts_difference_lag_1"].isna().all()  # null keys never match
    np.testing.assert_allclose(out["ts_difference_lag_3"].iloc[20:], _reference(data, "ts", 3).iloc[20:], rtol=1e-6)
    empty = wf.transform(data.iloc[:0])
    assert len(empty) == 0 and str(empty["ts_difference_lag_1"].dtype) == "float32"
    assert wf.output_schema["ts_difference_lag_1"].dtype == "float32"


def test_multi_partition_after_shuffle_by_keys(data, tmp_path):
    shuffled = nvt.Dataset(data, npartitions=5).shuffle_by_keys("user")
    ddf = shuffled.to_ddf().map_partitions(lambda p: p.sort_values(["user", "ts"], kind="stable"))
    wf = nvt.Workflow((["ts"] >> ops.DifferenceLag("user")) + ["user", "ts"])
    out = wf.fit_transform(nvt.Dataset(ddf)).compute().sort_values(["user", "ts"], kind="stable").reset_index(drop=True)
    np.testing.assert_allclose(out["ts_difference_lag_1"], _reference(data, "ts", 1), rtol=1e-6)
    wf.save(str(tmp_path / "wf"))
    assert_frame_equal(nvt.Workflow.load(str(tmp_path / "wf")).transform(data), wf.transform(data))


def test_clear_errors(data):
    with pytest.raises(KeyError, match="session"):
        nvt.Workflow(["ts"] >> ops.DifferenceLag("session")).fit(data)
    with pytest.raises(ValueError, match="shift"):
        nvt.Workflow(["ts"] >> ops.DifferenceLag("user", shift=0)).fit(data)
    with pytest.raises(TypeError, match="'name'"):
        nvt.Workflow(["name"] >> ops.DifferenceLag("user")).fit(data.assign(name="x"))
