"""NVTabular 23.08 / merlin-dataloader 23.08 loader behaviour, pinned against plain references.

Each test names the behaviour it pins, as read from ``merlin/dataloader/loader_base.py``,
``merlin/dataloader/torch.py`` and ``nvtabular/loader/torch.py`` of 23.08, and computes
the expected batches from the pandas frame: the data is one frame of ``N`` rows whose
batches of ``BS`` rows are ``frame[i * BS:(i + 1) * BS]`` without shuffling.
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
import torch

import tabflow as nvt
from tabflow import ops
from tabflow.loader.torch import DLDataLoader, Loader, TorchAsyncItr

N, BS = 23, 5
BATCHES = -(-N // BS)


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": np.arange(N), "b": rng.integers(1, 9, N), "x": rng.normal(size=N),
                         "w": rng.random(N), "y": rng.integers(0, 2, N)})


@pytest.fixture
def dataset(frame):
    return nvt.Dataset(frame, npartitions=3)


def _rows(frame, k):
    return frame.iloc[k * BS : (k + 1) * BS]


def _dict_loader(dataset, **kwargs):
    return Loader(dataset, batch_size=BS, labels=["y"], **kwargs)


def _tuple_loader(dataset, **kwargs):
    return TorchAsyncItr(dataset, cats=["a", "b"], conts=["x"], labels=["y"], batch_size=BS, **kwargs)


def _loader_threads():
    return [t for t in threading.enumerate() if t.name.startswith("tabflow") and t.is_alive()]


# ------------------------------------------------------------------ iteration protocol
@pytest.mark.parametrize("make", [_dict_loader, _tuple_loader])
def test_next_before_iter_starts_an_epoch(dataset, frame, make):
    # merlin: `if self._workers is None: LoaderBase.__iter__(self)` in _get_next_batch, so
    # Keras can call next() cold; after an epoch's StopIteration the next call starts again.
    loader = make(dataset)
    first = [next(loader) for _ in range(BATCHES)]
    with pytest.raises(StopIteration):
        next(loader)
    again = next(loader)
    ids = [b[0]["a"] if isinstance(b[0], dict) else b[0][:, 0] for b in [*first, again]]
    assert [t.tolist() for t in ids] == [_rows(frame, k)["a"].tolist() for k in [*range(BATCHES), 0]]
    loader.stop()


def test_peek_returns_the_next_batch_without_consuming_it(dataset, frame):
    # merlin: peek() -> _peek_next_batch(), which puts the batch back in front of the iterator.
    loader = _dict_loader(dataset)
    peeked = loader.peek()  # starts an epoch, as next() does
    assert loader.peek() is peeked
    assert loader.state_dict()["batches"] == 0 and loader.num_rows_processed == 0
    got = [next(loader)]
    assert got[0] is peeked
    assert loader.peek()[0]["a"].tolist() == _rows(frame, 1)["a"].tolist()
    got += [next(loader) for _ in range(BATCHES - 1)]
    assert [b[0]["a"].tolist() for b in got] == [_rows(frame, k)["a"].tolist() for k in range(BATCHES)]
    with pytest.raises(StopIteration):
        loader.peek()
    loader.stop()


def test_stop_is_shutdown(dataset):
    # NVTabular/merlin: stop() halts the worker threads (scripts call it after `break`).
    loader = _dict_loader(dataset)
    next(iter(loader))
    assert _loader_threads()
    loader.stop()
    assert not _loader_threads()
    assert len(list(loader)) == BATCHES  # usable again


def test_getitem_returns_the_next_batch(dataset, frame):
    # merlin: __getitem__(index) returns self.__next__(), whatever the index. tabflow's rolls
    # over into the next epoch instead of raising StopIteration out of [].
    loader = _dict_loader(dataset)
    got = [loader[k][0]["a"].tolist() for k in (7, 0, 3, 3, 3, 0)]
    expected = [_rows(frame, k)["a"].tolist() for k in range(BATCHES)]
    assert got == expected + expected[:1]
    loader.stop()


def test_map_applies_fn_to_every_batch_and_returns_self(dataset, frame):
    # merlin torch Loader.map: `to_return = map_fn(*to_return)` for each fn, in order (e.g. to
    # add a sample weight).
    loader = _dict_loader(dataset)
    assert loader.map(lambda X, y: (X, y, X.pop("w"))) is loader
    loader.map(lambda X, y, w: (X, y, w * 2))
    batches = list(loader)
    assert [len(b) for b in batches] == [3] * BATCHES
    for k, (inputs, _, weight) in enumerate(batches):
        assert "w" not in inputs
        np.testing.assert_allclose(weight.numpy(), 2 * _rows(frame, k)["w"].to_numpy(dtype="float32"))
    with _tuple_loader(dataset).map(lambda x_cat, x_cont, y: (x_cat + 1, x_cont, y)) as itr:
        assert next(iter(itr))[0][:, 0].tolist() == (_rows(frame, 0)["a"] + 1).tolist()


def test_epochs_iterates_n_epochs_per_iter(dataset, frame):
    # merlin: epochs(n) returns a copy that runs n epochs per iteration (self for the same n).
    loader = _dict_loader(dataset, shuffle=True)
    assert loader.epochs(1) is loader
    twice = loader.epochs(2)
    assert twice is not loader and len(twice) == 2 * len(loader) == 2 * BATCHES
    batches = list(twice)
    assert len(batches) == 2 * BATCHES
    first = torch.cat([b[0]["a"] for b in batches[:BATCHES]]).tolist()
    second = torch.cat([b[0]["a"] for b in batches[BATCHES:]]).tolist()
    assert sorted(first) == sorted(second) == list(range(N)) and first != second
    assert twice.state_dict()["epoch"] == 2
    with pytest.raises(ValueError, match="positive"):
        loader.epochs(0)


# ------------------------------------------------------------------------------ schemas
def test_input_and_output_schema(dataset, frame):
    # merlin: input_schema is the dataset's schema, settable before the first batch (the
    # roles are read again from it); output_schema describes what the batches hold.
    loader = _dict_loader(dataset)
    assert loader.input_schema.column_names == list(frame.columns)
    assert loader.output_schema.column_names == ["a", "b", "x", "w", "y"]
    assert loader.output_schema["x"].dtype == "float32" and loader.output_schema["a"].dtype == "int64"
    loader.input_schema = loader.input_schema.without(["w"])
    inputs, _ = next(iter(loader))
    assert sorted(inputs) == ["a", "b", "x"]
    with pytest.raises(RuntimeError, match="in progress"):
        loader.input_schema = dataset.schema
    loader.stop()
    assert sorted(next(iter(loader.new()))[0]) == ["a", "b", "x"]  # new() keeps it
    itr = TorchAsyncItr(dataset, cats=["a"], conts=["x"], labels=["y"])
    assert itr.output_schema.dtypes == {"a": "int64", "x": "float32", "y": "float32"}
    itr.stop()


# --------------------------------------------------------------------------- transforms
def test_transforms_take_ops_applied_to_the_inputs(dataset, frame):
    # merlin: transforms=[Operator, ...] run on the input dict (labels excluded) of each batch.
    with _dict_loader(dataset, transforms=[ops.Rename(postfix="_x")]) as loader:
        inputs, y = next(iter(loader))
        assert sorted(inputs) == ["a_x", "b_x", "w_x", "x_x"] and y.tolist() == _rows(frame, 0)["y"].tolist()
        assert loader.output_schema.column_names == ["a_x", "b_x", "x_x", "w_x", "y"]
    node = ["x"] >> ops.Clip(min_value=0) >> ops.Rename(postfix="_clipped")
    with _dict_loader(dataset, transforms=node) as loader:
        batches = list(loader)
    clipped = torch.cat([inputs["x_clipped"] for inputs, _ in batches]).numpy()
    np.testing.assert_allclose(clipped, frame["x"].clip(lower=0).to_numpy(dtype="float32"))
    assert all(set(inputs) == {"x_clipped"} for inputs, _ in batches)


def test_transforms_mix_ops_and_callables(dataset, frame):
    def add_one(batch):
        inputs, y = batch
        return {name: t + 1 for name, t in inputs.items()}, y

    with _dict_loader(dataset, transforms=[ops.LogOp(), add_one]) as loader:
        inputs, _ = next(iter(loader))
    np.testing.assert_allclose(inputs["a"].numpy(), np.log1p(_rows(frame, 0)["a"].to_numpy()) + 1, rtol=1e-6)
    with pytest.raises(TypeError, match="must come first"):
        _dict_loader(dataset, transforms=[add_one, ops.LogOp()])


def test_transforms_with_statistics_need_a_fitted_workflow(dataset, frame):
    with pytest.raises(ValueError, match="no statistics"):
        _dict_loader(dataset, transforms=[ops.Normalize()])
    workflow = nvt.Workflow(["x"] >> ops.Normalize()).fit(dataset)
    with _dict_loader(dataset, transforms=workflow) as loader:
        x = torch.cat([inputs["x"] for inputs, _ in loader]).numpy()
    reference = (frame["x"] - frame["x"].mean()) / frame["x"].std(ddof=1)
    np.testing.assert_allclose(x, reference.to_numpy(dtype="float32"), rtol=1e-4, atol=1e-5)


def test_transforms_must_keep_every_row(dataset):
    dropping = ["a"] >> ops.Filter(f=lambda df: df["a"] > 3)
    with _dict_loader(dataset, transforms=dropping) as loader, pytest.raises(ValueError, match="keep every row"):
        list(loader)


# ------------------------------------------------------------------------- DLDataLoader
def test_dldataloader_collate_receives_a_list_of_one_batch_by_default(dataset, frame):
    # NVTabular's DLDataLoader is a plain DataLoader subclass: with DataLoader's default
    # batch_size=1, collate_fn gets [batch] (scripts write `collate_fn=lambda b: b[0]`).
    received = []
    dl = DLDataLoader(_tuple_loader(dataset), collate_fn=lambda b: received.append(b) or b[0])
    batches = list(dl)
    assert len(dl) == BATCHES and all(isinstance(b, list) and len(b) == 1 for b in received)
    assert [b[0][:, 0].tolist() for b in batches] == [_rows(frame, k)["a"].tolist() for k in range(BATCHES)]
    explicit = DLDataLoader(_tuple_loader(dataset), batch_size=1, collate_fn=lambda x: x)
    assert all(isinstance(b, list) and len(b) == 1 for b in explicit)
    dl.shutdown()
    explicit.shutdown()


def test_dldataloader_batch_size_none_passes_the_batch(dataset, frame):
    # batch_size=None turns DataLoader's batching off: collate_fn gets each batch itself.
    received = []
    with DLDataLoader(_tuple_loader(dataset), batch_size=None, collate_fn=lambda b: received.append(b) or b) as dl:
        batches = list(dl)
    assert all(isinstance(b, tuple) and len(b) == 3 for b in received)
    assert [b[2].tolist() for b in batches] == [_rows(frame, k)["y"].astype("float32").tolist() for k in range(BATCHES)]


@pytest.mark.parametrize("batch_size", [1, None])
def test_dldataloader_without_collate_fn_delivers_the_batch(dataset, frame, batch_size):
    # DataLoader's default collate would add a leading dimension of 1 (batch_size=1); tabflow
    # delivers the loader's batch unchanged in both modes (see docs/migrating.md, "What differs on purpose").
    with DLDataLoader(_tuple_loader(dataset), batch_size=batch_size) as dl:
        x_cat, x_cont, y = next(iter(dl))
        assert x_cat.shape == (BS, 2) and x_cont.shape == (BS, 1) and dl.n_inp == 2
        assert dl.one_batch()[0].tolist() == x_cat.tolist()


def test_dldataloader_refuses_other_batch_sizes(dataset):
    with pytest.raises(ValueError, match="batch_size=None"):
        DLDataLoader(_tuple_loader(dataset), batch_size=4)


def test_dldataloader_new_and_one_batch_keep_the_mode(dataset, frame):
    dl = DLDataLoader(_tuple_loader(dataset), collate_fn=lambda b: b[0])
    other = dl.new(shuffle=True)
    assert other.batch_size == 1 and other.dataset.shuffle
    assert dl.one_batch()[0][:, 0].tolist() == _rows(frame, 0)["a"].tolist()
    assert dl.n_inp == 2
    for each in (dl, other):
        each.shutdown()


# ------------------------------------------------------------------------- import paths
@pytest.mark.parametrize("name", ["EmbeddingTables", "EmbeddingFeature", "embedding_config", "sparse_and_dense_parameters", "DLRM"])
def test_torch_modules_moved_with_an_import_error_naming_the_new_path(name):
    import importlib

    import tabflow.framework_utils.torch as home
    import tabflow.loader.torch as loader_module

    with pytest.raises(ImportError, match=f"from tabflow.framework_utils.torch import {name}"):
        exec(f"from tabflow.loader.torch import {name}", {})
    assert getattr(importlib.import_module("tabflow.framework_utils.torch"), name) is getattr(home, name)
    with pytest.raises(AttributeError):
        loader_module.no_such_name  # noqa: B018
