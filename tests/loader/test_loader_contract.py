"""The loader contract, run over every loader (the two PyTorch ones and the array loader): every row once per epoch (shuffled, chunked,
split between ranks), resume mid-epoch equal to an uninterrupted run, an error in the
reading threads raised in the consumer with its type, shutdown leaving no thread, and a new
epoch after a ``break``.

``TorchAsyncItr`` converts dense columns in the reading threads and shuffles tensors;
``Loader`` here reads every column, the list column included, so it shuffles frames: the
two chunk paths of the pipeline. The reference is the data as written (``row_id`` is the
row's position), read back with pandas.
"""

from __future__ import annotations

import gc
import os
import threading

import pytest
import torch
from loader_data import CATS, CONTS, LABEL, NUM_ROWS, write_dataset

import tabflow as nvt
from tabflow.io.readers import DatasetReadError
from tabflow.loader import array
from tabflow.loader.torch import Loader, TorchAsyncItr


def _tuple_loader(dataset, **kwargs):
    return TorchAsyncItr(dataset, cats=["row_id", *CATS], conts=CONTS, labels=[LABEL], **kwargs)


def _dict_loader(dataset, **kwargs):
    return Loader(dataset, labels=[LABEL], **kwargs)


def _tuple_ids(batch):
    return batch[0][:, 0]


def _dict_ids(batch):
    return batch[0]["row_id"]


def _array_loader(dataset, batch_size=1, **kwargs):
    return array.Loader(dataset, batch_size, **kwargs)


def _array_ids(batch):
    assert type(batch[0]["row_id"]).__name__ == "ndarray"
    return torch.from_numpy(batch[0]["row_id"])


LOADERS = {
    "TorchAsyncItr": (_tuple_loader, _tuple_ids),
    "Loader": (_dict_loader, _dict_ids),
    "array.Loader": (_array_loader, _array_ids),
}


@pytest.fixture(params=sorted(LOADERS))
def kind(request):
    return LOADERS[request.param]


def _epoch(loader, ids_of, frame=None):
    """Row ids of one epoch, batch by batch; with ``frame``, each batch's values are checked."""
    epoch = []
    for batch in loader:
        ids = ids_of(batch)
        if frame is not None:
            _check_values(batch, ids, frame)
        epoch.append(ids.tolist())
    return epoch


def _check_values(batch, ids, frame):
    expected = frame.iloc[ids.numpy()]
    if isinstance(batch[0], dict):
        inputs, target = batch
        assert target.tolist() == expected[LABEL].tolist()
        offsets, values = inputs["tags__offsets"], inputs["tags__values"]
        rows = [values[offsets[i] : offsets[i + 1]].tolist() for i in range(len(ids))]
        assert rows == [list(t) for t in expected["tags"]]
    else:
        assert batch[0][:, 1:].tolist() == expected[CATS].to_numpy().tolist()
        assert batch[2].tolist() == expected[LABEL].astype("float32").tolist()


def _loader_threads():
    return [t for t in threading.enumerate() if t.name.startswith("tabflow") and t.is_alive()]


