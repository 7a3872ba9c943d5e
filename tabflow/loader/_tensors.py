"""Chunks of named tensors: the arrays-to-tensors boundary, row slicing (views),
concatenation, and moves to a device.

Backends return arrays (NumPy for pandas, CuPy for cuDF); :func:`as_tensor` is the one
place they become tensors.

A chunk maps names to either a dense tensor whose first axis is rows, or a :class:`Ragged`
column (flat ``values`` + ``offsets`` with ``rows + 1`` entries). Row offsets are also kept as
a host array so that slicing a batch out of a GPU chunk never waits for the GPU.

Examples
--------
>>> import torch
>>> from tabflow.loader._tensors import Ragged, slice_chunk
>>> r = Ragged.from_offsets(torch.arange(6), torch.tensor([0, 1, 3, 6]))
>>> part = slice_chunk({"x": r}, 1, 3)["x"]
>>> part.values.tolist(), part.offsets.tolist()
([1, 2, 3, 4, 5], [0, 2, 5])
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
import torch

# ``allocate(shape, dtype) -> numpy.ndarray``, where host results go (the loader's pool): the
# backends' columns_matrix takes the same callable.
from tabflow.backends.protocol import Allocate

__all__ = ["Ragged", "as_tensor", "slice_chunk", "cat_chunks", "take_rows", "staged", "chunk_to_device", "record_stream"]


def as_tensor(array: Any) -> torch.Tensor:
    """An engine's array as a tensor, sharing its memory wherever torch can.

    A NumPy array goes through ``torch.from_numpy`` (a read-only one, such as a view of a
    pandas column under copy-on-write, is copied first: tensors are writable); any other
    array (CuPy) through DLPack, staying on its device without a host copy.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.loader._tensors import as_tensor
    >>> array = np.arange(3)
    >>> tensor = as_tensor(array)
    >>> tensor.tolist(), np.shares_memory(tensor.numpy(), array)
    ([0, 1, 2], True)
    >>> array.flags.writeable = False
    >>> np.shares_memory(as_tensor(array).numpy(), array)
    False
    """
    if isinstance(array, np.ndarray):
        if not array.flags.writeable:
            array = array.copy()
        return torch.from_numpy(array)
    return torch.from_dlpack(array)


class Ragged(NamedTuple):
    """A list column: ``values[offsets[i]:offsets[i + 1]]`` is row ``i``."""

    values: torch.Tensor
    offsets: torch.Tensor
    host_offsets: np.ndarray

    @classmethod
    def from_offsets(cls, values: torch.Tensor, offsets: torch.Tensor) -> "Ragged":
        return cls(values, offsets, offsets.detach().cpu().numpy().astype(np.int64, copy=True))

    @property
    def lengths(self) -> torch.Tensor:
        return self.offsets[1:] - self.offsets[:-1]


Chunk = Mapping[str, Any]


def slice_chunk(chunk: Chunk, start: int, stop: int) -> dict[str, Any]:
    """Rows ``start:stop``; dense columns and ragged values are views."""
    out: dict[str, Any] = {}
    for name, column in chunk.items():
        if isinstance(column, Ragged):
            lo, hi = int(column.host_offsets[start]), int(column.host_offsets[stop])
            host = column.host_offsets[start : stop + 1] - lo
            out[name] = Ragged(column.values[lo:hi], column.offsets[start : stop + 1] - lo, host)
        else:
            out[name] = column[start:stop]
    return out


def cat_chunks(pieces: Sequence[Chunk], allocate: Allocate | None = None) -> dict[str, Any]:
    """Concatenate pieces row-wise (the partitions of a chunk, or a batch that straddles two
    chunks); ``allocate`` provides host memory for dense results, as in :func:`take_rows`."""
    if len(pieces) == 1:
        return dict(pieces[0])
    out: dict[str, Any] = {}
    for name, first in pieces[0].items():
        columns = [piece[name] for piece in pieces]
        if isinstance(first, Ragged):
            shifts = np.cumsum([0] + [int(c.host_offsets[-1]) for c in columns[:-1]])
            offsets = torch.cat([columns[0].offsets[:1]] + [c.offsets[1:] + int(s) for c, s in zip(columns, shifts)])
            host = np.concatenate([columns[0].host_offsets[:1]] + [c.host_offsets[1:] + s for c, s in zip(columns, shifts)])
            out[name] = Ragged(torch.cat([c.values for c in columns]), offsets, host)
        elif isinstance(first, np.ndarray):  # a host column of strings (the array loader's)
            out[name] = np.concatenate(columns)
        else:
            rows = sum(int(c.shape[0]) for c in columns)
            out[name] = torch.cat(columns, out=_empty_rows(first, rows, allocate))
    return out


def take_rows(chunk: Chunk, positions: Any, allocate: Allocate | None = None) -> dict[str, torch.Tensor]:
    """Rows at ``positions`` (in that order) of a chunk of dense tensors, as new tensors.

    ``allocate(shape, dtype)`` provides the memory of host results (by default a new NumPy
    array); GPU results come from torch's caching allocator.

    Examples
    --------
    >>> import torch
    >>> from tabflow.loader._tensors import take_rows
    >>> take_rows({"x": torch.tensor([[1, 2], [3, 4], [5, 6]])}, [2, 0])["x"].tolist()
    [[5, 6], [1, 2]]
    """
    out: dict[str, torch.Tensor] = {}
    index = None
    for name, column in chunk.items():
        if isinstance(column, Ragged):
            raise TypeError(f"take_rows: column {name!r} is ragged; take the rows of its frame before converting")
        if isinstance(column, np.ndarray):
            out[name] = column[np.asarray(positions, dtype=np.int64)]
            continue
        if index is None:  # a chunk's tensors share one device
            index = _positions(positions, column.device, allocate)
        out[name] = torch.index_select(column, 0, index, out=_empty_rows(column, len(index), allocate))
    return out


def _positions(positions: Any, device: torch.device, allocate: Allocate | None) -> torch.Tensor:
    """int64 row positions on ``device``; bound for a GPU they are staged in memory from
    ``allocate`` (pinned), so that their copy is asynchronous like the chunk's."""
    host = np.asarray(positions, dtype=np.int64)
    if device.type != "cuda" or allocate is None:
        return torch.as_tensor(host, device=device)
    return torch.from_numpy(staged(host, allocate)).to(device, non_blocking=True)


