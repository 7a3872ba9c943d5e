"""ArrayPool: memory is handed out again only once nothing can reach it, on both loaders too."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
import torch
from loader_data import CATS, CONTS, LABEL, NUM_ROWS

from tabflow.loader._memory import ArrayPool
from tabflow.loader.torch import Loader, TorchAsyncItr


@pytest.mark.parametrize("hold", [
    lambda chunk: chunk[2:5],  # a batch (view)
    lambda chunk: chunk[:, 1],  # a column of it
    lambda chunk: chunk.numpy(),  # a NumPy array on the tensor
    lambda chunk: chunk[1:].numpy()[::2],  # a strided NumPy view of a view
])
def test_array_in_use_is_never_handed_out_until_released(hold):
    pool = ArrayPool()
    array = pool.empty((8, 3), "int64")
    holder = hold(torch.from_numpy(array))
    address = array.__array_interface__["data"][0]
    del array
    again = pool.empty((8, 3), "int64")
    assert again.__array_interface__["data"][0] != address
    del again, holder
    # Nothing refers to the first array any more: it is handed out again.
    addresses = {pool.empty((8, 3), "int64").__array_interface__["data"][0] for _ in range(3)}
    assert address in addresses and len(pool) == 2


def _address(array):
    return array.__array_interface__["data"][0]


def test_blocks_are_shared_by_arrays_of_one_size_whatever_their_shape_and_dtype():
    pool = ArrayPool()
    a = pool.empty((4, 2), "int64")  # 64 bytes
    a_address = _address(a)
    del a
    b = pool.empty((16,), "float32")  # 64 bytes too: the same block
    assert _address(b) == a_address and b.shape == (16,) and b.dtype == np.float32 and b.flags.writeable
    c = pool.empty((5, 2), "int64")  # 80 bytes: a block of the next size
    assert _address(c) != a_address and len(pool) == 2 and pool.nbytes == 64 + 80
    del b
    d = pool.empty((9,), "int64")  # 72 bytes fit in an 80-byte block, not in the free 64-byte one
    assert _address(d) != a_address and len(pool) == 3


def test_empty_arrays_take_no_block():
    pool = ArrayPool()
    assert pool.empty((0, 3), "float32").shape == (0, 3) and len(pool) == 0


def test_free_blocks_beyond_the_spares_are_released():
    pool = ArrayPool(spares=2)
    held = [pool.empty((30,), "int64") for _ in range(6)]  # 240 bytes: 256-byte blocks
    others = [pool.empty((50,), "float32") for _ in range(3)]  # 200 bytes: 224-byte blocks
    assert len(pool) == 9
    del held, others  # e.g. a consumer that kept an epoch lets it go: two spares of each size stay
    assert len(pool) == 4 and pool.nbytes == 2 * 256 + 2 * 224
    again = pool.empty((30,), "int64")  # one of the spares
    assert len(pool) == 4
    del again
    pool.empty((30,), "int64")
    assert len(pool) == 4


def test_capacity_bounds_the_arrays_kept():
    pool = ArrayPool(capacity=2)
    held = [pool.empty((3,), "int64") for _ in range(3)]  # the third is handed out, not kept
    assert len(pool) == 2 and all(h.shape == (3,) for h in held)
    pool.clear()
    assert len(pool) == 0 and pool.nbytes == 0


def test_concurrent_users_never_share_an_array():
    pool = ArrayPool(capacity=8)
    failures = []

    def work(mark):
        for _ in range(300):
            array = pool.empty((64,), "int64")
            array.fill(mark)
            if not (array == mark).all():
                failures.append(mark)

    threads = [threading.Thread(target=work, args=(mark,)) for mark in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and len(pool) <= 8


def test_memory_in_a_reference_cycle_is_released_by_the_collector_not_before():
    # Release follows the objects' lifetime, not a reference count: memory reachable only
    # from garbage the collector has not freed yet (every object on interpreters without
    # reference counting) stays in use until it is collected.
    pool = ArrayPool()
    cycle = [torch.from_numpy(pool.empty((6,), "int64"))[2:]]
    cycle.append(cycle)
    address = cycle[0].data_ptr() - 2 * 8
    gc.disable()
    try:
        del cycle
        assert pool.empty((6,), "int64").__array_interface__["data"][0] != address
        gc.collect()
        handed = {pool.empty((6,), "int64").__array_interface__["data"][0] for _ in range(3)}
    finally:
        gc.enable()
    assert address in handed


def _tuple_loader(dataset):
    return TorchAsyncItr(dataset, batch_size=16, cats=["row_id", *CATS], conts=CONTS, labels=[LABEL], shuffle=True,
                         seed_fn=lambda: 7, parts_per_chunk=2)


def _dict_loader(dataset):
    return Loader(dataset, batch_size=16, cats=["row_id", *CATS], conts=CONTS, labels=[LABEL], shuffle=True,
                  seed_fn=lambda: 7, parts_per_chunk=2)


def _as_columns(batch):
    """``{column: values}`` of a batch of either loader, as NumPy."""
    if isinstance(batch[0], dict):
        inputs, label = batch
        return {**{name: tensor.numpy() for name, tensor in inputs.items()}, LABEL: label.numpy()}
    x_cat, x_cont, label = batch
    return {
        **{name: x_cat[:, k].numpy() for k, name in enumerate(["row_id", *CATS])},
        **{name: x_cont[:, k].numpy() for k, name in enumerate(CONTS)},
        LABEL: label.numpy(),
    }


@pytest.mark.parametrize("make", [_tuple_loader, _dict_loader], ids=["TorchAsyncItr", "Loader"])
def test_kept_batches_are_never_overwritten_and_the_pool_stays_bounded(dataset, frame, make):
    # A consumer that keeps many batches (views of recycled chunk memory) of several epochs
    # while the loader goes on converting and shuffling into recycled memory: every value of
    # every kept batch must still be the dataset's.
    epochs = 8
    kept = []
    with make(dataset) as loader:
        pool = loader._memory
        sizes, sizes_seen, handed = [], set(), 0
        for epoch in range(epochs):
            for number, batch in enumerate(loader):
                handed += 1
                if number % 3 == epoch % 3:
                    kept.append(batch)
                del batch
            sizes_seen |= {block.nbytes for block in pool.blocks()}
            sizes.append(len(pool))
        assert handed == epochs * -(-NUM_ROWS // 16) and len(kept) > epochs * 4
        reference = frame.set_index("row_id")
        for batch in kept:
            columns = _as_columns(batch)
            rows = reference.loc[columns["row_id"]]
            for name in [*CATS, LABEL]:
                np.testing.assert_array_equal(columns[name], rows[name].to_numpy(), err_msg=name)
            for name in CONTS:
                np.testing.assert_array_equal(columns[name], rows[name].to_numpy(dtype="float32"), err_msg=name)
        # In use: the memory the kept batches view, and the few chunks in flight; free: at
        # most the spares of each block size. None of it grows with the batches delivered.
        kept_memory = {t.untyped_storage().data_ptr() for batch in kept for t in torch.utils._pytree.tree_leaves(batch)}
        in_flight = 16
        assert max(sizes) <= pool.spares * len(sizes_seen) + len(kept_memory) + in_flight, (sizes, sizes_seen)
        del kept
        gc.collect()
        assert len(pool) <= pool.spares * len(sizes_seen) + in_flight


def test_at_capacity_a_free_block_of_another_size_makes_room():
    pool = ArrayPool(spares=4, capacity=3)
    small = [pool.empty((8,), "int64") for _ in range(3)]  # 64-byte blocks fill the pool
    del small  # all three are free spares now
    large = pool.empty((100,), "int64")  # 800 bytes (an 896-byte block): a 64-byte spare is dropped for it
    assert len(pool) == 3 and sorted(b.nbytes for b in pool.blocks()) == [64, 64, 896]
    address = _address(large)
    del large
    assert _address(pool.empty((100,), "int64")) == address  # kept, so handed out again
    held = [pool.empty((8,), "int64") for _ in range(3)]  # two spares, one made past the capacity
    assert len(pool) == 3 and all(h.shape == (8,) for h in held)


def test_a_lease_ending_in_other_threads_and_in_the_collector_keeps_the_books_right():
    # Arrays are freed by threads other than the one that took them, some only by the
    # garbage collector (reference cycles), while other threads take arrays: no array is
    # shared, nothing raises, and the pool's count matches its blocks at the end.
    pool = ArrayPool(spares=2, capacity=16)
    handoff: list = []
    failures: list = []
    lock = threading.Lock()

    def take(mark):
        for step in range(400):
            array = pool.empty((32 + step % 3 * 8,), "int64")
            array.fill(mark)
            holder = [torch.from_numpy(array)[1:]]
            if step % 5 == 0:
                holder.append(holder)  # a cycle: freed by the collector, in whichever thread runs it
            with lock:
                handoff.append((mark, array, holder))
            del array, holder
            if step % 50 == 0:
                gc.collect()

    def free():
        for _ in range(1600):
            with lock:
                item = handoff.pop(0) if handoff else None
            if item is not None:
                mark, array, holder = item
                if not (array == mark).all():
                    failures.append(mark)
                del item, array, holder
            len(pool)

    threads = [threading.Thread(target=take, args=(mark,)) for mark in range(3)] + [threading.Thread(target=free)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    handoff.clear()
    gc.collect()
    assert failures == []
    assert len(pool) == len(pool.blocks()) <= 16
    free_blocks = {id(b) for b in pool.blocks()}
    again = [pool.empty((32,), "int64") for _ in range(len(free_blocks) + 2)]
    assert len({_address(a) for a in again}) == len(again)  # every kept block is free again, once each


def test_memory_released_after_clear_is_never_handed_out_again():
    pool = ArrayPool()
    held = pool.empty((4,), "float32")
    address = _address(held)
    pool.clear()
    assert len(pool) == 0
    del held  # its lease ends after clear(): the block goes to the allocator, not the pool
    assert len(pool) == 0 and pool.nbytes == 0
    taken = [pool.empty((4,), "float32") for _ in range(3)]
    assert len(pool) == 3 and sum(_address(a) == address for a in taken) <= 1  # a fresh allocation may reuse the address


def test_object_arrays_are_refused():
    with pytest.raises(TypeError, match="Python objects"):
        ArrayPool().empty((3,), object)
