"""The backend contract, checked the same way for every engine (cuDF skips without a GPU)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tabflow.backends import backend_for, default_engine, get_backend
from tabflow.schema import dtypes as dtype_names

# pandas' own text dtype (``str`` on pandas 3), what tabflow holds strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")


def _host(backend, obj):
    return backend.to_host(obj)


def _np(backend, array):
    return np.asarray(backend.to_host(array))


@pytest.mark.parametrize(
    "name, pandas_canonical",
    [
        ("int64", "int64"),
        ("Int64", "Int64"),
        ("float32", "float32"),
        ("string", "string"),
        ("str", "string"),
        ("list<int64>", "list<int64>"),
        ("list<string>", "list<string>"),
        ("bool", "bool"),
    ],
)
def test_dtype_names(backend, name, pandas_canonical):
    engine_dtype = backend.engine_dtype(name)
    canonical = backend.canonical_dtype(engine_dtype)
    # cuDF columns are all nullable: masked names map to the plain ones there.
    expected = pandas_canonical if backend.name == "pandas" else pandas_canonical.replace("Int64", "int64")
    assert canonical == expected
    assert backend.canonical_dtype(name) == expected
    assert backend.is_list_dtype(engine_dtype) == name.startswith("list<")
    assert backend.is_string_dtype(engine_dtype) == (pandas_canonical == "string")
    assert backend.is_numeric_dtype(engine_dtype) == (pandas_canonical in ("int64", "Int64", "float32"))
    assert backend.canonical_dtype(backend.empty_frame({"c": name})["c"].dtype) == expected


@pytest.mark.parametrize(
    "name",
    ["int8", "uint16", "int64", "Int32", "UInt8", "Int64", "float32", "float64", "bool", "boolean",
     "string", "str", "list<int64>", "list<float32>", "list<string>", "datetime64[ns]"],
)
def test_engine_dtypes_agree_with_the_dtype_names(backend, name):
    engine_dtype = backend.engine_dtype(name)
    assert backend.is_string_dtype(engine_dtype) == dtype_names.is_string(name)
    assert backend.is_list_dtype(engine_dtype) == dtype_names.is_list(name)
    assert backend.is_numeric_dtype(engine_dtype) == dtype_names.is_numeric(name)
    expected = dtype_names.STRING if dtype_names.is_string(name) else name
    # Masked names are pandas' own; every cuDF column is nullable and named plainly.
    assert backend.canonical_dtype(engine_dtype) == (dtype_names.unmasked_dtype(expected) if backend.name == "cudf" else expected)
    # Read from Arrow with nulls, a column gets the masked name of its plain dtype.
    planned = dtype_names.arrow_canonical_dtype(dtype_names.arrow_type(name), has_nulls=True)
    assert planned == dtype_names.nullable_dtype(dtype_names.unmasked_dtype(expected))


@pytest.mark.parametrize("labels", [[7, 7, 3], ["c", "a", "b"]])
def test_with_index_relabels_rows_in_place_of_aligning(backend, to_engine, labels):
    host = pd.DataFrame({"a": [1, 2, 3], "s": pd.array(["p", None, "r"], dtype=STRING)}, index=[3, 7, 9])
    frame = to_engine(host)
    index = to_engine(pd.DataFrame(index=labels)).index
    relabelled = backend.with_index(frame, index)
    out = backend.to_host(relabelled)
    assert out.index.tolist() == labels
    # Row for row: the label 3 present in both indexes does not pull row 3's values.
    assert out["a"].tolist() == [1, 2, 3]
    assert out["s"].isna().tolist() == [False, True, False]
    series = backend.to_host(backend.with_index(frame["a"], index))
    assert series.index.tolist() == labels and series.tolist() == [1, 2, 3] and series.name == "a"
    # The frame it came from keeps its labels.
    assert backend.to_host(frame).index.tolist() == [3, 7, 9]
    with pytest.raises(ValueError):
        backend.with_index(frame, to_engine(pd.DataFrame(index=[1, 2])).index)


def test_frames_and_host_round_trip(backend):
    host = pd.DataFrame({"a": [1, 2, 3], "x": [0.5, None, 2.0], "s": pd.array(["p", None, "r"], dtype=pd.StringDtype("pyarrow"))})
    frame = backend.from_host(host)
    assert backend.is_frame(frame) and backend_for(frame) is backend
    assert backend.is_series(frame["a"])
    # Back on the host a frame has the pandas engine's dtypes: cuDF's text comes back as the
    # pandas engine's string dtype, whichever pandas string dtype it left as.
    expected = host.astype({"s": STRING}) if backend.name == "cudf" else host
    pd.testing.assert_frame_equal(_host(backend, frame), expected)
    both = backend.concat_columns([frame[["a"]], frame[["x"]]])
    assert list(both.columns) == ["a", "x"]
    rows = backend.concat_rows([frame, frame])
    assert len(rows) == 6 and _host(backend, rows)["a"].tolist() == [1, 2, 3, 1, 2, 3]
    assert backend.memory_usage(frame) > 0
    assert backend.total_memory() > 0


def test_to_float_and_to_numpy(backend):
    series = backend.from_host(pd.Series(pd.array([1, None, 3], dtype="Int64"), name="v"))
    as_float = _host(backend, backend.to_float(series, "float64"))
    assert np.isnan(as_float.iloc[1]) and as_float.iloc[2] == 3.0
    np.testing.assert_array_equal(backend.to_numpy(series, "float64", na_value=-1.0), [1.0, -1.0, 3.0])


@pytest.mark.parametrize(
    "values, dtype, fill, canonical",
    [
        ([1, None, 3, None], "Int64", 0, "int64"),  # FillMissing on a masked id: one pass
        ([1, None, -3, None], "Int32", 7, "int32"),
        ([None, None], "Int64", -1, "int64"),
        ([], "Int64", 0, "int64"),
        ([1.5, np.nan, -0.0, np.inf], "float64", 2.25, "float64"),
        ([1.5, np.nan], "float32", 0, "float32"),
        ([1, None, 3], "Int64", 0, "Int64"),  # stays masked: fillna alone
        ([1.5, None], "Float64", 0, "float64"),
        ([1, 2], "int64", 0, "int64"),  # nothing to fill
        ([2**62, None], "Int64", 0, "float64"),  # a cast that rounds: made as astype makes it
        ([1, None], "Int64", 1.0, "int64"),
    ],
)
def test_fill_nulls_is_fillna_then_a_cast(backend, values, dtype, fill, canonical):
    host = pd.Series(pd.array(values, dtype=dtype), index=pd.RangeIndex(10, 10 + len(values)), name="v")
    filled = backend.fill_nulls(backend.from_host(host), fill, canonical)
    expected = host.fillna(fill)
    expected = expected.astype(get_backend("pandas").engine_dtype(canonical))
    result = _host(backend, filled)
    # As the engine names it: cuDF's columns are all nullable, so "Int64" is int64 there.
    assert backend.canonical_dtype(filled.dtype) == backend.canonical_dtype(canonical)
    pd.testing.assert_series_equal(result, expected, check_dtype=False)
    assert host.isna().sum() == sum(v is None or (isinstance(v, float) and np.isnan(v)) for v in values)  # input untouched


def test_list_columns(backend):
    host = pd.Series([[1, 2], [], None, [3]], dtype=pd.ArrowDtype(pa.list_(pa.int64())), name="tags")
    series = backend.from_host(host)
    assert backend.is_list_dtype(series.dtype)
    values, offsets = backend.list_values_series(series), backend.list_offsets(series)
    assert _host(backend, values).tolist() == [1, 2, 3]
    assert _np(backend, offsets).tolist() == [0, 2, 2, 2, 3]
    assert _np(backend, backend.list_lengths(series)).tolist() == [2, 0, 0, 1]
    rebuilt = backend.list_from_values_offsets(values, offsets, name="tags")
    assert backend.canonical_dtype(rebuilt.dtype) == "list<int64>"
    assert [list(v) for v in _host(backend, rebuilt)] == [[1, 2], [], [], [3]]
    counts = _host(backend, backend.value_counts(series)).sort_index()
    assert counts.to_dict() == {1: 1, 2: 1, 3: 1}


def test_arrow_and_parquet(backend, tmp_path):
    table = pa.table({"a": pa.array([1, None, 3, 4], pa.int64()), "s": ["w", "x", None, "z"], "l": pa.array([[1], [], None, [2, 3]], pa.large_list(pa.int32()))})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=2)
    dtypes = {"a": "Int64", "s": "string", "l": "list<int32>"}
    frame = backend.from_arrow(table, dtypes)
    assert [backend.canonical_dtype(t) for t in frame.dtypes] == [backend.canonical_dtype(d) for d in dtypes.values()]
    part = backend.read_parquet_parts([(str(tmp_path / "t.parquet"), [1])], ["a", "s"], dtypes)
    assert _host(backend, part)["a"].tolist() == [3, 4]
    empty = backend.read_parquet_parts([(str(tmp_path / "t.parquet"), [])], ["a"], dtypes)
    assert len(empty) == 0 and list(empty.columns) == ["a"]
    # Several files into one frame, in order, though the second stores "a" as int32 and "s"
    # dictionary-encoded only where asked.
    narrow = pa.table({"a": pa.array([7, None], pa.int32()), "s": ["y", "w"], "l": pa.array([[5], None], pa.list_(pa.int32()))})
    pq.write_table(narrow, tmp_path / "u.parquet")
    parts = [(str(tmp_path / "t.parquet"), [1]), (str(tmp_path / "u.parquet"), None), (str(tmp_path / "t.parquet"), [])]
    joined = _host(backend, backend.read_parquet_parts(parts, ["a", "s"], dtypes, dictionary_strings=["s"]))
    assert [None if pd.isna(v) else int(v) for v in joined["a"]] == [3, 4, 7, None]
    assert [None if pd.isna(v) else str(v) for v in joined["s"]] == [None, "z", "y", "w"]
    assert backend.canonical_dtype(joined["a"].dtype) == "Int64"
    back = backend.to_arrow(frame)
    assert back.column("a").to_pylist() == [1, None, 3, 4]
    assert dtype_names.arrow_canonical_dtype(pa.int32(), True) == "Int32"


def test_lookup_and_masks(backend):
    table = backend.lookup_table(backend.from_host(pd.Series(["a", "b", "c"], dtype=pd.StringDtype("pyarrow"))))
    keys = backend.from_host(pd.Series(["c", None, "a", "zz"], dtype=pd.StringDtype("pyarrow")))
    assert _np(backend, backend.lookup(table, keys)).tolist() == [2, -1, 0, -1]
    frame = backend.from_host(pd.DataFrame({"a": [1.0, None], "b": [None, None]}))
    assert _np(backend, backend.null_mask(frame)).tolist() == [False, True]
    assert _np(backend, backend.null_mask(frame["a"])).tolist() == [False, True]


def test_hashes_match_the_pandas_engine(backend):
    host = pd.DataFrame({"a": [1, 2, 3], "s": pd.array(["x", "y", None], dtype=pd.StringDtype("pyarrow"))})
    pandas = get_backend("pandas")
    np.testing.assert_array_equal(_np(backend, backend.hash_rows(backend.from_host(host))), pandas.hash_rows(host))


def test_merge_keep_order(backend):
    left = backend.from_host(pd.DataFrame({"k": [3, 1, 2, 9]}, index=[10, 11, 12, 13]))
    right = backend.from_host(pd.DataFrame({"k": [1, 2, 3], "v": [10.0, 20.0, 30.0]}))
    out = _host(backend, backend.merge_keep_order(left, right, ["k"], ["k"]))
    assert out["k"].tolist() == [3, 1, 2, 9] and out.index.tolist() == [10, 11, 12, 13]
    assert out["v"].tolist()[:3] == [30.0, 10.0, 20.0] and pd.isna(out["v"].iloc[3])


def test_unknown_engine():
    with pytest.raises(ValueError, match="unknown engine"):
        get_backend("polars")
    with pytest.raises(TypeError, match="pandas or cuDF"):
        backend_for(object())
    assert default_engine(cpu=True) == "pandas"


def test_importing_tabflow_never_imports_cudf():
    # A finder that hides the GPU stack and records every attempt made from tabflow's code
    # (dask itself probes for cupy; that is not tabflow importing it).
    script = textwrap.dedent(
        """
        import os, sys
        import tabflow.backends  # only to locate the package; imports nothing heavy
        root = os.path.dirname(os.path.dirname(tabflow.backends.__file__))
        attempts = []

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("cudf", "cupy", "dask_cudf", "rmm"):
                    frame = sys._getframe(1)
                    while frame is not None and "importlib" in frame.f_code.co_filename:
                        frame = frame.f_back
                    if frame is not None and frame.f_code.co_filename.startswith(root):
                        attempts.append((name, frame.f_code.co_filename))
                    raise ModuleNotFoundError(name)
                return None

        sys.meta_path.insert(0, Block())
        import tabflow
        import tabflow.backends.cudf_backend
        from tabflow import ops, Workflow, Dataset
        import pandas as pd
        Workflow(["x"] >> ops.Normalize()).fit_transform(pd.DataFrame({"x": [1.0, 2.0]}))
        Dataset(pd.DataFrame({"x": [1.0]})).to_ddf().compute()
        print(attempts, sorted(m for m in sys.modules if m.split(".")[0] in ("cudf", "dask_cudf")))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] []"


