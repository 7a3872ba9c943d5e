"""HashedCross: order-dependent hashed crosses of column groups."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import to_host, xxh64

import tabflow as nvt
from tabflow import ops
from tabflow.schema import Tags

MASK = 2**64 - 1


def h(value):
    if value is None or value is pd.NA:
        return MASK
    if isinstance(value, str):
        return xxh64(value.encode("utf-8"))
    return xxh64(int(value).to_bytes(8, "little", signed=True))


def combine(seed, value):
    return seed ^ ((value + 0x9E3779B97F4A7C15 + (seed << 6) + (seed >> 2)) & MASK)


def ref_cross(values, n):
    acc = h(values[0])
    for v in values[1:]:
        acc = combine(acc, h(v))
    return acc % n


@pytest.fixture
def frame(rng):
    n = 120
    a = rng.choice(["x", "y", "z"], n).astype(object)
    a[[4, 9]] = None
    lengths = rng.integers(0, 4, n)
    hist = [list(map(int, rng.integers(0, 100, k))) for k in lengths]
    return pd.DataFrame(
        {
            "a": pd.array(a, dtype="string"),
            "b": rng.integers(0, 5, n),
            "c": pd.array(rng.integers(0, 3, n), dtype="Int64"),
            "d": rng.choice(["p", "q"], n),
            "hist": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(hist, pa.list_(pa.int64())))),
        }
    )


def test_groups_give_named_crosses_matching_reference(frame, engine, to_engine):
    workflow = nvt.Workflow([["a", "b"], ["a", "c", "d"]] >> ops.HashedCross(1000))
    out = to_host(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=4)).compute())
    assert list(out.columns) == ["a_X_b", "a_X_c_X_d"]
    rows = frame.astype(object).to_dict("records")
    assert out["a_X_b"].tolist() == [ref_cross([r["a"], r["b"]], 1000) for r in rows]
    assert out["a_X_c_X_d"].tolist() == [ref_cross([r["a"], r["c"], r["d"]], 1000) for r in rows]
    column = workflow.output_schema["a_X_b"]
    # NVTabular 23.08's dtype; tabflow also tags the cross categorical (23.08 added no tag).
    assert column.dtype == "int32" and str(out["a_X_b"].dtype) == "int32"
    assert set(column.tags) == {Tags.CATEGORICAL}
    assert column.properties["cardinality"] == 1000


def test_order_matters_and_flat_selection_is_one_cross(frame):
    out = nvt.Workflow([["a", "b"], ["b", "a"]] >> ops.HashedCross(10**6)).fit_transform(frame)
    assert (out["a_X_b"] != out["b_X_a"]).any()
    flat = nvt.Workflow(["a", "b"] >> ops.HashedCross(10**6)).fit_transform(frame)
    assert flat["a_X_b"].tolist() == out["a_X_b"].tolist()


def test_scalar_crossed_with_list_is_elementwise(frame):
    workflow = nvt.Workflow([["b", "hist"]] >> ops.HashedCross(50))
    out = workflow.fit_transform(nvt.Dataset(frame, npartitions=3)).compute()
    expected = [[ref_cross([b, v], 50) for v in hist] for b, hist in zip(frame["b"], frame["hist"].tolist())]
    assert [list(r) for r in out["b_X_hist"].tolist()] == expected
    assert workflow.output_schema["b_X_hist"].dtype == "list<int32>"


def test_per_cross_buckets_and_partition_independence(frame):
    node = [["a", "b"], ["c", "d"]] >> ops.HashedCross({"a_X_b": 7, ("c", "d"): 11})
    workflow = nvt.Workflow(node)
    one = to_host(workflow.fit_transform(nvt.Dataset(frame, npartitions=1)).compute())
    many = to_host(workflow.fit_transform(nvt.Dataset(frame, npartitions=7)).compute())
    pd.testing.assert_frame_equal(one, many)
    assert one["a_X_b"].max() < 7 and one["c_X_d"].max() < 11


def test_save_load_round_trip(frame, tmp_path):
    workflow = nvt.Workflow([["a", "b"], ["c", "d"]] >> ops.HashedCross({"a_X_b": 7, ("c", "d"): 11})).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))


def test_errors(frame):
    with pytest.raises(KeyError, match="a_X_b"):
        nvt.Workflow([["a", "b"]] >> ops.HashedCross({"c_X_d": 3})).fit(frame)
    with pytest.raises(ValueError, match="at least two"):
        nvt.Workflow(["a"] >> ops.HashedCross(3)).fit(frame)
    with pytest.raises(ValueError, match="one list column"):
        nvt.Workflow([["hist", "hist2"]] >> ops.HashedCross(3)).fit(frame.assign(hist2=frame["hist"]))


def test_crosses_with_floats_hash_non_integral_values_as_themselves():
    import struct

    def h_float(value):
        if value == int(value):
            return h(int(value))
        return xxh64(struct.pack("<d", value))

    train = pd.DataFrame({"x": [10, 11], "d": ["p", "q"]})
    workflow = nvt.Workflow([["x", "d"]] >> ops.HashedCross(2**20)).fit(train)
    for batch in ([10.0, 10.5, 10.9], [10.5, 10.0], [10.9]):
        frame = pd.DataFrame({"x": batch, "d": ["p"] * len(batch)})
        expected = [combine(h_float(v), h("p")) % 2**20 for v in batch]
        assert workflow.transform(frame)["x_X_d"].tolist() == expected, batch
    assert len({combine(h_float(v), h("p")) for v in (10.0, 10.5, 10.9)}) == 3
