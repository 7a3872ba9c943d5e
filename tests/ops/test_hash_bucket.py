"""HashBucket: stable ``xxhash64 % num_buckets`` for scalar and list columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host, xxh64

import tabflow as nvt
from tabflow import ops
from tabflow.schema import Tags

NULL = 2**64 - 1


def ref_bucket(value, n):
    if value is None or value is pd.NA:
        return NULL % n
    if isinstance(value, str):
        return xxh64(value.encode("utf-8")) % n
    return xxh64(int(value).to_bytes(8, "little", signed=True)) % n


def list_series(rows, value_type):
    return pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(value_type))))


@pytest.fixture
def frame(rng):
    n = 200
    users = rng.choice(["alice", "bob", "carol", "dán", ""], n).astype(object)
    users[[3, 50, 120]] = None
    items = pd.array(rng.integers(-1000, 10**9, n), dtype="Int64")
    items[[0, 7]] = pd.NA
    lengths = rng.integers(0, 4, n)
    tags = [[f"t{int(v)}" for v in rng.integers(0, 9, k)] for k in lengths]
    tags[5] = None
    tags[6] = ["t1", None]
    return pd.DataFrame({"user": pd.array(users, dtype="string"), "item": items, "tags": list_series(tags, pa.string())})


def test_matches_reference(frame, engine, to_engine):
    workflow = nvt.Workflow(["user", "item", "tags"] >> ops.HashBucket({"user": 10, "item": 1000, "tags": 7}))
    out = to_host(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=3)).compute())
    assert out["user"].tolist() == [ref_bucket(v, 10) for v in frame["user"].astype(object)]
    assert out["item"].tolist() == [ref_bucket(v, 1000) for v in frame["item"].astype(object)]
    expected_tags = [[ref_bucket(v, 7) for v in row] if row is not pd.NA else [] for row in frame["tags"].tolist()]
    assert [list(row) for row in out["tags"].tolist()] == expected_tags
    assert str(out["user"].dtype) == "int32"


def test_nulls_share_a_fixed_bucket(frame):
    out = nvt.Workflow(["user"] >> ops.HashBucket(10)).fit_transform(frame)
    assert set(out["user"][frame["user"].isna()]) == {NULL % 10}


def test_schema_declares_categorical_int32_and_embedding_sizes(frame):
    workflow = nvt.Workflow(["user", "tags"] >> ops.HashBucket(100)).fit(frame)
    user, tags = workflow.output_schema["user"], workflow.output_schema["tags"]
    # NVTabular 23.08: int32 and the CATEGORICAL tag only (it had no "hashed" tag).
    assert user.dtype == "int32" and tags.dtype == "list<int32>"
    assert set(user.tags) == {Tags.CATEGORICAL}
    assert user.properties["num_buckets"] == 100 and user.properties["cardinality"] == 100
    assert user.properties["embedding_sizes"]["cardinality"] == 100
    assert ops.get_embedding_sizes(workflow) == ({"user": (100, 21)}, {"tags": (100, 21)})


def test_partitioning_does_not_change_buckets(frame):
    workflow = nvt.Workflow(["user", "item", "tags"] >> ops.HashBucket(31))
    one = to_host(workflow.fit_transform(nvt.Dataset(frame, npartitions=1)).compute())
    many = to_host(workflow.fit_transform(nvt.Dataset(frame, npartitions=7)).compute())
    empty = to_host(workflow.fit_transform(dataset_with_empty_partitions(frame)).compute())
    pd.testing.assert_frame_equal(one, many)
    pd.testing.assert_frame_equal(one, empty)


def test_save_load_round_trip(frame, tmp_path):
    workflow = nvt.Workflow(["user", "item"] >> ops.HashBucket({"user": 5, "item": 50})).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))
    assert loaded.output_schema == workflow.output_schema


def test_errors_name_the_column(frame):
    with pytest.raises(KeyError, match="no entry for column .+item"):
        nvt.Workflow(["user", "item"] >> ops.HashBucket({"user": 5})).fit(frame)
    with pytest.raises(ValueError, match="'user'"):
        nvt.Workflow(["user"] >> ops.HashBucket(0)).fit(frame)
    dates = pd.DataFrame({"when": pd.to_datetime(["2020-01-01"])})
    with pytest.raises(TypeError, match="'when'"):
        nvt.Workflow(["when"] >> ops.HashBucket(5)).fit(dates)


def test_empty_frame_keeps_declared_dtypes(frame):
    workflow = nvt.Workflow(["user", "tags"] >> ops.HashBucket(10)).fit(frame)
    out = workflow.transform(frame.iloc[:0])
    assert len(out) == 0 and str(out["user"].dtype) == "int32"


def test_more_buckets_than_int32_holds_gives_int64(frame):
    out = nvt.Workflow(["user"] >> ops.HashBucket(2**40)).fit_transform(frame)
    assert str(out["user"].dtype) == "int64"
    assert out["user"].tolist() == [ref_bucket(v, 2**40) for v in frame["user"].astype(object)]


def ref_float_bucket(value, n):
    """Integral floats hash as their integer; others as their float64's 8 little-endian bytes."""
    import struct

    if np.isnan(value):
        return NULL % n
    if np.isfinite(value) and value == np.floor(value) and abs(value) < 2.0**63:
        return ref_bucket(int(value), n)
    return xxh64(struct.pack("<d", value)) % n


@pytest.mark.parametrize(
    "batch",
    [[10.0, 10.5, 10.9], [10.5], [10.9, np.nan], [10.0, np.inf, -np.inf], [-0.0, 10.5, 2.0**70], [10.0]],
)
def test_non_integral_floats_do_not_share_their_integer_bucket(rng, engine, to_engine, batch):
    n = 2**20
    train = pd.DataFrame({"x": pd.array(rng.integers(0, 20, 50), dtype="Int64")})
    workflow = nvt.Workflow(["x"] >> ops.HashBucket(n)).fit(nvt.Dataset(to_engine(train)))
    frame = pd.DataFrame({"x": batch})
    expected = [ref_float_bucket(v, n) for v in batch]
    assert workflow.transform(frame)["x"].tolist() == expected
    out = to_host(workflow.transform(nvt.Dataset(to_engine(frame), npartitions=2)).compute())
    assert out["x"].tolist() == expected
    assert len({ref_float_bucket(v, n) for v in (10.0, 10.5, 10.9)}) == 3
    assert workflow.transform(pd.DataFrame({"x": [10]}))["x"].tolist() == [ref_float_bucket(10.0, n)]


def test_float_list_elements_hash_as_floats():
    rows = [[10.0, 10.5], [], [10.9, None]]
    out = nvt.Workflow(["v"] >> ops.HashBucket(1000)).fit_transform(pd.DataFrame({"v": list_series(rows, pa.float64())}))
    expected = [[ref_float_bucket(np.nan if v is None else v, 1000) for v in row] for row in rows]
    assert [list(row) for row in out["v"].tolist()] == expected
