"""Batches: views of the chunk tensors, ``batch_size`` rows each.

Rows left at the end of a chunk are joined with the start of the next one, so every batch is
full except possibly the last of an epoch (dropped with ``drop_last``). Runs in the
consumer's thread; the consumer's CUDA stream is recorded on each chunk's tensors, so their
memory is not reused while its kernels still read them.

The state adds ``batches``, the batches handed out, to the source's; ``reset`` from a state
asks the source to skip those rows (``rows``).

Examples
--------
>>> import torch
>>> from tabflow.loader._batch import Batcher
>>> from tabflow.loader._node import FromIterable
>>> chunks = [({"x": torch.arange(5)}, 5), ({"x": torch.arange(5, 8)}, 3)]
>>> batcher = Batcher(FromIterable(lambda: chunks), batch_size=3)
>>> batcher.reset()
>>> [(batch["x"].tolist(), rows) for batch, rows in batcher]
[([0, 1, 2], 3), ([3, 4, 5], 3), ([6, 7], 2)]
>>> batcher.get_state()
{'items': 2, 'batches': 3}
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from tabflow.loader._node import Node
from tabflow.loader._tensors import cat_chunks, record_stream, slice_chunk

__all__ = ["Batcher"]


class Batcher(Node[tuple[dict, int]]):
    """``(batch, rows)`` cut from the ``(chunk, rows)`` items of ``source``.

    Parameters
    ----------
    source : Node of (chunk, rows)
    batch_size : int
    drop_last : bool
        Drop the last, incomplete batch.
    """

    def __init__(self, source: Node[tuple[dict, int]], batch_size: int, drop_last: bool = False) -> None:
        self.source = source
        self.batch_size = int(batch_size)
        self.drop_last = bool(drop_last)
        self._batches = 0
        self._cut: Iterator[tuple[dict, int]] = iter(())

    def reset(self, initial_state: Mapping[str, Any] | None = None) -> None:
        self._close()
        state = dict(initial_state or {})
        done = int(state.pop("batches", 0))
        if done:
            state["rows"] = done * self.batch_size
        self.source.reset(state or None)
        self._batches = done
        self._cut = self._batches_of(self.source)

    def next(self) -> tuple[dict, int]:
        batch = next(self._cut)
        self._batches += 1
        return batch

    def _batches_of(self, source: Node[tuple[dict, int]]) -> Iterator[tuple[dict, int]]:
        size = self.batch_size
        carry: list[dict] = []
        carried = 0
        for chunk, rows in source:
            record_stream(chunk)
            position = 0
            if carried:
                need = size - carried
                if rows < need:
                    carry.append(chunk)
                    carried += rows
                    continue
                yield cat_chunks([*carry, slice_chunk(chunk, 0, need)]), size
                carry, carried, position = [], 0, need
            while position + size <= rows:
                yield slice_chunk(chunk, position, position + size), size
                position += size
            if position < rows:
                carry, carried = [slice_chunk(chunk, position, rows)], rows - position
        if carried and not self.drop_last:
            yield cat_chunks(carry), carried

    def get_state(self) -> dict[str, Any]:
        return {**self.source.get_state(), "batches": self._batches}

    def _close(self) -> None:
        close = getattr(self._cut, "close", None)
        if close is not None:
            close()

    def shutdown(self) -> None:
        self._close()
        self.source.shutdown()
