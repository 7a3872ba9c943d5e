"""Reading datasets: every source kind and file format, partitioning, stable dtypes, errors."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow.io.readers import (
    CRITEO_CATEGORICAL,
    CRITEO_COLUMNS,
    CRITEO_CONTINUOUS,
    DatasetReadError,
)

# pandas' own text dtype (``str`` on pandas 3), what tabflow reads strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")


def _frame(rng, n=600, start=0):
    return pd.DataFrame(
        {
            "rid": np.arange(start, start + n, dtype="int64"),
            "x": rng.normal(size=n),
            "c": rng.choice(["a", "b", "c"], size=n),
        }
    )


def _write_parquet(df, path, row_group_size=None):
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=row_group_size)


@pytest.fixture
def parquet_dir(tmp_path, rng):
    frames = [_frame(rng, 300, 300 * i) for i in range(3)]
    for i, df in enumerate(frames):
        _write_parquet(df, tmp_path / f"part_{i}.parquet", row_group_size=100)
    return tmp_path, pd.concat(frames, ignore_index=True)


def _as_reference(df):
    """Plain pandas frame with the dtypes tabflow reads (strings as pandas' own text dtype)."""
    return df.astype({c: STRING for c in df.columns if df[c].dtype == object or df[c].dtype == "str"})


@pytest.mark.parametrize("kind", ["file", "glob", "directory", "list"])
def test_parquet_sources(parquet_dir, kind):
    root, expected = parquet_dir
    files = [str(root / f"part_{i}.parquet") for i in range(3)]
    source = {"file": files[0], "glob": str(root / "part_*.parquet"), "directory": str(root), "list": files}[kind]
    ds = nvt.Dataset(source, engine="parquet")
    want = expected.iloc[:300] if kind == "file" else expected
    got = ds.compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(got, _as_reference(want).reset_index(drop=True))
    assert ds.num_rows == len(want)
    assert ds.schema.dtypes == {"rid": "int64", "x": "float64", "c": "string"}


def test_engine_guessed_from_suffix(parquet_dir):
    root, expected = parquet_dir
    assert nvt.Dataset(str(root)).num_rows == len(expected)


def test_files_in_natural_order(tmp_path):
    for i in (10, 2, 1):
        _write_parquet(pd.DataFrame({"i": [i]}), tmp_path / f"f{i}.parquet")
    assert nvt.Dataset(str(tmp_path)).compute()["i"].tolist() == [1, 2, 10]


def test_in_memory_pandas_frame(rng):
    df = _frame(rng)
    ds = nvt.Dataset(df, npartitions=4)
    assert ds.npartitions == 4 and ds.engine == "pandas" and ds.num_rows == len(df)
    pd.testing.assert_frame_equal(ds.compute(), _as_reference(df))
    assert ds.head(3)["rid"].tolist() == [0, 1, 2]


def test_dask_frame_keeps_its_partitions(rng):
    df = _frame(rng)
    ddf = dd.from_pandas(df, npartitions=3)
    ds = nvt.Dataset(ddf)
    assert ds.engine == "pandas" and ds.npartitions == 3
    assert ds.num_rows == len(df)
    assert ds.schema.dtypes == {"rid": "int64", "x": "float64", "c": "string"}
    # The collection's own dtypes are kept (dask converts text to its ``string`` dtype).
    pd.testing.assert_frame_equal(ds.compute(), ddf.compute())


def test_to_iter_and_to_ddf(parquet_dir):
    root, expected = parquet_dir
    ds = nvt.Dataset(str(root), part_size=4000)
    parts = list(ds.to_iter(columns=["rid"]))
    assert len(parts) == ds.npartitions > 3
    assert pd.concat(parts)["rid"].tolist() == expected["rid"].tolist()
    reverse = list(ds.to_iter(columns=["rid"], indices=list(range(ds.npartitions))[::-1]))
    assert reverse[0]["rid"].tolist() == parts[-1]["rid"].tolist()
    assert list(ds.to_ddf(columns=["x", "c"]).columns) == ["x", "c"]


@pytest.mark.parametrize("direct", [True, False])
def test_to_iter_converts_each_partition_in_the_reading_threads(parquet_dir, direct):
    import threading

    root, expected = parquet_dir
    ds = nvt.Dataset(str(root), part_size=4000)
    if not direct:  # a dataset built from a dask graph, not plain files
        ds = nvt.Dataset(ds.to_ddf())
    threads = set()

    def convert(frame):
        threads.add(threading.current_thread().name)
        return frame["rid"].to_numpy() * 2

    order = list(range(ds.npartitions))[::-1]
    converted = list(ds.to_iter(columns=["rid"], indices=order, convert=convert))
    parts = list(ds.to_iter(columns=["rid"], indices=order))
    assert [c.tolist() for c in converted] == [(p["rid"] * 2).tolist() for p in parts]
    assert sorted(v for c in converted for v in c.tolist()) == sorted((expected["rid"] * 2).tolist())
    assert threads and all(name.startswith("tabflow-read") for name in threads)


def test_part_size_changes_partition_count(parquet_dir):
    root, expected = parquet_dir
    counts = {size: nvt.Dataset(str(root), part_size=size).npartitions for size in ("1MB", "4KB", 1000)}
    assert counts["1MB"] == 3  # a partition never spans two files
    assert counts["1MB"] < counts["4KB"] <= counts[1000]
    # Row groups (100 rows each) are the finest split.
    assert counts[1000] == 9
    many = nvt.Dataset(str(root), part_mem_fraction=1e-12)
    assert many.npartitions == 9 and many.compute()["rid"].tolist() == expected["rid"].tolist()
    assert nvt.Dataset(expected, part_size="10KB").npartitions > nvt.Dataset(expected, part_size="1MB").npartitions
    with pytest.raises(ValueError, match="part_mem_fraction"):
        nvt.Dataset(str(root), part_mem_fraction=2.0)


def test_nullable_int_dtype_is_the_same_in_every_partition(tmp_path):
    # Nulls only in the second file, and there only in its second row group.
    _write_parquet(pd.DataFrame({"a": np.arange(4, dtype="int64")}), tmp_path / "f1.parquet")
    _write_parquet(pd.DataFrame({"a": pd.array([4, 5, 6, None], dtype="Int64")}), tmp_path / "f2.parquet", row_group_size=2)
    ds = nvt.Dataset(str(tmp_path), part_size=1)
    assert ds.npartitions == 3
    assert ds.schema["a"].dtype == "Int64"
    dtypes = {str(part["a"].dtype) for part in ds.to_iter()}
    assert dtypes == {"Int64"}
    assert ds.compute()["a"].tolist()[:7] == list(range(7))


def test_list_columns_read_as_arrow_lists(tmp_path):
    values = [[1, 2], [], None, [3], [4, 5, 6]]
    table = pa.table({"tags": pa.array(values, pa.list_(pa.int64())), "w": pa.array([[0.5]] * 5, pa.large_list(pa.float32()))})
    pq.write_table(table, tmp_path / "l.parquet")
    ds = nvt.Dataset(str(tmp_path))
    df = ds.to_ddf(arrow_lists=True).compute()
    assert df["tags"].dtype == pd.ArrowDtype(pa.list_(pa.int64()))
    assert df["w"].dtype == pd.ArrowDtype(pa.list_(pa.float32()))
    assert ds.schema["tags"].dtype == "list<int64>" and ds.schema["tags"].is_list
    assert [None if v is pd.NA else list(v) for v in df["tags"]] == values


def test_index_columns_written_by_pandas_are_not_read(tmp_path):
    df = pd.DataFrame({"a": [1, 2, 3]}, index=[10, 20, 30])
    df.to_parquet(tmp_path / "i.parquet")
    assert list(nvt.Dataset(str(tmp_path)).compute().columns) == ["a"]


def test_column_order_follows_the_first_file(tmp_path):
    _write_parquet(pd.DataFrame({"a": [1], "b": [2.0]}), tmp_path / "f1.parquet")
    _write_parquet(pd.DataFrame({"b": [3.0], "a": [4]}), tmp_path / "f2.parquet")
    df = nvt.Dataset(str(tmp_path)).compute()
    assert list(df.columns) == ["a", "b"] and df["a"].tolist() == [1, 4]


def test_parquet_dtypes_argument(parquet_dir):
    root, _ = parquet_dir
    ds = nvt.Dataset(str(root), dtypes={"rid": "Int64", "x": "float32"})
    df = ds.compute()
    assert str(df["rid"].dtype) == "Int64" and df["x"].dtype == np.float32
    assert ds.schema["x"].dtype == "float32"


def test_csv_with_header_and_separator(tmp_path, rng):
    df = _frame(rng, 50)
    df.to_csv(tmp_path / "a.csv", sep="|", index=False)
    ds = nvt.Dataset(str(tmp_path / "a.csv"), sep="|")
    got = ds.compute()
    # Integer columns are read as nullable integers: a later block may hold nulls.
    assert ds.schema.dtypes == {"rid": "Int64", "x": "float64", "c": "string"}
    assert got["rid"].tolist() == df["rid"].tolist()
    np.testing.assert_allclose(got["x"].to_numpy(), df["x"].to_numpy())


def test_csv_with_names_and_canonical_dtypes(tmp_path):
    (tmp_path / "a.csv").write_text("1;x;2.5\n;y;\n3;;4.5\n")
    ds = nvt.Dataset(str(tmp_path / "a.csv"), sep=";", names=["a", "b", "c"], dtypes={"a": "Int64", "b": "string", "c": "float32"})
    df = ds.compute()
    assert ds.schema.dtypes == {"a": "Int64", "b": "string", "c": "float32"}
    assert df["a"].isna().tolist() == [False, True, False] and df["a"].sum() == 4
    assert df["b"].tolist()[0] == "x" and df["b"].isna().tolist() == [False, False, True]
    assert df["c"].dtype == np.float32


def test_csv_integer_column_with_nulls_in_a_later_block(tmp_path):
    lines = ["a,b"] + [f"{i},{i}" for i in range(2000)] + [",7"]
    (tmp_path / "a.csv").write_text("\n".join(lines) + "\n")
    ds = nvt.Dataset(str(tmp_path / "a.csv"), part_size=2000)
    assert ds.npartitions > 1
    assert {str(p["a"].dtype) for p in ds.to_iter()} == {"Int64"}
    assert ds.compute()["a"].isna().sum() == 1


def test_orc(tmp_path, rng):
    df = _frame(rng, 200)
    table = pa.Table.from_pandas(df, preserve_index=False)
    orc.write_table(table, tmp_path / "a.orc", stripe_size=1024)
    orc.write_table(table.slice(0, 10), tmp_path / "b.orc")
    ds = nvt.Dataset(str(tmp_path), engine="orc")
    assert ds.num_rows == 210
    got = ds.compute()
    assert got["rid"].tolist() == [*range(200), *range(10)]
    assert got["c"].tolist()[:5] == df["c"].tolist()[:5]
    assert ds.schema.dtypes == {"rid": "Int64", "x": "float64", "c": "string"}


def _criteo_lines(rng, n):
    lines, rows = [], []
    for _ in range(n):
        label = int(rng.integers(0, 2))
        ints = [None if rng.random() < 0.2 else int(rng.integers(0, 1000)) for _ in CRITEO_CONTINUOUS]
        cats = [None if rng.random() < 0.2 else format(int(rng.integers(0, 2**32)), "08x") for _ in CRITEO_CATEGORICAL]
        rows.append([label, *ints, *cats])
        lines.append("\t".join("" if v is None else str(v) for v in [label, *ints, *cats]))
    return "\n".join(lines) + "\n", rows


def test_criteo_raw_text(tmp_path, rng):
    text, rows = _criteo_lines(rng, 40)
    (tmp_path / "day_0").write_text(text)
    ds = nvt.Dataset(str(tmp_path / "day_0"), engine="criteo")
    df = ds.compute()
    assert list(df.columns) == CRITEO_COLUMNS
    assert ds.schema["label"].dtype == "int64"
    assert {ds.schema[c].dtype for c in CRITEO_CONTINUOUS} == {"Int64"}
    assert {ds.schema[c].dtype for c in CRITEO_CATEGORICAL} == {"string"}
    for j, column in enumerate(CRITEO_COLUMNS):
        got = [None if pd.isna(v) else v for v in df[column].tolist()]
        assert got == [row[j] for row in rows], column
    # A directory of raw files reads too.
    assert nvt.Dataset(str(tmp_path), engine="criteo").num_rows == 40


def test_corrupt_parquet_names_the_file(tmp_path, parquet_dir):
    root, _ = parquet_dir
    bad = root / "part_9.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(DatasetReadError, match="part_9.parquet"):
        nvt.Dataset(str(root))


def test_missing_path(tmp_path):
    with pytest.raises(DatasetReadError, match="does not exist"):
        nvt.Dataset(str(tmp_path / "nope.parquet"))
    with pytest.raises(DatasetReadError, match="no file matches"):
        nvt.Dataset(str(tmp_path / "*.parquet"))
    with pytest.raises(DatasetReadError, match="holds no parquet files"):
        nvt.Dataset(str(tmp_path), engine="parquet")
    # DatasetReadError is an OSError, so generic handlers still catch it.
    assert issubclass(DatasetReadError, OSError)


def test_mixed_column_sets(tmp_path):
    _write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "f1.parquet")
    _write_parquet(pd.DataFrame({"b": [1]}), tmp_path / "f2.parquet")
    with pytest.raises(DatasetReadError, match="f2.parquet.*share their columns"):
        nvt.Dataset(str(tmp_path))


