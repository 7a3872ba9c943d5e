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

import collections.abc
import weakref
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (makes pa.compute available)

from tabflow.backends import backend_for, get_backend
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
    "extend_vocabulary",
    "extend_held_vocabulary",
    "held_counts",
    "counts_of",
    "user_vocabulary",
    "Vocabularies",
    "HeldVocabulary",
    "held_vocabulary",
    "encode_unit",
    "decode_codes",
    "hash_keys",
]

PAD_INDEX = 0
NULL_INDEX = 1
OOV_INDEX = 2
COUNT = "count"
#: On the pandas engine a count table of short strings (at most eight bytes, no NUL: ids)
#: holds each string as its integer key in this column instead of ``value``, and its counts
#: as uint32 where they fit: 12 bytes a value instead of 24, merged as integers (see
#: :func:`count_values`).
KEY = "value_key"


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
        table = backend.value_counts(values)
        # The counts may not take the values' name as their column (a column called "count").
        counts = table.reset_index(name=COUNT if table.index.name != COUNT else f"{COUNT}_")
    counts.columns = [*unit.value_columns, COUNT]
    counts[COUNT] = counts[COUNT].astype("int64")
    return _keyed(backend, counts), nulls


def _keyed(backend: Any, counts: Any) -> Any:
    """A pandas count table of short strings with the strings as their keys (:data:`KEY`).

    A fit holds its partitions' count tables and their running total at once: as keys with
    uint32 counts they take half the memory, and they merge as sorted integers (the strings
    come sorted from ``value_counts``, so the keys do too). Any other table is left as it is.
    """
    if backend.name != "pandas" or list(counts.columns) != ["value", COUNT] or counts["value"].dtype != _host_string_dtype():
        return counts
    from tabflow.backends.kernels import short_string_keys, string_buffers

    keys = short_string_keys(*string_buffers(counts["value"]))
    if keys is None:  # a longer string, a NUL byte or a null
        return counts
    numbers = counts[COUNT].to_numpy()
    if not len(numbers) or int(numbers.max()) < 2**32:
        numbers = numbers.astype(np.uint32)
    return pd.DataFrame({KEY: keys, COUNT: numbers}, copy=False)


def _unkeyed(counts: Any) -> Any:
    """A count table with strings again in ``value`` (the inverse of :func:`_keyed`)."""
    if KEY not in counts.columns:
        return counts
    from tabflow.backends.kernels import key_strings

    data, offsets = key_strings(counts[KEY].to_numpy())
    values = pa.LargeStringArray.from_buffers(len(counts), pa.py_buffer(offsets), pa.py_buffer(data))
    return pd.DataFrame({"value": pd.array(values, dtype=_host_string_dtype()), COUNT: counts[COUNT].to_numpy().astype(np.int64)}, copy=False)


def _host_string_dtype() -> Any:
    return get_backend("pandas").engine_dtype(dtypes.STRING)


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
    if len({backend_for(frame).name for frame in frames}) > 1:  # a fitted vocabulary's counts (an update's)
        frames = [backend_for(frame).to_host(frame) for frame in frames]
    if len({KEY in frame.columns for frame in frames}) > 1:  # some partition had a long string
        frames = [_unkeyed(frame) for frame in frames]
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
    if KEY in counts.columns:
        return held_vocabulary(counts, freq_threshold, limit).frame()
    value_columns = [c for c in counts.columns if c != COUNT]
    if freq_threshold:
        counts = counts[counts[COUNT] >= freq_threshold]
    # A lexicographic sort as successive stable sorts, least significant key first: with
    # millions of distinct strings this is several times faster than a multi-key sort_values.
    order = np.arange(len(counts))
    if not _ascending_values(counts, value_columns):
        for name in reversed(value_columns):
            order = order[_stable_argsort(counts[name].take(order))]
    order = order[np.argsort(-counts[COUNT].to_numpy()[order], kind="stable")]
    vocab = counts.take(order)
    if limit is not None:
        vocab = vocab.iloc[: max(limit, 0)]
    vocab = vocab.reset_index(drop=True)
    for name in value_columns:
        vocab[name] = _plain_dtype(vocab[name])
    if vocab[COUNT].dtype != np.int64:  # merged counts may be held narrower
        vocab[COUNT] = vocab[COUNT].astype(np.int64)
    return vocab


