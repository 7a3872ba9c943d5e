"""Categorify on parquet string columns read dictionary-encoded, against the same workflow on
the decoded strings (an in-memory ``str`` frame) and a plain pandas reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.backends import get_backend
from tabflow.backends.pandas_backend import dictionary_strings
from tabflow.graph.schemas import dictionary_string_inputs
from tabflow.testing import assert_frame_equal

PANDAS = get_backend("pandas")


def _strings(rng, n, cardinality, null_share=0.1):
    values = np.array([f"v{i:05d}" for i in range(cardinality)] + ["", "ünï", "日本"], dtype=object)
    picked = values[np.minimum(rng.zipf(1.3, n) - 1, len(values) - 1)]
    picked[rng.random(n) < null_share] = None
    return picked


def _write(path, frame, **options):
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, **options)


@pytest.fixture
def files(tmp_path, rng):
    """Three files: several row groups (one dictionary each), one whose dictionary falls back
    to plain pages, one with a column of nulls only; plus an empty row group."""
    n = 3_000
    frames = []
    for k in range(3):
        frames.append(pd.DataFrame({
            "low": pd.Series(_strings(rng, n, 20), dtype="str"),
            "high": pd.Series(_strings(rng, n, 5_000, null_share=0.02), dtype="str"),
            "nulls": pd.Series([None] * n if k == 1 else _strings(rng, n, 5), dtype="str"),
            "x": rng.normal(size=n),
        }))
    _write(tmp_path / "a.parquet", frames[0], row_group_size=700)
    _write(tmp_path / "b.parquet", frames[1], dictionary_pagesize_limit=256, row_group_size=1_000)
    _write(tmp_path / "c.parquet", frames[2])
    _write(tmp_path / "d.parquet", frames[2].iloc[:0])
    return sorted(str(p) for p in tmp_path.glob("*.parquet")), pd.concat(frames, ignore_index=True)


def _workflow(**categorify):
    return nvt.Workflow((["low", "high", "nulls"] >> ops.Categorify(**categorify)) + (["x"] >> ops.Normalize()))


@pytest.mark.parametrize("categorify", [
    {},
    {"freq_threshold": 3},
    {"max_size": 60},
    {"num_buckets": 7},
    {"dtype": "int32", "single_table": True},
])
def test_dictionary_reads_encode_as_the_strings_do(files, categorify, tmp_path):
    paths, whole = files
    dataset = nvt.Dataset(paths, engine="parquet", row_groups_per_part=2)
    assert dictionary_string_inputs(_workflow().fit_schema(dataset.schema).nodes) == ["low", "high", "nulls"]

    from_files = _workflow(**categorify)
    out_files = from_files.fit(dataset).transform(dataset).to_ddf().compute().reset_index(drop=True)
    from_frame = _workflow(**categorify)
    out_frame = from_frame.fit_transform(nvt.Dataset(whole, npartitions=4)).to_ddf().compute().reset_index(drop=True)

    assert_frame_equal(out_files, out_frame)
    vocabs = [next(n.op for n in wf.nodes if isinstance(n.op, ops.Categorify)).vocabs_ for wf in (from_files, from_frame)]
    assert list(vocabs[0]) == list(vocabs[1]) == ["low", "high", "nulls"]
    for name in vocabs[0]:
        assert_frame_equal(vocabs[0][name], vocabs[1][name])
    # A plain pandas reference of the default encoding: (-count, value) order after pad, null, OOV.
    if not categorify:
        counts = whole["low"].dropna().value_counts()
        order = sorted(counts.items(), key=lambda vc: (-vc[1], vc[0]))
        expected = {value: i + 3 for i, (value, _) in enumerate(order)}
        codes = [1 if pd.isna(v) else expected[v] for v in whole["low"]]
        assert out_files["low"].tolist() == codes


def test_unseen_values_and_other_files_at_transform(files, tmp_path, rng):
    paths, whole = files
    wf = _workflow(num_buckets=3).fit(nvt.Dataset(paths[:1], engine="parquet"))
    fresh = pd.DataFrame({
        "low": pd.Series(["v00000", "never", None, "", "日本", "never"], dtype="str"),
        "high": pd.Series(["v00001"] * 6, dtype="str"),
        "nulls": pd.Series([None] * 6, dtype="str"),
        "x": np.arange(6.0),
    })
    path = tmp_path / "fresh" / "f.parquet"
    path.parent.mkdir()
    _write(path, fresh)
    from_file = wf.transform(nvt.Dataset(str(path), engine="parquet")).to_ddf().compute().reset_index(drop=True)
    from_frame = wf.transform(nvt.Dataset(fresh)).to_ddf().compute().reset_index(drop=True)
    assert_frame_equal(from_file, from_frame)
    assert from_file["low"][1] == from_file["low"][5] and 2 <= from_file["low"][1] < 5  # one OOV bucket


def test_columns_read_elsewhere_stay_strings(files):
    paths, whole = files
    dataset = nvt.Dataset(paths, engine="parquet")
    kept = (["low", "high"] >> ops.Categorify()) + (["high"] >> ops.Rename(postfix="_raw")) + (["nulls"] >> ops.Categorify())
    hashed = (["low"] >> ops.Categorify()) + (["low"] >> ops.HashBucket(5) >> ops.Rename(postfix="_h"))
    for graph, readable in [(kept, ["low", "nulls"]), (hashed, [])]:
        wf = nvt.Workflow(graph).fit_schema(dataset.schema)
        assert dictionary_string_inputs(wf.nodes) == readable
    wf = nvt.Workflow((["low"] >> ops.Categorify()) + ["high"]).fit(dataset)
    out = wf.transform(dataset).to_ddf().compute().reset_index(drop=True)
    assert out["high"].dtype == PANDAS.engine_dtype("str")
    pd.testing.assert_series_equal(out["high"], whole["high"].astype(PANDAS.engine_dtype("str")), check_names=False)
    assert nvt.Workflow(["low"]).fit_schema(dataset.schema).nodes and dictionary_string_inputs(
        nvt.Workflow(["low"]).fit_schema(dataset.schema).nodes) == []


def test_a_categorify_subclass_that_reads_values_gets_strings():
    class Upper(ops.Categorify):
        def transform(self, col_selector, df):
            return super().transform(col_selector, df.assign(**{c: df[c].str.upper() for c in col_selector.names}))

    from tabflow.graph.selector import ColumnSelector

    assert Upper().dictionary_string_columns(ColumnSelector(["a"])) == []
    assert ops.Categorify(encode_type="combo").dictionary_string_columns(ColumnSelector([("a", "b")])) == []
    assert ops.Categorify(encode_type="joint").dictionary_string_columns(ColumnSelector([("a", "b"), "c"])) == ["c"]


def test_the_reader_keeps_dictionaries_only_when_asked(files):
    paths, whole = files
    dataset = nvt.Dataset(paths, engine="parquet")
    plain = dataset.to_ddf().partitions[0].compute()
    encoded = dataset.to_ddf(["low", "x"], dictionary_strings=["low"]).partitions[0].compute()
    assert dictionary_strings(plain["low"]) is None and dictionary_strings(encoded["low"]) is not None
    assert list(encoded.columns) == ["low", "x"]
    pd.testing.assert_series_equal(encoded["low"].astype(plain["low"].dtype), plain["low"])
    # Frames and text files ignore the option.
    frame = nvt.Dataset(whole, npartitions=2).to_ddf(dictionary_strings=["low"]).partitions[0].compute()
    assert dictionary_strings(frame["low"]) is None


def test_columns_stored_mostly_plain_are_read_plain(tmp_path, rng):
    # A writer falls back to plain pages once a chunk's dictionary outgrows its limit; Arrow
    # would hash every such row into a dictionary, so those columns are read as strings (and
    # counted and encoded row by row), the others as dictionaries.
    from tabflow.backends.pandas_backend import _dictionary_encoded

    n = 20_000
    ids = pd.Series([f"{v:08x}" for v in rng.integers(0, 2**32, n)], dtype="str")
    frame = pd.DataFrame({
        "ids": ids,  # mostly distinct: past its first page, plain
        "no_dictionary": ids,  # written without dictionaries
        "low": pd.Series(_strings(rng, n, 50), dtype="str"),
        "long": pd.Series([f"{'x' * 60}{v % 500:05d}" for v in range(n)], dtype="str"),  # long, repeated
    })
    path = tmp_path / "f.parquet"
    _write(path, frame, use_dictionary=["ids", "low", "long"], dictionary_pagesize_limit=64_000)
    names = ["ids", "no_dictionary", "low", "long"]
    assert _dictionary_encoded(pq.read_metadata(path), names) == ["low", "long"]
    bare = tmp_path / "bare.parquet"  # no statistics: strings of 8 bytes assumed
    _write(bare, frame, use_dictionary=["ids", "low", "long"], dictionary_pagesize_limit=64_000, write_statistics=False)
    assert _dictionary_encoded(pq.read_metadata(bare), names) == ["low", "long"]
    tiny = tmp_path / "tiny.parquet"  # a few rows: dictionaries, however stored
    _write(tiny, frame.iloc[:3], use_dictionary=["ids", "low", "long"])
    assert _dictionary_encoded(pq.read_metadata(tiny), names) == names

    dataset = nvt.Dataset(str(path), engine="parquet")
    read = dataset.to_ddf(dictionary_strings=names).compute()
    assert [dictionary_strings(read[name]) is not None for name in names] == [False, False, True, True]
    wf = nvt.Workflow(names >> ops.Categorify())
    out = wf.fit(dataset).transform(dataset).to_ddf().compute().reset_index(drop=True)
    reference = nvt.Workflow(names >> ops.Categorify())
    assert_frame_equal(out, reference.fit_transform(nvt.Dataset(frame, npartitions=3)).to_ddf().compute().reset_index(drop=True))
    counts = frame["ids"].value_counts()
    order = sorted(counts.items(), key=lambda vc: (-vc[1], vc[0]))
    expected = {value: i + 3 for i, (value, _) in enumerate(order)}
    assert out["ids"].tolist() == [expected[v] for v in frame["ids"]]


# ------------------------------------------------------------------ backend kernels
def _encoded(chunks):
    return pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(chunks)), name="c")


def _decoded(series):
    return pd.Series(pa.array(series.array).cast(pa.large_string()).to_pylist(), dtype="str", name="c")


CHUNKS = {
    "one": [pa.array(["b", "a", None, "b", "", "ç"]).dictionary_encode()],
    "several": [pa.array(["b", "a", "b"]).dictionary_encode(), pa.array(["z", None, "a"]).dictionary_encode()],
    "unused entries": [pa.DictionaryArray.from_arrays(pa.array([2, 0, None, 2], pa.int8()), pa.array(["x", "y", "w"]))],
    "repeated entries": [pa.DictionaryArray.from_arrays(pa.array([0, 1, 2]), pa.array(["x", "y", "x"]))],
    "null entry": [pa.DictionaryArray.from_arrays(pa.array([0, 1, 1]), pa.array(["x", None]))],
    "empty": [pa.array([], pa.string()).dictionary_encode()],
    "all null": [pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int32()), pa.array([], pa.string()))],
}


@pytest.mark.parametrize("case", list(CHUNKS))
def test_value_counts_of_dictionaries_match_the_strings(case):
    encoded = _encoded(CHUNKS[case])
    counts = PANDAS.value_counts(encoded)
    expected = _decoded(encoded).value_counts(dropna=True).sort_index()
    assert counts.index.tolist() == sorted(expected.index.tolist(), key=lambda v: v.encode())
    assert counts.to_dict() == expected.to_dict()
    assert counts.index.dtype == PANDAS.engine_dtype("str")


@pytest.mark.parametrize("case", list(CHUNKS))
def test_lookups_and_hashes_of_dictionaries_match_the_strings(case):
    encoded = _encoded(CHUNKS[case])
    table = PANDAS.lookup_table(pd.Series(["a", "x", "", "ç", "w"], dtype="str"))
    assert PANDAS.lookup(table, encoded).tolist() == PANDAS.lookup(table, _decoded(encoded)).tolist()
    assert PANDAS.hash_values(encoded).tolist() == PANDAS.hash_values(_decoded(encoded)).tolist()
    assert PANDAS.conform_column(encoded, "str") is encoded


def _int8_chunk(entries):
    """int8 indices over ``entries`` distinct strings, with nulls: at 128 entries the null slot
    (index 128) no longer fits the chunk's own index type."""
    indices = pa.array([None, entries - 1, 0, None, entries // 2], pa.int8())
    return pa.DictionaryArray.from_arrays(indices, pa.array([f"s{i}" for i in range(entries)]))


MAPPED = {**CHUNKS, "int8 127": [_int8_chunk(127)], "int8 128": [_int8_chunk(128)],
          "large strings": [pa.array(["q", None, "q", "r"], pa.large_string()).dictionary_encode()]}


@pytest.mark.parametrize("case", list(MAPPED))
@pytest.mark.parametrize("dtype", ["int64", "int16"])
def test_map_distinct_answers_each_row_as_the_function_answers_its_string(case, dtype):
    encoded = _encoded(MAPPED[case])
    calls = []

    def length(values):
        calls.append(len(values))
        assert values.dtype == PANDAS.engine_dtype("str") and pd.isna(values.iloc[-1])
        return values.str.len().fillna(-1).to_numpy()

    mapped = PANDAS.map_distinct(encoded, length, dtype)
    expected = [-1 if value is None else len(value) for value in pa.array(encoded.array).to_pylist()]
    assert mapped.dtype == np.dtype(dtype) and mapped.tolist() == expected
    # Once per non-empty chunk, over its dictionary and a null.
    assert calls == [len(chunk.dictionary) + 1 for chunk in MAPPED[case] if len(chunk)]


def test_map_distinct_leaves_other_columns_to_the_caller_and_checks_answers():
    for series in (pd.Series(["a", None], dtype="str"), pd.Series([1, 2]), pd.Series(["a"], dtype="category")):
        assert PANDAS.map_distinct(series, len, "int64") is None
    with pytest.raises(ValueError, match="gave 1 answers for 3 distinct values"):
        PANDAS.map_distinct(_encoded(CHUNKS["several"][:1]), lambda values: np.zeros(1), "int64")


def test_filtered_remote_and_mixed_files_encode_as_the_strings_do(tmp_path, rng):
    """Reads through pyarrow (filters, fsspec URLs) keep dictionaries too; a file storing the
    column as a categorical, one storing it plainly, and list columns beside it all agree."""
    import uuid

    import fsspec

    n = 1_500
    frames = [
        pd.DataFrame({"s": pd.Series(_strings(rng, n, 40), dtype="str"), "k": rng.integers(0, 4, n),
                      "tags": [["a", "b"][: i % 3] for i in range(n)]})
        for _ in range(2)
    ]
    categorical = frames[1].assign(s=frames[1]["s"].astype("category"))
    fs = fsspec.filesystem("memory")
    root = f"/tabflow-dict-{uuid.uuid4().hex[:8]}"
    fs.makedirs(root, exist_ok=True)
    for name, frame in [("a.parquet", frames[0]), ("b.parquet", categorical)]:
        with fs.open(f"{root}/{name}", "wb") as handle:
            pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), handle, row_group_size=400)
        _write(tmp_path / name, frame, row_group_size=400)
    whole = pd.concat(frames, ignore_index=True)
    try:
        def graph():
            return nvt.Workflow((["s"] >> ops.Categorify(freq_threshold=2)) + (["tags"] >> ops.Categorify()) + ["k"])

        expected = graph().fit_transform(nvt.Dataset(whole[whole["k"] > 0].reset_index(drop=True))).to_ddf().compute()
        for source in [sorted(str(p) for p in tmp_path.glob("*.parquet")), f"memory://{root}/*.parquet"]:
            dataset = nvt.Dataset(source, engine="parquet", filters=[("k", ">", 0)])
            wf = graph()
            assert dictionary_string_inputs(wf.fit_schema(dataset.schema).nodes) == ["s"]
            out = wf.fit(dataset).transform(dataset).to_ddf().compute()
            assert_frame_equal(out.reset_index(drop=True), expected.reset_index(drop=True))
    finally:
        fs.rm(root, recursive=True)
