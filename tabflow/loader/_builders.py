"""Chunk builders: turn one in-memory frame into named tensors, once per column per chunk.

A builder holds only column names and dtypes (no reference to a loader), because it runs in
the loader thread. Every engine difference goes through the frame's backend, which returns
arrays; :func:`~tabflow.loader._tensors.as_tensor` makes them tensors.

Examples
--------
>>> import pandas as pd
>>> from tabflow.loader._builders import TupleBuilder
>>> chunk = TupleBuilder(["c"], ["x"], ["y"])(pd.DataFrame({"c": [1, 2], "x": [0.5, None], "y": [0, 1]}))
>>> chunk["cats"].shape, chunk["conts"][1, 0].isnan().item(), chunk["labels"].tolist()
(torch.Size([2, 1]), True, [0.0, 1.0])
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch

from tabflow.backends import backend_for
from tabflow.loader._tensors import Allocate, Ragged, as_tensor, staged
from tabflow.loader.keys import PAD_INDEX
from tabflow.schema import dtypes

__all__ = ["TupleBuilder", "DictBuilder", "ColumnSpec", "fixed_shape_tensor", "pad_ragged"]


class TupleBuilder:
    """``cats`` (int64 ``[n, n_cats]``), ``conts`` (float32, nulls -> NaN) and ``labels``
    (float32 ``[n]`` for one label, ``[n, n_labels]`` otherwise)."""

    #: Every output is a dense tensor whose first axis is rows (so rows can be permuted as tensors).
    dense_only = True

    def __init__(self, cats: Sequence[str], conts: Sequence[str], labels: Sequence[str]) -> None:
        self.cats, self.conts, self.labels = list(cats), list(conts), list(labels)

    def __call__(self, frame: Any, allocate: Allocate | None = None) -> dict[str, torch.Tensor]:
        """The chunk's tensors; ``allocate(shape, dtype)`` provides host memory for the
        stacked columns (the loader recycles it through a pool)."""
        backend = backend_for(frame)
        out = {
            "cats": as_tensor(backend.columns_matrix(frame, self.cats, "int64", allocate=allocate)),
            "conts": as_tensor(backend.columns_matrix(frame, self.conts, "float32", na_value=np.nan, allocate=allocate)),
        }
        labels = as_tensor(backend.columns_matrix(frame, self.labels, "float32", allocate=allocate))
        # One label is a [n] tensor: the first column of the [n, 1] matrix, a contiguous view
        # of memory from ``allocate`` (pinned for a GPU loader, so its copy is asynchronous).
        out["labels"] = labels[:, 0] if len(self.labels) == 1 else labels
        return out


class ColumnSpec:
    """How one column becomes tensors: its torch-side dtype and, for lists, the layout.

    ``inner`` is the fixed shape of each row of a list column whose schema fixes every
    dimension after the rows (``(3,)``, ``(3, 2)``): such a column becomes one dense
    ``[rows, *inner]`` tensor. Other list columns are ragged (values and offsets), padded to
    ``width`` when ``dense``.
    """

    def __init__(self, name: str, dtype: str, is_list: bool = False, width: int | None = None, dense: bool = False,
                 inner: tuple[int, ...] | None = None) -> None:
        self.name, self.dtype, self.is_list, self.width, self.dense = name, dtype, is_list, width, dense
        self.inner = inner

    @property
    def na_value(self) -> float | None:
        return np.nan if self.dtype.startswith("float") else None


class DictBuilder:
    """Named tensors: scalars as ``[n]``, fixed-shape lists as ``[n, *inner]``, other lists
    as :class:`Ragged` or padded ``[n, width]``."""

    def __init__(self, columns: Sequence[ColumnSpec]) -> None:
        self.columns = list(columns)
        self.dense_only = all(not spec.is_list or spec.inner is not None for spec in self.columns)

    def __call__(self, frame: Any, allocate: Allocate | None = None) -> dict[str, Any]:
        """The chunk's tensors; host results are written to memory from ``allocate`` where
        given (the loader's pool, pinned for a GPU loader)."""
        backend = backend_for(frame)
        out: dict[str, Any] = {}
        for spec in self.columns:
            series = frame[spec.name]
            if spec.dtype == "string":
                # Strings have no tensor type: the array loader delivers them as a host array.
                out[spec.name] = backend.to_numpy(series, dtype=object)
                continue
            if not spec.is_list:
                if allocate is None:
                    out[spec.name] = as_tensor(backend.column_values(series, spec.dtype, na_value=spec.na_value))
                else:
                    matrix = backend.columns_matrix(frame, [spec.name], spec.dtype, na_value=spec.na_value, allocate=allocate)
                    out[spec.name] = as_tensor(matrix)[:, 0]
                continue
            if spec.inner is not None:
                out[spec.name] = fixed_shape_tensor(backend, series, spec, allocate)
                continue
            values, offsets = backend.list_column_values(series, spec.dtype)
            ragged = Ragged.from_offsets(as_tensor(staged(values, allocate)), as_tensor(staged(offsets, allocate)))
            if spec.width is not None and len(ragged.host_offsets) > 1:
                longest = int(np.diff(ragged.host_offsets).max())
                if longest > spec.width:
                    raise ValueError(
                        f"list column {spec.name!r} has a row of length {longest}, longer than "
                        f"sparse_max[{spec.name!r}] = {spec.width}; raise sparse_max (rows are never truncated)"
                    )
            out[spec.name] = pad_ragged(ragged, spec.width) if spec.dense else ragged
        return out


def fixed_shape_tensor(backend: Any, series: Any, spec: ColumnSpec, allocate: Allocate | None = None) -> torch.Tensor:
    """A list column whose rows all have the shape ``spec.inner`` as one ``[rows, *inner]`` tensor.

    A row of another shape (a null list counts as empty) is a ``ValueError`` that names the
    column, the row's length and the shape the schema gives, as is data nested more or
    less deeply than that shape.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends import backend_for
    >>> from tabflow.loader._builders import ColumnSpec, fixed_shape_tensor
    >>> series = pd.Series([[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 0], [1, 2]]], name="m")
    >>> tensor = fixed_shape_tensor(backend_for(series), series, ColumnSpec("m", "int64", is_list=True, inner=(3, 2)))
    >>> tuple(tensor.shape), tensor[1, 0].tolist()
    ((2, 3, 2), [7, 8])
    """
    inner = tuple(spec.inner or ())
    values, levels = backend.list_column_levels(series, spec.dtype)
    declared = "(None, " + ", ".join(map(str, inner)) + ")"
    if len(levels) != len(inner):
        raise ValueError(
            f"list column {spec.name!r}: the schema gives it shape {declared} ({len(inner)} level(s) of lists) but the "
            f"data holds {len(levels)} level(s); set the column's shape to match the data with schema[{spec.name!r}].with_shape(...)"
        )
    for depth, (level, size) in enumerate(zip(levels, inner)):
        lengths = torch.diff(as_tensor(level))
        wrong = torch.nonzero(lengths != size)
        if len(wrong):
            first = int(wrong[0, 0])
            where = "a row" if depth == 0 else f"a list at depth {depth + 1}"
            raise ValueError(
                f"list column {spec.name!r} has shape {declared} in its schema, but {where} has length {int(lengths[first])} "
                f"instead of {size} (a null list counts as empty); fix the data, or declare the column ragged "
                f"(schema[{spec.name!r}].with_shape((None, None{', ' * (len(inner) > 1)}{', '.join(map(str, inner[1:]))}))) "
                "to load it as values and offsets"
            )
    rows = int(levels[0].shape[0]) - 1
    return as_tensor(staged(values, allocate)).reshape(rows, *inner)


def pad_ragged(ragged: Ragged, width: int) -> torch.Tensor:
    """Rows of a ragged column right-padded with :data:`~tabflow.loader.keys.PAD_INDEX` to ``[rows, width]``.

    Examples
    --------
    >>> import torch
    >>> from tabflow.loader._tensors import Allocate, Ragged
    >>> from tabflow.loader._builders import pad_ragged
    >>> pad_ragged(Ragged.from_offsets(torch.tensor([1, 2, 3]), torch.tensor([0, 2, 3])), 3).tolist()
    [[1, 2, 0], [3, 0, 0]]
    """
    rows, cols = ragged_coordinates(ragged)
    out = ragged.values.new_full((len(ragged.host_offsets) - 1, width), PAD_INDEX)
    out[rows, cols] = ragged.values
    return out


def ragged_coordinates(ragged: Ragged) -> tuple[torch.Tensor, torch.Tensor]:
    """Row and position-in-row of every value (the COO coordinates of a ragged column)."""
    lengths = ragged.lengths
    device = ragged.values.device
    rows = torch.repeat_interleave(torch.arange(len(lengths), device=device), lengths)
    cols = torch.arange(ragged.values.shape[0], device=device) - torch.repeat_interleave(ragged.offsets[:-1], lengths)
    return rows, cols


def natural_dtype(canonical: str) -> str:
    """Tensor dtype for a column with no role: integers int64, floats float32, booleans bool."""
    if dtypes.is_integer(canonical):
        return "int64"
    if dtypes.is_bool(canonical):
        return "bool"
    if dtypes.is_float(canonical):
        return "float32"
    raise TypeError(f"dtype {canonical!r} cannot become a tensor; encode it first (e.g. with Categorify)")


def widths(sparse_max: Mapping[str, int] | None) -> dict[str, int]:
    return {str(k): int(v) for k, v in (sparse_max or {}).items()}