def extend_vocabulary(
    known: pd.DataFrame, counts: pd.DataFrame, freq_threshold: int, limit: int | None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """An updated vocabulary: ``known``'s values first, in their order, with their counts from
    ``counts``, then the values of ``counts`` that ``known`` lacks, as :func:`build_vocabulary`
    orders and limits them (``limit`` counts the known values too). Also returns, with a
    ``freq_threshold``, the counted values still below it (None without one).

    ``counts`` (host, keyed or not) holds every value counted so far, the known ones included:
    the fitted counts merged with the new data's.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.ops._vocab import extend_vocabulary
    >>> known = pd.DataFrame({"value": ["b", "a"], "count": [2, 1]})
    >>> counts = pd.DataFrame({"value": ["a", "b", "c", "d", "e"], "count": [9, 2, 3, 1, 3]})
    >>> vocab, left = extend_vocabulary(known, counts, freq_threshold=2, limit=None)
    >>> vocab["value"].tolist(), vocab["count"].tolist(), left["value"].tolist()
    (['b', 'a', 'c', 'e'], [2, 9, 3, 3], ['d'])
    """
    counts = _unkeyed(counts).reset_index(drop=True)
    value_columns = [c for c in counts.columns if c != COUNT]
    host = get_backend("pandas")

    def keys(frame: pd.DataFrame) -> Any:
        return frame[value_columns[0]] if len(value_columns) == 1 else frame[value_columns]

    known = known[value_columns].reset_index(drop=True)
    positions = np.asarray(host.lookup(host.lookup_table(keys(known)), keys(counts)), dtype=np.int64)
    found = positions >= 0
    numbers = counts[COUNT].to_numpy(dtype=np.int64)
    known_counts = np.zeros(len(known), dtype=np.int64)
    known_counts[positions[found]] = numbers[found]
    candidates = counts[~found].reset_index(drop=True)
    room = None if limit is None else max(limit - len(known), 0)
    added = build_vocabulary(candidates, freq_threshold, room)
    head = known.assign(**{COUNT: known_counts})
    vocab = pd.concat([head, added], ignore_index=True) if len(added) else head
    left = candidates[candidates[COUNT] < freq_threshold].reset_index(drop=True) if freq_threshold else None
    return vocab, left


def held_counts(held: HeldVocabulary) -> pd.DataFrame | None:
    """A vocabulary held as its table of short strings, as the count table (:data:`KEY`,
    ascending) a partition's counts merge with; None when its table holds no keys.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends import get_backend
    >>> from tabflow.ops._vocab import _keyed, held_counts, held_vocabulary
    >>> counts = pd.DataFrame({"value": pd.Series(["a", "b", "c"], dtype="str"), "count": [1, 3, 2]})
    >>> held = held_vocabulary(_keyed(get_backend("pandas"), counts), 0, None)
    >>> held_counts(held)["count"].tolist()  # in key (value) order
    [1, 3, 2]
    """
    from tabflow.backends.kernels import short_string_key_rows

    key_rows = short_string_key_rows(held.table) if held.backend == "pandas" else None
    if key_rows is None:
        return None
    keys, rows = key_rows
    counts = held.count_values if held.count_runs is None else np.repeat(held.count_values, held.count_runs)
    numbers = counts[rows]
    if not len(numbers) or int(numbers.max()) < 2**32:
        numbers = numbers.astype(np.uint32)
    return pd.DataFrame({KEY: keys, COUNT: numbers}, copy=False)


def extend_held_vocabulary(
    held: HeldVocabulary, counts: pd.DataFrame, freq_threshold: int, limit: int | None,
) -> tuple[HeldVocabulary, pd.DataFrame | None] | None:
    """:func:`extend_vocabulary` of a vocabulary held as its table of short strings, with
    ``counts`` keyed (:data:`KEY`): done on the keys, the strings never written out. None
    when either is not so (the caller then extends the vocabulary's DataFrame).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends import get_backend
    >>> from tabflow.ops._vocab import _keyed, extend_held_vocabulary, held_vocabulary
    >>> pandas = get_backend("pandas")
    >>> held = held_vocabulary(_keyed(pandas, pd.DataFrame({"value": pd.Series(["b", "a"], dtype="str"), "count": [2, 1]})), 0, None)
    >>> counts = _keyed(pandas, pd.DataFrame({"value": pd.Series(list("abcde"), dtype="str"), "count": [9, 2, 3, 1, 3]}))
    >>> grown, rare = extend_held_vocabulary(held, counts, 2, None)
    >>> grown.frame()["value"].tolist(), grown.frame()["count"].tolist(), rare["value"].tolist()
    (['b', 'a', 'c', 'e'], [2, 9, 3, 3], ['d'])
    """
    from tabflow.backends.kernels import short_string_key_rows, short_string_lookup, sorted_key_counts

    key_rows = short_string_key_rows(held.table) if held.backend == "pandas" else None
    if key_rows is None or KEY not in counts.columns:
        return None
    known_keys, known_rows = key_rows
    keys, numbers = counts[KEY].to_numpy(), counts[COUNT].to_numpy().astype(np.int64)
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):  # from a grouping, not a merge
        ascending = np.argsort(keys, kind="stable")
        keys, numbers = keys[ascending], numbers[ascending]
    known_counts, new = sorted_key_counts(known_keys, known_rows, keys, numbers)
    new_keys, new_numbers = keys[new], numbers[new]  # ascending, as the values
    below = new_numbers < freq_threshold if freq_threshold else np.zeros(len(new_keys), dtype=bool)
    rare = None
    if freq_threshold:
        rare = _unkeyed(pd.DataFrame({KEY: new_keys[below], COUNT: new_numbers[below]}, copy=False))
    eligible = np.flatnonzero(~below)
    order = eligible[np.argsort(-new_numbers[eligible], kind="stable")]  # count descending, value ascending
    room = None if limit is None else max(limit - len(known_keys), 0)
    if room is not None:
        order = order[:room]
    added = np.sort(order)  # the added keys in ascending order, each with its new row
    new_rows = np.empty(len(new_keys), dtype=np.int64)
    new_rows[order] = len(known_keys) + np.arange(len(order))
    all_keys = np.concatenate([known_keys, new_keys[added]])
    all_rows = np.concatenate([known_rows.astype(np.int64), new_rows[added]])
    merged = np.argsort(all_keys, kind="stable")  # two ascending runs: merged in one pass
    size = len(all_keys)
    table = short_string_lookup(all_keys[merged], all_rows[merged].astype(np.int32 if size < 2**31 else np.int64))
    return HeldVocabulary.of(table, "pandas", np.concatenate([known_counts, new_numbers[order]])), rare


