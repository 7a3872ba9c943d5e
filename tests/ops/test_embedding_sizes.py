"""get_embedding_sizes on fitted workflows: cardinalities bound every produced index."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.schema import ColumnSchema, Schema, Tags

N = 1_000


@pytest.fixture
def frame(rng):
    lists = [list(rng.choice(["p", "q", "r", "s", "t"], rng.integers(0, 4))) for _ in range(N)]
    return pd.DataFrame({
        "user": pd.Series(rng.choice([f"u{i}" for i in range(300)], N), dtype="str"),
        "item": rng.integers(0, 5_000, N),
        "tags": pd.Series(lists, dtype=pd.ArrowDtype(pa.list_(pa.string()))),
        "price": rng.random(N),
    })


def _rule(cardinality):
    return min(max(16, round(1.6 * cardinality**0.56)), 512)


def test_single_hot_only_returns_one_dict(engine, to_engine, frame):
    cats = ["user", "item"] >> ops.Categorify(freq_threshold={"item": 2})
    wf = nvt.Workflow(cats + ["price"])
    out = wf.fit_transform(nvt.Dataset(to_engine(frame), npartitions=4)).compute()
    sizes = ops.get_embedding_sizes(wf)
    assert set(sizes) == {"user", "item"}
    for name, (cardinality, dimension) in sizes.items():
        assert cardinality == int(out[name].max()) + 1
        assert dimension == _rule(cardinality)


def test_multi_hot_columns_are_returned_separately(frame):
    wf = nvt.Workflow(["user", "tags"] >> ops.Categorify(num_buckets={"tags": 3}))
    out = wf.fit_transform(frame)
    single, multi = ops.get_embedding_sizes(wf)
    assert list(single) == ["user"] and list(multi) == ["tags"]
    flat_max = max(max(row) for row in out["tags"] if len(row))
    assert multi["tags"][0] == flat_max + 1 == 5 + 3 + 2
    assert single["user"][0] == out["user"].max() + 1


def test_output_dtypes_decide_multi_hot(frame):
    wf = nvt.Workflow(["user", "item"] >> ops.Categorify()).fit(frame)
    single, multi = ops.get_embedding_sizes(wf, output_dtypes={"item": "list<int64>"})
    assert list(single) == ["user"] and list(multi) == ["item"]


def test_saved_and_loaded_workflow_gives_same_sizes(frame, tmp_path):
    wf = nvt.Workflow(["user", "item", "tags"] >> ops.Categorify(max_size={"item": 100})).fit(frame)
    wf.save(str(tmp_path / "wf"))
    assert ops.get_embedding_sizes(nvt.Workflow.load(str(tmp_path / "wf"))) == ops.get_embedding_sizes(wf)
    assert ops.get_embedding_sizes(wf)[0]["item"][0] == 100


def test_schema_source_and_columns_without_cardinality():
    schema = Schema([
        ColumnSchema("a", dtype="int64", tags={Tags.CATEGORICAL}, properties={"cardinality": 10_000}),
        ColumnSchema("b", dtype="int64", tags={Tags.CATEGORICAL}),
        ColumnSchema("c", dtype="float32", tags={Tags.CONTINUOUS}, properties={"cardinality": 3}),
        ColumnSchema("d", dtype="int64", tags={Tags.CATEGORICAL}, properties={"embedding_sizes": {"cardinality": 7, "dimension": 4}}),
    ])
    assert ops.get_embedding_sizes(schema) == {"a": (10_000, _rule(10_000)), "d": (7, 4)}


def test_unfitted_workflow_is_an_error():
    wf = nvt.Workflow(["user"] >> ops.Categorify())
    with pytest.raises(ops.NotFittedError, match="fit"):
        ops.get_embedding_sizes(wf)


@pytest.mark.parametrize("distinct, expected", [(10, (13, 16)), (1_000, (1_003, 77)), (100_000, (100_003, 512))])
def test_embedding_rule_matches_reference_values(distinct, expected):
    wf = nvt.Workflow(["x"] >> ops.Categorify()).fit(pd.DataFrame({"x": np.arange(distinct)}))
    assert ops.get_embedding_sizes(wf)["x"] == expected
