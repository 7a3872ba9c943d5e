"""ArrayPool: arrays are handed out again only when nothing references them."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from tabflow.loader._memory import ArrayPool


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


def test_arrays_are_keyed_by_shape_and_dtype():
    pool = ArrayPool()
    a = pool.empty((4, 2), "int64")
    a_id = id(a)
    del a
    assert id(pool.empty((4, 2), "int64")) == a_id
    b = pool.empty((4, 2), "float32")
    c = pool.empty((5, 2), "int64")
    assert b.dtype == np.float32 and c.shape == (5, 2) and len(pool) == 3


def test_free_arrays_beyond_the_spares_are_released():
    pool = ArrayPool(spares=2)
    held = [pool.empty((3,), "int64") for _ in range(6)]  # e.g. a consumer keeping an epoch
    others = [pool.empty((5,), "float32") for _ in range(3)]
    assert len(pool) == 9
    del held, others
    again = pool.empty((3,), "int64")  # reuses one, keeps two spares of it and two of the other
    assert again.shape == (3,) and len(pool) == 5
    del again
    pool.empty((3,), "int64")
    assert len(pool) == 5


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
