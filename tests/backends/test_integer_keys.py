"""Integer ids as sorted keys: counts, merges and lookups of the pandas engine against
pandas' own answers (value_counts, groupby, Index.get_indexer)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabflow.backends import get_backend
from tabflow.backends._string_table import integer_keys, integer_values
from tabflow.backends.pandas_backend import IntegerLookup

PANDAS = get_backend("pandas")

DTYPES = ["int64", "int32", "int8", "uint32", "uint64", "Int64", "UInt16", "int64[pyarrow]"]


def _ids(rng: np.random.Generator, n: int, distinct: int, dtype: str, null_share: float = 0.1) -> pd.Series:
    # Ids spread over the dtype's range, the extremes and zero among them.
    info = np.iinfo(pd.Series([], dtype=dtype).to_numpy().dtype if "[" not in dtype else np.int64)
    pool = np.unique(np.concatenate([[info.min, info.max, 0], rng.integers(info.min, info.max, distinct, endpoint=True, dtype=info.dtype)]))
    values = pool[rng.integers(0, len(pool), n)]
    series = pd.Series(values).astype(dtype)
    if null_share and not isinstance(series.dtype, np.dtype):
        series[rng.random(n) < null_share] = None
    return series


def test_keys_order_as_the_values_and_give_them_back():
    values = np.array([np.iinfo(np.int64).min, -1, 0, 1, np.iinfo(np.int64).max])
    keys = integer_keys(values)
    assert bool(np.all(keys[1:] > keys[:-1]))
    np.testing.assert_array_equal(integer_values(keys, np.dtype(np.int64)), values)
    np.testing.assert_array_equal(integer_values(integer_keys(np.array([0, 2**63 - 1], np.uint64)), np.dtype(np.uint64)), [0, 2**63 - 1])
    assert integer_keys(np.array([2**63], np.uint64)) is None  # past int64: would take a negative's key


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, distinct", [(0, 1), (1, 1), (5_000, 20), (60_000, 40_000)])
def test_counts_equal_pandas_value_counts_in_ascending_order(dtype, n, distinct):
    series = _ids(np.random.default_rng(n), n, distinct, dtype)
    ours = PANDAS.value_counts(series)
    reference = series.value_counts(dropna=True).sort_index()
    assert ours.index.dtype == series.dtype and ours.name == "count" and ours.index.name == series.name
    assert ours.index.tolist() == reference.index.tolist() and ours.tolist() == reference.tolist()


def test_unsigned_values_past_int64_are_counted_and_looked_up_by_pandas():
    series = pd.Series(np.array([2**64 - 1, 3, 2**64 - 1], np.uint64))
    assert dict(PANDAS.value_counts(series)) == {2**64 - 1: 2, 3: 1}
    table = PANDAS.lookup_table(series.drop_duplicates().reset_index(drop=True))
    assert not isinstance(table, IntegerLookup)
    assert PANDAS.lookup(table, series).tolist() == [0, 1, 0]


@pytest.mark.parametrize("dtype", ["int64", "Int64", "uint32"])
def test_count_tables_merge_as_sorted_runs_into_the_groupby_sum(dtype):
    rng = np.random.default_rng(3)
    tables = [PANDAS.value_counts(_ids(rng, 20_000, 5_000, dtype)).reset_index() for _ in range(5)]
    tables = [table.rename(columns={table.columns[0]: "value"}) for table in tables]
    merged = PANDAS.sum_counts(tables, "count")
    reference = pd.concat(tables).groupby("value")["count"].sum()
    assert merged["value"].dtype == tables[0]["value"].dtype
    assert merged["value"].tolist() == reference.index.tolist() and merged["count"].tolist() == reference.tolist()
    # Tables out of order are grouped instead.
    shuffled = [table.sample(frac=1, random_state=0) for table in tables]
    assert PANDAS.sum_counts(shuffled, "count").set_index("value")["count"].sort_index().tolist() == reference.tolist()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab_size", [1, 300, 70_000])
def test_positions_equal_pandas_get_indexer(dtype, vocab_size):
    rng = np.random.default_rng(vocab_size)
    info = np.iinfo(np.int64 if "[" in dtype else np.dtype(dtype.lower()))
    drawn = np.unique(rng.integers(info.min, min(info.max, 2**63 - 1), vocab_size, endpoint=True, dtype=info.dtype))
    vocab = pd.Series(rng.permutation(drawn)).astype(dtype)
    keys = pd.concat([vocab.sample(50_000, replace=True, random_state=1), _ids(rng, 50_000, vocab_size, dtype)], ignore_index=True)
    table = PANDAS.lookup_table(vocab)
    assert isinstance(table, IntegerLookup) and len(table) == len(vocab)
    ours = PANDAS.lookup(table, keys)
    reference = pd.Index(vocab.astype(object)).get_indexer(keys.astype(object))
    reference[keys.isna().to_numpy()] = -1
    np.testing.assert_array_equal(ours, reference)
    assert ours.dtype == np.int64
    # Keys of another kind are looked up by pandas: equal values match.
    assert PANDAS.lookup(table, pd.Series(["a", None])).tolist() == [-1, -1]
    small = PANDAS.lookup_table(pd.Series([5, 7], dtype=dtype))
    assert PANDAS.lookup(small, pd.Series([7.0, 5.5, None])).tolist() == [1, -1, -1]


def test_a_table_of_numpy_integers_holds_its_keys():
    vocab = pd.Series(np.array([9, -4, 2**40], np.int64), name="value")
    table = PANDAS.lookup_table(vocab)
    assert PANDAS.lookup_table_holds_keys(table)
    pd.testing.assert_series_equal(PANDAS.lookup_table_keys(table), vocab)
    int32 = PANDAS.lookup_table(pd.Series(np.array([3, 1], np.int32)))
    assert PANDAS.lookup_table_keys(int32).dtype == np.int32
    # Masked values, a repeated value or another index keep the series given.
    for kept in (pd.Series([1, 2], dtype="Int64"), pd.Series([1, 1]), pd.Series([1, 2], index=[5, 6])):
        table = PANDAS.lookup_table(kept)
        assert not PANDAS.lookup_table_holds_keys(table) and table.keys is kept
    assert PANDAS.lookup(PANDAS.lookup_table(pd.Series([1, 1])), pd.Series([1])).tolist() == [0]  # the first row