@pytest.mark.parametrize("global_size", [1, 3])
@pytest.mark.parametrize("parts_per_chunk", [1, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_every_row_once_per_epoch(dataset, frame, kind, shuffle, parts_per_chunk, global_size):
    make, ids_of = kind
    batch_size, share = 23, NUM_ROWS // global_size
    loaders = [make(dataset, batch_size=batch_size, shuffle=shuffle, parts_per_chunk=parts_per_chunk,
                    global_size=global_size, global_rank=rank) for rank in range(global_size)]
    orders = []
    for epoch in range(2):
        seen = []
        for loader in loaders:
            batches = _epoch(loader, ids_of, frame if epoch == 0 else None)
            assert len(batches) == len(loader) == -(-share // batch_size)
            assert all(len(b) == batch_size for b in batches[:-1])
            ids = [i for b in batches for i in b]
            assert len(ids) == share and loader.num_rows_processed == share
            seen += ids
        assert len(set(seen)) == len(seen) == share * global_size
        assert set(seen) <= set(range(NUM_ROWS))
        orders.append(seen)
    if shuffle:
        assert orders[0] != orders[1]
    elif global_size == 1:
        assert orders == [list(range(NUM_ROWS))] * 2
    for loader in loaders:
        loader.shutdown()


@pytest.mark.parametrize("shuffle,parts_per_chunk,k", [(True, 3, 4), (True, 1, 1), (False, 2, 6)])
def test_resume_mid_epoch_equals_an_uninterrupted_run(dataset, kind, shuffle, parts_per_chunk, k):
    make, ids_of = kind
    options = dict(batch_size=16, shuffle=shuffle, parts_per_chunk=parts_per_chunk, seed_fn=lambda: 7)
    with make(dataset, **options) as reference:
        epochs = [_epoch(reference, ids_of) for _ in range(3)]

    with make(dataset, **options) as first:
        assert _epoch(first, ids_of) == epochs[0]
        it = iter(first)
        assert [ids_of(next(it)).tolist() for _ in range(k)] == epochs[1][:k]
        state = first.state_dict()
    assert (state["epoch"], state["batches"]) == (1, k)

    with make(dataset, **options) as resumed:
        resumed.load_state_dict(state)
        assert resumed.state_dict() == state
        assert _epoch(resumed, ids_of) == epochs[1][k:]
        assert resumed.num_rows_processed == NUM_ROWS
        assert _epoch(resumed, ids_of) == epochs[2]


class _Boom(RuntimeError):
    """An error type of the test's own, raised inside a reading thread."""


def test_a_read_error_surfaces_in_the_consumer_with_its_type(tmp_path, frame, kind):
    make, ids_of = kind
    directory = write_dataset(str(tmp_path / "d"), frame)
    dataset = nvt.Dataset(directory, engine="parquet", part_size=1, cpu=True)
    dataset.partition_lengths()  # planned while the file existed: the read itself fails, in a thread
    os.remove(os.path.join(directory, "part_2.parquet"))
    with make(dataset, batch_size=50) as loader:
        seen = []
        with pytest.raises(DatasetReadError, match="part_2.parquet"):
            for batch in loader:
                seen.append(ids_of(batch))
        assert seen  # the rows before the bad file were delivered
        assert not _loader_threads()


def test_an_error_of_any_type_raised_while_reading_is_forwarded(dataset, kind, monkeypatch):
    make, ids_of = kind
    reads = []
    to_iter = type(dataset).to_iter

    def failing(self, *args, **kwargs):
        for k, part in enumerate(to_iter(self, *args, **kwargs)):
            reads.append(threading.current_thread().name)
            if k == 3:
                raise _Boom("partition 3 is unreadable")
            yield part

    monkeypatch.setattr(type(dataset), "to_iter", failing)
    with make(dataset, batch_size=10, shuffle=True) as loader:
        with pytest.raises(_Boom, match="partition 3 is unreadable"):
            list(loader)
        assert not _loader_threads()
    assert reads and threading.main_thread().name not in reads  # it was raised in the loader thread
    # The loader stays usable: the next epoch meets the error again, at the same place.
    with make(dataset, batch_size=10) as loader, pytest.raises(_Boom):
        list(loader)


def test_shutdown_stops_every_thread(dataset, kind):
    make, ids_of = kind
    loader = make(dataset, batch_size=8, shuffle=True)
    next(iter(loader))
    assert _loader_threads()
    loader.shutdown()
    assert not _loader_threads()
    loader.shutdown()  # idempotent
    next(iter(loader))
    loader.stop()  # NVTabular's name
    assert not _loader_threads()
    with make(dataset, batch_size=8) as loader:
        next(iter(loader))
    assert not _loader_threads()
    loader = make(dataset, batch_size=8)
    next(iter(loader))
    del loader
    gc.collect()
    assert not _loader_threads()


def test_iterating_again_after_a_break_starts_a_new_epoch(dataset, kind):
    make, ids_of = kind
    loader = make(dataset, batch_size=20, shuffle=True, parts_per_chunk=2)
    for k, _ in enumerate(loader):
        if k == 2:
            break
    assert loader.state_dict()["epoch"] == 0
    epoch = _epoch(loader, ids_of)
    assert sorted(i for b in epoch for i in b) == list(range(NUM_ROWS))
    assert loader.state_dict()["epoch"] == 2  # epoch 0 was abandoned, epoch 1 ran to its end
    loader.shutdown()
    assert not _loader_threads()


def test_state_is_derived_from_the_options(dataset, kind):
    make, ids_of = kind
    loader = make(dataset, batch_size=16, global_size=2, global_rank=1, drop_last=True)
    state = loader.state_dict()
    assert {k: state[k] for k in ("batch_size", "global_rank", "global_size")} == loader.options.state()
    clone = loader.new(batch_size=8)
    assert clone.options == loader.options.replace(batch_size=8)
    assert type(clone) is type(loader) and clone.label_names == loader.label_names
    with pytest.raises(ValueError, match="batch_size"):
        clone.load_state_dict(state)
    assert torch.equal(ids_of(next(iter(clone))), ids_of(next(iter(loader.new(batch_size=8)))))
    for each in (loader, clone):
        each.shutdown()


def test_options_assigned_between_epochs_apply_to_the_next_epoch(dataset, frame, kind):
    # merlin's loaders keep batch_size, shuffle, drop_last, ... as plain attributes that
    # scripts assign between epochs (NVTabular's test_kill_dl sweeps batch sizes that way).
    make, ids_of = kind
    loader = make(dataset, batch_size=64)
    first = _epoch(loader, ids_of, frame)
    assert [len(b) for b in first[:-1]] == [64] * (len(first) - 1)

    loader.batch_size, loader.drop_last = 100, True
    assert (loader.batch_size, loader.drop_last, len(loader)) == (100, True, NUM_ROWS // 100)
    second = _epoch(loader, ids_of, frame)
    # the same row order as a loader built with these options, every batch full
    assert second == _epoch(make(dataset, batch_size=100, drop_last=True), ids_of)
    assert [len(b) for b in second] == [100] * (NUM_ROWS // 100)
    assert [i for b in second for i in b] == list(range(NUM_ROWS // 100 * 100))

    loader.shuffle, loader.seed_fn = True, lambda: 7
    third = _epoch(loader, ids_of, frame)
    rows = [i for b in third for i in b]
    assert [len(b) for b in third] == [100] * (NUM_ROWS // 100)
    assert len(set(rows)) == len(rows) and set(rows) <= set(range(NUM_ROWS))
    assert rows != sorted(rows)
    loader.shutdown()


def test_an_option_assigned_mid_epoch_waits_for_the_next_epoch(dataset, kind):
    make, ids_of = kind
    loader = make(dataset, batch_size=20)
    batches = iter(loader)
    next(batches), next(batches)
    loader.batch_size = 50
    # the epoch in progress keeps its batches, and its state says so: it resumes as saved
    assert ids_of(next(batches)).tolist() == list(range(40, 60))
    state = loader.state_dict()
    assert (state["batch_size"], state["batches"]) == (20, 3)
    resumed = make(dataset, batch_size=20)
    resumed.load_state_dict(state)
    assert ids_of(next(iter(resumed))).tolist() == list(range(60, 80))
    sizes = [len(b) for b in _epoch(loader, ids_of)]
    assert len(sizes) == -(-NUM_ROWS // 50) and sizes[:-1] == [50] * (len(sizes) - 1)
    for each in (loader, resumed):
        each.shutdown()


def test_an_invalid_assigned_option_is_refused_with_its_name_and_changes_nothing(dataset, kind):
    make, _ = kind
    loader = make(dataset, batch_size=20)
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        loader.batch_size = 0
    with pytest.raises(TypeError, match="seed_fn must be a callable"):
        loader.seed_fn = 3
    assert (loader.batch_size, loader.seed_fn) == (20, None)
    loader.shutdown()
