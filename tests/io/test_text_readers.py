"""CSV and Criteo text read by pyarrow: identical to ``pandas.read_csv`` with the documented
dtypes, on the shapes text files come in, and to dask's pandas-based reader it replaces.

The reference is plain pandas: each file read whole by ``pandas.read_csv`` with the dtypes the
readers document (Criteo's; for CSV, what pandas infers from the first 10 rows of the first
file, integers and booleans nullable), the files' rows concatenated.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow.backends import get_backend
from tabflow.datasets import write_criteo
from tabflow.io.readers import (
    CRITEO_COLUMNS,
    CRITEO_DTYPES,
    DatasetReadError,
    read_csv_ddf,
)

PANDAS = get_backend("pandas")
# pandas' own text dtype (``str`` on pandas 3), what tabflow reads strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")


def _engine_dtypes(canonical):
    return {name: PANDAS.engine_dtype(dtype) for name, dtype in canonical.items()}


def _inferred_dtypes(path, **options):
    """The documented CSV dtypes: pandas' inference on the first 10 rows, integers and
    booleans as their nullable dtypes, text as pandas' own text dtype."""
    head = pd.read_csv(path, nrows=10, **options)
    nullable = {"int64": "Int64", "bool": "boolean", "uint64": "UInt64"}
    return {
        name: STRING if dtype == object or isinstance(dtype, pd.StringDtype) else nullable.get(str(dtype), dtype)  # noqa: E721 - NumPy's object dtype
        for name, dtype in head.dtypes.items()
    }


def _reference(paths, dtypes, **options):
    frames = [pd.read_csv(path, dtype=dtypes, **options) for path in paths]
    return pd.concat(frames, ignore_index=True)


def _read(paths, **options):
    dataset = nvt.Dataset([str(p) for p in paths], cpu=True, **options)
    return dataset, dataset.compute().reset_index(drop=True)


def _legacy(paths, part_size, **options):
    """The same files through dask's pandas-based reader (the reader before pyarrow)."""
    ddf = read_csv_ddf([str(p) for p in paths], part_size, PANDAS, **options)
    return ddf, ddf.compute().reset_index(drop=True)


def _criteo_text(rng, rows):
    """Raw Criteo lines: nulls in every integer and hex column, ids of varying width."""
    lines = []
    for _ in range(rows):
        ints = ["" if rng.random() < 0.25 else str(int(rng.integers(-5, 10**6))) for _ in range(13)]
        cats = ["" if rng.random() < 0.25 else format(int(rng.integers(0, 2**32)), "x") for _ in range(26)]
        lines.append("\t".join([str(int(rng.integers(0, 2))), *ints, *cats]))
    return "\n".join(lines) + "\n"


CRITEO_REFERENCE = {"sep": "\t", "names": CRITEO_COLUMNS, "header": None}


# ------------------------------------------------------------------------------ criteo
def test_criteo_tsv_split_mid_line_equals_pandas(tmp_path, rng):
    paths = []
    for index, rows in enumerate([900, 0, 350]):
        paths.append(tmp_path / f"day_{index}")
        paths[-1].write_text(_criteo_text(rng, rows) if rows else "")
    dataset, got = _read(paths, engine="criteo", part_size="20KB")
    expected = _reference([p for p in paths if p.stat().st_size], _engine_dtypes(CRITEO_DTYPES), **CRITEO_REFERENCE)
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)
    # 20KB byte ranges cut lines anywhere: every row is read once, in order, and the
    # partitions are the ones dask's reader made (an empty file makes none).
    assert dataset.npartitions > 5
    ddf, legacy = _legacy(paths, 20_000, **CRITEO_REFERENCE, dtypes=CRITEO_DTYPES)
    assert dataset.npartitions == ddf.npartitions
    pd.testing.assert_frame_equal(got, legacy, check_dtype=True)
    assert {str(part["I1"].dtype) for part in dataset.to_iter()} == {"Int64"}


