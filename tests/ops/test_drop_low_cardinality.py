"""DropLowCardinality: NVTabular 23.08's rule on the schema's domain of categorical columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _op_helpers import to_host

import tabflow as nvt
from tabflow import ops
from tabflow.schema import Tags


@pytest.fixture
def frame(rng):
    n = 90
    return pd.DataFrame(
        {
            "one": pd.array(["a"] * n, dtype="string"),
            "two": pd.array(["a", "b"] * (n // 2), dtype="string"),
            "many": rng.integers(0, 1000, n),
            "label": rng.integers(0, 2, n),
            "const": np.full(n, 7.0),
        }
    )


def _reference(frame, cats, k):
    """Kept columns by NVTabular 23.08's rule: a Categorify column's domain max is its number
    of distinct values + 2 (padding, null and one OOV index, minus one for the maximum)."""
    kept = []
    for name in frame.columns:
        if name in cats and frame[name].nunique(dropna=True) + 2 < k:
            continue
        kept.append(name)
    return kept


@pytest.mark.parametrize("k", [0, 3, 4, 5])
def test_matches_nvtabular_rule_after_categorify(frame, k, engine, to_engine):
    cats = ["one", "two", "many"]
    features = (cats >> ops.Categorify()) + ["label", "const"]
    workflow = nvt.Workflow(features >> ops.DropLowCardinality(min_cardinality=k))
    out = to_host(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=5)).compute())
    expected = _reference(frame, cats, k)
    assert list(out.columns) == expected and workflow.output_schema.column_names == expected
    encoded = to_host(nvt.Workflow(features).fit_transform(to_engine(frame)))
    pd.testing.assert_frame_equal(out, encoded[expected])


def test_default_is_nvtabulars_four(frame):
    assert ops.DropLowCardinality().min_cardinality == 4
    workflow = nvt.Workflow(((["one", "two"] >> ops.Categorify()) + ["label", "const"]) >> ops.DropLowCardinality())
    # "one": domain max 3 (pad, null, OOV, "a") < 4: dropped; "two": max 4: kept; the
    # others are not categorical and stay, however few values they hold.
    assert list(workflow.fit_transform(frame).columns) == ["two", "label", "const"]


def test_other_domains_and_columns_without_one(frame):
    hashed = ["many"] >> ops.HashBucket(3)  # domain max 2
    tagged = ["label"] >> ops.AddTags(Tags.CATEGORICAL)  # categorical, no domain: kept
    bucketed = ["const"] >> ops.Bucketize([0.0, 10.0, 20.0, 30.0])  # domain max 4
    workflow = nvt.Workflow((hashed + tagged + bucketed) >> ops.DropLowCardinality())
    assert list(workflow.fit_transform(frame).columns) == ["label", "const"]


def test_schema_known_before_fit_and_save_load(frame, tmp_path):
    workflow = nvt.Workflow((["many"] >> ops.HashBucket(2)) + ["label"] >> ops.DropLowCardinality())
    workflow.fit_schema(nvt.Dataset(frame).schema)
    assert workflow.output_schema.column_names == ["label"]
    workflow.fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema.column_names == ["label"]
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))


def test_bad_parameter():
    with pytest.raises(ValueError, match="min_cardinality"):
        nvt.Workflow(["a"] >> ops.DropLowCardinality(-1)).fit(pd.DataFrame({"a": [1]}))