def test_importing_tabflow_loads_no_compiler_or_framework():
    # numba (hash and hex kernels), torch (loaders) and matplotlib (plots) load on first use.
    script = "import sys, tabflow; print(sorted({m.split('.')[0] for m in sys.modules} & {'numba', 'torch', 'matplotlib'}))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_columns_matrix_matches_numpy(backend):
    rng = np.random.default_rng(0)
    host = pd.DataFrame({
        "a": rng.integers(0, 1000, 50), "b": rng.integers(-5, 5, 50).astype("int32"),
        "x": rng.normal(size=50).astype("float32"), "y": rng.normal(size=50),
    })
    host.loc[[3, 7], "x"] = np.nan
    frame = backend.from_host(host)
    cats = backend.columns_matrix(frame, ["a", "b"], "int64")
    conts = backend.columns_matrix(frame, ["x", "y"], "float32", na_value=np.nan)
    assert isinstance(cats, backend.xp.ndarray) and isinstance(conts, backend.xp.ndarray)
    np.testing.assert_array_equal(_np(backend, cats), host[["a", "b"]].to_numpy(dtype=np.int64))
    np.testing.assert_array_equal(_np(backend, conts), host[["x", "y"]].to_numpy(dtype=np.float32))
    assert cats.flags.c_contiguous and tuple(cats.shape) == (50, 2)
    column = backend.column_values(frame["a"], "float32")
    assert isinstance(column, backend.xp.ndarray) and column.dtype == np.float32
    np.testing.assert_array_equal(_np(backend, column), host["a"].to_numpy(np.float32))
    assert tuple(backend.columns_matrix(frame, [], "float32").shape) == (50, 0)
    # Results own their memory: writing to one never shows in the frame or the next result.
    first = backend.columns_matrix(frame, ["a"], "int64")
    first.fill(-1)
    assert _np(backend, backend.columns_matrix(frame, ["a"], "int64")).ravel().tolist() == host["a"].tolist()