def test_criteo_files_written_by_the_generator(tmp_path):
    paths = write_criteo(tmp_path, 3000, num_files=2, format="criteo_text", seed=5)
    _, got = _read(paths, engine="criteo", part_size="64KB")
    expected = _reference(paths, _engine_dtypes(CRITEO_DTYPES), **CRITEO_REFERENCE)
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)
    assert got["I1"].isna().any() and got["C3"].isna().any()


def test_criteo_hex_columns_are_nullable_int64(tmp_path, rng):
    path = tmp_path / "day_0"
    path.write_text(_criteo_text(rng, 400))
    hex_columns = {f"C{i}": "hex" for i in range(1, 27)}
    _, got = _read([path], engine="criteo", dtypes=hex_columns, part_size="16KB")
    expected = _reference([path], _engine_dtypes(CRITEO_DTYPES), **CRITEO_REFERENCE)
    for name in hex_columns:
        expected[name] = pd.array([None if pd.isna(v) else int(v, 16) for v in expected[name]], dtype="Int64")
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)


def test_empty_criteo_file_reads_as_no_rows(tmp_path):
    (tmp_path / "day_0").write_bytes(b"")
    dataset, got = _read([tmp_path / "day_0"], engine="criteo")
    assert len(got) == 0 and dataset.npartitions == 1
    assert dict(got.dtypes) == _engine_dtypes(CRITEO_DTYPES)


# --------------------------------------------------------------------------------- csv
def _mixed_csv(rng, rows, line_breaks=False):
    """Integers (nulls after the first 10 rows), floats, booleans, text with nulls, quotes,
    separators, non-ASCII characters (and line breaks) inside quoted fields.

    A quoted line break must not fall on a partition boundary (the files are split at line
    breaks, as dask's reader splits them): only single-partition reads ask for them.
    """
    words = ["plain", "a,b", 'say "hi"', "héllo", "日本語", "emoji 🎉", " padded "] + ["two\nlines"] * line_breaks
    lines = ["id,count,score,flag,text"]
    for i in range(rows):
        count = "" if i > 10 and rng.random() < 0.2 else str(int(rng.integers(-100, 100)))
        score = "" if rng.random() < 0.1 else repr(float(rng.normal()))
        flag = "" if i > 10 and rng.random() < 0.1 else ("True" if rng.random() < 0.5 else "False")
        word = "" if rng.random() < 0.1 else words[int(rng.integers(len(words)))]
        quoted = '"' + word.replace('"', '""') + '"' if any(c in word for c in ',"\n') else word
        lines.append(f"{i},{count},{score},{flag},{quoted}")
    return "\n".join(lines) + "\n"


def test_csv_with_quotes_nulls_and_unicode_equals_pandas(tmp_path, rng):
    path = tmp_path / "a.csv"
    path.write_text(_mixed_csv(rng, 500, line_breaks=True), encoding="utf-8")
    dataset, got = _read([path], engine="csv")
    expected = _reference([path], _inferred_dtypes(path))
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)
    assert dataset.schema.dtypes == {"id": "Int64", "count": "Int64", "score": "float64", "flag": "boolean", "text": "string"}
    assert {"a,b", 'say "hi"', "two\nlines", "日本語", " padded "} <= set(got["text"].dropna())


def test_quoted_line_breaks_across_pyarrow_parsing_blocks(tmp_path, rng, monkeypatch):
    # pyarrow parses a partition in blocks (made small here): quoted line breaks fall on the
    # blocks' edges, where rows must be found quote-aware.
    import pyarrow.csv as pcsv

    from tabflow.io.readers import _arrow_text

    monkeypatch.setattr(_arrow_text, "_ARROW_BLOCK_BYTES", 16 << 10)
    modes = []
    parse = pcsv.read_csv
    monkeypatch.setattr(pcsv, "read_csv", lambda *a, **k: modes.append(k["parse_options"].newlines_in_values) or parse(*a, **k))
    path = tmp_path / "multiline.csv"
    path.write_text(_mixed_csv(rng, 8000, line_breaks=True), encoding="utf-8")
    dataset, got = _read([path])
    assert dataset.npartitions == 1 and True in modes
    pd.testing.assert_frame_equal(got, _reference([path], _inferred_dtypes(path)), check_dtype=True)