def test_unknown_format(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"x")
    with pytest.raises(ValueError, match="engine="):
        nvt.Dataset(str(tmp_path / "a.bin"))


def test_iterating_plain_parquet_never_imports_distributed(tmp_path):
    # Looking for a dask distributed client must not import the package (~0.3 s) when no
    # client can exist: the loader asks at the start of every epoch.
    import subprocess
    import sys

    pd.DataFrame({"a": range(10)}).to_parquet(tmp_path / "p.parquet")
    script = (
        "import sys, tabflow as nvt\n"
        f"ds = nvt.Dataset({str(tmp_path)!r}, engine='parquet', cpu=True)\n"
        "rows = sum(len(p) for p in ds.to_iter())\n"
        "print(rows, 'distributed' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["10", "False"]


@pytest.mark.parametrize("columns", [
    {"i8": pa.array(np.arange(500, dtype="int8")), "f32": pa.array(np.ones(500, dtype="float32")),
     "b": pa.array(np.arange(500) % 2 == 0), "u64": pa.array(np.arange(500, dtype="uint64"))},
    {"i": pa.array([1, None] * 250, pa.int64()), "f": pa.array(np.ones(500))},  # a null
    {"i": pa.array(np.arange(500)), "s": pa.array([f"value {i}" for i in range(500)])},  # strings
    {"i": pa.array(np.arange(500)), "l": pa.array([[1, 2]] * 500, pa.list_(pa.int64()))},  # lists
])
def test_memory_expansion_without_a_sample_equals_the_sampled_one(tmp_path, columns):
    # Null-free numeric files are planned from their metadata alone; the result must be what
    # measuring a converted sample gives.
    from tabflow.backends import get_backend
    from tabflow.io.readers.parquet import _memory_expansion

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table(columns), path, row_group_size=250)
    metadata = pq.read_metadata(path)
    backend = get_backend("pandas")
    sample = backend.from_arrow(pq.read_table(path).slice(0, 250))
    reference = max(1.0, backend.memory_usage(sample) / 250 / (metadata.row_group(0).total_byte_size / 250))
    got = _memory_expansion(str(path), metadata.row_group(0), backend, metadata.schema.to_arrow_schema())
    assert got == pytest.approx(reference, rel=1e-9)