def test_list_column_values(backend):
    host = pd.Series([[1, 2], [], None, [3]], dtype=pd.ArrowDtype(pa.list_(pa.int64())), name="tags")
    values, offsets = backend.list_column_values(backend.from_host(host), "float32")
    assert isinstance(values, backend.xp.ndarray) and values.dtype == np.float32
    assert _np(backend, values).tolist() == [1.0, 2.0, 3.0]
    assert _np(backend, offsets).tolist() == [0, 2, 2, 2, 3] and offsets.dtype == np.int64
    with_null = pd.Series([[1, None]], dtype=pd.ArrowDtype(pa.list_(pa.int64())), name="tags")
    with pytest.raises(ValueError, match="list column 'tags' holds null elements"):
        backend.list_column_values(backend.from_host(with_null), "int64")


def test_columns_matrix_across_stacking_blocks():
    # More rows than one stacking block, and not a multiple of it; mixed input dtypes.
    rng = np.random.default_rng(7)
    n = 10_001
    host = pd.DataFrame({"a": rng.integers(0, 10**9, n), "b": rng.integers(-5, 5, n).astype("int8"), "c": rng.integers(0, 3, n).astype("uint32")})
    out = get_backend("pandas").columns_matrix(host, ["c", "a", "b"], "int64")
    np.testing.assert_array_equal(out, np.column_stack([host["c"], host["a"], host["b"]]).astype(np.int64))