def test_csv_with_crlf_line_endings(tmp_path, rng):
    path = tmp_path / "a.csv"
    path.write_bytes(_mixed_csv(rng, 300).replace("\n", "\r\n").encode())
    _, got = _read([path], engine="csv", part_size="2KB")
    expected = _reference([path], _inferred_dtypes(path))
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)
    assert not got["text"].dropna().str.endswith("\r").any()


def test_csv_split_into_blocks_equals_pandas_and_the_dask_reader(tmp_path, rng):
    frame = pd.DataFrame({
        "a": np.arange(3000),
        "b": rng.normal(size=3000),
        "c": rng.choice(["x", "yy", "zzz", ""], size=3000),
    })
    paths = [tmp_path / "p0.csv", tmp_path / "p1.csv"]
    frame.iloc[:1700].to_csv(paths[0], index=False)
    frame.iloc[1700:].to_csv(paths[1], index=False)
    dataset, got = _read(paths, part_size="5KB")
    expected = _reference(paths, _inferred_dtypes(paths[0]))
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)
    ddf, legacy = _legacy(paths, 5000)
    assert dataset.npartitions == ddf.npartitions > 10
    pd.testing.assert_frame_equal(got, legacy, check_dtype=True)
    assert dataset.file_partition_map == {
        str(path): [i for i, source in enumerate(dataset._partition_sources()) if source == str(path)] for path in paths
    }


def test_very_long_lines(tmp_path):
    long_text = "x" * (6 << 20)  # longer than pyarrow's parsing blocks and the partitions
    path = tmp_path / "long.csv"
    path.write_text(f"k,v\n1,{long_text}\n2,short\n3,{long_text[:100]}\n")
    _, got = _read([path], part_size="1MB")
    expected = _reference([path], _inferred_dtypes(path))
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)
    assert got["v"].str.len().tolist() == [6 << 20, 5, 100]


@pytest.mark.parametrize("suffix, compress", [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)])
def test_compressed_files_are_one_partition_each(tmp_path, rng, suffix, compress):
    text = _mixed_csv(rng, 400)
    paths = [tmp_path / f"a.csv{suffix}", tmp_path / f"b.csv{suffix}"]
    for path in paths:
        path.write_bytes(compress(text.encode()))
    dataset, got = _read(paths, engine="csv", part_size="1KB")
    assert dataset.npartitions == 2
    expected = _reference(paths, _inferred_dtypes(paths[0]))
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)


def test_header_only_and_empty_files(tmp_path):
    (tmp_path / "header.csv").write_text("a,b\n")
    dataset, got = _read([tmp_path / "header.csv"])
    assert len(got) == 0 and dataset.schema.dtypes == {"a": "string", "b": "string"}
    pd.testing.assert_frame_equal(got, _legacy([tmp_path / "header.csv"], 1000)[1], check_dtype=True)
    # An empty file among others adds no rows; the dtypes come from the first file with text.
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "data.csv").write_text("a,b\n1,x\n,y\n")
    _, got = _read([tmp_path / "empty.csv", tmp_path / "data.csv", tmp_path / "header.csv"])
    expected = _reference([tmp_path / "data.csv"], _inferred_dtypes(tmp_path / "data.csv"))
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)
    with pytest.raises(DatasetReadError, match=r"empty.csv.*no header line.*names="):
        nvt.Dataset(str(tmp_path / "empty.csv"), engine="csv")


