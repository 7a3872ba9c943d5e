"""The loader's pipeline, composed by passing each part its source:

``PartitionReader`` (plan the epoch, read partitions ahead, convert dense columns to tensors
in the reading threads) -> ``ChunkMaker`` (join, trim, shuffle, move to the device on its own
CUDA stream) -> ``Prefetcher`` (the loader thread and a bounded queue) -> ``Batcher`` (views
of the chunk tensors, in the consumer's thread).

Memory holds up to about eight chunks' worth: one being cut into batches, two queued, one
being shuffled (its converted partitions and their shuffled copy) and up to three partitions
being read and converted ahead.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.loader._builders import TupleBuilder
>>> from tabflow.loader._pipeline import Pipeline
>>> from tabflow.loader.options import LoaderOptions
>>> ds = nvt.Dataset(pd.DataFrame({"c": range(7)}), npartitions=2)
>>> pipeline = Pipeline(ds, ["c"], TupleBuilder(["c"], [], ["c"]), LoaderOptions(batch_size=3))
>>> pipeline.reset()
>>> [batch["cats"][:, 0].tolist() for batch, rows in pipeline]
[[0, 1, 2], [3, 4, 5], [6]]
>>> pipeline.get_state()
{'epoch': 0, 'seed': ..., 'batches': 3}
>>> pipeline.shutdown()
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from tabflow.loader._batch import Batcher
from tabflow.loader._chunks import ChunkMaker
from tabflow.loader._memory import ArrayPool
from tabflow.loader._node import Node
from tabflow.loader._prefetch import Prefetcher
from tabflow.loader._read import PartitionReader
from tabflow.loader.options import LoaderOptions

__all__ = ["Pipeline"]

# Chunks queued between the loader thread and the consumer.
_QUEUE_CHUNKS = 2


class Pipeline(Node[tuple[dict, int]]):
    """The parts wired for one loader: ``(batch, rows)`` items; state ``epoch``, ``seed``,
    ``batches``.

    Parameters
    ----------
    dataset : tabflow.Dataset
    columns : list of str
        Columns to read.
    builder : callable
        Frame -> dict of tensors (see :mod:`tabflow.loader._builders`).
    options : LoaderOptions
    memory : ArrayPool, optional
        Host memory of chunks, recycled once the consumer holds no batch of them.
    """

    def __init__(self, dataset: Any, columns: Sequence[str], builder: Callable, options: LoaderOptions,
                 memory: ArrayPool | None = None) -> None:
        memory = memory if memory is not None else ArrayPool(pin_memory=options.device.type == "cuda")
        self.options = options
        self.reader = PartitionReader(dataset, columns, options, builder, memory)
        self.prefetcher = Prefetcher(ChunkMaker(self.reader, builder, options, memory), depth=_QUEUE_CHUNKS)
        self.batches = Batcher(self.prefetcher, options.batch_size, options.drop_last)

    def reset(self, initial_state: Mapping[str, Any] | None = None) -> None:
        self.batches.reset(initial_state)

    def next(self) -> tuple[dict, int]:
        return self.batches.next()

    def get_state(self) -> dict[str, Any]:
        return self.batches.get_state()

    def stop_threads(self) -> None:
        """Stop the loader thread only (safe while another thread is inside :meth:`next`)."""
        self.prefetcher.shutdown()

    def shutdown(self) -> None:
        self.batches.shutdown()