def test_columns_matrix_stacks_into_allocated_host_memory():
    backend = get_backend("pandas")
    frame = pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]})
    given = []

    def allocate(shape, dtype):
        given.append(np.full(shape, -1, dtype))
        return given[-1]

    out = backend.columns_matrix(frame, ["a", "b"], "int64", allocate=allocate)
    assert [(a.shape, str(a.dtype)) for a in given] == [((3, 2), "int64")]
    assert out is given[0] and out.tolist() == [[1, 4], [2, 5], [3, 6]]


def test_loader_arrays_reject_nulls_in_integer_output(backend):
    frame = backend.from_host(pd.DataFrame({"c": pd.array([1, None, 3], dtype="Int64"), "f": [1.0, np.nan, 2.0]}))
    for name in ("c", "f"):
        with pytest.raises(ValueError, match=f"column '{name}' has 1 null"):
            backend.columns_matrix(frame, [name], "int64")
        with pytest.raises(ValueError, match=f"column '{name}' has 1 null"):
            backend.column_values(frame[name], "int64")


def test_from_arrow_keeps_plain_numeric_columns_as_views():
    backend = get_backend("pandas")
    table = pa.table({
        "i": pa.array([1, 2, 3], pa.int64()), "f": pa.array([0.5, 1.5, 2.5], pa.float32()),
        "n": pa.array([1, None, 3], pa.int64()), "c": pa.chunked_array([[1, 2], [3]], pa.int32()),
    })
    frame = backend.from_arrow(table, {"i": "int64", "f": "float32", "n": "Int64", "c": "int64"})
    assert np.shares_memory(frame["i"].to_numpy(), table.column("i").chunk(0).to_numpy())
    assert np.shares_memory(frame["f"].to_numpy(), table.column("f").chunk(0).to_numpy())
    assert [str(t) for t in frame.dtypes] == ["int64", "float32", "Int64", "int64"]
    assert frame["n"].isna().tolist() == [False, True, False] and frame["c"].tolist() == [1, 2, 3]
    planned_wider = backend.from_arrow(table.select(["i"]), {"i": "float64"})
    assert str(planned_wider["i"].dtype) == "float64" and planned_wider["i"].tolist() == [1.0, 2.0, 3.0]