def test_quoted_header_lines(tmp_path, monkeypatch):
    from tabflow.io.readers import _arrow_text

    path = tmp_path / "quoted.csv"
    pd.DataFrame({"a b": [1, 2, None], 'say "x"': ["p", None, "q,r"]}).to_csv(path, index=False, quoting=csv.QUOTE_ALL)
    dataset = nvt.Dataset(str(path))

    def refuse(*args, **kwargs):
        raise AssertionError("read by pandas")

    with monkeypatch.context() as patched:  # the whole file, header included, is read by pyarrow
        patched.setattr(_arrow_text, "read_with_pandas", refuse)
        got = dataset.compute()
    pd.testing.assert_frame_equal(got, _reference([path], _inferred_dtypes(path)), check_dtype=True)
    # A quoted line break in the header: pandas says where the rows start.
    multiline = tmp_path / "multiline_header.csv"
    multiline.write_text('"two\nlines",b\n1,x\n2,y\n')
    _, got = _read([multiline])
    pd.testing.assert_frame_equal(got, _reference([multiline], _inferred_dtypes(multiline)), check_dtype=True)
    assert list(got.columns) == ["two\nlines", "b"]


def test_null_strings_in_every_column_kind(tmp_path):
    nulls = ["", "NA", "N/A", "NULL", "null", "NaN", "nan", "None", "<NA>", "#N/A", "-nan", "n/a"]
    lines = ["i,f,s,b"] + ["1,1.5,x,True"] * 10 + [f"{v},{v},{v},{v}" for v in nulls]
    path = tmp_path / "n.csv"
    path.write_text("\n".join(lines) + "\n")
    _, got = _read([path])
    expected = _reference([path], _inferred_dtypes(path))
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)
    assert got.iloc[10:].isna().all().all()
    # na_values= adds its strings to the defaults.
    _, got = _read([path], na_values=["x"])
    pd.testing.assert_frame_equal(got, _reference([path], _inferred_dtypes(path, na_values=["x"]), na_values=["x"]))


@pytest.mark.parametrize(
    "options",
    [
        {"sep": "|"},
        {"sep": "\t", "usecols": ["text", "id"]},
        {"names": ["n0", "n1", "n2", "n3", "n4"], "header": 0},
        {"skiprows": 2},
        {"quoting": csv.QUOTE_NONE},
        {"dtypes": {"id": "int32", "score": "float32", "count": "float64", "text": "string"}},
    ],
    ids=["sep", "usecols", "names-replace-header", "skiprows", "quote-none", "dtypes"],
)
def test_read_options_mean_what_they_mean_to_pandas(tmp_path, rng, options):
    text = _mixed_csv(rng, 300)
    if options.get("quoting") == csv.QUOTE_NONE:
        text = text.replace('"a,b"', "a;b").replace('"', "'")
    if "skiprows" in options:
        text = "a comment line\nanother one\n" + text
    sep = options.get("sep", ",")
    if sep != ",":
        frame = pd.read_csv(pd.io.common.StringIO(text))
        text = frame.to_csv(index=False, sep=sep)
    path = tmp_path / "a.txt"
    path.write_text(text)
    dataset, got = _read([path], engine="csv", part_size="3KB", **options)
    assert dataset._direct is not None  # read by pyarrow
    pandas_options = {k: v for k, v in options.items() if k != "dtypes"}
    dtypes = _inferred_dtypes(path, **pandas_options)
    dtypes.update(_engine_dtypes({k: v for k, v in options.get("dtypes", {}).items() if k in dtypes}))
    for name, dtype in dtypes.items():
        dtypes[name] = {"int32": "Int32"}.get(str(dtype), dtype)
    expected = _reference([path], dtypes, **pandas_options)
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)


def test_values_pyarrow_refuses_read_as_pandas_reads_them(tmp_path):
    # " 5", "+5" and "1.0" in an integer column, a short row (filled with nulls) and a
    # whitespace-only line: pandas reads these blocks, exactly as before.
    lines = ["a,b,c"] + [f"{i},{i},x" for i in range(10)] + [" 5,+5,y", "1.0,2,z", "7,8", "   ", "9,9,w"]
    path = tmp_path / "odd.csv"
    path.write_text("\n".join(lines) + "\n")
    dataset, got = _read([path])
    expected = _reference([path], _inferred_dtypes(path))
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)
    pd.testing.assert_frame_equal(got, _legacy([path], 10**6)[1], check_dtype=True)
    assert dataset._direct is not None


