"""Chunks: a planned chunk's partitions joined, trimmed to this rank's share, shuffled and
moved to the target device.

Chunks of dense columns arrive as tensors (converted by the reading threads) and are
shuffled as tensors, one row gather per stacked tensor, into recycled host memory. Chunks
with list columns arrive as frames and are shuffled as frames, which keeps each row's list
together, then converted here.

Bound for a GPU, the work runs on a CUDA stream of this part's own (in the loader thread, so
it overlaps with the consumer's kernels on theirs): the unshuffled chunk is copied to the
device once and its rows are gathered there, so the host never makes the shuffled copy. The
stream is synchronised before the chunk is handed on (and before pinned host buffers of the
chunk can be handed out again).

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.loader._builders import TupleBuilder
>>> from tabflow.loader._chunks import ChunkMaker
>>> from tabflow.loader._read import PartitionReader
>>> from tabflow.loader.options import LoaderOptions
>>> options = LoaderOptions(parts_per_chunk=2, global_size=2, global_rank=1)
>>> builder = TupleBuilder(["c"], [], ["c"])
>>> ds = nvt.Dataset(pd.DataFrame({"c": range(10)}), npartitions=3)
>>> chunks = ChunkMaker(PartitionReader(ds, ["c"], options, builder), builder, options)
>>> chunks.reset()
>>> [(chunk["cats"][:, 0].tolist(), rows) for chunk, rows in chunks]
[([5, 6, 7, 8, 9], 5)]
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Mapping

import torch

from tabflow.backends import backend_for
from tabflow.loader._memory import ArrayPool
from tabflow.loader._node import Node
from tabflow.loader._read import PlannedChunk
from tabflow.loader._tensors import cat_chunks, chunk_to_device, slice_chunk, take_rows
from tabflow.loader.options import LoaderOptions

__all__ = ["ChunkMaker"]


class ChunkMaker(Node[tuple[dict, int]]):
    """``(chunk, rows)`` for every :class:`~tabflow.loader._read.PlannedChunk` of ``source``.

    Parameters
    ----------
    source : Node of PlannedChunk
    builder : callable
        ``builder(frame, allocate=...) -> dict of tensors`` (for chunks that arrive as frames).
    options : LoaderOptions
        ``device`` is where chunks go.
    memory : ArrayPool, optional
        Host memory for joined and shuffled chunks.
    """

    def __init__(self, source: Node[PlannedChunk], builder: Callable, options: LoaderOptions,
                 memory: ArrayPool | None = None) -> None:
        self.source = source
        self.builder = builder
        self.device = options.device
        self.memory = memory if memory is not None else ArrayPool()
        self.dense = getattr(builder, "dense_only", False)
        self._stream: Any = None

    def reset(self, initial_state: Mapping[str, Any] | None = None) -> None:
        self.source.reset(initial_state)
        self._stream = None  # made by the first chunk, in the thread that makes them

    def next(self) -> tuple[dict, int]:
        spec, parts, rows = self.source.next()
        device = self.device
        if self._stream is None and device.type == "cuda":
            self._stream = torch.cuda.Stream(device)
        stream = self._stream
        # Host tensors that copies queued on the stream read from: referenced until the
        # stream is synchronised, so that their pool memory is not handed out (and written)
        # while a copy is still reading it.
        copied_from = []
        with _on_stream(stream):
            if self.dense:
                chunk = cat_chunks(parts, allocate=self.memory.empty)
                if device.type == "cuda":
                    # One copy of the unshuffled chunk to the GPU, then the row gather
                    # there: the host never makes the shuffled copy.
                    copied_from.append(chunk)
                    chunk = chunk_to_device(chunk, device)
                if rows is None:
                    chunk = slice_chunk(chunk, spec.start + spec.skip, spec.stop)
                else:
                    chunk = take_rows(chunk, rows, allocate=self.memory.empty)
                copied_from.append(chunk)
                chunk = chunk_to_device(chunk, device)
            else:
                backend = backend_for(parts[0])
                frame = backend.concat_rows(parts) if len(parts) > 1 else parts[0]
                if rows is None:
                    chunk = self.builder(backend.slice_rows(frame, spec.start + spec.skip, spec.stop), allocate=self.memory.empty)
                else:
                    chunk = self.builder(backend.take_rows(frame, rows), allocate=self.memory.empty)
                copied_from.append(chunk)
                chunk = chunk_to_device(chunk, device)
        del parts  # the unshuffled tensors go back to the pool as soon as possible
        if stream is not None:
            # Complete before the consumer's stream reads it (and before pinned host
            # buffers of this chunk can be handed out again).
            stream.synchronize()
        del copied_from
        return chunk, spec.num_rows

    def get_state(self) -> dict[str, Any]:
        return self.source.get_state()

    def shutdown(self) -> None:
        self.source.shutdown()


def _on_stream(stream: Any) -> Any:
    return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
