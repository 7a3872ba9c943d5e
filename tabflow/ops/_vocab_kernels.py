"""Categorify's array kernels for the serving plan: vocabularies as Python dicts.

A request of a few rows looks up a handful of values per column; a dict lookup per value
beats building the engine's hash table input. Each vocabulary becomes, once per compiled
plan, ``{value: code}`` (``{(part, ...): code}`` for a combination, a null part as None)
with the codes of :mod:`tabflow.ops._vocab`'s index convention, and the kernels give exactly
what ``Categorify.transform`` gives: nulls, out-of-vocabulary values (hashed into
``num_buckets`` slots with the same hash), single-table shifts and the output dtype.

Keys are compared as Python values, which matches the engine's lookup only when the column
and the vocabulary hold the same kind of values (strings, integers, floats or booleans);
for any other pairing, and for list columns, no kernel is made and the op's ``transform``
runs instead.

Examples
--------
>>> import pandas as pd
>>> from tabflow.ops._vocab_kernels import lookup_table
>>> lookup_table(pd.DataFrame({"value": ["b", "a"], "count": [3, 1]}), 3)
{'b': 3, 'a': 4}
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from tabflow.backends import get_backend
from tabflow.backends.kernels import frame as host_frame
from tabflow.backends.kernels import to_pandas
from tabflow.graph.kernels import Block, Kernel, hashes, null_mask, supported
from tabflow.ops._vocab import COUNT, NULL_INDEX, OOV_INDEX, Unit, hash_keys
from tabflow.schema import Schema
from tabflow.schema import dtypes as _dtypes

__all__ = ["lookup_table", "categorify_kernels"]


def lookup_table(vocab: pd.DataFrame, vocab_offset: int) -> dict[Any, int]:
    """``{value: code}`` of a vocabulary table (a combination's value is a tuple whose null
    parts are None); ``vocab_offset`` is the code of the first value."""
    columns = [vocab[name].tolist() for name in vocab.columns if name != COUNT]
    if len(columns) == 1:
        keys = columns[0]
    else:
        keys = zip(*[[None if _is_null(value) else value for value in column] for column in columns])
    return {key: vocab_offset + position for position, key in enumerate(keys)}


def categorify_kernels(
    units: Sequence[Unit],
    input_schema: Schema,
    vocabs: dict[str, pd.DataFrame],
    slots: dict[str, int],
    shifts: dict[str, int],
    dtype: str,
) -> list[Kernel] | None:
    """Kernels encoding ``units`` as ``Categorify.transform`` does (None: no kernel)."""
    tables = {}
    for unit in units:
        vocab = vocabs[unit.key]
        value_columns = [name for name in vocab.columns if name != COUNT]
        for name, value_column in zip(unit.inputs, value_columns * len(unit.inputs) if not unit.combo else value_columns):
            source = str(input_schema[name].dtype)
            if not supported(source) or not _comparable(source, str(vocab[value_column].dtype)):
                return None
        tables[unit.key] = lookup_table(vocab, 2 + slots[unit.key])
    kernels: list[Kernel] = []
    columns: dict[str, list[tuple[str, Unit]]] = {}
    for unit in units:
        if unit.combo:
            kernels.append(
                Kernel(tuple((name,) for name in unit.inputs), unit.outputs, dtype,
                       _combo_kernel(unit, input_schema, tables[unit.key], slots[unit.key], shifts.get(unit.key, 0), dtype))
            )
        else:
            for name in unit.inputs:
                columns.setdefault(str(input_schema[name].dtype), []).append((name, unit))
    for source, group in columns.items():
        names = tuple(name for name, _ in group)
        kernels.append(Kernel((names,), names, dtype, _column_kernel(
            source,
            [tables[unit.key] for _, unit in group],
            [slots[unit.key] for _, unit in group],
            [shifts.get(unit.key, 0) for _, unit in group],
            dtype,
        )))
    return kernels


def _column_kernel(
    source: str, tables: list[dict], slots: list[int], shifts: list[int], dtype: str
) -> Callable[[Block], Block]:
    """Codes of single and joint columns of one dtype, each with its vocabulary's table."""
    shift_column = np.array([[shift] for shift in shifts], dtype=np.int64) if any(shifts) else None
    hashed = [j for j, n_oov in enumerate(slots) if n_oov > 1]

    def encode(block: Block) -> Block:
        values = block.values
        rows = values.shape[1]
        # One lookup per value, in the block's order: each column's table once per row.
        per_value = tables if rows == 1 else [table for table in tables for _ in range(rows)]
        found = [table.get(value, -1) for table, value in zip(per_value, values.ravel().tolist())]
        codes = np.array(found, dtype=np.int64).reshape(values.shape)
        # Masked integers hold some value under a null, which may well be in the vocabulary.
        if block.nulls is not None or -1 in found:
            missing = codes < 0
            null = null_mask(block, source)
            codes[missing] = OOV_INDEX
            for j in hashed:
                oov = missing[j] & ~null[j]
                if oov.any():
                    column = Block(values[j : j + 1, oov], None if block.nulls is None else block.nulls[j : j + 1, oov])
                    codes[j, oov] = OOV_INDEX + (hashes(column, source)[0] % np.uint64(slots[j])).astype(np.int64)
            codes[null] = NULL_INDEX
        if shift_column is not None:
            codes += shift_column
        return Block(codes.astype(dtype, copy=False))

    return encode


def _combo_kernel(unit: Unit, input_schema: Schema, table: dict, n_oov: int, shift: int, dtype: str) -> Callable[..., Block]:
    """Codes of one combination of columns (one block per part)."""
    sources = [str(input_schema[name].dtype) for name in unit.inputs]
    pandas = get_backend("pandas")

    def encode(*blocks: Block) -> Block:
        parts = []
        for block, source in zip(blocks, sources):
            values = block.values[0].tolist()
            null = null_mask(block, source)[0]
            parts.append([None if is_null else value for value, is_null in zip(values, null.tolist())])
        keys = list(zip(*parts))
        codes = np.array([table.get(key, -1) for key in keys], dtype=np.int64)
        missing = codes < 0
        if missing.any():
            all_null = np.array([all(part is None for part in key) for key in keys], dtype=bool)
            codes[missing] = OOV_INDEX
            oov = missing & ~all_null
            if n_oov > 1 and oov.any():
                frame = host_frame({
                    name: to_pandas(block.values[0][oov], None if block.nulls is None else block.nulls[0][oov], source)
                    for name, block, source in zip(unit.inputs, blocks, sources)
                }, None)
                codes[oov] = OOV_INDEX + (hash_keys(pandas, frame) % np.uint64(n_oov)).astype(np.int64)
            codes[all_null] = NULL_INDEX
        return Block((codes + shift if shift else codes).astype(dtype)[None])

    return encode


def _comparable(source: str, vocab_dtype: str) -> bool:
    """Whether Python equality of a column's and a vocabulary's values is the engine's."""
    vocab = _dtypes.canonical_dtype(vocab_dtype)
    kinds = [_kind(source), _kind(vocab)]
    return kinds[0] is not None and kinds[0] == kinds[1] and "uint64" not in (source.lower(), vocab.lower())


def _kind(dtype: str) -> str | None:
    if _dtypes.is_string(dtype):
        return "string"
    if _dtypes.is_bool(dtype):
        return "bool"
    if _dtypes.is_integer(dtype):
        return "integer"
    return "float" if _dtypes.is_float(dtype) else None


def _is_null(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
