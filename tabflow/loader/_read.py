"""The source of the pipeline: one epoch's partitions of this rank, read ahead and converted.

:class:`PartitionReader` plans the epoch (:mod:`tabflow.loader._plan`: partition order,
this rank's share, chunks of ``parts_per_chunk`` partitions) and yields one
:class:`PlannedChunk` per chunk: its spec, its partitions and, when shuffling, the row order
to take them in. Partitions are read ``read_ahead`` at a time in threads; when every column
is dense, those threads also convert each partition to tensors as soon as it is read (so the
conversion overlaps with everything downstream); chunks with list columns stay frames here,
to be shuffled row-wise before conversion.

Its state is the epoch and its seed; ``reset`` with a state also takes ``rows``, the rows of
the epoch already delivered, which are skipped (whole chunks unread).

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.loader._read import PartitionReader
>>> from tabflow.loader.options import LoaderOptions
>>> reader = PartitionReader(nvt.Dataset(pd.DataFrame({"x": range(6)}), npartitions=3), ["x"],
...                          LoaderOptions(parts_per_chunk=2))
>>> reader.reset()
>>> [(chunk.spec.partitions, [len(p) for p in chunk.parts]) for chunk in reader]
[((0, 1), [2, 2]), ((2,), [2])]
>>> reader.get_state(), reader.next_epoch
({'epoch': 0, 'seed': ...}, 1)
>>> reader.shutdown()
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, NamedTuple, Sequence

import numpy as np
import torch

from tabflow.loader._memory import ArrayPool
from tabflow.loader._node import Node
from tabflow.loader._plan import (
    ChunkSpec,
    chunk_permutation,
    default_epoch_seed,
    epoch_seed,
    plan_epoch,
    skip_rows,
)
from tabflow.loader.options import LoaderOptions

__all__ = ["PartitionReader", "PlannedChunk"]


class PlannedChunk(NamedTuple):
    """A chunk as read: its spec, its partitions (tensors or frames), and the row positions
    to take from the joined partitions in order (None when not shuffling)."""

    spec: ChunkSpec
    parts: list[Any]
    rows: np.ndarray | None


class PartitionReader(Node[PlannedChunk]):
    """Read the chunks of one epoch of this rank (see the module docstring).

    Parameters
    ----------
    dataset : tabflow.Dataset
    columns : list of str
        Columns to read.
    options : LoaderOptions
        ``shuffle``, ``seed_fn``, ``parts_per_chunk`` and the ranks plan the epoch.
    builder : callable, optional
        ``builder(frame, allocate=...) -> dict of tensors``; with ``builder.dense_only`` set,
        partitions are converted by the reading threads into ``memory``.
    memory : ArrayPool, optional
    read_ahead : int
        Partitions read ahead of the consumer.
    """

    def __init__(self, dataset: Any, columns: Sequence[str], options: LoaderOptions, builder: Callable | None = None,
                 memory: ArrayPool | None = None, read_ahead: int = 2) -> None:
        self.dataset = dataset
        self.columns = list(columns)
        self.options = options
        self.read_ahead = read_ahead
        self._convert = None
        if builder is not None and getattr(builder, "dense_only", False):
            # `is None`, not `or`: an empty pool is falsy (it has a length).
            self._convert = _Converter(builder, (memory if memory is not None else ArrayPool()).empty, options.device)
        self.epoch: int | None = None
        self.seed: int | None = None
        self.next_epoch = 0
        self._plan: list[ChunkSpec] = []
        self._position = 0
        self._parts: Iterator[Any] | None = None

    def reset(self, initial_state: Mapping[str, Any] | None = None) -> None:
        self.shutdown()
        state = dict(initial_state or {})
        epoch = int(state.get("epoch", self.next_epoch))
        seed = state.get("seed")
        # A resumed epoch keeps the seed saved with it (already mixed with its epoch), so it
        # continues in the saved order whatever seed_fn returns now.
        seed = self._epoch_seed(epoch) if seed is None else int(seed)
        options = self.options
        plan = plan_epoch(self.dataset.partition_lengths(), seed, options.shuffle, options.global_rank,
                          options.global_size, options.parts_per_chunk)
        self._plan = skip_rows(plan, int(state.get("rows", 0)))
        self.epoch, self.seed, self.next_epoch = epoch, seed, epoch + 1
        self._position = 0

    def _epoch_seed(self, epoch: int) -> int:
        # The epoch is mixed into the user's seed so that a constant seed_fn (the usual way to
        # make ranks agree) still gives a new order every epoch.
        seed_fn = self.options.seed_fn
        return epoch_seed(seed_fn(), epoch) if seed_fn is not None else default_epoch_seed(epoch)

    def next(self) -> PlannedChunk:
        if self._position >= len(self._plan):
            self.shutdown()  # the read-ahead threads end with the epoch
            raise StopIteration
        if self._parts is None:
            # Opened by the first read, in the thread that reads (the prefetcher's).
            order = [p for spec in self._plan for p in spec.partitions]
            self._parts = self.dataset.to_iter(columns=self.columns, indices=order, prefetch=self.read_ahead,
                                               convert=self._convert, arrow_lists=True)
        spec = self._plan[self._position]
        self._position += 1
        parts = [next(self._parts) for _ in spec.partitions]
        rows = None
        if self.options.shuffle:
            rows = spec.start + chunk_permutation(self.seed, self.options.global_rank, spec)[spec.skip :]
        return PlannedChunk(spec, parts, rows)

    def get_state(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "seed": self.seed}

    def shutdown(self) -> None:
        parts, self._parts = self._parts, None
        if parts is not None:
            close = getattr(parts, "close", None)
            if close is not None:
                close()  # stops the reads still in flight


class _Converter:
    """``builder`` run in a reading thread; tensors it makes on a GPU are complete on return.

    A cuDF frame's columns reach torch through DLPack, on the stream current in this thread;
    the tensors are then used by the loader thread on another stream, so the work is
    finished here rather than ordered by events across threads.
    """

    def __init__(self, builder: Callable, allocate: Callable, device: torch.device) -> None:
        self.builder, self.allocate, self.device = builder, allocate, device

    def __call__(self, frame: Any) -> dict:
        if self.device.type != "cuda":
            return self.builder(frame, allocate=self.allocate)
        stream = torch.cuda.Stream(self.device)
        with torch.cuda.stream(stream):
            chunk = self.builder(frame, allocate=self.allocate)
        stream.synchronize()
        return chunk
