"""Recycled host memory for chunk tensors.

Each chunk the loader builds on the host needs a few large arrays (the stacked columns, then
their shuffled copy). Memory fresh from the operating system is zeroed page by page on first
touch; recycling cut the CPU time of converting and shuffling chunks by 15-25%.
:class:`ArrayPool` hands out arrays on memory that nothing uses any more instead.

Whether memory is in use follows the interpreter's object lifetimes, not a reference count:
every array handed out is made (through NumPy's array interface) on a small *lease* object
of its own, and NumPy makes every view of such an array, at any depth, refer to that lease;
``torch.from_numpy`` keeps the array, every tensor view or slice keeps the storage, and
``tensor.numpy()`` keeps the tensor. So the lease lives exactly as long as anything that can
reach the memory, and a ``weakref.finalize`` on it gives the memory back to the pool when it
is collected: on CPython as soon as the last reference goes, elsewhere at the next garbage
collection (later, never sooner).

Memory is kept as blocks of a few sizes (four per doubling), so that chunks whose row
counts differ (shuffled chunks join different partitions every epoch) share blocks, and the
free memory kept is bounded by the sizes in use, not by the shapes ever seen.

Examples
--------
>>> import numpy as np, torch
>>> from tabflow.loader._memory import ArrayPool
>>> pool = ArrayPool()
>>> batch = torch.from_numpy(pool.empty((4, 2), "int64"))[1:3]  # a view keeps its memory in use
>>> np.shares_memory(pool.empty((4, 2), "int64"), batch.numpy())
False
>>> del batch
>>> _ = pool.empty((4, 2), "int64")  # both blocks are free now: one of them is handed out again
>>> len(pool)
2
"""

from __future__ import annotations

import collections
import threading
import weakref
from typing import Any

import numpy as np
import torch

__all__ = ["ArrayPool"]

# Blocks below this size are not worth sharing by size (one class for all of them).
_SMALLEST_BLOCK = 64