def staged(array: Any, allocate: Allocate | None) -> Any:
    """A host array copied into memory from ``allocate`` (the loader's pool, pinned for a GPU
    loader); an array on a device, or any array without ``allocate``, unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.loader._tensors import staged
    >>> staged(np.arange(3), lambda shape, dtype: np.zeros(shape, dtype)).tolist()
    [0, 1, 2]
    """
    if allocate is None or not isinstance(array, np.ndarray):
        return array
    out = allocate(array.shape, array.dtype)
    out[...] = array
    return out


def _empty_rows(column: torch.Tensor, rows: int, allocate: Allocate | None) -> torch.Tensor:
    shape = (rows, *column.shape[1:])
    if column.device.type != "cpu":
        return column.new_empty(shape)
    return torch.from_numpy((allocate or np.empty)(shape, _numpy_dtype(column.dtype)))


def _numpy_dtype(dtype: torch.dtype) -> np.dtype:
    return torch.empty(0, dtype=dtype).numpy().dtype


def _tensors(chunk: Chunk):
    for column in chunk.values():
        if isinstance(column, Ragged):
            yield column.values
            yield column.offsets
        elif not isinstance(column, np.ndarray):  # host string columns stay where they are
            yield column


def chunk_to_device(chunk: Chunk, device: torch.device) -> dict[str, Any]:
    """Move a chunk to ``device``, on the current CUDA stream.

    Host tensors headed for a GPU are copied asynchronously (``non_blocking``) from pinned
    memory; a tensor that is not pinned yet is first copied into pinned memory. The caller
    synchronises the stream before handing the result to another thread.
    """

    def move(tensor: torch.Tensor) -> torch.Tensor:
        if tensor.device == device:
            return tensor
        if device.type == "cuda" and tensor.device.type == "cpu":
            if not tensor.is_pinned():
                tensor = tensor.pin_memory()
            return tensor.to(device, non_blocking=True)
        return tensor.to(device)

    if all(t.device == device for t in _tensors(chunk)):
        return dict(chunk)
    return {
        name: Ragged(move(c.values), move(c.offsets), c.host_offsets) if isinstance(c, Ragged)
        else c if isinstance(c, np.ndarray) else move(c)
        for name, c in chunk.items()
    }


def record_stream(chunk: Chunk) -> None:
    """Tell the CUDA caching allocator that the consumer's stream uses the chunk's memory."""
    for tensor in _tensors(chunk):
        if tensor.is_cuda:
            tensor.record_stream(torch.cuda.current_stream(tensor.device))