# ------------------------------------------------------ types unified across files (no silent casts)


def _parts_and_ddf(ds):
    """Every partition read directly (``to_iter``) and through dask, as lists of frames."""
    direct = list(ds.to_iter())
    through_dask = [part.compute() for part in ds.to_ddf().to_delayed()]
    return direct, through_dask


@pytest.mark.parametrize(
    "first, second, unified",
    [
        (pa.array([1, -2], pa.int32()), pa.array([2**40, 3], pa.int64()), "int64"),
        (pa.array([2**40, 3], pa.int64()), pa.array([1, -2], pa.int32()), "int64"),
        (pa.array([1, 2**40], pa.int64()), pa.array([3.5, -0.25], pa.float64()), "float64"),
        (pa.array([3.5, 1e-3], pa.float64()), pa.array([7, 8], pa.int64()), "float64"),
        (pa.array([2**31, 0], pa.uint32()), pa.array([-1, 5], pa.int32()), "int64"),
        (pa.array([None, None], pa.null()), pa.array([1, 2], pa.int32()), "Int32"),
        (pa.array([1, None], pa.int32()), pa.array([2**40, 5], pa.int64()), "Int64"),
        (pa.array([0.5, None], pa.float32()), pa.array([1.5, 2.5], pa.float64()), "float64"),
        (pa.array(["a", None], pa.string()), pa.array(["b", "c"], pa.large_string()), "string"),
        (pa.array(["a", "b"]).dictionary_encode(), pa.array(["c", None], pa.string()), "string"),
    ],
)
def test_column_types_unify_across_parquet_files(tmp_path, first, second, unified):
    pq.write_table(pa.table({"v": first, "k": pa.array([0, 1])}), tmp_path / "f1.parquet")
    pq.write_table(pa.table({"v": second, "k": pa.array([2, 3])}), tmp_path / "f2.parquet")
    ds = nvt.Dataset(str(tmp_path), engine="parquet")
    assert ds.schema["v"].dtype == unified
    expected = first.to_pylist() + second.to_pylist()
    direct, through_dask = _parts_and_ddf(ds)
    for parts in (direct, through_dask):
        # Every partition has the planned dtype, whatever its own file stores ...
        assert {ds.backend.canonical_dtype(part["v"].dtype) for part in parts} == {unified}
        # ... and every value is the file's own (2**40 stays 2**40, 3.5 stays 3.5).
        values = [None if pd.isna(v) else v for part in parts for v in part["v"].tolist()]
        assert values == expected
    assert ds.compute()["v"].dtype == ds.backend.engine_dtype(unified)


