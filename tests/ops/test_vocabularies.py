"""Categorify's vocabularies held as their lookup tables, against the DataFrames they replace."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.backends import get_backend
from tabflow.ops._vocab import (
    COUNT,
    KEY,
    Vocabularies,
    _keyed,
    _unkeyed,
    build_vocabulary,
    count_values,
    encoding_units,
    held_vocabulary,
    merge_counts,
)

PANDAS = get_backend("pandas")
#: The engine's string dtype, which fitted vocabularies hold (``str`` on pandas 3, Arrow-backed
#: ``string`` on pandas 2).
STRING = PANDAS.engine_dtype("string")


def fitted_vocabulary(values, counts):
    """A vocabulary as fitting builds it: (count descending, value ascending)."""
    frame = pd.DataFrame({"value": pd.Series(values, dtype=STRING), "count": np.asarray(counts, dtype=np.int64)})
    return build_vocabulary(frame, 0, None)


def held(vocab):
    """``vocab`` in Vocabularies under "c", held as its pandas table when it can be."""
    vocabs = Vocabularies({"c": vocab})
    return vocabs, vocabs.hold_as_table("c", vocab, PANDAS.lookup_table(vocab["value"]), PANDAS)


def assert_same_frame(rebuilt, expected):
    pd.testing.assert_frame_equal(rebuilt, expected, check_exact=True)
    assert rebuilt.columns.equals(expected.columns) and rebuilt.columns.dtype == expected.columns.dtype
    assert list(rebuilt.dtypes) == list(expected.dtypes)


def _ids(kind, n, rng):
    if kind == "hex":  # lookup table split in halves
        return [f"{v:08x}" for v in rng.choice(2**32, n, replace=False)]
    if kind == "decimal":
        return [str(v) for v in rng.choice(10**8, n, replace=False)]
    if kind == "mixed lengths":  # 0 to 8 bytes, multi-byte characters, control bytes
        pool = ["", "a", "é", "\x01", "\x7f", "ab", "日本", "zzzzzzzz", "ü\x01ü", "12345678", "€€"]
        extra = {"".join(rng.choice(list("abcé\x01"), k)) for k in rng.integers(0, 4, n)}
        return sorted(set(pool) | {e for e in extra if len(e.encode()) <= 8})
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["hex", "decimal", "mixed lengths"])
@pytest.mark.parametrize("counts", ["runs", "distinct", "huge"])
def test_a_held_vocabulary_rebuilds_the_very_frame(kind, counts):
    rng = np.random.default_rng(len(kind) + len(counts))
    values = _ids(kind, 3000, rng)
    n = len(values)
    if counts == "runs":
        numbers = rng.integers(1, 4, n)
    elif counts == "distinct":  # no two alike: the counts are kept as they are
        numbers = rng.permutation(n) + 1
    else:
        numbers = rng.integers(2**40, 2**40 + 3, n)
    vocab = fitted_vocabulary(values, numbers)
    expected = vocab.copy(deep=True)
    vocabs, holds = held(vocab)
    assert holds
    del vocab  # the DataFrame is let go: reading rebuilds it
    assert_same_frame(vocabs["c"], expected)
    assert vocabs.size("c") == n and len(vocabs) == 1 and "c" in vocabs
    # The rebuilt frame encodes as the reference does.
    table = vocabs.held_table("c", "pandas")
    assert vocabs.held_table("c", "cudf") is None
    queries = pd.Series(list(expected["value"][::7]) + ["never seen", None, "0"], dtype="str")
    expected_rows = pd.Index(expected["value"]).get_indexer(queries)
    expected_rows[queries.isna().to_numpy()] = -1
    np.testing.assert_array_equal(PANDAS.lookup(table, queries), expected_rows)


def test_an_empty_and_a_one_value_vocabulary():
    for values, counts in (([], []), (["x"], [5])):
        vocab = fitted_vocabulary(values, counts)
        expected = vocab.copy(deep=True)
        vocabs, holds = held(vocab)
        assert holds
        del vocab
        assert_same_frame(vocabs["c"], expected)


@pytest.mark.parametrize(
    "vocab",
    [
        fitted_vocabulary(["short", "a string of more than eight bytes"], [2, 1]),  # a hash table
        fitted_vocabulary(["a\x00b", "c"], [2, 1]),  # a NUL byte: not a key
        pd.DataFrame({"value": pd.Series(["a", "b"], dtype=STRING), "count": pd.array([pd.NA, pd.NA], dtype="Int64")}),
        pd.DataFrame({"value": pd.Series(["a", "b"], dtype=STRING), "count": [2, 1]}, index=[5, 6]),
        pd.DataFrame({"value": pd.Series(["a", "b"], dtype="object"), "count": [2, 1]}),
    ],
    ids=["long string", "NUL byte", "user vocabulary", "not a range index", "object strings"],
)
def test_a_vocabulary_the_table_cannot_give_back_stays_a_frame(vocab):
    vocabs, holds = held(vocab)
    assert not holds
    assert vocabs["c"] is vocab and vocabs.held_table("c", "pandas") is None


def test_integer_vocabularies_are_held_and_replaced_frames_are_not():
    # Integers of a NumPy dtype are their table's keys: the frame is rebuilt from the table.
    ints = pd.DataFrame({"value": np.array([3, -(2**62), 1], np.int64), "count": [2, 1, 1]})
    expected = ints.copy()
    vocabs = Vocabularies({"c": ints})
    assert vocabs.hold_as_table("c", ints, PANDAS.lookup_table(ints["value"]), PANDAS)
    del ints
    assert_same_frame(vocabs["c"], expected)
    # Masked integers keep their frame (the table does not give their dtype back).
    masked = pd.DataFrame({"value": pd.array([3, 1], dtype="Int64"), "count": [2, 1]})
    vocabs["m"] = masked
    assert not vocabs.hold_as_table("m", masked, PANDAS.lookup_table(masked["value"]), PANDAS)
    strings = fitted_vocabulary(["a", "b"], [2, 1])
    vocabs["c"] = strings.copy()  # the table was built from a frame no longer held
    assert not vocabs.hold_as_table("c", strings, PANDAS.lookup_table(strings["value"]), PANDAS)


def test_vocabularies_read_as_a_dict_of_frames():
    vocab = fitted_vocabulary(["b", "a", "c", "d"], [3, 1, 1, 2])
    expected = vocab.copy(deep=True)
    plain = fitted_vocabulary(["x" * 20], [1])
    vocabs = Vocabularies({"c": vocab, "long": plain})
    assert vocabs.hold_as_table("c", vocab, PANDAS.lookup_table(vocab["value"]), PANDAS)
    assert vocabs["c"] is vocab  # the frame itself while a reference lives
    del vocab
    first = vocabs["c"]
    assert vocabs["c"] is first and vocabs.get("c") is first and vocabs.get("none", 0) == 0
    del first
    for copied in (dict(vocabs), {**vocabs}, dict(vocabs.items()), vocabs.copy(), vocabs | {}, {} | vocabs):
        assert list(copied) == ["c", "long"]
        assert_same_frame(copied["c"], expected)
        assert copied["long"] is plain
    assert isinstance(vocabs.copy(), Vocabularies) and vocabs.copy().held_table("c", "pandas") is not None
    for value, key in zip(vocabs.values(), vocabs):
        assert_same_frame(value, vocabs[key])
    updated = {}
    updated.update(vocabs)
    assert_same_frame(updated["c"], expected)
    assert "4 rows" not in repr(vocabs) and "'c':" in repr(vocabs)
    for restored in (pickle.loads(pickle.dumps(vocabs)), copy.deepcopy(vocabs), copy.copy(vocabs)):
        assert isinstance(restored, Vocabularies) and restored.held_table("c", "pandas") is not None
        assert_same_frame(restored["c"], expected)
    assert_same_frame(vocabs.pop("c"), expected)
    assert list(vocabs) == ["long"] and vocabs.setdefault("long") is plain
    assert vocabs.popitem() == ("long", plain) and not vocabs
    with pytest.raises(KeyError):
        vocabs.popitem()


def test_every_write_to_the_vocabularies_is_counted_in_version():
    frame = fitted_vocabulary(["b", "a"], [2, 1])
    vocabs = Vocabularies({"c": frame})
    assert vocabs.version == 0
    assert vocabs.hold_as_table("c", frame, PANDAS.lookup_table(frame["value"]), PANDAS)
    assert vocabs.version == 0  # the same vocabulary in another form
    other = fitted_vocabulary(["z"], [1])
    writes = [
        lambda: vocabs.__setitem__("d", other),
        lambda: vocabs.update({"d": frame}),
        lambda: vocabs.update([("e", other)]),
        lambda: vocabs.update(f=other),
        lambda: vocabs.__ior__({"d": other}),
        lambda: vocabs.setdefault("g", other),
        lambda: vocabs.pop("g"),
        lambda: vocabs.__delitem__("f"),
        lambda: vocabs.popitem(),
        lambda: vocabs.clear(),
    ]
    for write in writes:
        before = vocabs.version
        write()
        assert vocabs.version > before
    assert not vocabs
    before = vocabs.version
    vocabs.setdefault("c", frame)  # inserts
    assert vocabs.version == before + 1
    vocabs.setdefault("c", other)  # present: nothing set
    vocabs.get("c"), list(vocabs.items()), vocabs.size("c")  # reads count nothing
    assert vocabs.version == before + 1 and vocabs["c"] is frame


def test_a_vocabulary_set_after_encoding_is_the_one_used(tmp_path):
    train = _ids_frame(3000, seed=3)
    op = ops.Categorify()
    workflow = nvt.Workflow(["ids", "small", "urls"] >> op)
    workflow.fit(nvt.Dataset(train, npartitions=3))
    before = workflow.transform(nvt.Dataset(train, npartitions=2)).to_ddf().compute()
    assert op.vocabs_.held_table("ids", "pandas") is not None

    replaced = {
        "ids": fitted_vocabulary(list(train["ids"].dropna().unique()[:5]), [5, 4, 3, 2, 1]),  # a held one replaced
        "urls": fitted_vocabulary(["https://example.com/7", "https://example.com/3"], [2, 1]),
    }
    op.vocabs_["ids"] = replaced["ids"]
    op.vocabs_.update(urls=replaced["urls"])
    out = workflow.transform(nvt.Dataset(train, npartitions=2)).to_ddf().compute()
    for column in ("ids", "urls"):
        assert_same_frame(op.vocabs_[column], replaced[column])
        assert out[column].tolist() == _expected_codes(op, train, column)
        assert out[column].max() == 2 + len(replaced[column])
    assert out["small"].tolist() == before["small"].tolist()
    assert {k: v[0] for k, v in op.get_embedding_sizes(["ids", "urls"]).items()} == {"ids": 8, "urls": 5}
    decoded = op.decode(out, "urls")
    assert set(decoded.dropna()) == {"https://example.com/7", "https://example.com/3"}

    # A whole new dict, as a user or an older script sets it: the same.
    op.vocabs_ = {"ids": replaced["ids"], "small": op.vocabs_["small"], "urls": replaced["urls"]}
    pd.testing.assert_frame_equal(workflow.transform(nvt.Dataset(train, npartitions=2)).to_ddf().compute(), out)
    # What is saved is what is used.
    workflow.save(tmp_path / "wf")
    loaded = nvt.Workflow.load(tmp_path / "wf")
    pd.testing.assert_frame_equal(loaded.transform(nvt.Dataset(train, npartitions=2)).to_ddf().compute(), out)

    # Set by hand without counts, as vocabs= takes them: the categories files have no sizes.
    op.vocabs_["small"] = pd.DataFrame({"value": pd.Series(["zz", "x"], dtype="str")})
    unique = pd.read_parquet(op.categories["small"])
    assert unique["small"].tolist() == ["zz", "x"] and unique.index.tolist() == [3, 4]
    assert "small_size" not in unique.columns

    del op.vocabs_["urls"]
    with pytest.raises(nvt.ops.NotFittedError, match=r"no vocabulary for 'urls' \(vocabs_ holds \['ids', 'small'\]\)"):
        workflow.transform(nvt.Dataset(train, npartitions=2)).to_ddf().compute()


def _ids_frame(n_rows, seed=0):
    rng = np.random.default_rng(seed)
    ids = pd.Series([f"{v:08x}" for v in rng.integers(0, 2**32, n_rows)], dtype="str")
    ids[rng.random(n_rows) < 0.05] = None
    small = pd.Series(rng.choice(["x", "y", "zz", ""], n_rows), dtype="str")
    urls = pd.Series([f"https://example.com/{v}" for v in rng.integers(0, 50, n_rows)], dtype="str")
    return pd.DataFrame({"ids": ids, "small": small, "urls": urls})


def _expected_codes(op, frame, column):
    vocab = op.vocabs_[column]
    mapping = dict(zip(vocab["value"], range(2 + op.oov_slots_[column], 2 + op.oov_slots_[column] + len(vocab))))
    return [1 if pd.isna(v) else mapping.get(v, 2) for v in frame[column]]


def test_categorify_fitted_on_pandas_holds_short_string_vocabularies(tmp_path):
    train, test = _ids_frame(4000, seed=1), _ids_frame(1000, seed=2)
    test.loc[:10, "ids"] = train.loc[:10, "ids"].to_numpy()
    op = ops.Categorify()
    workflow = nvt.Workflow(["ids", "small", "urls"] >> op)
    workflow.fit(nvt.Dataset(train, npartitions=3))
    vocabs = op.vocabs_
    assert isinstance(vocabs, dict) and isinstance(vocabs, Vocabularies)
    assert vocabs.held_table("ids", "pandas") is not None and vocabs.held_table("small", "pandas") is not None
    assert vocabs.held_table("urls", "pandas") is None  # long strings: the frame and a hash table
    frames = {key: vocabs[key].copy(deep=True) for key in vocabs}
    reference = pd.Series([v for v in train["ids"] if not pd.isna(v)]).value_counts()
    assert dict(zip(frames["ids"]["value"], frames["ids"]["count"])) == reference.to_dict()

    out = workflow.transform(nvt.Dataset(test, npartitions=2)).to_ddf().compute()
    for column in ["ids", "small", "urls"]:
        assert out[column].tolist() == _expected_codes(op, test, column)
    sizes = op.get_embedding_sizes(["ids", "small", "urls"])
    assert {k: v[0] for k, v in sizes.items()} == {k: len(frames[k]) + 3 for k in frames}
    decoded = op.decode(out, "ids")
    expected = test["ids"].where(test["ids"].isin(set(frames["ids"]["value"])))
    assert [None if pd.isna(v) else v for v in decoded] == [None if pd.isna(v) else v for v in expected]
    assert op.decode(out, "ids") is not decoded and op.vocabs_.held_table("ids", "pandas") is not None

    workflow.save(tmp_path / "wf")
    loaded = nvt.Workflow.load(tmp_path / "wf")
    loaded_op = next(node.op for node in loaded.nodes if isinstance(node.op, ops.Categorify))
    for key, frame in frames.items():
        assert_same_frame(loaded_op.vocabs_[key], frame)
    loaded_out = loaded.transform(nvt.Dataset(test, npartitions=2)).to_ddf().compute()
    pd.testing.assert_frame_equal(loaded_out, out)
    # The loaded vocabularies became Vocabularies, held once their tables were built.
    assert loaded_op.vocabs_.held_table("ids", "pandas") is not None


def test_single_table_and_out_path_read_held_vocabularies(tmp_path):
    train = _ids_frame(3000, seed=4)
    op = ops.Categorify(single_table=True, out_path=str(tmp_path / "cats"))
    nvt.Workflow(["ids", "small"] >> op).fit(nvt.Dataset(train))
    ids, small = op.vocabs_["ids"], op.vocabs_["small"]
    assert op.vocabs_.held_table("ids", "pandas") is not None
    assert op.offsets_ == {"ids": 0, "small": 1 + 1 + len(ids)}
    assert op.cardinality("ids") == 1 + (1 + 1 + len(ids)) + (1 + 1 + len(small))
    written = pd.read_parquet(op.categories["ids"])
    assert written["ids"].tolist() == ids["value"].tolist() and written["ids_size"].tolist() == ids["count"].tolist()
    assert written.index.tolist() == list(range(3, 3 + len(ids)))


# ------------------------------------------------------------- counting short strings as keys
def _unit(name="c"):

    return encoding_units([name], "joint")[0]


def test_short_strings_are_counted_as_keys_and_long_ones_as_strings():

    short = pd.DataFrame({"c": pd.Series(["b", "a", None, "b", "日本", ""], dtype="str")})
    counts, nulls = count_values(short, _unit())
    assert list(counts.columns) == [KEY, COUNT] and counts[KEY].dtype == np.uint64 and counts[COUNT].dtype == np.uint32
    assert nulls == 1
    long = pd.DataFrame({"c": pd.Series(["b", "a string of 9+ bytes"], dtype="str")})
    assert list(count_values(long, _unit())[0].columns) == ["value", COUNT]
    nul = pd.DataFrame({"c": pd.Series(["a\x00", "b"], dtype="str")})
    assert list(count_values(nul, _unit())[0].columns) == ["value", COUNT]
    ints = pd.DataFrame({"c": [3, 1, 3]})
    assert list(count_values(ints, _unit())[0].columns) == ["value", COUNT]


@pytest.mark.parametrize("freq_threshold, limit", [(0, None), (2, None), (0, 5), (3, 4), (0, 0), (100, None)])
def test_vocabularies_from_keys_equal_those_from_strings(freq_threshold, limit):

    rng = np.random.default_rng(freq_threshold + (limit or 0))
    pool = [f"{v:x}" for v in range(60)] + ["", "é", "zzzzzzzz"]
    parts = []
    for size in (300, 0, 200):  # an empty partition among them
        frame = pd.DataFrame({"c": pd.Series(rng.choice(pool, size), dtype="str")})
        parts.append(count_values(frame, _unit()))
    merged, _ = merge_counts(parts, split_every=2)
    as_strings = build_vocabulary(_unkeyed(merged), freq_threshold, limit)
    from_keys = build_vocabulary(merged, freq_threshold, limit)
    assert_same_frame(from_keys, as_strings)
    held_vocab = held_vocabulary(merged, freq_threshold, limit)
    assert_same_frame(held_vocab.frame(), as_strings)
    assert len(held_vocab) == len(as_strings) and held_vocab.total_count() == int(as_strings["count"].sum())
    # A table of keys in no order (as a grouping leaves it) gives the same vocabulary.
    shuffled = _keyed(PANDAS, _unkeyed(merged)).sample(frac=1, random_state=0).reset_index(drop=True)
    assert_same_frame(held_vocabulary(shuffled, freq_threshold, limit).frame(), as_strings)


def test_partitions_with_and_without_long_strings_merge_as_strings():

    parts = [
        count_values(pd.DataFrame({"c": pd.Series(["b", "a", "b"], dtype="str")}), _unit()),
        count_values(pd.DataFrame({"c": pd.Series(["a", "longer than eight"], dtype="str")}), _unit()),
        count_values(pd.DataFrame({"c": pd.Series(["c"], dtype="str")}), _unit()),
    ]
    merged, _ = merge_counts(parts)
    assert list(merged.columns) == ["value", COUNT]
    assert dict(zip(merged["value"], merged[COUNT])) == {"a": 2, "b": 2, "c": 1, "longer than eight": 1}


@pytest.mark.parametrize("freq_threshold, max_size", [(0, 0), (3, 0), (0, 20)])
def test_categorify_of_ids_equals_the_reference_across_partitions(freq_threshold, max_size, tmp_path):
    rng = np.random.default_rng(5)
    ids = pd.Series([f"{v:06x}" for v in rng.zipf(1.3, 6000) % 5000], dtype="str")
    ids[rng.random(len(ids)) < 0.03] = None
    train = pd.DataFrame({"ids": ids})
    op = ops.Categorify(freq_threshold=freq_threshold, max_size=max_size, out_path=str(tmp_path))
    workflow = nvt.Workflow(["ids"] >> op)
    out = workflow.fit_transform(nvt.Dataset(train, npartitions=5)).to_ddf().compute()
    counts = train["ids"].dropna().value_counts()
    ranked = sorted(counts.items(), key=lambda vc: (-vc[1], vc[0]))
    ranked = [(v, c) for v, c in ranked if c >= freq_threshold]
    if max_size:
        ranked = ranked[: max_size - 3]
    assert op.vocabs_.held_table("ids", "pandas") is not None
    assert op.vocabs_["ids"]["value"].tolist() == [v for v, _ in ranked]
    assert op.vocabs_["ids"]["count"].tolist() == [c for _, c in ranked]
    index = {v: 3 + i for i, (v, _) in enumerate(ranked)}
    assert out["ids"].tolist() == [1 if pd.isna(v) else index.get(v, 2) for v in train["ids"]]
    written = pd.read_parquet(op.categories["ids"])
    assert written["ids"].tolist() == [v for v, _ in ranked]


def test_a_fitted_categorify_pickles_with_its_held_vocabularies():
    train = _ids_frame(2000, seed=8)
    op = ops.Categorify()
    workflow = nvt.Workflow(["ids", "urls"] >> op)
    workflow.fit(nvt.Dataset(train))
    expected = workflow.transform(nvt.Dataset(train)).to_ddf().compute()
    restored = pickle.loads(pickle.dumps(workflow))
    restored_op = next(node.op for node in restored.nodes if isinstance(node.op, ops.Categorify))
    assert restored_op.vocabs_.held_table("ids", "pandas") is not None  # travels as its table
    assert Vocabularies(restored_op.vocabs_).held_table("ids", "pandas") is not None
    pd.testing.assert_frame_equal(restored.transform(nvt.Dataset(train)).to_ddf().compute(), expected)
    assert_same_frame(restored_op.vocabs_["ids"], op.vocabs_["ids"])
