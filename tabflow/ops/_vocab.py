"""Vocabulary algorithms behind :class:`tabflow.ops.Categorify`.

Index convention (the one NVTabular 23.08 uses):

- ``0``: never produced, reserved for padding;
- ``1``: null values (NaN, None, NA);
- ``2 .. 2 + n_oov - 1``: out-of-vocabulary values, ``n_oov = num_buckets or 1``;
- ``2 + n_oov ..``: the vocabulary, most frequent value first, ties broken by value ascending.

Fitting is a map-reduce over value counts: :func:`count_values` per partition,
:func:`merge_counts` (a groupby-sum, associative) and :func:`build_vocabulary` once on the
host. Encoding looks values up in a hash table built once per vocabulary and engine.

Examples
--------
>>> import pandas as pd
>>> from tabflow.ops._vocab import build_vocabulary
>>> counts = pd.DataFrame({"value": ["b", "a", "c"], "count": [2, 2, 1]})
>>> build_vocabulary(counts, freq_threshold=2, limit=None)["value"].tolist()
['a', 'b']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (makes pa.compute available)

from tabflow.backends import backend_for
from tabflow.schema import dtypes

__all__ = [
    "PAD_INDEX",
    "NULL_INDEX",
    "OOV_INDEX",
    "Unit",
    "encoding_units",
    "per_column",
    "check_dtypes",
    "embedding_dimension",
    "count_values",
    "merge_counts",
    "build_vocabulary",
    "user_vocabulary",
    "encode_unit",
    "decode_codes",
    "hash_keys",
]

PAD_INDEX = 0
NULL_INDEX = 1
OOV_INDEX = 2
COUNT = "count"


@dataclass(frozen=True)
class Unit:
    """One vocabulary: the input columns it is fitted on and the output columns it encodes.

    A single column encodes itself; a joint group shares one vocabulary between its columns;
    a combo group encodes the combination of its columns' values as one output column.
    """

    key: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    combo: bool = False

    @property
    def value_columns(self) -> list[str]:
        """Value column names of this unit's vocabulary table."""
        if self.combo:
            return [f"value_{i}" for i in range(len(self.inputs))]
        return ["value"]


def encoding_units(grouped_names: Iterable[str | tuple[str, ...]], encode_type: str, sep: str = "_") -> list[Unit]:
    """Units for a selector's ``grouped_names``; multi-column groups are joint or combo.

    Examples
    --------
    >>> from tabflow.ops._vocab import encoding_units
    >>> [(u.key, u.outputs) for u in encoding_units(["c", ("a", "b")], "combo")]
    [('c', ('c',)), ('a_b', ('a_b',))]
    """
    units = []
    for item in grouped_names:
        names = (item,) if isinstance(item, str) else tuple(item)
        if len(names) == 1:
            units.append(Unit(names[0], names, names))
        elif encode_type == "combo":
            key = sep.join(names)
            units.append(Unit(key, names, (key,), combo=True))
        else:
            units.append(Unit(sep.join(names), names, names))
    return units


def per_column(value: Any, unit: Unit, default: Any = None) -> Any:
    """A per-column parameter (scalar, or dict keyed by the unit's key or one of its columns)."""
    if not isinstance(value, Mapping):
        return default if value is None else value
    for name in (unit.key, *unit.inputs, *unit.outputs):
        if name in value:
            return value[name]
    return default


def check_dtypes(unit: Unit, input_schema: Any) -> None:
    """TypeError naming the column unless the unit's input dtypes can be encoded together."""
    kinds = set()
    for name in unit.inputs:
        column = input_schema[name]
        kind = _value_kind(column.element_dtype)
        if kind is None or (column.is_list and unit.combo):
            raise TypeError(
                f"Categorify cannot encode column {name!r} of dtype {column.dtype}; it encodes "
                "string, integer, float and boolean columns and lists of them (not in combos)"
            )
        kinds.add(kind)
    if len(kinds) > 1 and not unit.combo:
        raise TypeError(f"joint group {list(unit.inputs)} mixes string and numeric columns")


def _value_kind(dtype: str) -> str | None:
    if dtypes.is_string(dtype):
        return "string"
    return "number" if dtypes.is_integer(dtype) or dtypes.is_float(dtype) or dtypes.is_bool(dtype) else None


def embedding_dimension(cardinality: int) -> int:
    """Suggested embedding width for a table of ``cardinality`` rows.

    The rule NVTabular uses: ``min(max(16, round(1.6 * cardinality ** 0.56)), 512)``.

    Examples
    --------
    >>> from tabflow.ops._vocab import embedding_dimension
    >>> embedding_dimension(10), embedding_dimension(10_000), embedding_dimension(10**9)
    (16, 278, 512)
    """
    return int(min(max(16, round(1.6 * cardinality**0.56)), 512))


# ------------------------------------------------------------------------------- fitting
def _flat_values(backend: Any, series: Any) -> Any:
    return backend.list_values_series(series) if backend.is_list_dtype(series.dtype) else series