def test_unified_types_in_many_files_are_planned_from_footers_only(tmp_path, monkeypatch):
    for i in range(40):
        values = pa.array([i, -i], pa.int32()) if i % 2 else pa.array([i, 2**33 + i], pa.int64())
        pq.write_table(pa.table({"v": values}), tmp_path / f"p{i}.parquet")

    def no_data(*args, **kwargs):
        raise AssertionError("planning read column data")

    with monkeypatch.context() as patch:
        for name in ("read", "read_row_groups", "read_row_group", "iter_batches"):
            patch.setattr(pq.ParquetFile, name, no_data)
        ds = nvt.Dataset(str(tmp_path), engine="parquet")
    assert ds.schema["v"].dtype == "int64" and ds.num_rows == 80
    assert ds.compute()["v"].tolist()[:4] == [0, 2**33, 1, -1]


def test_string_and_number_in_different_files_is_an_error_naming_both(tmp_path):
    pq.write_table(pa.table({"v": pa.array([1, 2]), "k": pa.array([0, 1])}), tmp_path / "nums.parquet")
    pq.write_table(pa.table({"v": pa.array(["x", "y"]), "k": pa.array([2, 3])}), tmp_path / "words.parquet")
    with pytest.raises(DatasetReadError, match=r"column 'v' is int64 in .*nums.parquet.* but string in .*words.parquet.*dtypes=\{'v': 'string'\}"):
        nvt.Dataset(str(tmp_path), engine="parquet")
    # The fix the message names: one dtype for the column, given by the user.
    ds = nvt.Dataset(str(tmp_path), engine="parquet", dtypes={"v": "string"})
    assert ds.schema["v"].dtype == "string"
    assert ds.compute()["v"].tolist() == ["1", "2", "x", "y"]


