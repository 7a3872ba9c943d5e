"""TorchAsyncItr: tensors, column roles, nulls, shuffling and exact coverage."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch
from loader_data import CATS, CONTS, LABEL, NUM_ROWS

import tabflow as nvt
from tabflow.loader._plan import default_epoch_seed
from tabflow.loader.torch import DLDataLoader, Loader, TorchAsyncItr


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


def _same_batches(left, right):
    assert len(left) == len(right)
    for (inputs, y), (expected, expected_y) in zip(left, right):
        assert sorted(inputs) == sorted(expected)
        for key in inputs:
            torch.testing.assert_close(inputs[key], expected[key], equal_nan=True)
        torch.testing.assert_close(y, expected_y)


def test_a_list_column_gives_nvtabulars_dict_batches(dataset, frame):
    # NVTabular 23.08's TorchAsyncItr: (inputs, targets), list columns as values/offsets.
    with TorchAsyncItr(dataset, batch_size=64, cats=["row_id", "tags"], conts=CONTS, labels=[LABEL]) as itr:
        batches = list(itr)
        assert itr.output_schema.column_names == ["row_id", "tags", *CONTS, LABEL]
    with Loader(dataset, batch_size=64, cats=["row_id", "tags"], conts=CONTS, labels=[LABEL]) as loader:
        _same_batches(batches, list(loader))
    ids = torch.cat([inputs["row_id"] for inputs, _ in batches])
    assert ids.tolist() == list(range(NUM_ROWS))
    offsets = [inputs["tags__offsets"] for inputs, _ in batches]
    assert sum(len(o) - 1 for o in offsets) == NUM_ROWS
    values = torch.cat([inputs["tags__values"] for inputs, _ in batches]).tolist()
    assert values == [v for row in frame["tags"] for v in (row if isinstance(row, (list, np.ndarray)) else [])]
    assert DLDataLoader(TorchAsyncItr(dataset, batch_size=8, cats=["tags"], conts=[], labels=[LABEL])).n_inp == 1


@pytest.mark.parametrize("sparse", [{"sparse_names": ["tags"]}, {"sparse_max": {"tags": 40}, "sparse_as_dense": True}])
def test_sparse_arguments_give_the_loaders_layout(dataset, sparse):
    args = dict(cats=[*CATS, "tags"], conts=CONTS, labels=[LABEL], batch_size=32, **sparse)
    with TorchAsyncItr(dataset, **args) as itr, Loader(dataset, **args) as loader:
        got, expected = list(itr), list(loader)
    key = "tags"
    assert got[0][0][key].layout == (torch.sparse_coo if "sparse_names" in sparse else torch.strided)
    for (inputs, _), (reference, _) in zip(got, expected):
        torch.testing.assert_close(inputs[key].to_dense(), reference[key].to_dense())


def test_a_list_target_is_refused(dataset):
    with pytest.raises(TypeError, match="'tags'.*scalar"):
        TorchAsyncItr(dataset, batch_size=8, cats=CATS, conts=CONTS, labels=["tags"])


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


def _epochs(itr, n):
    """Row ids of ``n`` epochs and the seed each was drawn from (read from ``state_dict``)."""
    orders, seeds = [], []
    for _ in range(n):
        ids = []
        for batch in itr:
            if not ids:
                seeds.append(itr.state_dict()["seed"])
            ids += batch[0][:, 0].tolist()
        orders.append(ids)
    return orders, seeds


def _mixed(seed, epoch):
    # The documented mix, spelled out with NumPy alone: child `epoch` of `seed`.
    return int(np.random.SeedSequence(seed).spawn(epoch + 1)[epoch].generate_state(1, np.uint64)[0])


def test_default_shuffle_is_reproducible_and_new_each_epoch(dataset):
    orders, seeds = _epochs(_itr(dataset, shuffle=True), 3)
    assert (orders, seeds) == _epochs(_itr(dataset, shuffle=True), 3)
    assert seeds == [default_epoch_seed(e) for e in range(3)]
    assert len({tuple(o) for o in orders}) == 3
    assert all(sorted(o) == list(range(NUM_ROWS)) for o in orders)


def test_constant_seed_fn_gives_a_new_reproducible_order_every_epoch(dataset):
    orders, seeds = _epochs(_itr(dataset, shuffle=True, seed_fn=lambda: 1234), 3)
    assert seeds == [_mixed(1234, e) for e in range(3)]
    assert len({tuple(o) for o in orders}) == 3
    assert all(sorted(o) == list(range(NUM_ROWS)) for o in orders)
    # A fresh loader (another run, or another rank) with the same seed_fn repeats them.
    assert _epochs(_itr(dataset, shuffle=True, seed_fn=lambda: 1234), 3) == (orders, seeds)
    # ... and the seed is used: another constant gives other orders.
    other, _ = _epochs(_itr(dataset, shuffle=True, seed_fn=lambda: 4321), 3)
    assert all(a != b for a, b in zip(orders, other))


def test_consecutive_seeds_do_not_repeat_an_epoch(dataset):
    # With `seed + epoch`, seed 5 in epoch 1 would be seed 6 in epoch 0: the same order.
    five, _ = _epochs(_itr(dataset, shuffle=True, seed_fn=lambda: 5), 2)
    six, _ = _epochs(_itr(dataset, shuffle=True, seed_fn=lambda: 6), 2)
    assert len({tuple(o) for o in five + six}) == 4
    # A seed_fn counting up is mixed with the epoch as well: the order depends on both.
    counted, seeds = _epochs(_itr(dataset, shuffle=True, seed_fn=itertools.count(5).__next__), 2)
    assert seeds == [_mixed(5, 0), _mixed(6, 1)]
    assert counted == [five[0], six[1]]


def test_seed_fn_must_return_a_non_negative_integer(dataset):
    itr = _itr(dataset, shuffle=True, seed_fn=lambda: -1)
    with pytest.raises(ValueError, match="seed_fn must return a non-negative integer, got -1"):
        iter(itr)
    # An integer tensor (say, one broadcast from rank 0) counts as its value.
    from_tensor = _epochs(_itr(dataset, shuffle=True, seed_fn=lambda: torch.tensor(7)), 2)
    assert from_tensor == _epochs(_itr(dataset, shuffle=True, seed_fn=lambda: 7), 2)


def test_in_memory_dataset(frame):
    ds = nvt.Dataset(frame.drop(columns=["tags"]), npartitions=4)
    with TorchAsyncItr(ds, batch_size=100, cats=["row_id"], conts=CONTS, labels=[LABEL], shuffle=True, parts_per_chunk=2) as itr:
        ids = torch.cat([b[0][:, 0] for b in itr])
    assert sorted(ids.tolist()) == list(range(NUM_ROWS))