def test_direct_reader_and_column_subsets_match_the_partitions(tmp_path, rng):
    path = tmp_path / "day_0"
    path.write_text(_criteo_text(rng, 300))
    dataset = nvt.Dataset(str(path), engine="criteo", part_size="8KB")
    parts = list(dataset.to_iter(columns=["C2", "label", "I3"]))
    whole = dataset.compute()
    pd.testing.assert_frame_equal(
        pd.concat(parts, ignore_index=True), whole[["C2", "label", "I3"]].reset_index(drop=True), check_dtype=True
    )


# -------------------------------------------------------------------------------- errors
def test_row_with_too_many_fields_names_file_line_and_fix(tmp_path):
    lines = ["a,b"] + [f"{i},{i}" for i in range(2000)]
    lines[1500] = "1,2,3"
    lines[700] = ""  # blank lines count as lines of the file
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetReadError, match=r"bad.csv.*line 1501 has 3 fields, but the file has 2 columns \['a', 'b'\]; quote"):
        nvt.Dataset(str(path), part_size="3KB").compute()
    # On the first line, pandas would silently take the first field as the row index.
    (tmp_path / "first.csv").write_text("a,b\n1,2,3\n4,5\n")
    with pytest.raises(DatasetReadError, match=r"first.csv.*line 2 has 3 fields.*names=\[...\] naming every field"):
        nvt.Dataset(str(tmp_path / "first.csv")).compute()
    criteo = tmp_path / "day_0"
    criteo.write_text("1\t" * 40 + "1\n")
    with pytest.raises(DatasetReadError, match=r"day_0.*line 1 has 41 fields, but the file has 40 columns"):
        nvt.Dataset(str(criteo), engine="criteo").compute()


def test_value_that_does_not_fit_the_column_names_column_and_fix(tmp_path):
    lines = ["a,b"] + [f"{i},{i}.5" for i in range(50)] + ["7,seven"]
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetReadError, match=r"bad.csv.*column 'b' holds 'seven', which is not a float64.*dtypes=\{'b': 'string'\}"):
        nvt.Dataset(str(path)).compute()
    got = nvt.Dataset(str(path), dtypes={"b": "string"}).compute()
    assert got["b"].iloc[-1] == "seven"