def test_value_that_does_not_fit_the_unified_type_is_an_error_naming_the_file(tmp_path):
    # uint64 + int64 unify to int64 (as in Arrow); 2**63 does not fit it and must not wrap.
    pq.write_table(pa.table({"v": pa.array([1, 2], pa.int64())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"v": pa.array([2**63, 5], pa.uint64())}), tmp_path / "b.parquet")
    ds = nvt.Dataset(str(tmp_path), engine="parquet")
    assert ds.schema["v"].dtype == "int64"
    with pytest.raises(DatasetReadError, match=r"b.parquet.*row group 0.*column 'v'.*9223372036854775808"):
        ds.compute()
    with pytest.raises(DatasetReadError, match=r"b.parquet"):
        list(ds.to_iter())


def test_user_dtypes_never_wrap_or_truncate_parquet_values(tmp_path):
    pq.write_table(pa.table({"big": pa.array([2**40]), "frac": pa.array([3.5])}), tmp_path / "a.parquet")
    with pytest.raises(DatasetReadError, match=r"column 'big'.*int32"):
        nvt.Dataset(str(tmp_path), dtypes={"big": "int32"}).compute()
    with pytest.raises(DatasetReadError, match=r"column 'frac'.*int64"):
        nvt.Dataset(str(tmp_path), dtypes={"frac": "int64"}).compute()
    # Widening and float rounding are what was asked for.
    out = nvt.Dataset(str(tmp_path), dtypes={"big": "float64", "frac": "float32"}).compute()
    assert out["big"].tolist() == [2.0**40] and out["frac"].dtype == np.float32


