"""TorchAsyncItr: tensors, column roles, nulls, shuffling and exact coverage."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import tabflow as nvt
from tabflow.loader.torch import TorchAsyncItr

from loader_data import CATS, CONTS, LABEL, NUM_ROWS, write_dataset


def _itr(dataset, **kwargs):
    kwargs.setdefault("batch_size", 50)
    return TorchAsyncItr(dataset, cats=["row_id", *CATS], conts=CONTS, labels=[LABEL], **kwargs)


def test_batches_hold_the_rows_in_order(dataset, frame):
    with _itr(dataset, batch_size=64) as itr:
        batches = list(itr)
    assert [len(b[0]) for b in batches] == [64, 64, 64, NUM_ROWS - 192]
    x_cat = torch.cat([b[0] for b in batches])
    x_cont = torch.cat([b[1] for b in batches])
    y = torch.cat([b[2] for b in batches])
    assert x_cat.dtype == torch.int64 and x_cat.shape == (NUM_ROWS, 3)
    assert x_cont.dtype == torch.float32 and x_cont.shape == (NUM_ROWS, 2)
    assert y.dtype == torch.float32 and y.shape == (NUM_ROWS,)
    np.testing.assert_array_equal(x_cat.numpy(), frame[["row_id", *CATS]].to_numpy())
    # Nulls in continuous columns arrive as NaN.
    np.testing.assert_allclose(x_cont.numpy(), frame[CONTS].to_numpy(dtype="float32"), equal_nan=True)
    assert torch.isnan(x_cont[::7, 0]).all()
    assert y.long().tolist() == frame[LABEL].tolist()
    assert itr.num_rows_processed == NUM_ROWS


def test_roles_default_to_schema_tags(dataset):
    itr = TorchAsyncItr(dataset, batch_size=10)
    assert (itr.cat_names, itr.cont_names, itr.label_names) == (CATS, CONTS, [LABEL])
    x_cat, x_cont, y = next(iter(itr))
    assert x_cat.shape == (10, 2) and x_cont.shape == (10, 2) and y.shape == (10,)
    itr.shutdown()


def test_several_labels_give_a_matrix(dataset):
    with TorchAsyncItr(dataset, batch_size=8, cats=CATS, conts=CONTS, labels=[LABEL, "c1"]) as itr:
        _, _, y = next(iter(itr))
    assert y.shape == (8, 2) and y.dtype == torch.float32


def test_list_column_points_to_loader(dataset):
    with pytest.raises(TypeError, match="tags.*Loader"):
        TorchAsyncItr(dataset, batch_size=8, cats=["tags"], conts=CONTS, labels=[LABEL])


def test_nvtabular_argument_order_and_defaults(dataset, frame):
    # NVTabular's positional order: dataset, cats, conts, labels, batch_size; batch_size defaults to 1.
    with TorchAsyncItr(dataset, CATS, CONTS, [LABEL], 16) as itr:
        x_cat, x_cont, y = next(iter(itr))
    assert x_cat.shape == (16, 2) and x_cont.shape == (16, 2)
    np.testing.assert_array_equal(x_cat.numpy(), frame[CATS].to_numpy()[:16])
    with TorchAsyncItr(dataset, CATS, CONTS, [LABEL]) as itr:
        assert len(itr) == NUM_ROWS and next(iter(itr))[0].shape == (1, 2)
    with TorchAsyncItr(dataset, CATS, CONTS, [LABEL], batch_size=8, sparse_names=[], sparse_max={}) as itr:
        assert len(itr) == math.ceil(NUM_ROWS / 8)
    with pytest.raises(TypeError, match=r"categorical columns must be column names, got 64.*batch_size=\.\.\. by keyword"):
        TorchAsyncItr(dataset, 64, CATS, CONTS)


@pytest.mark.parametrize("sparse", [{"sparse_names": ["tags"]}, {"sparse_max": {"tags": 4}}, {"sparse_as_dense": True}])
def test_sparse_arguments_point_to_loader(dataset, sparse):
    with pytest.raises(TypeError, match="sparse_names, sparse_max and sparse_as_dense.*Loader"):
        TorchAsyncItr(dataset, cats=CATS, conts=CONTS, labels=[LABEL], batch_size=8, **sparse)


def test_a_role_without_columns_is_an_empty_matrix(dataset):
    with TorchAsyncItr(dataset, cats=CATS, conts=[], labels=[LABEL], batch_size=8) as itr:
        x_cat, x_cont, y = next(iter(itr))
    assert x_cat.shape == (8, 2) and x_cont.shape == (8, 0) and x_cont.dtype == torch.float32


def test_unknown_column_is_named(dataset):
    with pytest.raises(KeyError, match="nope"):
        TorchAsyncItr(dataset, batch_size=8, cats=["nope"], conts=CONTS, labels=[LABEL])


def test_null_in_categorical_is_an_error_naming_it(tmp_path):
    frame = pd.DataFrame({"c": pd.array([1, 2, None, 4], dtype="Int64"), "x": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]})
    frame.to_parquet(tmp_path / "p.parquet")
    ds = nvt.Dataset(str(tmp_path), engine="parquet", cpu=True)
    with TorchAsyncItr(ds, batch_size=2, cats=["c"], conts=["x"], labels=["y"]) as itr:
        with pytest.raises(ValueError, match="'c'.*null"):
            list(itr)


def test_masked_integers_without_nulls_convert(tmp_path):
    frame = pd.DataFrame({"c": pd.array([1, 2, 3], dtype="Int64"), "x": pd.array([1, None, 3], dtype="Int64"), "y": [0, 1, 0]})
    with TorchAsyncItr(nvt.Dataset(frame), batch_size=3, cats=["c"], conts=["x"], labels=["y"]) as itr:
        x_cat, x_cont, _ = next(iter(itr))
    assert x_cat[:, 0].tolist() == [1, 2, 3]
    assert torch.isnan(x_cont[1, 0]) and x_cont[2, 0] == 3


def test_string_column_is_rejected(tmp_path):
    frame = pd.DataFrame({"s": ["a", "b"], "y": [0, 1]})
    with pytest.raises(TypeError, match="Categorify"):
        TorchAsyncItr(nvt.Dataset(frame), batch_size=2, cats=["s"], conts=[], labels=["y"])


@pytest.mark.parametrize("parts_per_chunk", [1, 3])
@pytest.mark.parametrize("batch_size", [16, 50, 1000])
@pytest.mark.parametrize("drop_last", [False, True])
def test_every_row_once_per_epoch(dataset, parts_per_chunk, batch_size, drop_last):
    itr = _itr(dataset, batch_size=batch_size, shuffle=True, parts_per_chunk=parts_per_chunk, drop_last=drop_last)
    expected_batches = NUM_ROWS // batch_size if drop_last else math.ceil(NUM_ROWS / batch_size)
    assert len(itr) == expected_batches
    orders = []
    for _ in range(3):
        batches = list(itr)
        assert len(batches) == expected_batches
        sizes = [len(b[0]) for b in batches]
        assert all(s == batch_size for s in sizes[:-1])
        ids = torch.cat([b[0][:, 0] for b in batches]).tolist() if batches else []
        assert len(ids) == len(set(ids))
        if drop_last:
            assert len(ids) == expected_batches * batch_size
        else:
            assert sorted(ids) == list(range(NUM_ROWS))
        orders.append(ids)
    if batch_size < NUM_ROWS:
        assert orders[0] != orders[1] != orders[2]


def test_shuffle_is_reproducible_and_seed_fn_is_used(dataset):
    def epoch_ids(itr):
        return torch.cat([b[0][:, 0] for b in itr]).tolist()

    first, second = _itr(dataset, shuffle=True), _itr(dataset, shuffle=True)
    assert [epoch_ids(first) for _ in range(2)] == [epoch_ids(second) for _ in range(2)]
    seeds = iter([5, 5, 6])
    seeded = _itr(dataset, shuffle=True, seed_fn=lambda: next(seeds))
    a, b, c = epoch_ids(seeded), epoch_ids(seeded), epoch_ids(seeded)
    assert a == b != c


def test_in_memory_dataset(frame):
    ds = nvt.Dataset(frame.drop(columns=["tags"]), npartitions=4)
    with TorchAsyncItr(ds, batch_size=100, cats=["row_id"], conts=CONTS, labels=[LABEL], shuffle=True, parts_per_chunk=2) as itr:
        ids = torch.cat([b[0][:, 0] for b in itr])
    assert sorted(ids.tolist()) == list(range(NUM_ROWS))
