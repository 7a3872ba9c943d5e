"""Loader: named tensors, multi-hot layouts (offsets, padded dense, sparse), targets, transforms."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest
import torch
from loader_data import CATS, CONTS, LABEL, NUM_ROWS

import tabflow as nvt
from tabflow.loader.torch import Loader


def _rows_of(values: torch.Tensor, offsets: torch.Tensor) -> list[list[int]]:
    return [values[offsets[i] : offsets[i + 1]].tolist() for i in range(len(offsets) - 1)]


def _expected_tags(frame):
    return {int(r): [int(v) for v in t] for r, t in zip(frame["row_id"], frame["tags"])}


@pytest.mark.parametrize("parts_per_chunk", [1, 3])
def test_default_layout_values_and_offsets(dataset, frame, parts_per_chunk):
    expected = _expected_tags(frame)
    loader = Loader(dataset, batch_size=23, shuffle=True, parts_per_chunk=parts_per_chunk)
    seen = []
    for inputs, target in loader:
        assert set(inputs) == {"row_id", *CATS, *CONTS, "tags__values", "tags__offsets"}
        assert inputs["c1"].dtype == torch.int64 and inputs["x1"].dtype == torch.float32
        assert inputs["row_id"].shape == target.shape and inputs["tags__offsets"].shape == (len(target) + 1,)
        assert inputs["tags__offsets"].dtype == torch.int64 and inputs["tags__offsets"][0] == 0
        for row_id, tags in zip(inputs["row_id"].tolist(), _rows_of(inputs["tags__values"], inputs["tags__offsets"])):
            assert tags == expected[row_id]
        seen.extend(inputs["row_id"].tolist())
    assert sorted(seen) == list(range(NUM_ROWS))


def test_sparse_as_dense_pads_rows(dataset, frame):
    expected = _expected_tags(frame)
    with Loader(dataset, batch_size=40, sparse_as_dense=True, sparse_max={"tags": 5}, labels=[LABEL]) as loader:
        for inputs, _ in loader:
            dense = inputs["tags"]
            assert dense.shape == (len(inputs["row_id"]), 5)
            for row_id, row in zip(inputs["row_id"].tolist(), dense.tolist()):
                tags = expected[row_id]
                assert row == tags + [0] * (5 - len(tags))


def test_sparse_names_give_coo_tensors(dataset, frame):
    expected = _expected_tags(frame)
    with Loader(dataset, batch_size=64, sparse_names=["tags"], sparse_max={"tags": 4}) as loader:
        inputs, _ = next(iter(loader))
    sparse = inputs["tags"]
    assert sparse.is_sparse and sparse.shape == (64, 4)
    for row_id, row in zip(inputs["row_id"].tolist(), sparse.to_dense().tolist()):
        assert row == expected[row_id] + [0] * (4 - len(expected[row_id]))


def test_row_longer_than_sparse_max_is_an_error(dataset):
    with Loader(dataset, batch_size=64, sparse_as_dense=True, sparse_max={"tags": 2}) as loader:
        with pytest.raises(ValueError, match=r"'tags'.*length 3"):
            list(loader)


def test_sparse_as_dense_needs_sparse_max(dataset):
    with pytest.raises(ValueError, match="sparse_max"):
        Loader(dataset, batch_size=8, sparse_as_dense=True)


def test_targets_one_tensor_or_a_dict(dataset, frame):
    with Loader(dataset, batch_size=10, cats=CATS, conts=CONTS, labels=[LABEL, "x2"]) as loader:
        inputs, targets = next(iter(loader))
    assert set(inputs) == {*CATS, *CONTS}
    assert set(targets) == {LABEL, "x2"} and targets[LABEL].dtype == torch.int64
    assert targets[LABEL].tolist() == frame[LABEL].tolist()[:10]
    with Loader(dataset, batch_size=10, cats=CATS, labels=[]) as loader:
        inputs, targets = next(iter(loader))
    assert targets is None and set(inputs) == set(CATS)


def test_transforms_apply_in_order(dataset):
    def add_one(batch):
        inputs, target = batch
        return {**inputs, "c1": inputs["c1"] + 1}, target

    def double(batch):
        inputs, target = batch
        return inputs, target * 2

    with Loader(dataset, batch_size=10, cats=CATS, transforms=[add_one, double]) as loader:
        inputs, target = next(iter(loader))
    with Loader(dataset, batch_size=10, cats=CATS, transforms=add_one) as loader:
        inputs_single, target_single = next(iter(loader))
    assert torch.equal(inputs["c1"], inputs_single["c1"]) and torch.equal(target, target_single * 2)


def test_null_lists_are_empty_and_null_elements_are_errors():
    frame = pd.DataFrame({"y": [1.0, 0.0, 1.0]})
    frame["l"] = pd.Series([[1], None, [2, 3]], dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    with Loader(nvt.Dataset(frame), batch_size=3, labels=["y"]) as loader:
        inputs, _ = next(iter(loader))
    assert inputs["l__offsets"].tolist() == [0, 1, 1, 3]
    frame["l"] = pd.Series([[1], [None], [2]], dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    with Loader(nvt.Dataset(frame), batch_size=3, labels=["y"]) as loader:
        with pytest.raises(ValueError, match="'l'.*null"):
            list(loader)


def test_sparse_names_must_be_list_columns(dataset):
    with pytest.raises(TypeError, match="c1"):
        Loader(dataset, batch_size=8, sparse_names=["c1"])
