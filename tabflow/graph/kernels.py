"""Array kernels: what an op computes, written on NumPy arrays, for the serving plan.

The serving plan (:mod:`tabflow.graph.serving`) runs a fitted workflow on a request of a few
rows without building pandas frames between ops. An op takes part by returning
:class:`Kernel` objects from ``Operator.array_kernels(col_selector, input_schema)``; an op
that returns None is run by its ``transform`` on a small frame instead. A kernel must give
exactly what ``transform`` gives, value for value and dtype for dtype (the serving tests
check every kernel against the batch path).

Data travel as :class:`Block` objects: the columns of one dtype stacked as the rows of a 2-D
array, ``values[column, row]``, in the layout of :mod:`tabflow.backends._host_arrays` (NaN
is a float's null, None a string's, masked integers carry ``nulls``). Kernels treat the
blocks they receive as read-only and return new ones.

Examples
--------
>>> import numpy as np
>>> from tabflow.graph.kernels import Block, floats
>>> floats(Block(np.array([[1, 2]]), np.array([[False, True]]))).tolist()
[[1.0, nan]]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from tabflow.backends.kernels import hash_values, value_dtype
from tabflow.schema import Schema
from tabflow.schema import dtypes as _dtypes

__all__ = ["Block", "Kernel", "elementwise_kernels", "renaming_kernels", "supported", "floats", "null_mask", "hashes"]


class Block:
    """Columns of one dtype: ``values`` of shape ``(columns, rows)`` and ``nulls`` of the same
    shape (masked dtypes) or None."""

    __slots__ = ("values", "nulls")

    def __init__(self, values: np.ndarray, nulls: np.ndarray | None = None) -> None:
        self.values = values
        self.nulls = nulls

    def __repr__(self) -> str:
        return f"Block({self.values!r}, {self.nulls!r})"


@dataclass(frozen=True)
class Kernel:
    """One computation of an op: ``fn(*blocks)`` reads ``inputs`` (groups of input columns of
    one dtype each, every group handed over as one :class:`Block`) and returns the Block of
    ``outputs``, all of canonical ``dtype``. ``fn=None`` computes nothing: the outputs are the
    single input group's columns under new names (a rename)."""

    inputs: tuple[tuple[str, ...], ...]
    outputs: tuple[str, ...]
    dtype: str
    fn: Callable[..., Block] | None


def supported(dtype: str) -> bool:
    """True for the dtypes blocks hold: numbers, booleans (plain or masked) and strings."""
    return value_dtype(str(dtype)) is not None


def elementwise_kernels(
    names: Sequence[str],
    input_schema: Schema,
    output_dtype: Callable[[str, str], str | None],
    make_fn: Callable[[list[str], str, str], Callable[[Block], Block] | None],
) -> list[Kernel] | None:
    """Kernels for an op that maps each column to a column of the same name.

    Columns are grouped by input dtype and ``output_dtype(name, input dtype)``; each group
    gets ``make_fn(names, input dtype, output dtype)``. None (the op is run by its
    ``transform``) when a dtype has no array layout or either function returns None.
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        source = str(input_schema[name].dtype)
        target = output_dtype(name, source) if supported(source) else None
        if target is None or not supported(target):
            return None
        groups.setdefault((source, target), []).append(name)
    kernels = []
    for (source, target), group in groups.items():
        fn = make_fn(group, source, target)
        if fn is None:
            return None
        kernels.append(Kernel((tuple(group),), tuple(group), target, fn))
    return kernels


def renaming_kernels(mapping: dict[str, str], input_schema: Schema) -> list[Kernel] | None:
    """Kernels that pass columns through under new names (``{old: new}``), one per dtype."""
    groups: dict[str, list[str]] = {}
    for old in mapping:
        dtype = str(input_schema[old].dtype)
        if not supported(dtype):
            return None
        groups.setdefault(dtype, []).append(old)
    return [Kernel((tuple(group),), tuple(mapping[old] for old in group), dtype, None) for dtype, group in groups.items()]


def floats(block: Block) -> np.ndarray:
    """A numeric block as float64 with NaN for nulls (the batch path's ``to_float``)."""
    values = block.values.astype(np.float64)
    if block.nulls is not None:
        values[block.nulls] = np.nan
    return values


def null_mask(block: Block, dtype: str) -> np.ndarray:
    """True where a value is null (the batch path's ``isna``)."""
    if block.nulls is not None:
        return block.nulls
    if _dtypes.is_string(dtype):
        return block.values == None  # noqa: E711 - elementwise comparison of an object array
    if block.values.dtype.kind == "f":
        return np.isnan(block.values)
    return np.zeros(block.values.shape, dtype=bool)


def hashes(block: Block, dtype: str) -> np.ndarray:
    """tabflow's stable uint64 hash of every value (:mod:`tabflow.backends._hashing`), in the
    block's shape: the buckets the batch path's ``hash_values`` gives."""
    nulls = None if block.nulls is None else block.nulls.ravel()
    return hash_values(block.values.ravel(), nulls, dtype).reshape(block.values.shape)