def count_values(df: Any, unit: Unit) -> tuple[Any, int]:
    """Per-partition ``(counts frame, null count)`` of a unit; the frame stays on the engine.

    List columns count their elements; a joint unit counts the values of all its columns; a
    combo unit counts distinct rows, a row whose parts are all null counting as null.
    """
    backend = backend_for(df)
    if unit.combo:
        frame = df[list(unit.inputs)]
        all_null = backend.null_mask(frame)
        nulls = int(all_null.sum())
        if nulls:
            frame = frame[_mask(backend, ~all_null, frame)]
        counts = frame.groupby(list(unit.inputs), dropna=False, sort=False).size().reset_index()
    else:
        parts = [_flat_values(backend, df[name]) for name in unit.inputs]
        values = parts[0] if len(parts) == 1 else backend.concat_rows(parts)
        nulls = int(values.isna().sum())
        counts = backend.value_counts(values).reset_index()
    counts.columns = [*unit.value_columns, COUNT]
    counts[COUNT] = counts[COUNT].astype("int64")
    return counts, nulls


def merge_counts(partials: list[tuple[Any, int]], split_every: int | None = None) -> tuple[Any, int]:
    """Merge ``(counts, nulls)`` partials by summing the counts of equal values.

    With ``split_every``, at most that many count tables are concatenated for one group-by
    (a local tree of merges): peak memory follows the fan-in, not the number of partials.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.ops._vocab import merge_counts
    >>> parts = [(pd.DataFrame({"value": [v], "count": [1]}), 0) for v in "abab"]
    >>> merged, nulls = merge_counts(parts, split_every=2)
    >>> merged.sort_values("value")["count"].tolist(), nulls
    ([2, 2], 0)
    """
    nulls = sum(p[1] for p in partials)
    frames = [p[0] for p in partials if len(p[0])]
    if not frames:
        return partials[0][0], nulls
    fan_in = max(2, int(split_every)) if split_every else len(frames)
    while len(frames) > 1:
        frames = [_sum_counts(frames[i : i + fan_in]) for i in range(0, len(frames), fan_in)]
    return frames[0], nulls


def _sum_counts(frames: list[Any]) -> Any:
    if len(frames) == 1:
        return frames[0]
    return backend_for(frames[0]).sum_counts(frames, COUNT)


def build_vocabulary(counts: pd.DataFrame, freq_threshold: int, limit: int | None) -> pd.DataFrame:
    """Sort host counts by (count descending, value ascending), drop rare values, keep ``limit``.

    The order depends only on the counts, so a vocabulary fitted on one partition or on many
    is identical. Within a combination (``encode_type="combo"``) a null sorts before every
    value, as in NVTabular: ``(None, "x")`` comes before ``("a", "x")`` when their counts tie.
    """
    value_columns = [c for c in counts.columns if c != COUNT]
    if freq_threshold:
        counts = counts[counts[COUNT] >= freq_threshold]
    # A lexicographic sort as successive stable sorts, least significant key first: with
    # millions of distinct strings this is several times faster than a multi-key sort_values.
    order = np.arange(len(counts))
    if not _ascending_strings(counts, value_columns):
        for name in reversed(value_columns):
            order = order[_stable_argsort(counts[name].take(order))]
    order = order[np.argsort(-counts[COUNT].to_numpy()[order], kind="stable")]
    vocab = counts.take(order)
    if limit is not None:
        vocab = vocab.iloc[: max(limit, 0)]
    vocab = vocab.reset_index(drop=True)
    for name in value_columns:
        vocab[name] = _plain_dtype(vocab[name])
    return vocab


def _ascending_strings(counts: pd.DataFrame, value_columns: list[str]) -> bool:
    # Count tables of strings arrive sorted by value (the pandas engine counts and merges
    # them that way): checking takes one pass, sorting millions of strings many.
    if value_columns != ["value"] or not dtypes.is_string(dtypes.canonical_dtype(counts["value"].dtype)):
        return False
    from tabflow.backends.kernels import (
        is_sorted_unique,  # numba: compiled on first use
        string_buffers,
    )

    try:
        data, offsets, valid = string_buffers(counts["value"])
    except TypeError:
        return False
    return bool(valid.all()) and is_sorted_unique(data, offsets)


def _stable_argsort(series: pd.Series) -> np.ndarray:
    array = pa.array(series.array if hasattr(series.array, "__arrow_array__") else series, from_pandas=True)
    indices = pa.compute.array_sort_indices(array, order="ascending", null_placement="at_start")
    return indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def user_vocabulary(values: Any) -> pd.DataFrame:
    """Vocabulary table for user-given values: their order kept, nulls and repeats dropped."""
    try:
        values = backend_for(values).to_host(values)
    except TypeError:  # a plain list or tuple
        pass
    series = pd.Series(values).dropna().drop_duplicates().reset_index(drop=True)
    counts = pd.array([pd.NA] * len(series), dtype="Int64")
    return pd.DataFrame({"value": _plain_dtype(series), COUNT: counts})