class ArrayPool:
    """Thread-safe recycler of host memory for NumPy arrays of any shape and dtype.

    Parameters
    ----------
    spares : int
        Free blocks kept per block size. The pipeline frees and reuses memory a chunk at a
        time, so a few suffice (with two, a Criteo epoch still allocated two or three new
        arrays; with four, none); more would hold on to memory that a consumer released after
        keeping many batches (e.g. a whole epoch in a list).
    capacity : int
        Blocks kept at most, in use or free. At the capacity a free block of another size
        makes room (the pool follows the sizes in use); when every kept block is in use, new
        arrays are handed out without being kept (a dict loader with many scalar columns
        shuffles each into its own array).
    pin_memory : bool
        Hand out page-locked (pinned) memory, from which a copy to a CUDA device runs
        asynchronously at full bus speed; a loader bound for a GPU converts its columns
        straight into it, so no extra host copy is made before the transfer. A block is
        handed out again once nothing references its arrays: whoever copies from them
        asynchronously keeps them referenced until the copy has finished (the loader
        synchronises its stream first).
    """

    def __init__(self, spares: int = 4, capacity: int = 256, pin_memory: bool = False) -> None:
        self.spares = spares
        self.capacity = capacity
        self.pin_memory = pin_memory
        self._free: dict[int, list[np.ndarray]] = {}
        self._in_use: dict[int, np.ndarray] = {}
        self._kept = 0
        # A lease that ends after clear() holds memory the pool has already let go of.
        self._generation = 0
        # Blocks whose lease ended while the lock was taken: a lease can end in any thread, at
        # any point (inside this pool's own calls when the garbage collector runs there), so
        # its finalizer never waits for the lock nor changes the pool under a caller's feet.
        self._returned: collections.deque[tuple[np.ndarray, int]] = collections.deque()
        self._lock = threading.Lock()

    def empty(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialised ``shape`` array of ``dtype`` on memory that nothing else uses."""
        shape = tuple(int(n) for n in shape)
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise TypeError(f"ArrayPool hands out uninitialised memory, which cannot hold {dtype} (Python objects)")
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes == 0:
            return np.empty(shape, dtype)
        size = block_size(nbytes)
        with self._lock:
            self._take_returned()
            block = self._reuse_or_allocate(size)
            if block is not None:
                lease = _Lease(block, shape, dtype)
                # Registered before any array exists on the lease, so the block is never lost.
                weakref.finalize(lease, self._give_back, block, self._generation).atexit = False
                self._in_use[id(block)] = block
        self._take_returned_if_free()
        if block is None:  # every kept block is in use: this one is not kept
            lease = _Lease(self._allocate(size), shape, dtype)
        return np.asarray(lease)

    def _reuse_or_allocate(self, size: int) -> np.ndarray | None:
        free = self._free.get(size)
        if free:
            return free.pop()
        if self._kept >= self.capacity:
            other = max(self._free, key=lambda kept: len(self._free[kept]), default=None)
            if other is None or not self._free[other]:
                return None
            self._free[other].pop()  # makes room: that size has spares, this one has none
            self._kept -= 1
        self._kept += 1
        return self._allocate(size)

    def _allocate(self, size: int) -> np.ndarray:
        # Plain pages from torch's allocator: NumPy asks for huge pages, whose first touch
        # costs more when the kernel must compact memory to find them (the first epoch took
        # 3-7% longer), and recycled memory is first touched only once.
        return torch.empty(size, dtype=torch.uint8, pin_memory=self.pin_memory).numpy()

    def _give_back(self, block: np.ndarray, generation: int) -> None:
        # Runs when the block's lease is collected: queued, and taken in now if the lock is free.
        self._returned.append((block, generation))
        self._take_returned_if_free()

    def _take_returned_if_free(self) -> None:
        # A holder of the lock calls this after releasing it, so a block queued meanwhile is
        # taken in by whoever comes last, not left in the queue.
        while self._returned and self._lock.acquire(blocking=False):
            try:
                self._take_returned()
            finally:
                self._lock.release()

    def _take_returned(self) -> None:
        while self._returned:
            block, generation = self._returned.popleft()
            if generation != self._generation:
                continue  # let go of by clear(): the block goes back to the allocator
            self._in_use.pop(id(block), None)
            free = self._free.setdefault(block.nbytes, [])
            if len(free) < self.spares:
                free.append(block)
            else:
                self._kept -= 1  # beyond the spares the block goes back to the allocator

    def clear(self) -> None:
        """Drop every kept block (those still in use live on with their arrays)."""
        with self._lock:
            self._free = {}
            self._in_use = {}
            self._returned.clear()
            self._kept = 0
            self._generation += 1

    def blocks(self) -> list[np.ndarray]:
        """The kept blocks of memory (flat ``uint8``), in use or free; for inspection only."""
        with self._lock:
            self._take_returned()
            blocks = [*self._in_use.values(), *(block for free in self._free.values() for block in free)]
        self._take_returned_if_free()
        return blocks

    def __len__(self) -> int:
        """Blocks kept, in use or free."""
        with self._lock:
            self._take_returned()
            kept = self._kept
        self._take_returned_if_free()
        return kept

    @property
    def nbytes(self) -> int:
        """Bytes held by the kept blocks."""
        return sum(block.nbytes for block in self.blocks())


def block_size(nbytes: int) -> int:
    """The block that holds ``nbytes``: four sizes per doubling, so at most 25% is unused.

    Examples
    --------
    >>> from tabflow.loader._memory import block_size
    >>> [block_size(n) for n in (1, 64, 65, 1000, 1024, 1025, 1300)]
    [64, 64, 80, 1024, 1024, 1280, 1536]
    """
    if nbytes <= _SMALLEST_BLOCK:
        return _SMALLEST_BLOCK
    step = 1 << (nbytes.bit_length() - 3)  # a quarter of the power of two below nbytes
    return -(-nbytes // step) * step


class _Lease:
    """What every array made from one hand-out of a block refers to (its NumPy base)."""

    __slots__ = ("__array_interface__", "block", "__weakref__")

    def __init__(self, block: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.block = block  # keeps the memory alive while anything uses it
        self.__array_interface__ = {
            "version": 3, "shape": shape, "typestr": dtype.str, "data": (block.ctypes.data, False),
        }