def test_orc_column_types_unify_across_files(tmp_path):
    orc.write_table(pa.table({"v": pa.array([1, 2], pa.int32())}), str(tmp_path / "a.orc"))
    orc.write_table(pa.table({"v": pa.array([2**40, 3.5], pa.float64())}), str(tmp_path / "b.orc"))
    ds = nvt.Dataset(str(tmp_path), engine="orc")
    assert ds.schema["v"].dtype == "float64"
    assert ds.compute()["v"].tolist() == [1.0, 2.0, 2.0**40, 3.5]
    orc.write_table(pa.table({"v": pa.array(["s", "t"])}), str(tmp_path / "c.orc"))
    with pytest.raises(DatasetReadError, match=r"column 'v' is double in .*b.orc.* but string in .*c.orc"):
        nvt.Dataset(str(tmp_path), engine="orc")


# ------------------------------------------------------------------- duplicate column names


def test_duplicate_column_in_a_parquet_file_is_named(tmp_path):
    pq.write_table(pa.table([pa.array([1]), pa.array([2]), pa.array([3])], names=["a", "b", "a"]), tmp_path / "d.parquet")
    with pytest.raises(DatasetReadError, match=r"d.parquet.*column name\(s\) \['a'\] more than once"):
        nvt.Dataset(str(tmp_path / "d.parquet"))


def test_duplicate_column_in_a_csv_header_is_named(tmp_path):
    (tmp_path / "d.csv").write_text("a,b,a\n1,2,3\n")
    with pytest.raises(DatasetReadError, match=r"header of CSV file .*d.csv.*\['a'\] more than once.*names="):
        nvt.Dataset(str(tmp_path / "d.csv"))
    # The fix it names: distinct names replacing the header line.
    out = nvt.Dataset(str(tmp_path / "d.csv"), names=["a", "b", "a2"], header=0).compute()
    assert out.to_dict("list") == {"a": [1], "b": [2], "a2": [3]}
    with pytest.raises(ValueError, match=r"names= has the column name\(s\) \['b'\]"):
        nvt.Dataset(str(tmp_path / "d.csv"), names=["a", "b", "b"], header=0)
    (tmp_path / "t.tsv").write_text("# comment\nx\ty\tx\n1\t2\t3\n")
    with pytest.raises(DatasetReadError, match=r"\['x'\]"):
        nvt.Dataset(str(tmp_path / "t.tsv"), engine="csv", sep="\t", skiprows=1)


@pytest.mark.parametrize("dask", [False, True])
def test_duplicate_column_in_a_frame_is_named(dask):
    frame = pd.DataFrame([[1, 2, 3, 4]], columns=["a", "b", "a", "c"])
    source = dd.from_pandas(frame, npartitions=1) if dask else frame
    with pytest.raises(ValueError, match=r"DataFrame given to Dataset has the column name\(s\) \['a'\] more than once"):
        nvt.Dataset(source)


# ------------------------------------------------------------------ read errors name the file


def _corrupt_page(path, row_group=0):
    """Overwrite the header of the first data page of ``row_group``'s first column."""
    offset = pq.read_metadata(path).row_group(row_group).column(0).data_page_offset
    data = bytearray(path.read_bytes())
    data[offset : offset + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))


def test_corrupt_page_in_the_first_row_group_names_the_file(tmp_path):
    # A string column makes planning read a sample of row group 0, which meets the bad page.
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"x": np.arange(1000), "s": [f"v{i}" for i in range(1000)]}), path, row_group_size=250)
    _corrupt_page(path)
    with pytest.raises(DatasetReadError, match=r"s.parquet.*\(row group 0\).*corrupt") as caught:
        nvt.Dataset(str(path))
    assert isinstance(caught.value.__cause__, OSError) and caught.value.__cause__ is not caught.value


def test_corrupt_page_met_while_reading_names_the_file_and_row_group(tmp_path):
    # Numeric columns are planned from the footer alone: the bad page is met on reading.
    good, bad = tmp_path / "a.parquet", tmp_path / "b.parquet"
    for path in (good, bad):
        pq.write_table(pa.table({"x": np.arange(1000)}), path, row_group_size=250)
    _corrupt_page(bad, row_group=2)
    ds = nvt.Dataset(str(tmp_path))  # one partition per file: row groups 0-3 together
    with pytest.raises(DatasetReadError, match=r"b.parquet' \(row group 2\)") as caught:
        ds.compute()
    assert caught.value.__cause__ is not None
    with pytest.raises(DatasetReadError, match=r"b.parquet' \(row group 2\)"):
        list(ds.to_iter())
    assert len(next(iter(ds.to_iter()))) == 1000  # the good file still reads