def _plain_dtype(series: pd.Series) -> pd.Series:
    # Masked integer values without nulls come back from parquet as numpy ints: match that now
    # so a loaded vocabulary has the very dtypes of the fitted one.
    canonical = dtypes.canonical_dtype(series.dtype)
    if series.isna().any():
        return series
    if canonical[:1] in ("I", "U") and canonical[1:].lower().startswith(("nt", "int")):
        return series.astype(canonical.lower())
    if canonical == "boolean":
        return series.astype("bool")
    return series


# ------------------------------------------------------------------------------ encoding
def encode_unit(
    df: Any, unit: Unit, table: Any, vocab_offset: int, n_oov: int, dtype: str, shift: int = 0
) -> dict[str, Any]:
    """Output series of a unit: codes of its vocabulary ``table`` (from ``backend.lookup_table``),
    every code but padding moved up by ``shift`` (a block of a single shared table)."""
    backend = backend_for(df)
    if unit.combo:
        codes = _codes(backend, df[list(unit.inputs)], table, vocab_offset, n_oov, shift)
        return {unit.outputs[0]: backend.series(codes, name=unit.outputs[0], index=df.index).astype(dtype)}
    out = {}
    for name in unit.inputs:
        column = df[name]
        if backend.is_list_dtype(column.dtype):
            flat = backend.list_values_series(column)
            offsets = backend.list_offsets(column)
            codes = _codes(backend, flat, table, vocab_offset, n_oov, shift).astype(dtype)
            out[name] = backend.list_from_values_offsets(codes, offsets, index=df.index, name=name)
        else:
            # A column that holds its distinct values apart (parquet's dictionary encoding) is
            # encoded once per distinct value and gathered: no row-sized temporaries.
            codes = backend.map_distinct(column, lambda distinct: _codes(backend, distinct, table, vocab_offset, n_oov, shift), dtype)
            if codes is None:
                codes = _codes(backend, column, table, vocab_offset, n_oov, shift)
            out[name] = backend.series(codes, name=name, index=df.index).astype(dtype)
    return out


def _codes(backend: Any, keys: Any, table: Any, vocab_offset: int, n_oov: int, shift: int = 0) -> Any:
    xp = backend.xp
    # A lookup answers in a new int64 array: the codes are made in it, in place (a partition's
    # worth of fresh memory less per column, each page of it a fault). Found positions move up
    # to their codes; the -1s of the missing land below the vocabulary's first code.
    codes = backend.lookup(table, keys)
    null = backend.null_mask(keys)
    codes += vocab_offset
    missing = codes < vocab_offset
    codes[missing] = OOV_INDEX
    if n_oov > 1:
        oov = missing & ~null
        if bool(oov.any()):
            buckets = hash_keys(backend, keys[_mask(backend, oov, keys)]) % np.uint64(n_oov)
            codes[oov] = OOV_INDEX + buckets.astype(xp.int64)
    codes[null] = NULL_INDEX
    return codes + shift if shift else codes


def _mask(backend: Any, mask: Any, rows: Any) -> Any:
    """An engine mask as a boolean series aligned with ``rows``: what pandas and cuDF objects
    both take to select rows (pandas refuses a CuPy array, as it would any non-NumPy array)."""
    return backend.series(mask, index=rows.index)


def decode_codes(codes: np.ndarray, vocab: pd.DataFrame, vocab_offset: int, oov_value: Any = None,
                 index: pd.Index | None = None) -> pd.DataFrame:
    """Host inverse of the encoding: one column per vocabulary value column, labelled
    ``index`` row for row (default: a range).

    Null (1) and padding (0) decode to null; OOV codes to ``oov_value`` (null by default).
    """
    codes = np.asarray(codes, dtype=np.int64)
    positions = codes - vocab_offset
    valid = (positions >= 0) & (positions < len(vocab))
    take = np.where(valid, positions, -1)
    out = {}
    oov = (codes >= OOV_INDEX) & (codes < vocab_offset)
    for name in [c for c in vocab.columns if c != COUNT]:
        values = pd.array(vocab[name]).take(take, allow_fill=True)
        series = pd.Series(values)
        if oov_value is not None and oov.any():
            series = series.astype(object).where(~oov, oov_value)
        out[name] = series
    decoded = pd.DataFrame(out)
    if index is not None:
        decoded.index = index
    return decoded


# ------------------------------------------------------------------------------- hashing
def hash_keys(backend: Any, keys: Any) -> Any:
    """Stable uint64 hash of each key (:mod:`tabflow.backends._hashing`); a frame folds its columns.

    The hash of one value is the engine's ``hash_values`` (xxHash64 of a documented byte
    form), so buckets agree across runs, machines and engines; a multi-column key combines
    its columns' hashes in order with ``hash_combine``.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends import get_backend
    >>> from tabflow.ops._vocab import hash_keys
    >>> h = hash_keys(get_backend("pandas"), pd.Series(["a", "b", "a"]))
    >>> bool(h[0] == h[2]), bool(h[0] == h[1])
    (True, False)
    """
    if not backend.is_frame(keys):
        return backend.hash_values(keys)
    from tabflow.backends.kernels import hash_combine

    columns = list(keys.columns)
    hashed = backend.hash_values(keys[columns[0]])
    for name in columns[1:]:
        hashed = hash_combine(hashed, backend.hash_values(keys[name]))
    return hashed