def counts_of(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """One host count table of several (a vocabulary and the counts of values below its
    threshold), in the form the pandas engine counts in: short strings as their keys, in
    ascending order, so that merging it with a partition's counts merges sorted runs.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.ops._vocab import counts_of
    >>> table = counts_of([pd.DataFrame({"value": pd.Series(["b"], dtype="str"), "count": [2]}),
    ...                    pd.DataFrame({"value": pd.Series(["a"], dtype="str"), "count": [1]})])
    >>> list(table.columns), table["count"].tolist()
    (['value_key', 'count'], [1, 2])
    """
    frames = [frame for frame in frames if len(frame)] or frames[:1]
    table = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)
    table = table.assign(**{COUNT: table[COUNT].astype("int64")})
    keyed = _keyed(get_backend("pandas"), table)
    if KEY in keyed.columns:
        order = np.argsort(keyed[KEY].to_numpy(), kind="stable")
        return keyed.take(order).reset_index(drop=True)
    return keyed


def _ascending_values(counts: pd.DataFrame, value_columns: list[str]) -> bool:
    # Count tables of strings and of integers arrive sorted by value (the pandas engine
    # counts and merges them that way): checking takes one pass, sorting millions of values
    # many.
    if value_columns != ["value"]:
        return False
    values = counts["value"]
    if dtypes.is_integer(dtypes.canonical_dtype(values.dtype)):
        if len(values) < 2 or bool(values.isna().any()):
            return len(values) < 2
        numbers = values.to_numpy()
        return bool(np.all(numbers[1:] > numbers[:-1]))
    if not dtypes.is_string(dtypes.canonical_dtype(values.dtype)):
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