def test_from_arrow_nullable_integers_and_strings_equal_pandas_conversion():
    backend = get_backend("pandas")
    # Chunks that are slices, empty, or hold nulls: each value lands in its row.
    values = pa.chunked_array([pa.array([5, None, 7, 8], pa.int64()).slice(1), pa.array([], pa.int64()), [None, 2**40]])
    small = pa.chunked_array([pa.array([1, None], pa.uint8()), pa.array([255], pa.uint8())])
    words = pa.chunked_array([pa.array(["a", None, "日本"], pa.large_string()), pa.array(["", "z"], pa.large_string())])
    frame = backend.from_arrow(pa.table({"n": values, "w": words}), {"n": "Int64", "w": "string"})
    pd.testing.assert_series_equal(frame["n"], pd.Series([None, 7, 8, None, 2**40], dtype="Int64", name="n"))
    pd.testing.assert_series_equal(
        frame["w"], pd.Series(["a", None, "日本", "", "z"], dtype=STRING, name="w")
    )
    unsigned = backend.from_arrow(pa.table({"u": small}), {"u": "UInt8"})["u"]
    pd.testing.assert_series_equal(unsigned, pd.Series([1, None, 255], dtype="UInt8", name="u"))
    # The strings' bytes are not copied.
    held = pa.chunked_array(pa.array(frame["w"].array))
    assert held.chunk(0).buffers()[2].address == words.chunk(0).buffers()[2].address


