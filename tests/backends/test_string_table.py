"""The Arrow-buffer string kernels against pandas' own answers (value_counts, Index.get_indexer)
and plain Python references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from tabflow.backends import get_backend
from tabflow.backends._string_table import StringTable
from tabflow.backends.pandas_backend import StringLookup, _arrow_string_buffers

PANDAS = get_backend("pandas")


def _random_strings(rng: np.random.Generator, n: int, distinct: int, null_share: float = 0.1) -> pd.Series:
    # Short, long (past xxHash's 32-byte stripes), empty, unicode and prefix-sharing strings.
    pool = np.array(
        [""]
        + [f"{i:x}" for i in range(distinct)]
        + ["é" * 3, "日本語", "a" * 40, "a" * 41, "ab\x00c", "ab"],
        dtype=object,
    )
    values = pool[rng.integers(0, len(pool), n)]
    values[rng.random(n) < null_share] = None
    return pd.Series(values, dtype="str")


@pytest.mark.parametrize("n, distinct", [(0, 1), (1, 1), (1_000, 5), (50_000, 20_000)])
def test_string_counts_equal_pandas_value_counts_in_ascending_byte_order(n, distinct):
    series = _random_strings(np.random.default_rng(n), n, distinct)
    ours = PANDAS.value_counts(series)
    reference: dict[str, int] = {}
    for value in series.dropna():
        reference[value] = reference.get(value, 0) + 1
    assert ours.index.tolist() == sorted(reference, key=lambda v: v.encode())
    assert dict(zip(ours.index, ours.tolist())) == reference


@pytest.mark.parametrize("vocab_size", [1, 300, 70_000])
def test_positions_equal_pandas_get_indexer(vocab_size):
    rng = np.random.default_rng(vocab_size)
    vocab = _random_strings(rng, 3 * vocab_size, vocab_size, null_share=0).drop_duplicates().reset_index(drop=True)
    keys = _random_strings(rng, 100_000, 2 * vocab_size)  # half of the values are unseen
    table = PANDAS.lookup_table(vocab)
    assert isinstance(table, StringLookup) and len(table) == len(vocab)
    ours = PANDAS.lookup(table, keys)
    reference = pd.Index(vocab.astype(object)).get_indexer(keys.astype(object))
    reference[keys.isna().to_numpy()] = -1
    np.testing.assert_array_equal(ours, reference)
    assert ours.dtype == np.int64


@pytest.mark.parametrize("n_keys", [0, 1, 31, 33, 1_001])
def test_positions_of_any_number_of_keys(n_keys):
    # Keys are looked up in blocks: a last, partial block answers like the others.
    rng = np.random.default_rng(n_keys)
    vocab = _random_strings(rng, 2_000, 1_000, null_share=0).drop_duplicates().reset_index(drop=True)
    keys = _random_strings(rng, n_keys, 2_000)
    reference = pd.Index(vocab.astype(object)).get_indexer(keys.astype(object))
    reference[keys.isna().to_numpy()] = -1
    np.testing.assert_array_equal(PANDAS.lookup(PANDAS.lookup_table(vocab), keys), reference)


@pytest.mark.parametrize(
    "keys",
    [
        pd.Series(["b", None, "zz"], dtype="string[python]"),
        pd.Series(["b", None, "zz"], dtype=pd.ArrowDtype(pa.string())),
        pd.Series(["b", None, "zz"], dtype=pd.ArrowDtype(pa.large_string())),
        pd.Series(["b", None, "zz"], dtype=object),
        pd.Series(["b", None, "zz"], dtype="str").iloc[[0, 1, 2]],
    ],
    ids=["python", "arrow-string", "arrow-large-string", "object", "sliced"],
)
def test_every_string_storage_is_looked_up(keys):
    table = PANDAS.lookup_table(pd.Series(["a", "b"], dtype="str"))
    assert PANDAS.lookup(table, keys).tolist() == [1, -1, -1]


def test_keys_that_are_not_all_strings_match_nothing_but_strings():
    table = PANDAS.lookup_table(pd.Series(["1", "b"], dtype="str"))
    assert PANDAS.lookup(table, pd.Series([1, "b", None], dtype=object)).tolist() == [-1, 1, -1]
    assert PANDAS.lookup(table, pd.Series([1, 2], dtype="int64")).tolist() == [-1, -1]


@pytest.mark.parametrize("layout", ["short strings", "hashed"])
def test_a_repeated_string_answers_its_first_row(layout):
    text = b"xyx" if layout == "short strings" else b"x" * 9 + b"y" * 9 + b"x" * 9
    width = len(text) // 3
    data, offsets = np.frombuffer(text, np.uint8), np.arange(4) * width
    table = StringTable(data, offsets, np.ones(3, bool))
    assert table.positions(data, offsets, np.ones(3, bool)).tolist() == [0, 1, 0]


@pytest.mark.parametrize("ids", ["hex", "decimal"])
@pytest.mark.parametrize("queries", ["dense", "sparse", "one"])
def test_sets_of_short_strings_answer_as_the_hash_table_does(queries, ids):
    # A set of only short strings (at most eight bytes, no NUL) is held as sorted integer keys:
    # every kind of query string, found or not, answers as pandas' get_indexer does. 60,000
    # hex ids mostly differ in their first four bytes (whole keys kept); decimal ids share them
    # by the thousand (keys split into halves).
    rng = np.random.default_rng(3)
    width = {"hex": "08x", "decimal": "08d"}[ids]
    vocab = pd.Series(list(dict.fromkeys([format(v, width) for v in rng.integers(0, 2**32 if ids == "hex" else 10**8, 60_000)] + ["", "é", "日本", "a"])), dtype="str")
    pool = np.array(list(vocab) + ["ab\0", "\0", "a\0", "0123456789", "é" * 5, "unseen1", "zzzzzzzz", "ffffffff0"], dtype=object)
    n = {"dense": 200_000, "sparse": 50, "one": 1}[queries]
    values = pool[rng.integers(0, len(pool), n)]
    values[rng.random(n) < 0.05] = None
    keys = pd.Series(values, dtype="str")
    table = PANDAS.lookup_table(vocab)
    assert table._table._slots is None  # the sorted layout
    assert (table._table._sorted._split is not None) == (ids == "decimal")
    reference = pd.Index(vocab.astype(object)).get_indexer(keys.astype(object))
    reference[keys.isna().to_numpy()] = -1
    np.testing.assert_array_equal(PANDAS.lookup(table, keys), reference)
    mixed = PANDAS.lookup_table(pd.concat([vocab, pd.Series(["a long string of many bytes"], dtype="str")], ignore_index=True))
    assert mixed._table._slots is not None  # one long string: the hash table
    np.testing.assert_array_equal(PANDAS.lookup(mixed, keys), reference)
    # Both layouts write into an array given to them (the engine's lookups give one in Arrow's
    # memory pool), whatever it held, and answer in it.
    buffers = _arrow_string_buffers(pa.array(keys.astype(object), pa.large_string()))
    for layout in (table, mixed):
        out = np.full(n, 123456, dtype=np.int64)
        assert layout._table.positions(*buffers, out=out) is out
        np.testing.assert_array_equal(out, reference)
        found = PANDAS.lookup(layout, keys)
        assert found.flags.writeable and found.dtype == np.int64  # Categorify makes its codes in it


def test_a_sliced_arrow_column_uses_its_own_offsets():
    # A slice of an Arrow array starts at an offset into shared buffers.
    series = pd.Series(pd.arrays.ArrowStringArray(pa.array(["skip", "a", None, "b"]).slice(1)))
    table = PANDAS.lookup_table(pd.Series(["b", "a"], dtype="str"))
    assert PANDAS.lookup(table, series).tolist() == [1, -1, 0]


@pytest.mark.parametrize("parts", [1, 2, 3, 8])
def test_sorted_merge_of_count_tables_equals_a_group_by(parts):
    rng = np.random.default_rng(parts)
    frames = []
    for _ in range(parts):
        counts = PANDAS.value_counts(_random_strings(rng, int(rng.integers(0, 3_000)), 1_500))
        frames.append(counts.rename_axis("value").reset_index())
    for frame in frames:  # value_counts gives strings in ascending byte order
        assert frame["value"].tolist() == sorted(frame["value"], key=lambda v: v.encode())
    merged = PANDAS.sum_counts(frames, "count")
    # A plain Python reference: pandas 2's object hash tables end strings at an embedded NUL.
    reference: dict[str, int] = {}
    for frame in frames:
        for value, count in zip(frame["value"], frame["count"]):
            reference[value] = reference.get(value, 0) + int(count)
    assert merged["value"].tolist() == sorted(reference, key=lambda v: v.encode())
    assert dict(zip(merged["value"], merged["count"].tolist())) == reference
    assert merged["value"].dtype == frames[0]["value"].dtype and merged["count"].dtype == np.int64


def test_the_last_merge_leaves_out_the_common_prefixes_and_merges_the_same():
    # A run merged again needs its strings' common prefixes with their predecessors; the last
    # merge's would go unread.
    from tabflow.backends._string_table import _merge_runs, _run_lcps

    def run(values, counts):
        data = np.frombuffer("".join(values).encode(), np.uint8)
        offsets = np.concatenate([[0], np.cumsum([len(v.encode()) for v in values])]).astype(np.int64)
        lcps, ascending = _run_lcps(data, offsets)
        assert ascending
        return data, offsets, np.array(counts, np.int64), lcps

    a, b = run(["ab", "abcdefghi", "b"], [1, 2, 3]), run(["abcdefghh", "b", "c"], [4, 5, 6])
    kept, dropped = _merge_runs(*a, *b, True), _merge_runs(*a, *b, False)
    for left, right in zip(kept[:3], dropped[:3]):
        np.testing.assert_array_equal(left, right)
    assert bytes(kept[0]) == b"ababcdefghhabcdefghibc" and kept[2].tolist() == [1, 4, 2, 8, 6]
    assert kept[3].tolist() == [0, 2, 8, 0, 0] == _run_lcps(kept[0], kept[1])[0].tolist()
    assert len(dropped[3]) == 0


def test_count_tables_out_of_order_or_with_nulls_are_grouped():
    unsorted = pd.DataFrame({"value": pd.Series(["b", "a"], dtype="str"), "count": [1, 2]})
    with_null = pd.DataFrame({"value": pd.Series(["a", None], dtype="str"), "count": [3, 4]})
    merged = PANDAS.sum_counts([unsorted, with_null], "count")
    assert dict(zip(merged["value"].astype(object).where(merged["value"].notna(), None), merged["count"])) == {
        "b": 1, "a": 5, None: 4,
    }


def test_vocabulary_is_the_same_from_sorted_and_unsorted_counts():
    from tabflow.ops._vocab import build_vocabulary

    rng = np.random.default_rng(7)
    counts = PANDAS.value_counts(_random_strings(rng, 20_000, 5_000)).rename_axis("value").reset_index()
    shuffled = counts.sample(frac=1.0, random_state=1).reset_index(drop=True)
    expected = sorted(zip(-counts["count"], counts["value"].map(str.encode)))
    for table in (counts, shuffled):
        vocab = build_vocabulary(table, freq_threshold=0, limit=None)
        assert list(zip(-vocab["count"], vocab["value"].map(str.encode))) == expected


@pytest.mark.parametrize("shape", ["short", "shared prefixes", "nul bytes", "unicode", "empty", "one", "repeated"])
def test_byte_order_equals_sorting_by_bytes(shape):
    from tabflow.backends._string_table import byte_order
    from tabflow.backends.pandas_backend import _arrow_string_buffers

    rng = np.random.default_rng(7)
    if shape == "short":  # distinct, as a dictionary's values are
        values = list(dict.fromkeys("".join(rng.choice(list("ab0"), rng.integers(0, 12))) for _ in range(3_000)))
    elif shape == "shared prefixes":  # runs of ties on the first eight bytes, settled by the rest
        values = [f"{group:07d}/{rest}" for group in range(40) for rest in rng.permutation(20)]
        values = [values[i] for i in rng.permutation(len(values))]
    elif shape == "nul bytes":  # "ab" < "ab\0" < "ab\0\0" although their integer keys are equal
        values = ["ab\0", "ab", "ab\0\0", "a", "ab\0b", "", "\0"] * 3
    elif shape == "unicode":
        values = ["é", "e", "日本", "z", "ё", "ü" * 9, "ü" * 8]
    elif shape == "empty":
        values = []
    elif shape == "repeated":  # several copies of each value, long and short, in random order
        words = [f"w{i:04d}" + "x" * int(i % 3 == 0) * 9 for i in range(3_000)]
        values = [words[i] for i in rng.integers(0, len(words), 12_000)]
    else:
        values = ["x"]
    data, offsets, _ = _arrow_string_buffers(pa.array(values, pa.string()))
    order = byte_order(data, offsets)
    expected = sorted(range(len(values)), key=lambda i: values[i].encode())
    assert order is not None and [values[i] for i in order] == [values[i] for i in expected]
    assert order.tolist() == expected  # equal strings keep their order


def test_byte_order_declines_long_runs_of_shared_prefixes():
    from tabflow.backends._string_table import byte_order, sorted_counts
    from tabflow.backends.pandas_backend import _arrow_string_buffers

    values = [f"prefix-shared-{i:04d}" for i in range(100)][::-1]
    assert byte_order(*_arrow_string_buffers(pa.array(values))[:2]) is None
    assert sorted_counts(*_arrow_string_buffers(pa.array(values))) is None
    # value_counts then sorts by comparison: the same ascending order either way, also with
    # many copies of each (URL-like values sharing a long prefix).
    counts = PANDAS.value_counts(pd.Series(values, dtype="str"))
    assert counts.index.tolist() == sorted(values)
    rng = np.random.default_rng(11)
    words = [f"https://example.com/{i:05d}" for i in range(2_000)] + ["https://", "https://e"]
    repeated = [words[i] for i in rng.integers(0, len(words), 9_000)]
    counts = PANDAS.value_counts(pd.Series(repeated, dtype="str"))
    assert counts.index.tolist() == sorted(set(repeated), key=str.encode)
    assert counts.tolist() == [repeated.count(v) for v in counts.index]


@pytest.mark.parametrize(
    "shape", ["ids", "short mixed", "eight and nine bytes", "long repeated", "shared prefixes", "nul bytes", "all null", "empty", "unicode"]
)
def test_sorted_counts_equal_counting_in_python(shape):
    from tabflow.backends._string_table import sorted_counts
    from tabflow.backends.pandas_backend import _arrow_string_buffers

    rng = np.random.default_rng(5)
    if shape == "ids":  # Criteo-like: 8 hex characters, half the rows repeats
        pool = [f"{v:08x}" for v in rng.integers(0, 2**32, 30_000)]
        values = [pool[i] for i in rng.integers(0, len(pool), 60_000)]
    elif shape == "short mixed":  # 0-8 bytes, multi-byte characters: counted from the keys alone
        pool = ["".join(rng.choice(list("ab\u00e9z"), size=n)) for n in rng.integers(0, 5, 3_000)]
        values = [v for v in (pool[i] for i in rng.integers(0, len(pool), 20_000)) if len(v.encode()) <= 8]
    elif shape == "eight and nine bytes":  # one string over eight bytes: sorted by prefix instead
        values = [f"{v:08x}" for v in rng.integers(0, 2**32, 5_000)] + ["123456789", "12345678"]
    elif shape == "long repeated":  # runs of one long string (equal keys, identical bytes)
        values = [("k" * 30 + str(i % 3)) for i in range(5_000)]
    elif shape == "shared prefixes":
        values = [f"{i % 7:08d}{'x' * (i % 5)}{i % 11}" for i in range(20_000)]
    elif shape == "nul bytes":
        values = ["ab", "ab\0", "ab\0\0", "ab\0", "", "\0", "ab"] * 4  # ties settled in place
    elif shape == "all null":
        values = [None] * 40
    elif shape == "empty":
        values = []
    else:
        values = ["é", "e", "日本", "ü" * 9, "ü" * 8, "e"] * 10
    if shape not in ("all null", "empty"):
        values = [None if rng.random() < 0.1 else v for v in values]
    data, offsets, valid = _arrow_string_buffers(pa.array(values, pa.string()))
    reference: dict[str, int] = {}
    for value in values:
        if value is not None:
            reference[value] = reference.get(value, 0) + 1
    table = sorted_counts(data, offsets, valid)
    if shape in ("long repeated", "shared prefixes"):
        # Thousands of different strings share their first eight bytes: declined, and
        # value_counts counts them by hashing instead.
        assert table is None
        counts = PANDAS.value_counts(pd.Series(values, dtype="str"))
        assert counts.index.tolist() == sorted(reference, key=str.encode)
        assert counts.tolist() == [reference[v] for v in counts.index]
        return
    out_data, out_offsets, counts = table
    strings = [bytes(out_data[out_offsets[i] : out_offsets[i + 1]]).decode() for i in range(len(counts))]
    assert strings == sorted(reference, key=str.encode)
    assert counts.tolist() == [reference[v] for v in strings]
    assert counts.dtype == np.int64 and out_offsets.dtype == np.int64


def _run(values, counts=None):
    array = pa.array(values, type=pa.large_string())
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], np.int64)[: len(array) + 1]
    return np.frombuffer(buffers[2] or b"", np.uint8), offsets, np.asarray(counts if counts is not None else [1] * len(values), np.int64)


def _assert_merged_as_python(runs):
    # merge_sorted_counts of (ascending strings, counts) runs against summing in a dict.
    from tabflow.backends._string_table import merge_sorted_counts

    reference: dict[str, int] = {}
    for chosen, counts in runs:
        for value, count in zip(chosen, counts):
            reference[value] = reference.get(value, 0) + int(count)
    data, offsets, counts = merge_sorted_counts([_run(chosen, counts) for chosen, counts in runs])
    merged = pa.LargeStringArray.from_buffers(len(counts), pa.py_buffer(offsets), pa.py_buffer(data)).to_pylist()
    assert merged == sorted(reference, key=str.encode)
    assert counts.tolist() == [reference[value] for value in merged]


def test_strings_taken_by_row_in_the_order_given():
    from tabflow.backends._string_table import take_strings

    data, offsets, _ = _run(["", "https://example.com/a", "é", "x"])
    for rows in ([], [1], [3, 1, 1, 0, 2]):
        taken, taken_offsets = take_strings(data, offsets, np.array(rows, np.int64))
        strings = pa.LargeStringArray.from_buffers(len(rows), pa.py_buffer(taken_offsets), pa.py_buffer(taken)).to_pylist()
        assert strings == [["", "https://example.com/a", "é", "x"][row] for row in rows]


@pytest.mark.parametrize("runs", [2, 5, 9])
def test_merging_strings_that_share_their_first_eight_bytes_orders_them_by_every_byte(runs):
    # Strings alike in their first eight bytes tie on the integer keys the merge compares
    # first; their order and sums come from the bytes after them (a NUL and a shorter
    # string included).

    rng = np.random.default_rng(runs)
    pool = ["user_000" + tail for tail in ["", "\x00", "\x00\x00", "1", "10", "2", "é", "1" * 30]] + ["user_00", "a", ""]
    tables = []
    for _ in range(runs):
        chosen = sorted(set(rng.choice(pool, size=int(rng.integers(1, len(pool))))), key=str.encode)
        counts = rng.integers(1, 100, size=len(chosen))
        tables.append((chosen, counts))
    _assert_merged_as_python(tables)


@pytest.mark.parametrize("runs", [2, 3, 8])
@pytest.mark.parametrize("longest", [8, 9])
def test_merged_count_tables_equal_counting_in_python(runs, longest, monkeypatch):
    # Runs of strings of at most eight bytes without NUL merge as integer keys; one longer
    # string sends every run through the merge of strings. Both give the same table: empty
    # strings, one-byte to eight-byte strings, multi-byte characters, empty runs, and
    # strings in one run only or in all of them.
    from tabflow.backends import _string_table
    from tabflow.backends._string_table import merge_sorted_counts

    merged_as_keys = []
    merge_short_runs = _string_table._merge_short_runs
    monkeypatch.setattr(_string_table, "_merge_short_runs", lambda runs: merged_as_keys.append(True) or merge_short_runs(runs))
    rng = np.random.default_rng(runs * 10 + longest)
    pool = ["", "a", "ab", "é", "éé", "zzzzzzzz", "\x7f" * 8, "0000000", "00000000", "1", "10", "9" * 8]
    pool += ["".join(rng.choice(list("0123456789abcdef"), size=int(rng.integers(1, 9)))) for _ in range(300)]
    if longest > 8:
        pool.append("x" * longest)
    tables, reference = [], {}
    for r in range(runs):
        size = 0 if r == 1 else int(rng.integers(1, len(pool)))
        chosen = sorted(set(rng.choice(pool, size=size)) | ({"x" * longest} if longest > 8 and r == runs - 1 else set()), key=str.encode)
        counts = rng.integers(1, 2**40, size=len(chosen))
        tables.append(_run(chosen, counts))
        for value, count in zip(chosen, counts):
            reference[value] = reference.get(value, 0) + int(count)
    data, offsets, counts = merge_sorted_counts(tables)
    assert merged_as_keys == ([True] if longest <= 8 else [])
    merged = pa.LargeStringArray.from_buffers(len(counts), pa.py_buffer(offsets), pa.py_buffer(data)).to_pylist()
    assert merged == sorted(reference, key=str.encode)
    assert counts.tolist() == [reference[value] for value in merged]
    assert counts.dtype == np.int64 and offsets.dtype == np.int64 and data.dtype == np.uint8
    # The merged arrays are exactly the table's size (nothing held past its end).
    assert offsets[0] == 0 and offsets[-1] == len(data) and len(offsets) == len(counts) + 1


@pytest.mark.parametrize("bad", [["b", "a"], ["a", "a"], ["x", "y", "id01", "id00"], ["", ""]])
@pytest.mark.parametrize("position", [0, 1, 2])
def test_a_run_of_short_strings_out_of_order_is_refused(bad, position):
    from tabflow.backends._string_table import merge_sorted_counts

    good = [["a", "c"], ["b", "id00"]]
    tables = [*good[:position], bad, *good[position:]]
    assert merge_sorted_counts([_run(t) for t in tables]) is None


@pytest.mark.parametrize("bad", [["b", "a"], ["a", "a"], ["x", "y", "user_0001", "user_0000"]])
@pytest.mark.parametrize("position", [0, 1, 2])
def test_a_run_out_of_order_anywhere_is_refused_and_the_counts_are_grouped(bad, position):
    from tabflow.backends._string_table import merge_sorted_counts

    good = [["a", "c"], ["b", "user_0000"]]
    tables = [*good[:position], bad, *good[position:]]
    assert merge_sorted_counts([_run(t) for t in tables]) is None
    # The engine's merge of such count tables groups them instead, exactly.
    frames = [pd.DataFrame({"value": pd.Series(t, dtype="str"), "count": np.ones(len(t), np.int64)}) for t in tables]
    merged = PANDAS.sum_counts(frames, "count")
    reference: dict[str, int] = {}
    for t in tables:
        for value in t:
            reference[value] = reference.get(value, 0) + 1
    assert dict(zip(merged["value"], merged["count"].tolist())) == reference


@pytest.mark.parametrize("foreseen", [-1, 1, 10**6])
@pytest.mark.parametrize("n, distinct", [(0, 1), (1, 1), (5_000, 3), (20_000, 15_000)])
def test_strings_counted_by_hashing_equal_pandas_in_first_row_order(n, distinct, foreseen):
    # Estimated, far too few (the table grows many times over) or far too many foreseen.
    from tabflow.backends._string_table import hashed_counts

    values = _random_strings(np.random.default_rng(n + distinct), n, distinct)
    data, offsets, valid = _arrow_string_buffers(pa.array(values.array))
    table = hashed_counts(data, offsets, valid, foreseen)
    strings = pa.LargeStringArray.from_buffers(len(table[2]), pa.py_buffer(table[1]), pa.py_buffer(table[0])).to_pylist()
    expected = values.value_counts(dropna=True, sort=False)  # in order of first row
    assert strings == expected.index.tolist() and table[2].tolist() == expected.tolist()


def test_long_strings_are_counted_by_hashing_or_else_by_pandas(monkeypatch):
    # A column of long strings counted by hashing, sorted in byte order; the same when the
    # hash table declines (strings made to collide) and pandas counts them.
    import tabflow.backends._string_table as kernels

    values = _random_strings(np.random.default_rng(3), 20_000, 4_000).map(lambda v: v if pd.isna(v) else f"https://example.com/{v}")
    expected = values.value_counts(dropna=True)
    expected = expected.iloc[np.argsort(expected.index.map(str.encode).to_numpy(), kind="stable")]
    for declined in (False, True):
        if declined:
            monkeypatch.setattr(kernels, "hashed_counts", lambda *args: None)
        counts = PANDAS.value_counts(values)
        assert counts.index.tolist() == expected.index.tolist() and counts.tolist() == expected.tolist()


@pytest.mark.parametrize("runs", [2, 7])
def test_merging_urls_and_user_agents_equals_counting_in_python(runs):
    # Strings alike in long prefixes (templates around a hex id, templates that are prefixes
    # of one another) and shorter ones, spread over runs of different sizes: the merge skips
    # the prefixes it knows two strings share, and must still order and sum as bytes do.

    rng = np.random.default_rng(runs)
    templates = ["https://www.example.org/p/{}", "https://www.example.org/p/{}?ref=feed", "https://shop.example.com/{}",
                 "Mozilla/5.0 (X11; Linux x86_64) {}", "{}", "user-{}@mail.example.com", "https://{}"]
    tables = []
    for size in rng.integers(1, 3000, size=runs):
        ids = rng.integers(0, 16 ** int(rng.integers(1, 5)), size=size)
        chosen = sorted({templates[int(t)].format(f"{i:x}") for t, i in zip(rng.integers(0, len(templates), size), ids)}, key=str.encode)
        counts = rng.integers(1, 5, size=len(chosen))
        tables.append((chosen, counts))
    _assert_merged_as_python(tables)


def test_a_late_run_out_of_order_is_refused_after_the_merges_before_it():
    # Runs are checked when first merged: the largest run, merged last, is out of order
    # behind strings sharing a long prefix.
    from tabflow.backends._string_table import merge_sorted_counts

    prefix = "https://www.example.org/p/"
    small = [[prefix + "0001"], [prefix + "0002"], [prefix + "0003"]]
    large = [prefix + f"{i:04d}" for i in range(10, 40)]
    large[20], large[21] = large[21], large[20]
    assert merge_sorted_counts([_run(t) for t in [*small, large]]) is None
    large[20], large[21] = large[21], large[20]
    data, offsets, counts = merge_sorted_counts([_run(t) for t in [*small, large]])
    merged = pa.LargeStringArray.from_buffers(len(counts), pa.py_buffer(offsets), pa.py_buffer(data)).to_pylist()
    assert merged == sorted(sum(small, []) + large) and counts.tolist() == [1] * 33


def test_byte_comparisons_agree_with_python_at_every_length_and_position():
    # The kernels compare eight bytes at a time, then byte by byte: strings of 0-20 bytes
    # that differ at each position, or are a prefix of one another, placed at odd offsets
    # (words read unaligned), against Python's order of bytes.
    from tabflow.backends._string_table import _common_prefix, _compare, _same_bytes

    base = bytes(range(100, 121))
    cases = []
    for length in range(21):
        a = base[:length]
        cases += [(a, base[:other]) for other in range(21)]
        for position in range(length):
            for step in (-1, 1):
                b = bytearray(a)
                b[position] = (b[position] + step) % 256
                cases.append((a, bytes(b)))
    for a, b in cases:
        data = np.frombuffer(b"\x07" + a + b"\x07\x07\x07" + b, np.uint8)
        a_start, b_start = 1, len(a) + 4
        expected_order = (a > b) - (a < b)
        expected_shared = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
        assert _compare(data, a_start, len(a), data, b_start, len(b)) == expected_order, (a, b)
        assert _same_bytes(data, a_start, len(a), data, b_start, len(b)) == (a == b), (a, b)
        assert _common_prefix(data, a_start, data, b_start, min(len(a), len(b)), 0) == expected_shared, (a, b)


def _keys_of(strings):
    from tabflow.backends._string_table import _prefix_keys

    data, offsets, _ = _run(list(strings))
    return _prefix_keys(data, offsets)


_KEY_SHAPES = {
    "random 64-bit": lambda rng: rng.integers(0, 2**64 - 1, 50_000, dtype=np.uint64),
    "few distinct, repeated": lambda rng: rng.integers(0, 5, 20_000).astype(np.uint64),
    "none": lambda rng: np.zeros(0, np.uint64),
    "one": lambda rng: np.array([7], np.uint64),
    "all equal": lambda rng: np.full(1000, 42, np.uint64),
    "extremes": lambda rng: np.array([2**64 - 1, 0, 2**63, 2**63 - 1, 1], np.uint64),
    "lowest bits only": lambda rng: rng.permutation(50_000).astype(np.uint64),
    "hex ids": lambda rng: _keys_of(format(v, "08x") for v in rng.integers(0, 16**8, 50_000)),
    "zero-padded serials": lambda rng: _keys_of(format(v, "08d") for v in rng.permutation(50_000)),
    "serials behind two prefixes": lambda rng: _keys_of(p + format(v, "07d") for p, v in zip(rng.choice(["u", "i"], 50_000), rng.permutation(50_000))),
    "top bit and lowest bits": lambda rng: (rng.integers(0, 2, 50_000).astype(np.uint64) << np.uint64(63)) | rng.permutation(50_000).astype(np.uint64),
    "runs alike in their upper bits": lambda rng: (rng.integers(0, 64, 50_000).astype(np.uint64) << np.uint64(40)) | rng.integers(0, 2**16, 50_000).astype(np.uint64),
}


@pytest.mark.parametrize("shape", list(_KEY_SHAPES))
def test_key_order_sorts_like_numpy(shape):
    # Queries and tables are put in key order by a packed sort with insertion, or an argsort
    # where the sample says the packed bits cannot tell the keys apart: the same order either way.
    from tabflow.backends._string_table import _key_order

    keys = _KEY_SHAPES[shape](np.random.default_rng(len(shape)))
    order, ordered = _key_order(keys)
    assert np.array_equal(ordered, np.sort(keys))
    assert np.array_equal(keys[order], ordered)
    assert np.array_equal(np.sort(order), np.arange(len(keys)))


@pytest.mark.parametrize("seed", range(4))
def test_keys_split_into_halves_answer_at_every_group_boundary(seed):
    # Strings sharing their first four bytes by the hundred, and strings of fewer than four
    # bytes (their upper half ends in padding): found, unseen beside them, before the first
    # and past the last group, repeated, null, too long or holding a NUL.
    rng = np.random.default_rng(seed)
    prefixes = ["", "a", "ab", "abc", "abcd", "abce", "m\x01", "zzzz", "é", "日本"]
    tails = ["", "a", "b", "zz", "\x01", "\x7f\x7f", "9999", "é"]
    vocab_values = [p + t for p in prefixes for t in tails if len((p + t).encode()) <= 8]
    vocab_values += [f"id{v:06d}" for v in rng.choice(10**6, 3000, replace=False)]
    rng.shuffle(vocab_values)
    vocab = pd.Series(list(dict.fromkeys(vocab_values)), dtype="str")
    table = PANDAS.lookup_table(vocab)
    assert table._table._sorted._split is not None
    unseen = ["abcc", "abcf", "abcdzzzz", "\x01", "0", "zzzzz", "zzzzzzzz", "id9999999", "id", "ab\0", "日本日", "abcdefghi"]
    pool = np.array(vocab_values + unseen + [f"id{v:06d}" for v in rng.integers(0, 10**6, 500)], dtype=object)
    values = pool[rng.integers(0, len(pool), 20_000)]
    values[rng.random(len(values)) < 0.05] = None
    keys = pd.Series(values, dtype="str")
    reference = pd.Index(vocab.astype(object)).get_indexer(keys.astype(object))
    reference[keys.isna().to_numpy()] = -1
    np.testing.assert_array_equal(PANDAS.lookup(table, keys), reference)
    # One query at a time, too: each starts its walk from the first group.
    for value in ["", "abcd", "abce9999", "zzzz\x7f\x7f", "id", unseen[0], vocab_values[-1]]:
        expected = pd.Index(vocab.astype(object)).get_indexer([value])
        np.testing.assert_array_equal(PANDAS.lookup(table, pd.Series([value], dtype="str")), expected)


def test_a_string_is_its_key_only_when_short_and_free_of_nul_bytes():
    # Every length up to nine bytes, with a NUL at each place or none, among bytes that sit
    # next to zero in arithmetic (0x01, 0x80, 0xFF): keys and "whole" flags against Python.
    from tabflow.backends._string_table import _prefix_keys, _run_keys, _short_keys

    strings = []
    for length in range(10):
        for filler in (b"\x01", b"\x80", b"\xff", b"a"):
            strings.append(filler * length)
            strings += [filler * k + b"\0" + filler * (length - k - 1) for k in range(length)]
    data = np.frombuffer(b"".join(strings), np.uint8)
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in strings]))).astype(np.int64)
    valid = np.ones(len(strings), bool)
    valid[::7] = False
    keys, short = _short_keys(data, offsets, valid)
    expected_keys = [int.from_bytes(s[:8].ljust(8, b"\0"), "big") for s in strings]
    assert keys.tolist() == expected_keys and _prefix_keys(data, offsets).tolist() == expected_keys
    assert short.tolist() == [bool(ok) and len(s) <= 8 and b"\0" not in s for s, ok in zip(strings, valid)]
    for s in strings:  # a run of one string: whole (state 1) or not (state 0)
        run_keys, state = _run_keys(np.frombuffer(s, np.uint8), np.array([0, len(s)], np.int64))
        assert state == (1 if len(s) <= 8 and b"\0" not in s else 0)


# ---------------------------------------------------------------- count tables of keys
def _key_runs(rng, n_runs, size, spread):
    return [(np.unique(rng.integers(0, spread, size, dtype=np.uint64)), None) for _ in range(n_runs)]


@pytest.mark.parametrize("n_runs, size, spread", [(1, 100, 1000), (2, 500, 700), (8, 2000, 5000), (3, 50, 2**64 - 1)])
def test_merged_key_counts_equal_counting_in_python(n_runs, size, spread):
    from collections import Counter

    from tabflow.backends._string_table import merge_key_counts

    rng = np.random.default_rng(n_runs * size)
    runs = [(keys, rng.integers(1, 2**40, len(keys))) for keys, _ in _key_runs(rng, n_runs, size, spread)]
    runs.append((np.zeros(0, np.uint64), np.zeros(0, np.int64)))  # an empty run
    reference: Counter = Counter()
    for keys, counts in runs:
        reference.update(dict(zip(keys.tolist(), counts.tolist())))
    given = list(runs)
    keys, counts = merge_key_counts(given)
    assert given == []  # each run let go once merged
    assert keys.tolist() == sorted(reference) and counts.tolist() == [reference[k] for k in sorted(reference)]
    assert keys.dtype == np.uint64 and counts.dtype == np.int64
    if n_runs > 1:  # sized to the union: not a view of larger arrays, whose tails would be held
        assert not isinstance(keys.base, np.ndarray) and not isinstance(counts.base, np.ndarray)


@pytest.mark.parametrize("bad", [[3, 3, 5], [5, 3], [1, 2, 2]])
def test_key_runs_that_do_not_ascend_strictly_are_refused(bad):
    from tabflow.backends._string_table import merge_key_counts

    good = (np.array([1, 4], np.uint64), np.array([1, 1]))
    assert merge_key_counts([good, (np.array(bad, np.uint64), np.ones(len(bad), np.int64))]) is None
    assert merge_key_counts([]) is not None and len(merge_key_counts([])[0]) == 0


def test_short_string_keys_round_trip_and_refuse_what_is_not_its_key():
    from tabflow.backends._string_table import key_strings, short_string_keys

    strings = ["", "a", "é", "\x01\x7f", "12345678", "日本", "zz"]
    data, offsets, valid = _arrow_string_buffers(pa.array(strings, pa.large_string()))
    keys = short_string_keys(data, offsets, valid)
    back_data, back_offsets = key_strings(keys)
    assert [back_data[a:b].tobytes().decode() for a, b in zip(back_offsets[:-1], back_offsets[1:])] == strings
    assert [strings[i] for i in np.argsort(keys, kind="stable")] == sorted(strings, key=str.encode)
    for refused in (["123456789"], ["a\x00"], ["a", None]):
        assert short_string_keys(*_arrow_string_buffers(pa.array(refused, pa.large_string()))) is None


@pytest.mark.parametrize("ids", ["hex", "letters"])
def test_a_table_of_keys_answers_as_the_table_of_its_strings(ids):
    from tabflow.backends._string_table import short_string_keys

    rng = np.random.default_rng(7)
    if ids == "hex":  # keys split in halves
        values = sorted({f"{v:08x}" for v in rng.integers(0, 2**32, 5000)})
    else:  # whole keys
        values = sorted({"".join(rng.choice(list("abcdé"), rng.integers(0, 4))) for _ in range(400)})
    rows = rng.permutation(len(values)).astype(np.int32)
    in_row_order = [None] * len(values)
    for value, row in zip(values, rows):
        in_row_order[row] = value
    buffers = _arrow_string_buffers(pa.array(values, pa.large_string()))
    of_keys = StringTable.of_keys(short_string_keys(*buffers), rows)
    of_strings = StringTable(*_arrow_string_buffers(pa.array(in_row_order, pa.large_string())))
    queries = _arrow_string_buffers(pa.array(values[::3] + ["nope", "", "zzzzzzzzz", None], pa.large_string()))
    np.testing.assert_array_equal(of_keys.positions(*queries), of_strings.positions(*queries))
    for table in (of_keys, of_strings):
        data, offsets = table.strings()
        assert [data[a:b].tobytes().decode() for a, b in zip(offsets[:-1], offsets[1:])] == in_row_order
    with pytest.raises(ValueError, match="strictly ascending"):
        StringTable.of_keys(short_string_keys(*buffers)[::-1], rows)
    with pytest.raises(ValueError, match="one row each"):
        StringTable.of_keys(short_string_keys(*buffers), rows[1:])
    with pytest.raises(ValueError, match="0 to n - 1"):
        StringTable.of_keys(short_string_keys(*buffers), rows + 1)


def test_count_tables_of_keys_merge_sorted_and_otherwise_group():
    rng = np.random.default_rng(11)
    frames = [pd.DataFrame({"k": keys, "n": rng.integers(1, 9, len(keys))}) for keys, _ in _key_runs(rng, 3, 300, 600)]
    expected = pd.concat(frames).groupby("k")["n"].sum()
    merged = PANDAS.sum_counts(frames, "n")
    assert merged["k"].dtype == np.uint64 and merged["k"].is_monotonic_increasing
    assert dict(zip(merged["k"], merged["n"])) == expected.to_dict()
    shuffled = [frame.sample(frac=1, random_state=1) for frame in frames]  # not ascending: grouped
    grouped = PANDAS.sum_counts(shuffled, "n")
    assert dict(zip(grouped["k"], grouped["n"])) == expected.to_dict()


def test_key_counts_are_uint32_until_a_sum_could_pass_it():
    from tabflow.backends._string_table import merge_key_counts

    keys = np.array([1, 2, 3], np.uint64)
    small = merge_key_counts([(keys, np.array([1, 2, 3], np.uint32)), (keys[1:], np.array([5, 6], np.uint32))])
    assert small[1].dtype == np.uint32 and small[1].tolist() == [1, 7, 9]
    near = np.array([2**32 - 1, 2**31, 7], np.uint32)
    wide = merge_key_counts([(keys, near), (keys, near)])  # sums past 2**32: int64, exact
    assert wide[1].dtype == np.int64 and wide[1].tolist() == [2 * (2**32 - 1), 2**32, 14]
    mixed = merge_key_counts([(keys, np.array([1, 1, 1], np.uint32)), (keys, np.array([2**40, 1, 1], np.int64))])
    assert mixed[1].dtype == np.int64 and mixed[1].tolist() == [2**40 + 1, 2, 2]
    # Three runs: the total of two stays below 2**32, the third takes it past.
    three = merge_key_counts([(keys[:1], np.array([2**31], np.uint32))] * 3)
    assert three[1].tolist() == [3 * 2**31] and three[1].dtype == np.int64


def test_byte_order_foresees_long_runs_from_a_sample():
    from tabflow.backends._string_table import _SHORT_RUN, byte_order
    from tabflow.backends.pandas_backend import _arrow_string_buffers

    rng = np.random.default_rng(3)
    # 120,000 distinct strings in runs of 30 sharing their first eight bytes: settled by the
    # prefix sort (runs no longer than _SHORT_RUN), which the sample must not talk it out of.
    short_runs = [f"{group:08d}{rest:02d}" for group in range(4_000) for rest in range(30)]
    short_runs = [short_runs[i] for i in rng.permutation(len(short_runs))]
    assert 30 <= _SHORT_RUN
    order = byte_order(*_arrow_string_buffers(pa.array(short_runs))[:2])
    assert order is not None and [short_runs[i] for i in order] == sorted(short_runs)
    # URLs sharing "https://": declined from the sample, before any key is sorted.
    urls = [f"https://shop.example.com/item/{i:08x}" for i in rng.permutation(120_000)]
    assert byte_order(*_arrow_string_buffers(pa.array(urls))[:2]) is None