# -------------------------------------------------------------------------- fitted state
@dataclass(eq=False)
class HeldVocabulary:
    """A vocabulary of strings held as a lookup table that holds the strings themselves, with
    its counts as runs: ``count_values[i]`` repeated ``count_runs[i]`` times (None:
    ``count_values`` is every count). Stored in :class:`Vocabularies`, which gives it out as
    the DataFrame it stands for (:meth:`frame`).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tabflow.backends import get_backend
    >>> from tabflow.ops._vocab import HeldVocabulary
    >>> pandas = get_backend("pandas")
    >>> table = pandas.lookup_table(pd.Series(["b", "a", "c", "d"], dtype="str"))
    >>> held = HeldVocabulary.of(table, "pandas", np.array([3, 1, 1, 1]))
    >>> held.count_values.tolist(), held.count_runs.tolist(), len(held), held.total_count()
    ([3, 1], [1, 3], 4, 6)
    >>> held.frame()["value"].tolist(), held.frame()["count"].tolist()
    (['b', 'a', 'c', 'd'], [3, 1, 1, 1])
    """

    table: Any
    backend: str
    count_values: np.ndarray
    count_runs: np.ndarray | None

    @classmethod
    def of(cls, table: Any, backend: str, counts: np.ndarray) -> "HeldVocabulary":
        """``table`` with ``counts`` (integers, in vocabulary order) kept as runs where fewer."""
        starts = np.flatnonzero(np.concatenate(([True], counts[1:] != counts[:-1]))) if len(counts) else np.zeros(0, np.int64)
        if 2 * len(starts) <= len(counts):
            return cls(table, backend, counts[starts].astype(np.int64), np.diff(np.append(starts, len(counts))))
        return cls(table, backend, np.array(counts, dtype=np.int64), None)  # few repeated counts: kept whole

    def __len__(self) -> int:
        return len(self.table)

    def total_count(self) -> int:
        """The sum of the counts."""
        if self.count_runs is None:
            return int(self.count_values.sum())
        return int((self.count_values * self.count_runs).sum())

    def frame(self) -> pd.DataFrame:
        """The vocabulary as a DataFrame: ``value`` and ``count``, in index order."""
        keys = get_backend(self.backend).lookup_table_keys(self.table)
        counts = self.count_values if self.count_runs is None else np.repeat(self.count_values, self.count_runs)
        return pd.DataFrame({"value": keys.array, COUNT: counts})


def held_vocabulary(counts: pd.DataFrame, freq_threshold: int, limit: int | None) -> HeldVocabulary:
    """:func:`build_vocabulary` of a count table of short strings as their keys (:data:`KEY`),
    held as its lookup table from the start: the strings are never written out.

    The table is the keys in ascending order (as the merges leave them) with each one's
    index in the vocabulary. Keys compare as their strings do, so ties by count keep value
    order, as :func:`build_vocabulary` orders them.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.ops._vocab import KEY, _keyed, held_vocabulary
    >>> from tabflow.backends import get_backend
    >>> counts = pd.DataFrame({"value": pd.Series(["a", "b", "c"], dtype="str"), "count": [1, 3, 1]})
    >>> held = held_vocabulary(_keyed(get_backend("pandas"), counts), 0, None)
    >>> held.frame()["value"].tolist(), len(held), held.total_count()
    (['b', 'a', 'c'], 3, 5)
    """
    from tabflow.backends.kernels import short_string_lookup

    keys, numbers = counts[KEY].to_numpy(), counts[COUNT].to_numpy()
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):  # from a grouping, not a merge
        ascending = np.argsort(keys, kind="stable")
        keys, numbers = keys[ascending], numbers[ascending]
    if freq_threshold:
        kept = numbers >= freq_threshold
        keys, numbers = keys[kept], numbers[kept]
    # Each index's key: by count descending (the bitwise complement reverses unsigned counts).
    order = np.argsort(~numbers if numbers.dtype.kind == "u" else -numbers, kind="stable")
    if limit is not None and limit < len(order):
        order = order[: max(limit, 0)]
    rows = np.empty(len(keys), dtype=np.int32 if len(keys) < 2**31 else np.int64)
    rows[order] = np.arange(len(order))  # each key's index
    if len(order) < len(keys):
        selected = np.sort(order)
        keys, rows = keys[selected], rows[selected]
    return HeldVocabulary.of(short_string_lookup(keys, rows), "pandas", numbers[order])