def test_files_with_different_headers_are_an_error(tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    (tmp_path / "b.csv").write_text("y,x\n3,4\n")
    with pytest.raises(DatasetReadError, match=r"b.csv.*header \['y', 'x'\].*first file \['x', 'y'\].*names="):
        nvt.Dataset(str(tmp_path / "*.csv")).compute()
    got = nvt.Dataset(str(tmp_path / "*.csv"), names=["x", "y"], header=0).compute()
    assert got["x"].tolist() == [1, 3]


# ------------------------------------------------------------------------------ fallback
@pytest.mark.parametrize(
    "options, text",
    [
        ({"comment": "#"}, "a,b\n# note\n1,x\n2,y # trailing\n"),
        ({"thousands": "_"}, "a,b\n1_000,x\n2,y\n"),
        ({"skipinitialspace": True}, "a, b\n1, x\n2,  y\n"),
        ({"sep": r"\s+"}, "a  b\n1   x\n2 y\n"),
        ({"skiprows": [1]}, "a,b\nskipped\n1,x\n"),
        ({"na_values": {"b": ["x"]}}, "a,b\n1,x\n2,y\n"),
    ],
    ids=["comment", "thousands", "skipinitialspace", "regex-sep", "skiprows-list", "na-values-dict"],
)
def test_options_pyarrow_cannot_express_read_with_pandas_as_before(tmp_path, options, text):
    path = tmp_path / "a.csv"
    path.write_text(text)
    dataset, got = _read([path], **options)
    assert dataset._direct is None  # dask's pandas-based reader
    sep = options.get("sep", ",")
    passed = {k: v for k, v in options.items() if k != "sep"}
    pd.testing.assert_frame_equal(got, _legacy([path], 10**6, sep=sep, **passed)[1], check_dtype=True)
    # pandas' Python parser reads every one of these options into every dtype on every pandas
    # (pandas 2's C parser ignores thousands= for Int64 columns).
    expected = _reference([path], _inferred_dtypes(path, sep=sep, **passed), sep=sep, engine="python", **passed)
    pd.testing.assert_frame_equal(got, expected)


def test_thousands_separators_in_nullable_numbers_across_blocks(tmp_path):
    # Column a has its first null in a late block, so it is read as Int64 everywhere; b is
    # asked for as int32 (read as Int32); c holds separated floats. Every value has a separator.
    lines = ["a,b,c"]
    for i in range(3000):
        a = "" if i > 2500 and i % 7 == 0 else f"{1000 + i * 1000:_}"
        lines.append(f"{a},{-1000 - i:_},{i * 1000 + 0.5:_}")
    path = tmp_path / "a.csv"
    path.write_text("\n".join(lines) + "\n")
    dataset, got = _read([path], thousands="_", dtypes={"b": "int32"}, part_size="8KB")
    assert dataset._direct is None and dataset.to_ddf().npartitions > 3
    expected = _reference([path], {"a": "Int64", "b": "Int32", "c": "float64"}, thousands="_", engine="python")
    pd.testing.assert_frame_equal(got, expected, check_dtype=True)
    assert got["a"].isna().sum() == sum(1 for i in range(2501, 3000) if i % 7 == 0)


def test_a_value_that_is_no_number_in_a_separated_integer_column_names_column_and_value(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("a,b\n1_000,x\n2_0x0,y\n")
    with pytest.raises(ValueError, match=r"column 'a' read as Int64 with thousands='_': .*2_?0x0.*dtypes=\{'a': 'string'\}"):
        _read([path], thousands="_", dtypes={"a": "int64"})


def test_dtypes_pyarrow_does_not_parse_fall_back(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("a,b\n1,0.5\n2,1.5\n")
    dataset, got = _read([path], dtypes={"b": "float16"})
    assert dataset._direct is None
    pd.testing.assert_frame_equal(got, _reference([path], {"a": "Int64", "b": "float16"}), check_dtype=True)


def test_engine_that_parses_text_itself_gets_its_own_reader(tmp_path, rng, monkeypatch):
    # The cuDF engine parses text on the GPU: the files go to its read_csv_ddf, as before.
    path = tmp_path / "day_0"
    path.write_text(_criteo_text(rng, 200))
    _, by_pyarrow = _read([path], engine="criteo", part_size="8KB")
    monkeypatch.setattr(type(PANDAS), "parses_csv", True)
    dataset, by_engine = _read([path], engine="criteo", part_size="8KB")
    assert dataset._direct is None
    pd.testing.assert_frame_equal(by_engine, by_pyarrow, check_dtype=True)


# -------------------------------------------------------------------------------- remote
def test_remote_text_split_into_byte_ranges(rng):
    import uuid

    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"/text-{uuid.uuid4().hex}"
    text = _criteo_text(rng, 500)
    fs.pipe(f"{root}/day_0", text.encode())
    fs.pipe(f"{root}/day_1.gz", gzip.compress(text.encode()))
    try:
        dataset = nvt.Dataset(f"memory://{root}/day_*", engine="criteo", part_size="16KB", cpu=True)
        got = dataset.compute().reset_index(drop=True)
        assert dataset.npartitions > 3 and dataset._direct is not None
        one = _reference([pd.io.common.StringIO(text)], _engine_dtypes(CRITEO_DTYPES), **CRITEO_REFERENCE)
        pd.testing.assert_frame_equal(got, pd.concat([one, one], ignore_index=True), check_dtype=True)
    finally:
        fs.rm(root, recursive=True)


def test_value_that_is_not_hex_names_file_column_and_value(tmp_path):
    path = tmp_path / "ids.csv"
    path.write_text("id,n\nff,1\nzz,2\n")
    with pytest.raises(ValueError, match=r"ids.csv.*column 'id' read with dtype 'hex': 'zz' \(row 1\) is not a hexadecimal"):
        nvt.Dataset(str(path), dtypes={"id": "hex"}).compute()
