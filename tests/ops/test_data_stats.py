"""DataStats: a per-column statistics table; data unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops
from tabflow.schema import Tags


@pytest.fixture
def frame(rng):
    n = 120
    x = rng.normal(5, 2, n)
    x[[1, 2, 3]] = np.nan
    s = rng.choice(["a", "b", "c", "d"], n).astype(object)
    s[[0, 9]] = None
    rows = [list(map(int, rng.integers(0, 10, k))) for k in rng.integers(0, 5, n)]
    rows[7] = None
    return pd.DataFrame(
        {
            "x": x,
            "i": pd.array(rng.integers(0, 50, n), dtype="Int64"),
            "s": pd.array(s, dtype="string"),
            "l": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(pa.int64())))),
        }
    )


def _fit(frame, dataset):
    stats = ops.DataStats()
    workflow = nvt.Workflow(["x", "i", "s", "l"] >> stats)
    out = workflow.fit_transform(dataset)
    return stats, out


def test_statistics_match_pandas(frame, engine, to_engine):
    stats, out = _fit(frame, nvt.Dataset(to_engine(frame), npartitions=4))
    pd.testing.assert_frame_equal(to_host(out.compute()), frame)
    table = stats.output
    assert list(table.index) == ["x", "i", "s", "l"]
    x = frame["x"]
    assert table.loc["x", "count"] == x.count() and table.loc["x", "nulls"] == 3
    np.testing.assert_allclose(table.loc["x", ["min", "max", "mean", "std"]].astype(float),
                               [x.min(), x.max(), x.mean(), x.std()])
    assert table.loc["s", "cardinality"] == frame["s"].nunique()
    assert pd.isna(table.loc["x", "cardinality"])
    lengths = frame["l"].map(lambda r: 0 if r is pd.NA else len(r))
    assert table.loc["l", "nulls"] == 1
    assert (table.loc["l", "list_min"], table.loc["l", "list_max"]) == (lengths.min(), lengths.max())
    assert table.loc["l", "list_mean"] == pytest.approx(lengths.mean())
    elements = frame["l"].dropna().explode().dropna().astype(float)
    assert table.loc["l", "max"] == elements.max()
    assert table.loc["i", "dtype"] == "Int64" and table.loc["s", "dtype"] == "string"


def test_categorical_tag_adds_cardinality(frame):
    stats = ops.DataStats()
    nvt.Workflow(["i"] >> ops.AddTags(Tags.CATEGORICAL) >> stats).fit(frame)
    assert stats.output.loc["i", "cardinality"] == frame["i"].nunique()


def test_many_partitions_equal_one(frame):
    one, _ = _fit(frame, nvt.Dataset(frame, npartitions=1))
    many, _ = _fit(frame, dataset_with_empty_partitions(frame, 7))
    pd.testing.assert_frame_equal(one.stats_, many.stats_, check_exact=False, rtol=1e-12)


def test_save_load_round_trip(frame, tmp_path):
    stats = ops.DataStats()
    workflow = nvt.Workflow(["x", "s", "l"] >> stats).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.ops[0].stats_, stats.stats_)
    with pytest.raises(ops.NotFittedError):
        ops.DataStats().output