#: The columns of a vocabulary of one value column, as a DataFrame of them has them.
_VOCABULARY_COLUMNS = pd.DataFrame({"value": [], COUNT: []}).columns


class Vocabularies(dict):
    """Categorify's fitted vocabularies: a dict of name to DataFrame (the value column(s) and
    ``count``, in index order), where a vocabulary of strings may be held as its lookup table.

    A lookup table of short strings (at most eight bytes, as ids of hex or decimal digits)
    holds every string whole, as an integer key. Once such a table is built for encoding,
    :meth:`hold_as_table` lets the vocabulary keep only the table and its counts as runs of
    equal counts (few: a fitted vocabulary's counts descend): about 8.5 bytes a value, where
    the DataFrame beside the table took 24 more (each string, its offset and its count).
    A vocabulary fitted from such keys is set held from the start (a :class:`HeldVocabulary`,
    from :func:`held_vocabulary`). Reading a held vocabulary (``vocabs[name]``, ``items()``,
    ``values()``, saving it) rebuilds a DataFrame equal to the one it stands for, and the
    same object is given while a reference to it lives; :meth:`size` counts its values
    without rebuilding it.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends import get_backend
    >>> from tabflow.ops._vocab import Vocabularies
    >>> pandas = get_backend("pandas")
    >>> vocab = pd.DataFrame({"value": pd.Series(["b", "a", "c"], dtype="str"), "count": [3, 1, 1]})
    >>> vocabs = Vocabularies({"c": vocab})
    >>> table = pandas.lookup_table(vocab["value"])
    >>> vocabs.hold_as_table("c", vocab, table, pandas), vocabs.held_table("c", "pandas") is table
    (True, True)
    >>> vocabs["c"] is vocab  # while the frame lives elsewhere, it is the one given
    True
    >>> expected = vocab.copy()
    >>> del vocab  # the frame is gone: reading rebuilds an equal one
    >>> rebuilt = vocabs["c"]
    >>> rebuilt.equals(expected), vocabs["c"] is rebuilt, vocabs.size("c")
    (True, True, 3)
    """

    def __init__(self, vocabularies: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self._rebuilt: dict[str, weakref.ref] = {}
        self._version = 0
        # Another Vocabularies gives its entries as held, not rebuilt.
        entries = vocabularies._entries() if isinstance(vocabularies, Vocabularies) else (vocabularies or {})
        for key, vocab in entries.items():
            dict.__setitem__(self, key, vocab)

    # Reading: every path that gives values out goes through __getitem__. (Overriding
    # __iter__ also makes dict(...), {**...} and update(...) read through it: CPython copies
    # a dict subclass's stored values directly only while its __iter__ is dict's own.)
    def __getitem__(self, key: str) -> Any:
        entry = dict.__getitem__(self, key)
        if not isinstance(entry, HeldVocabulary):
            return entry
        ref = self._rebuilt.get(key)
        frame = ref() if ref is not None else None
        if frame is None:
            frame = entry.frame()
            self._rebuilt[key] = weakref.ref(frame)
        return frame

    def __iter__(self) -> Iterator[str]:
        return dict.__iter__(self)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def items(self) -> collections.abc.ItemsView:
        return collections.abc.ItemsView(self)

    def values(self) -> collections.abc.ValuesView:
        return collections.abc.ValuesView(self)

    def pop(self, key: str, *default: Any) -> Any:
        if key not in self:
            return dict.pop(self, key, *default)
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        key = next(reversed(list(dict.keys(self))), None)
        if key is None:
            raise KeyError("popitem(): the vocabularies are empty")
        return key, self.pop(key)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    # Writing: every path that sets or removes an entry goes through __setitem__ and
    # __delitem__ (dict's own update, clear and |= would not), each counted in ``version``.
    def __setitem__(self, key: str, value: Any) -> None:
        self._rebuilt.pop(key, None)
        dict.__setitem__(self, key, value)
        self._version += 1

    def __delitem__(self, key: str) -> None:
        self._rebuilt.pop(key, None)
        dict.__delitem__(self, key)
        self._version += 1

    def update(self, other: Any = (), /, **more: Any) -> None:
        if isinstance(other, Mapping):
            pairs = list(other.items())
        elif hasattr(other, "keys"):  # dict.update's rule: anything with keys() is read by key
            pairs = [(key, other[key]) for key in other.keys()]
        else:
            pairs = list(other)
        for key, value in [*pairs, *more.items()]:
            self[key] = value

    def clear(self) -> None:
        for key in list(dict.keys(self)):
            del self[key]

    def __ior__(self, other: Any) -> "Vocabularies":
        self.update(other)
        return self

    @property
    def version(self) -> int:
        """How many times an entry was set or removed: what was built from the vocabularies
        (an op's lookup tables) stands for them while this is unchanged.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.ops._vocab import Vocabularies
        >>> vocabs = Vocabularies({"c": pd.DataFrame({"value": ["a"], "count": [1]})})
        >>> before = vocabs.version
        >>> vocabs.update(d=pd.DataFrame({"value": ["b"], "count": [2]}))
        >>> _ = vocabs["c"], list(vocabs.items())  # reading changes nothing
        >>> vocabs.version - before
        1
        """
        return self._version

    def copy(self) -> "Vocabularies":
        return Vocabularies(self)

    def __or__(self, other: Any) -> Any:
        if not isinstance(other, Mapping):
            return NotImplemented
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: Any) -> Any:
        if not isinstance(other, Mapping):
            return NotImplemented
        merged = Vocabularies(other)
        merged.update(self._entries())
        return merged

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def __reduce__(self) -> tuple:
        # Pickled as held: a vocabulary held as its table travels as the table.
        return (Vocabularies, (self._entries(),))

    def _entries(self) -> dict[str, Any]:
        return {key: dict.__getitem__(self, key) for key in dict.keys(self)}

    # The held form.
    def size(self, key: str) -> int:
        """How many values vocabulary ``key`` has (without rebuilding it)."""
        return len(dict.__getitem__(self, key))

    def held_table(self, key: str, backend: str) -> Any | None:
        """The lookup table of engine ``backend`` vocabulary ``key`` is held as, or None."""
        entry = dict.__getitem__(self, key)
        return entry.table if isinstance(entry, HeldVocabulary) and entry.backend == backend else None

    def hold_as_table(self, key: str, vocab: pd.DataFrame, table: Any, backend: Any) -> bool:
        """Hold vocabulary ``key`` (``vocab``, the DataFrame it holds now) as ``table``, the
        lookup table ``backend`` built from its ``value`` column, where the table gives the
        values back (``backend.lookup_table_holds_keys``) and the counts are plain integers;
        whether it now is. The DataFrame is let go: it lives on only where still referenced.
        """
        if key not in self or dict.__getitem__(self, key) is not vocab or not backend.lookup_table_holds_keys(table):
            return False
        index = vocab.index
        plain = (
            list(vocab.columns) == ["value", COUNT]
            and vocab.columns.dtype == _VOCABULARY_COLUMNS.dtype
            and vocab[COUNT].dtype == np.dtype(np.int64)
            and isinstance(index, pd.RangeIndex)
            and index.start == 0
            and index.step == 1
            and len(index) == len(table)
            and not vocab.attrs
        )
        if not plain:
            return False
        held = HeldVocabulary.of(table, backend.name, vocab[COUNT].to_numpy())
        self._rebuilt[key] = weakref.ref(vocab)  # the very frame, while someone holds it
        dict.__setitem__(self, key, held)
        return True


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
