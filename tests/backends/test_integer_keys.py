"""Integer ids as sorted keys: counts, merges and lookups of the pandas engine against
pandas' own answers (value_counts, groupby, Index.get_indexer)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabflow.backends import _string_table as string_table
from tabflow.backends import get_backend
from tabflow.backends._string_table import count_keys, integer_keys, integer_values
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


@pytest.mark.parametrize("shape", ["few", "skewed", "strided", "one run each", "sorted", "mostly distinct"])
def test_keys_counted_by_hashing_or_sorting_equal_numpy_unique(shape):
    # Few distinct keys (a quarter of the keys or fewer, foreseen by linear counting) are
    # counted in a hash table that starts from the estimate and doubles when half full;
    # more are sorted. Keys alike in their lower bits (ids stepping by 2**32) and the
    # extremes of uint64 must not share slots or be taken for empty ones.
    rng = np.random.default_rng(11)
    n = 200_000
    keys = {
        "few": rng.integers(0, 9, n).astype(np.uint64),
        "skewed": rng.zipf(1.2, n).astype(np.uint64),  # heavy hitters and a long tail
        "strided": rng.integers(0, 4_000, n).astype(np.uint64) << np.uint64(32),
        "one run each": np.repeat(rng.permutation(20_000).astype(np.uint64), n // 20_000),
        "sorted": np.sort(rng.integers(0, 30_000, n).astype(np.uint64)),
        "mostly distinct": rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True),
    }[shape]
    keys[:3] = [0, 2**64 - 1, 0]
    distinct, counts = count_keys(keys)
    expected, expected_counts = np.unique(keys, return_counts=True)
    np.testing.assert_array_equal(distinct, expected)
    np.testing.assert_array_equal(counts, expected_counts)
    assert distinct.dtype == np.uint64 and counts.dtype == np.int64
    estimate = string_table._distinct_estimate(keys, 1 << max(6, (n // 4).bit_length()))
    assert abs(estimate - len(expected)) <= 0.05 * len(expected) + 2 or (estimate == n and len(expected) > n / 2)


def test_a_table_that_outgrows_its_first_size_doubles_and_counts_every_key():
    keys = np.random.default_rng(2).integers(0, 5_000, 60_000).astype(np.uint64)
    for capacity in (16, 1 << 10, 1 << 16):
        distinct, counts, hashed = string_table._hashed_counts(keys, capacity)
        assert hashed
        order = np.argsort(distinct)
        expected, expected_counts = np.unique(keys, return_counts=True)
        np.testing.assert_array_equal(distinct[order], expected)
        np.testing.assert_array_equal(counts[order], expected_counts)


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


@pytest.mark.parametrize("held", ["hashed", "walked"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab_size", [1, 300, 70_000])
def test_positions_equal_pandas_get_indexer(dtype, vocab_size, held, monkeypatch):
    # Sets of few keys are probed in a hash table, larger ones walked in key order: both
    # answer as pandas does (the bound lowered to 0 walks every set).
    if held == "walked":
        monkeypatch.setattr(string_table, "_HASHED_SET_KEYS", 0)
    rng = np.random.default_rng(vocab_size)
    info = np.iinfo(np.int64 if "[" in dtype else np.dtype(dtype.lower()))
    drawn = np.unique(rng.integers(info.min, min(info.max, 2**63 - 1), vocab_size, endpoint=True, dtype=info.dtype))
    vocab = pd.Series(rng.permutation(drawn)).astype(dtype)
    keys = pd.concat([vocab.sample(50_000, replace=True, random_state=1), _ids(rng, 50_000, vocab_size, dtype)], ignore_index=True)
    table = PANDAS.lookup_table(vocab)
    assert isinstance(table, IntegerLookup) and len(table) == len(vocab)
    assert (table._table._hashed is not None) == (held == "hashed")
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


@pytest.mark.parametrize("varying_bits", [1, 11, 12, 32, 45, 64])
def test_radix_sort_on_the_bits_that_vary_equals_numpy_sort(varying_bits):
    # Keys count and look up sorted by a radix sort of the bits where they differ: packed
    # with their rows in the low bits, the order is NumPy's (rows ascending among equal keys).
    rng = np.random.default_rng(varying_bits)
    keys = rng.integers(0, 2**64 - 1, 100_003, dtype=np.uint64, endpoint=True) >> np.uint64(64 - varying_bits)
    keys[:2] = [0, keys.max()]
    sorted_keys = keys.copy()
    string_table._radix_sorted(sorted_keys, 0, varying_bits)
    np.testing.assert_array_equal(sorted_keys, np.sort(keys))
    order, ordered = string_table._key_order(keys)
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))
    np.testing.assert_array_equal(ordered, np.sort(keys))
    empty = np.zeros(0, np.uint64)
    string_table._radix_sorted(empty, 0, 64)
    assert [a.tolist() for a in count_keys(np.full(5, 7, np.uint64))] == [[7], [5]]


def _keys_sharing_a_slot(count: int) -> np.ndarray:
    # Keys whose mixed hashes agree in their lower 32 bits (the bits that choose a slot in
    # every table): the mix is invertible, so such keys are easy to make on purpose.
    mask = 2**64 - 1
    first, second = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53
    keys = []
    for upper in range(1, count + 1):
        value = (upper << 32) | 0x1234
        value ^= value >> 33
        value = (value * pow(second, -1, 2**64)) & mask
        value ^= value >> 33
        value = (value * pow(first, -1, 2**64)) & mask
        value ^= value >> 33
        keys.append(value)
    return np.array(keys, dtype=np.uint64)


@pytest.mark.timeout(60)
def test_keys_made_to_share_slots_are_sorted_and_walked_not_probed_forever():
    crafted = _keys_sharing_a_slot(5_000)
    mixed = np.array([string_table._mixed(key) for key in crafted[:3]], dtype=np.uint64)
    assert len(set((mixed & np.uint64(0xFFFFFFFF)).tolist())) == 1
    keys = np.repeat(crafted, 8)
    distinct, counts = count_keys(keys)  # foreseen as few (one slot's worth), hashed, given up
    np.testing.assert_array_equal(distinct, np.sort(crafted))
    assert (counts == 8).all()
    assert not string_table._hashed_counts(keys, 16)[2]
    table = string_table.SortedKeys(np.sort(crafted), np.arange(len(crafted), dtype=np.int32))
    assert table._hashed is None  # walked instead
    queries = np.concatenate([crafted[::-7], np.array([1, 2], np.uint64)])
    expected = np.searchsorted(np.sort(crafted), queries)
    expected[-2:] = -1
    np.testing.assert_array_equal(table.positions(queries, np.ones(len(queries), bool)), expected)