def test_lists_from_user_functions_are_observed_whatever_the_labels():
    pandas = get_backend("pandas")
    unnamed = pd.Series([["a"], ["b", "c"]])  # a user function may return an unnamed series
    assert unnamed.name is None and pandas.observed_dtype(unnamed) == "list<string>"
    frame = pandas.with_list_columns(pd.DataFrame({0: [[1], [2, 3]], "n": [1, 2]}))
    assert pandas.canonical_dtype(frame[0].dtype) == "list<int64>" and frame[0].tolist()[1] == [2, 3]
    assert frame["n"].tolist() == [1, 2]


@pytest.mark.parametrize(
    "values, source, canonical, expected, expected_canonical",
    [
        ([30.0, 31.0], "float64", "int64", [30, 31], "int64"),  # integral floats: cast
        ([30.0, 30.5], "float64", "int64", [30.0, 30.5], "float64"),  # 30.5 is not 30
        ([30.0, None], "float64", "Int64", [30, None], "Int64"),
        ([30.5, None], "float64", "Int64", [30.5, None], "float64"),
        ([2**40, 1], "int64", "int32", [2**40, 1], "int64"),  # would wrap to 0
        ([300, 1], "int64", "uint8", [300, 1], "int64"),
        ([-1, 1], "int64", "uint64", [-1, 1], "int64"),
        ([2**53 + 1], "int64", "float64", [2**53 + 1], "int64"),  # not exactly a float64
        ([5, 1], "int32", "int64", [5, 1], "int64"),  # widening
        ([5, None], "Int64", "int64", [5, None], "Int64"),  # a null the fitted column never had
        ([0.1, 2.5], "float64", "float32", [np.float32(0.1), 2.5], "float32"),  # rounded to the fitted precision
        ([0, 1], "int64", "bool", [False, True], "bool"),
        ([0, 2], "int64", "bool", [0, 2], "int64"),
        (["7", " 8", None], "string", "Int64", [7, 8, None], "Int64"),
        (["7", "8.5"], "string", "float64", [7.0, 8.5], "float64"),
        ([1, 2], "int64", "string", ["1", "2"], "string"),
    ],
)
def test_conform_column_casts_only_when_no_value_changes(backend, values, source, canonical, expected, expected_canonical):
    series = backend.from_host(pd.Series(values, dtype=get_backend("pandas").engine_dtype(source), name="c"))
    out = backend.conform_column(series, canonical)
    assert backend.canonical_dtype(out.dtype) == backend.canonical_dtype(backend.engine_dtype(expected_canonical))
    got = [None if pd.isna(v) else v for v in _host(backend, out).tolist()]
    assert got == expected


@pytest.mark.parametrize(
    "values, dtype, bad, row",
    [(["12", "abc", None], "string", "abc", 1), (["1", ""], "string", "", 1), ([1, "two"], object, "two", 1)],
)
def test_conform_column_names_a_non_number_in_a_numeric_column(backend, values, dtype, bad, row):
    if dtype is object and backend.name != "pandas":
        pytest.skip("mixed Python objects exist only in pandas frames")
    series = backend.from_host(pd.Series(values, dtype=dtype, name="age"))
    with pytest.raises(ValueError, match=rf"column 'age' holds {bad!r} \(row {row}\), which is not a number.*int64.*pd.to_numeric"):
        backend.conform_column(series, "int64")


def test_sort_rows_is_stable_and_quiet(backend, to_engine):
    """Rows of equal keys keep their order on every engine (pandas sorts one key with
    quicksort unless asked; cuDF sorts stably always and warns when asked by name)."""
    rng = np.random.default_rng(4)
    host = pd.DataFrame({"k": rng.integers(0, 3, 200), "j": rng.integers(0, 2, 200), "pos": np.arange(200)})
    host.loc[rng.random(200) < 0.1, "k"] = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # cuDF's "GPU-accelerated stable is currently not supported"
        ordered = _host(backend, backend.sort_rows(to_engine(host), ["k"]))
        mixed = _host(backend, backend.sort_rows(to_engine(host), ["k", "j"], ascending=[True, False]))
    expected = host.sort_values(["k"], kind="stable", na_position="last")
    assert ordered["pos"].tolist() == expected["pos"].tolist()
    expected = host.sort_values(["k", "j"], ascending=[True, False], kind="stable", na_position="last")
    assert mixed["pos"].tolist() == expected["pos"].tolist()
