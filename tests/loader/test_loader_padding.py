"""Padding as a loader transform: ragged lists (empty and null ones included) over several
partitions come out padded/truncated to a fixed length, checked against a NumPy reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow.loader.ops import Padding
from tabflow.loader.torch import Loader


def _reference(rows, size, value):
    out = np.full((len(rows), size), value, dtype=np.int64)
    for i, row in enumerate(rows):
        row = (row or [])[:size]
        out[i, : len(row)] = row
    return out


@pytest.fixture
def lists():
    rng = np.random.default_rng(3)
    rows = [list(rng.integers(1, 50, size=rng.integers(0, 8))) for _ in range(57)]
    rows[5] = None
    rows[6] = []
    frame = pd.DataFrame({
        "row_id": np.arange(len(rows), dtype=np.int64),
        "ids": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, type=pa.list_(pa.int64())))),
    })
    return rows, frame


@pytest.mark.parametrize("size,value", [(5, 0), (1, -1)])
def test_loader_padding_graph_matches_numpy(lists, size, value):
    rows, frame = lists
    dataset = nvt.Dataset(frame, npartitions=4)
    loader = Loader(dataset, batch_size=10, shuffle=True, transforms=["ids"] >> Padding(size, value))
    expected = _reference(rows, size, value)
    seen = []
    for inputs, _ in loader:
        # The padded column's schema fixes its length, so it comes out as one dense
        # [rows, size] tensor, as merlin-dataloader gives it.
        assert set(inputs) == {"ids"}  # the graph keeps only what it selects
        assert inputs["ids"].ndim == 2 and inputs["ids"].shape[1] == size
        seen.append(inputs["ids"].numpy())
    got = np.concatenate(seen)
    assert got.shape == expected.shape
    # Shuffled: compare as multisets of rows.
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, expected.tolist()))


def test_padding_in_order_and_schema(lists):
    rows, frame = lists
    dataset = nvt.Dataset(frame, npartitions=3)
    workflow = nvt.Workflow(["ids"] >> Padding(4, 9))
    out = workflow.fit_transform(dataset).to_ddf().compute()
    np.testing.assert_array_equal(np.array(out["ids"].tolist()), _reference(rows, 4, 9))
    column = workflow.output_schema["ids"]
    assert column.is_list


def test_padding_size_must_be_positive(lists):
    _, frame = lists
    with pytest.raises(ValueError, match="padding_size must be a positive integer, got 0"):
        nvt.Workflow(["ids"] >> Padding(0)).fit_transform(frame)
