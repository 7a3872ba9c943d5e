"""``tabflow.dispatch``: NVTabular's dispatch helpers, checked against plain pandas / NumPy answers.

Tests that take the ``engine`` fixture run once per engine (cuDF skipped without a GPU); the
rest check the pandas engine and the behaviour without cuDF.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import subprocess
import sys

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse

import tabflow as nvt
from tabflow import dispatch, ops
from tabflow._install import pip_install
from tabflow.backends import backend_for, gpu_available
from tabflow.backends._hashing import NULL_HASH, xxh64_bytes
from tabflow.dispatch import ExtData
from tabflow.loader.keys import offsets_key, values_key
from tabflow.schema import ColumnSchema

# pandas' own text dtype (``str`` on pandas 3), what tabflow holds strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")

CUDF_INSTALLED = importlib.util.find_spec("cudf") is not None
needs_no_cudf = pytest.mark.skipif(CUDF_INSTALLED, reason="checks the error given when cuDF is not installed")

# List columns as users meet them: ragged, empty and null lists, nulls inside lists.
TAGS = [[3, 1], [], None, [7], [2, 2, 5]]
NAMES = [["a", None], ["b"], None, [], ["c", "d"]]


def _host(obj):
    return backend_for(obj).to_host(obj)


def _pylist(series):
    """Values as Python objects, a null list as None."""
    return dispatch.to_arrow(_host(series)).to_pylist()


def _tags(to_engine):
    return to_engine(dispatch.make_df({"tags": TAGS}, device="cpu"))["tags"]


# --------------------------------------------------------------------------- the module itself
def test_nvt_dispatch_make_df_is_pandas_on_cpu():
    frame = nvt.dispatch.make_df({"a": [1]}, device="cpu")
    assert isinstance(frame, pd.DataFrame)
    assert frame["a"].tolist() == [1]


def test_public_module_reexports_every_name():
    from tabflow.compat import dispatch as implementation

    assert dispatch.__all__ == implementation.__all__
    for name in dispatch.__all__:
        assert getattr(dispatch, name) is getattr(implementation, name) or name in ("DataFrameType", "SeriesType")


def test_lazy_attributes():
    from tabflow.dispatch import HAS_GPU, DataFrameType, SeriesType

    assert HAS_GPU is gpu_available()
    assert isinstance(pd.DataFrame(), DataFrameType) and isinstance(pd.Series(dtype="int64"), SeriesType)
    assert not isinstance(pd.Series(dtype="int64"), DataFrameType)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        dispatch.nothing_here  # noqa: B018


def test_importing_tabflow_neither_probes_the_gpu_nor_imports_nvtx():
    script = (
        "import sys, tabflow; from tabflow.backends import gpu_unavailable_reason; "
        "print(gpu_unavailable_reason.cache_info().currsize, sorted({'cudf', 'cupy', 'nvtx'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0 []"


def test_ext_data_keeps_nvtabular_values():
    assert {member.name: member.value for member in ExtData} == {
        "DATASET": 0, "ARROW": 1, "CUDF": 2, "PANDAS": 3, "DASK_CUDF": 4, "DASK_PANDAS": 5, "PARQUET": 6, "CSV": 7,
    }


def test_get_lib():
    assert dispatch.get_lib() is (importlib.import_module("cudf") if gpu_available() else pd)


# ------------------------------------------------------------------------------- predicates
@pytest.mark.parametrize(
    "obj, frame, series, cpu",
    [
        (pd.DataFrame({"a": [1]}), True, False, True),
        (pd.Series([1]), False, True, True),
        (np.arange(3), False, False, False),
        ({"a": [1]}, False, False, False),
        (None, False, False, False),
        (dd.from_pandas(pd.DataFrame({"a": [1]}), npartitions=1), False, False, False),
    ],
)
def test_object_predicates(obj, frame, series, cpu):
    assert dispatch.is_dataframe_object(obj) is frame
    assert dispatch.is_series_object(obj) is series
    assert dispatch.is_series_or_dataframe_object(obj) is (frame or series)
    assert dispatch.is_cpu_object(obj) is cpu


def test_object_predicates_on_engine(engine, to_engine):
    frame = to_engine(pd.DataFrame({"a": [1]}))
    assert dispatch.is_dataframe_object(frame) and dispatch.is_series_object(frame["a"])
    assert dispatch.is_cpu_object(frame) is (engine == "pandas")


@pytest.mark.parametrize(
    "obj, expected",
    [
        (pd.Series([[1], [2, 3]]), True),
        (pd.Series([None, [1, 2]]), True),  # a leading null does not hide the lists
        (pd.Series([["a"], []]), True),
        (pd.Series(["a", "b"]), False),
        (pd.Series([1.0, None]), False),
        (pd.Series([], dtype="int64"), False),
        (pd.Series([], dtype=object), False),
        (pd.ArrowDtype(pa.list_(pa.int64())), True),
        (pa.list_(pa.string()), True),
        ("list<float32>", True),
        ("int64", False),
        (np.dtype("O"), False),
        (np.zeros((2, 3)), True),
        (np.zeros(3), False),
        (ColumnSchema("a", dtype="int64", is_list=True), True),
        (ColumnSchema("a", dtype="int64"), False),
        ([1, 2], True),  # other objects: list-like or not, as pandas says
        (5, False),
    ],
)
def test_is_list_dtype(obj, expected):
    assert dispatch.is_list_dtype(obj) is expected


def test_is_list_dtype_of_dask_series():
    ddf = dd.from_pandas(dispatch.make_df({"tags": TAGS, "id": range(5)}, device="cpu"), npartitions=2)
    assert dispatch.is_list_dtype(ddf["tags"]) and not dispatch.is_list_dtype(ddf["id"])


def test_is_list_dtype_on_engine(to_engine):
    frame = to_engine(dispatch.make_df({"tags": TAGS, "names": NAMES, "id": range(5)}, device="cpu"))
    assert dispatch.is_list_dtype(frame["tags"]) and dispatch.is_list_dtype(frame["names"])
    assert not dispatch.is_list_dtype(frame["id"])
    assert dispatch.is_list_dtype(frame["tags"].dtype)


@pytest.mark.parametrize(
    "obj, expected",
    [
        (np.dtype("O"), True),
        (np.dtype("U3"), True),
        (pd.StringDtype(), True),
        (pd.StringDtype("pyarrow"), True),
        (pd.ArrowDtype(pa.string()), True),
        ("str", True),
        (str, True),
        (np.dtype("int64"), False),
        (pd.CategoricalDtype(["a"]), False),  # as pandas says
        (pd.ArrowDtype(pa.list_(pa.string())), False),
        (pd.Series(["a", None]), True),
        (pd.Series([["a"]]), False),  # an object column of lists holds lists, not strings
        (np.array(["a"]), True),
        (5, False),
    ],
)
def test_is_string_dtype(obj, expected):
    assert dispatch.is_string_dtype(obj) is expected


def test_list_val_dtype():
    assert dispatch.list_val_dtype(dispatch.make_df({"t": TAGS}, device="cpu")["t"]) == np.dtype("int64")
    assert dispatch.list_val_dtype(pd.Series([[[0, 1, 2], [3, 4], [5]]])) == np.dtype("int64")
    assert dispatch.is_string_dtype(dispatch.list_val_dtype(pd.Series(NAMES)))
    assert dispatch.list_val_dtype(pd.Series([[1.5], None])) == np.dtype("float64")
    assert dispatch.list_val_dtype(np.zeros((2, 2), dtype="float32")) == np.dtype("float32")
    assert dispatch.list_val_dtype(pd.Series([1, 2])) is None
    assert dispatch.list_val_dtype([1, 2]) is None


def test_merlin_list_dtype_example():
    # merlin's own test: a column assigned into an empty frame, with an arbitrary index.
    df = dispatch.make_df(device="cpu")
    df["vals"] = [[[0, 1, 2], [3, 4], [5]]]
    df = df.set_index(np.array([2]), drop=True)
    assert dispatch.is_list_dtype(df["vals"])
    assert dispatch.list_val_dtype(df["vals"]) == np.dtype(np.int64)


@pytest.mark.parametrize(
    "values, expected",
    [([1.0, None], True), ([1, 2], False), ([], False), (["a", None], True), ([[1], None], True), ([[1], []], False)],
)
def test_series_has_nulls(values, expected, to_engine):
    frame = dispatch.make_df({"x": values} if values else {"x": pd.Series([], dtype="float64")}, device="cpu")
    assert dispatch.series_has_nulls(to_engine(frame)["x"]) is expected
    assert expected is bool(frame["x"].isna().any())


# ------------------------------------------------------------------------------------ hex
HEX = ["ff", "0x10", "0XaB", "7FFFFFFF", None, "", "0"]


def _hex_reference(values):
    return [pd.NA if value is None or value == "" else int(value, 16) for value in values]


def test_hex_to_int_matches_python_int(to_engine):
    series = to_engine(pd.DataFrame({"h": pd.Series(HEX, dtype="string")}))["h"]
    result = _host(dispatch.hex_to_int(series))
    assert result.tolist() == _hex_reference(HEX)
    assert result.name == "h"


def test_hex_to_int_dtypes():
    assert dispatch.hex_to_int(pd.Series(["1", None])).dtype == pd.Int32Dtype()
    wide = dispatch.hex_to_int(pd.Series(["ffffffff", "0x7fffffffffffffff", None]), dtype="int64")
    assert wide.dtype == pd.Int64Dtype()
    assert wide.tolist() == [0xFFFFFFFF, 0x7FFFFFFFFFFFFFFF, pd.NA]
    # Object columns (pandas' default before its string dtype) parse the same way.
    assert dispatch.hex_to_int(pd.Series(["a", None], dtype=object)).tolist() == [10, pd.NA]
    # A column of numbers already is only cast.
    assert dispatch.hex_to_int(pd.Series([1, 2])).tolist() == [1, 2]


def test_hex_to_int_refuses_values_it_cannot_hold_or_read():
    with pytest.raises(ValueError, match="do not fit Int32"):
        dispatch.hex_to_int(pd.Series(["80000000"], name="c1"))
    with pytest.raises(ValueError, match="'xyz' .row 1. is not a hexadecimal number"):
        dispatch.hex_to_int(pd.Series(["1", "xyz"]))


# -------------------------------------------------------------------------------- hashing
def test_hash_series_is_the_hash_of_hash_bucket():
    frame = pd.DataFrame({"s": ["a", "b", None, "a", "é"], "i": [1, 2, 3, None, 5]})
    frame["i"] = frame["i"].astype("Int64")
    buckets = nvt.Workflow(["s", "i"] >> ops.HashBucket(num_buckets=97)).fit_transform(frame)
    for name in ("s", "i"):
        expected = (_host(dispatch.hash_series(frame[name])) % np.uint64(97)).astype("int32")
        np.testing.assert_array_equal(buckets[name].to_numpy(), expected)


def test_hash_series_of_list_column_hashes_the_values_as_hash_bucket():
    frame = dispatch.make_df({"tags": TAGS}, device="cpu")
    buckets = nvt.Workflow(["tags"] >> ops.HashBucket(num_buckets=11)).fit_transform(frame)["tags"]
    flat = list(itertools.chain.from_iterable(buckets.dropna().tolist()))
    assert flat == (dispatch.hash_series(frame["tags"]) % np.uint64(11)).tolist()
    assert len(dispatch.hash_series(frame["tags"])) == sum(len(tags or []) for tags in TAGS)


def test_hash_series_is_the_hash_of_categorify_buckets():
    # Every value out of vocabulary: Categorify puts it in OOV index 2 + hash % num_buckets.
    frame = pd.DataFrame({"c": ["x", "y", "z", "w"]})
    codes = nvt.Workflow(["c"] >> ops.Categorify(num_buckets=7, freq_threshold=10)).fit_transform(frame)["c"]
    np.testing.assert_array_equal(codes.to_numpy(), 2 + (_host(dispatch.hash_series(frame["c"])) % np.uint64(7)).astype("int64"))


def test_hash_series_values_are_xxhash64_and_engine_independent(to_engine):
    host = pd.DataFrame({"s": ["a", "", None], "n": [3.0, 3.5, None]})
    frame = to_engine(host)
    strings = np.asarray(_host(dispatch.hash_series(frame["s"])))
    assert strings.tolist() == [xxh64_bytes(b"a"), xxh64_bytes(b""), int(NULL_HASH)]
    numbers = np.asarray(_host(dispatch.hash_series(frame["n"])))
    # An integral float hashes as its integer, whatever the column's dtype.
    assert numbers[0] == np.asarray(_host(dispatch.hash_series(pd.Series([3]))))[0]
    assert numbers[1] != numbers[0] and numbers[2] == NULL_HASH
    # Unlike pandas' hash_array, the index does not take part.
    assert (dispatch.hash_series(host["s"].set_axis([7, 8, 9])) == dispatch.hash_series(host["s"])).all()


# ------------------------------------------------------------------------- random and arrays
def test_array_helpers_follow_like_df():
    like = pd.DataFrame({"a": [1]})
    # Arrays of the frame's engine (host arrays of the pandas engine's, moved for the comparison).
    np.testing.assert_array_equal(_host(dispatch.arange(4, like_df=like, dtype="int32")), np.arange(4, dtype="int32"))
    np.testing.assert_array_equal(_host(dispatch.array([1, 2], like_df=like.index)), np.array([1, 2]))
    np.testing.assert_array_equal(dispatch.zeros((2, 2), like_df=np.ones(1)), np.zeros((2, 2)))
    assert dispatch.arange(3).shape == (3,)  # the default engine's array
    with pytest.raises(TypeError, match="pass a pandas or cuDF"):
        dispatch.arange(3, like_df="not a frame")


def test_random_state_and_uniform():
    first = dispatch.random_state(11, like_df=pd.Series([1])).randint(0, 10**6, size=5)
    np.testing.assert_array_equal(first, np.random.RandomState(11).randint(0, 10**6, size=5))
    values = np.asarray(_host(dispatch.random_uniform(size=(50,))))
    assert values.shape == (50,) and ((values >= 0) & (values < 1)).all()


def test_global_random_state_and_local_seeds():
    np.random.seed(123)
    seeds = []
    for rank in range(4):
        np.random.seed(123)  # every worker seeds the global generator alike
        seeds.append(dispatch.generate_local_seed(rank, 4))
    expected = np.random.RandomState(123).randint(0, 2**32, size=4, dtype=np.int64).tolist()
    if not gpu_available():
        assert seeds == expected
        np.random.seed(5)
        assert dispatch.get_random_state().randint(1000) == np.random.RandomState(5).randint(1000)
    assert len(set(seeds)) == 4 and all(isinstance(seed, int) and 0 <= seed < 2**32 for seed in seeds)


def test_coo_matrix_matches_scipy():
    data, row, col = np.array([1.0, 2.0, 3.0]), np.array([0, 2, 2]), np.array([1, 0, 3])
    matrix = dispatch.coo_matrix(data, row, col)
    reference = scipy.sparse.coo_matrix((data, (row, col)))
    assert isinstance(matrix, scipy.sparse.coo_matrix)
    np.testing.assert_array_equal(matrix.toarray(), reference.toarray())
    assert dispatch.coo_matrix(data, row, col, shape=(5, 5)).shape == (5, 5)


# ---------------------------------------------------------------------- frames and series
def test_make_df_from_each_kind_of_data():
    frame = pd.DataFrame({"a": [1, 2]}, index=[4, 5])
    assert dispatch.make_df(frame) is frame
    assert dispatch.make_df(frame["a"]).columns.tolist() == ["a"]
    assert dispatch.make_df(np.arange(6).reshape(3, 2), device="cpu").shape == (3, 2)
    assert dispatch.make_df([{"a": 1}, {"a": 2}], device="cpu")["a"].tolist() == [1, 2]
    from_arrow = dispatch.make_df(pa.table({"a": [1, None], "t": [[1], None]}), device="cpu")
    assert from_arrow["a"].dtype == pd.Int64Dtype() and dispatch.is_list_dtype(from_arrow["t"])
    empty = dispatch.make_df(device="cpu")
    assert isinstance(empty, pd.DataFrame) and empty.shape == (0, 0)


def test_make_df_list_and_string_columns():
    frame = dispatch.make_df({"tags": TAGS, "names": NAMES, "s": ["x", None, "y", "", "z"]}, device="cpu")
    assert [dispatch.is_list_dtype(frame[name]) for name in frame.columns] == [True, True, False]
    assert _pylist(frame["tags"]) == TAGS
    assert _pylist(frame["names"]) == NAMES
    assert dispatch.is_string_dtype(frame["s"].dtype)
    assert frame["s"].isna().tolist() == [False, True, False, False, False]


def test_make_df_device_errors():
    with pytest.raises(ValueError, match="device must be one of"):
        dispatch.make_df({"a": [1]}, device="cuda")


@needs_no_cudf
def test_gpu_device_without_cudf_says_what_to_install():
    for call in (
        lambda: dispatch.make_df({"a": [1]}, device="gpu"),
        lambda: dispatch.make_series([1], device="gpu"),
        lambda: dispatch.convert_data(pd.DataFrame({"a": [1]}), cpu=False),
        lambda: dispatch.from_host(pd.DataFrame({"a": [1]})),
        lambda: dispatch.build_cudf_list_column(np.array([1, 2]), np.array([0, 2])),
    ):
        with pytest.raises(ImportError, match=re.escape(pip_install("gpu-cu12"))):
            call()


def test_make_df_moves_between_engines(engine, to_engine):
    frame = to_engine(pd.DataFrame({"a": [1, 2], "t": [[1], [2, 3]]}))
    on_cpu = dispatch.make_df(frame, device="cpu")
    assert isinstance(on_cpu, pd.DataFrame) and on_cpu["t"].tolist() == [[1], [2, 3]]
    if engine == "cudf":
        on_gpu = dispatch.make_df(on_cpu, device="gpu")
        assert backend_for(on_gpu).name == "cudf"
        assert dispatch.make_df({"a": [1]}, device="gpu")["a"].to_arrow().to_pylist() == [1]


def test_make_series():
    series = dispatch.make_series([[1], [], None], device="cpu")
    assert dispatch.is_list_dtype(series.dtype) and _pylist(series) == [[1], [], None]
    same = pd.Series([1, 2], name="x")
    assert dispatch.make_series(same) is same
    assert dispatch.make_series(np.arange(3)).tolist() == [0, 1, 2]
    assert len(dispatch.make_series(device="cpu")) == 0


@pytest.mark.parametrize(
    "dtype, expected",
    [("int8", "Int8"), ("int16", "Int16"), ("int32", "Int32"), ("int64", "Int64"), ("uint8", "UInt8"),
     ("uint16", "UInt16"), ("uint32", "UInt32"), ("uint64", "UInt64"), ("float32", "Float32"),
     ("float64", "Float64"), ("bool", "boolean")],
)
def test_nullable_series(dtype, expected):
    series = dispatch.nullable_series([None], pd.DataFrame(), np.dtype(dtype))
    pd.testing.assert_series_equal(series, pd.Series([pd.NA], dtype=expected))


def test_add_to_series():
    series = pd.Series([5, 6], index=[10, 11])
    assert dispatch.add_to_series(series, [0]).tolist() == [0, 5, 6]
    after = dispatch.add_to_series(series, [7, 8], prepend=False)
    pd.testing.assert_series_equal(after, pd.concat([series, pd.Series([7, 8])]))


def test_concat():
    frames = [pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [2]})]
    pd.testing.assert_frame_equal(dispatch.concat(frames), pd.concat(frames))
    pd.testing.assert_frame_equal(dispatch.concat(frames, axis=1), pd.concat(frames, axis=1))
    collection = dispatch.concat([dd.from_pandas(frame, npartitions=1) for frame in frames])
    assert isinstance(collection, dd.DataFrame) and collection.compute()["a"].tolist() == [1, 2]


def test_concat_columns_lines_frames_up_by_position(to_engine):
    # merlin's own test: frames of different lengths and a list column.
    left = to_engine(dispatch.make_df({"a": [1, 2], "b": [[3], [4, 5]]}, device="cpu"))
    right = to_engine(dispatch.make_df({"c": [3, 4, 5]}, device="cpu").set_axis([7, 8, 9]))
    result = _host(dispatch.concat_columns([left, right]))
    assert result.columns.tolist() == ["a", "b", "c"]
    assert result["c"].tolist() == [3, 4, 5] and result["a"].isna().tolist() == [False, False, True]
    assert result.index.tolist() == [0, 1, 2]


def test_concat_columns_single_frames_and_mappings():
    frame = pd.DataFrame({"a": [1]}, index=[9])
    assert dispatch.concat_columns([frame]) is frame
    assert dispatch.concat_columns([{"a": 1, "b": 2}, {"b": 3}]) == {"a": 1, "b": 3}
    with pytest.raises(TypeError, match="frames or mappings"):
        dispatch.concat_columns([[1], [2]])


# ---------------------------------------------------------------------------- list columns
def _explode_reference(values, name):
    """Row i's element j in column name_j, as pandas builds a frame from lists."""
    rows = [[] if value is None else value for value in values]
    width = max(map(len, rows))
    return pd.DataFrame([row + [None] * (width - len(row)) for row in rows], columns=[f"{name}_{i}" for i in range(width)])


def test_columnwise_explode_matches_pandas(to_engine):
    series = _tags(to_engine)
    result = _host(dispatch.columnwise_explode(series))
    reference = _explode_reference(TAGS, "tags")
    assert result.columns.tolist() == reference.columns.tolist() == ["tags_0", "tags_1", "tags_2"]
    for name in reference.columns:
        expected = [None if pd.isna(value) else int(value) for value in reference[name]]
        assert [None if pd.isna(value) else value for value in result[name]] == expected
    # Gaps in integer columns are nulls of a masked dtype, not floats.
    assert result["tags_2"].dtype == pd.Int64Dtype()


def test_columnwise_explode_keeps_the_index_and_strings():
    series = dispatch.make_df({"n": NAMES}, device="cpu")["n"].set_axis([5, 5, 6, 7, 8])
    result = dispatch.columnwise_explode(series)
    assert result.index.tolist() == [5, 5, 6, 7, 8]
    index = pd.Index([5, 5, 6, 7, 8])
    pd.testing.assert_series_equal(result["n_0"], pd.Series(["a", "b", None, None, "c"], index=index, name="n_0", dtype=STRING))
    pd.testing.assert_series_equal(result["n_1"], pd.Series([None, None, None, None, "d"], index=index, name="n_1", dtype=STRING))


def test_columnwise_explode_of_lists_of_lists(to_engine):
    nested = to_engine(dispatch.make_df({"n": [[[1], [2, 3]], None, [[4]]]}, device="cpu"))["n"]
    result = _host(dispatch.columnwise_explode(nested))
    assert dispatch.is_list_dtype(result["n_0"]) and dispatch.is_list_dtype(result["n_1"])
    assert _pylist(result["n_0"]) == [[1], None, [4]] and _pylist(result["n_1"]) == [[2, 3], None, None]


def test_columnwise_explode_of_empty_lists_and_empty_series():
    assert dispatch.columnwise_explode(pd.Series([[], None], name="e")).shape == (2, 0)
    empty = dispatch.make_df({"e": pd.Series([], dtype=pd.ArrowDtype(pa.list_(pa.int64())))}, device="cpu")["e"]
    assert dispatch.columnwise_explode(empty).shape == (0, 0)


def test_dataframe_columnwise_explode(to_engine):
    frame = to_engine(dispatch.make_df({"tags": TAGS, "id": range(5), "names": NAMES}, device="cpu"))
    result = _host(dispatch.dataframe_columnwise_explode(frame))
    assert result.columns.tolist() == ["id", "tags_0", "tags_1", "tags_2", "names_0", "names_1"]
    assert result["id"].tolist() == list(range(5))
    assert result["names_1"].tolist()[-1] == "d"


def test_flatten_list_column_values_matches_itertools(to_engine):
    result = _host(dispatch.flatten_list_column_values(_tags(to_engine)))
    assert result.tolist() == list(itertools.chain.from_iterable(tags or [] for tags in TAGS))
    names = dispatch.flatten_list_column_values(dispatch.make_df({"n": NAMES}, device="cpu")["n"])
    # nulls inside lists are kept
    pd.testing.assert_series_equal(names.reset_index(drop=True), pd.Series(["a", None, "b", "c", "d"], name=names.name, dtype=STRING))


def test_flatten_list_column_values_of_nested_lists_arrays_and_scalars():
    nested = pd.Series([[[1], [2, 3]], None, [[]], [[4]]])
    assert dispatch.flatten_list_column_values(nested).tolist() == [1, 2, 3, 4]
    np.testing.assert_array_equal(dispatch.flatten_list_column_values(np.arange(4).reshape(2, 2)), np.arange(4))
    scalars = pd.Series([1, 2])
    assert dispatch.flatten_list_column_values(scalars) is scalars


def test_flatten_list_column():
    frame = dispatch.flatten_list_column(dispatch.make_df({"tags": TAGS}, device="cpu")["tags"])
    assert frame.columns.tolist() == ["tags"] and frame["tags"].tolist() == [3, 1, 7, 2, 2, 5]


def test_pull_apart_list(to_engine):
    values, offsets = dispatch.pull_apart_list(_tags(to_engine))
    lengths = [len(tags or []) for tags in TAGS]
    assert _host(offsets).tolist() == np.concatenate([[0], np.cumsum(lengths)]).tolist()
    assert _host(values).tolist() == [3, 1, 7, 2, 2, 5]
    on_cpu = dispatch.pull_apart_list(_tags(to_engine), device="cpu")
    assert all(isinstance(part, pd.Series) for part in on_cpu)


def test_pull_apart_nested_lists_gives_offsets_into_the_innermost_values(to_engine):
    nested = to_engine(dispatch.make_df({"n": [[[1], [2, 3]], None, [[4]], [[]]]}, device="cpu"))["n"]
    values, offsets = dispatch.pull_apart_list(nested)
    assert _host(values).tolist() == [1, 2, 3, 4] and _host(offsets).tolist() == [0, 3, 3, 4, 4]
    assert len(dispatch.hash_series(nested)) == 4


def test_encode_list_column_restores_the_rows(to_engine):
    original = _tags(to_engine)
    flat = dispatch.flatten_list_column_values(original)
    encoded = _host(dispatch.encode_list_column(original, flat * 10, dtype="int32"))
    assert encoded.tolist() == [[30, 10], [], [], [70], [20, 20, 50]]  # a null list comes back empty
    assert encoded.name == "tags"
    assert dispatch.list_val_dtype(encoded) == np.dtype("int32")


def test_encode_list_column_takes_arrays_and_keeps_the_index():
    original = pd.Series([["a", "b"], ["c"]], index=[3, 9], name="x")
    encoded = dispatch.encode_list_column(original, np.array([1, 2, 3]))
    assert encoded.index.tolist() == [3, 9] and encoded.tolist() == [[1, 2], [3]]


def test_build_list_columns_match_slicing():
    elements, lengths = pd.Series([1.5, 2.5, 3.5, 4.5]), pd.Series([1, 0, 3])
    expected = [elements.iloc[start:stop].tolist() for start, stop in itertools.pairwise(np.concatenate([[0], np.cumsum(lengths)]))]
    assert dispatch.build_pandas_list_column(elements, lengths).tolist() == expected
    assert dispatch.create_multihot_col(np.array([0, 1, 1, 4]), elements).tolist() == expected
    assert dispatch.create_multihot_col(pd.Series([0, 2]), pd.Series(["x", None])).tolist() == [["x", None]]


def test_list_helpers_on_engine(to_engine):
    elements = to_engine(pd.DataFrame({"v": [1, 2, 3]}))["v"]
    column = dispatch.create_multihot_col(np.array([0, 2, 3]), elements)
    assert backend_for(column).name == backend_for(elements).name
    assert _host(column).tolist() == [[1, 2], [3]]


# ---------------------------------------------------------------------- moving and formats
def test_to_arrow():
    frame = dispatch.make_df({"a": [1, None], "t": [[1], None]}, device="cpu").set_axis([5, 6])
    table = dispatch.to_arrow(frame)
    assert table.column_names == ["a", "t"] and table.column("t").to_pylist() == [[1], None]
    array = dispatch.to_arrow(frame["a"])
    assert isinstance(array, pa.Array) and array.to_pylist() == [1.0, None]
    assert dispatch.to_arrow(table) is table


def test_to_host_and_from_host_on_cpu_data():
    frame = pd.DataFrame({"a": [1]})
    assert dispatch.to_host(frame) is frame
    table = pa.table({"a": [1]})
    assert dispatch.to_host(table) is table
    assert dispatch.from_host([1, 2]) == [1, 2]


def test_to_host_and_from_host_round_trip(engine, to_engine):
    if engine == "pandas":
        pytest.skip("moves between host and GPU")
    frame = to_engine(pd.DataFrame({"a": [1, 2], "t": [[1], [2, 3]]}))
    cached = dispatch.to_host(frame)
    assert isinstance(cached, pa.Table)
    back = dispatch.from_host(cached)
    assert backend_for(back).name == "cudf" and _host(back)["t"].tolist() == [[1], [2, 3]]


def test_convert_data():
    table = pa.table({"a": [1, None], "s": ["x", "y"]})
    frame = dispatch.convert_data(table)
    assert isinstance(frame, pd.DataFrame) and frame["a"].dtype == pd.Int64Dtype()
    collection = dispatch.convert_data(frame, to_collection=True, npartitions=2)
    assert isinstance(collection, dd.DataFrame) and collection.npartitions == 2
    assert dispatch.convert_data(collection) is collection
    assert dispatch.convert_data(frame) is frame


def test_detect_format(tmp_path):
    frame = pd.DataFrame({"a": [1, 2]})
    assert dispatch.detect_format(frame) is ExtData.PANDAS
    assert dispatch.detect_format(pa.Table.from_pandas(frame)) is ExtData.ARROW
    assert dispatch.detect_format(dd.from_pandas(frame, npartitions=1)) is ExtData.DASK_PANDAS
    assert dispatch.detect_format(nvt.Dataset(frame, cpu=True)) is ExtData.DATASET
    assert dispatch.detect_format(str(tmp_path / "x.parquet")) is ExtData.PARQUET
    assert dispatch.detect_format(["a.pq", "b.pq"]) is ExtData.PARQUET
    assert dispatch.detect_format(tmp_path / "x.csv") is ExtData.CSV
    with pytest.raises(ValueError, match="not recognized"):
        dispatch.detect_format("data.json")


def test_detect_format_on_engine(engine, to_engine):
    frame = to_engine(pd.DataFrame({"a": [1]}))
    assert dispatch.detect_format(frame) is (ExtData.PANDAS if engine == "pandas" else ExtData.CUDF)


# ------------------------------------------------------------------------------------ files
@pytest.fixture
def parquet_file(tmp_path):
    path = tmp_path / "part.parquet"
    pq.write_table(pa.table({"a": [1, None, 3], "t": [[1], None, [2, 3]], "s": ["x", "y", None]}), path, row_group_size=2)
    return str(path)


def test_read_dispatch_reads_a_frame_the_tabflow_way(parquet_file):
    reader = dispatch.read_dispatch(cpu=True)
    frame = reader(parquet_file)
    reference = pq.read_table(parquet_file).to_pylist()
    assert frame["a"].dtype == pd.Int64Dtype() and dispatch.is_list_dtype(frame["t"])
    assert _pylist(frame["t"]) == [row["t"] for row in reference]
    assert reader(parquet_file, columns=["s"]).columns.tolist() == ["s"]
    assert dispatch.read_parquet_dispatch(frame)(parquet_file).shape == (3, 3)


@pytest.mark.parametrize(
    "index",
    [pd.RangeIndex(3, 7), pd.Index([10, 4, 7, 2], name="code"), pd.Index(["w", "x", "y", "z"])],
    ids=["range", "named", "strings"],
)
def test_read_dispatch_keeps_the_stored_index_as_pandas_does(tmp_path, index):
    # merlin's read_dispatch was pd.read_parquet: Categorify's unique files keep the encoded
    # index (3, 4, ...) as a stored RangeIndex, and NVTabular scripts read it back.
    path = str(tmp_path / "t.parquet")
    frame = pd.DataFrame({"v": ["a", None, "c", "d"], "n": pd.array([1, None, 3, 4], dtype="Int64")}, index=index)
    frame.to_parquet(path, index=None)
    frame = dispatch.read_dispatch(cpu=True)(path)
    reference = pd.read_parquet(path)
    # values and name as pandas reads them; strings keep tabflow's string dtype
    assert frame.index.tolist() == reference.index.tolist() and frame.index.name == reference.index.name
    assert frame.columns.tolist() == ["v", "n"]
    assert frame["v"].tolist()[::2] == ["a", "c"] and frame["n"].dtype == pd.Int64Dtype()
    # columns= may leave a named index out of the read: the rows come back with a default index.
    assert dispatch.read_dispatch(cpu=True)(path, columns=["v"])["v"].tolist()[2] == "c"


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # raised inside dask's parquet reader
def test_read_dispatch_collections_and_csv(parquet_file, tmp_path):
    collection = dispatch.read_dispatch(pd.DataFrame(), collection=True)(parquet_file)
    assert isinstance(collection, dd.DataFrame) and len(collection.compute()) == 3
    csv_path = tmp_path / "t.csv"
    pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}).to_csv(csv_path, index=False)
    assert dispatch.read_dispatch(cpu=True, fmt="csv")(csv_path)["b"].tolist() == ["x", "y"]
    csv_collection = dispatch.read_dispatch(cpu=True, collection=True, fmt="csv")(str(csv_path))
    assert csv_collection.compute()["a"].tolist() == [1, 2]
    with pytest.raises(ValueError, match="fmt must be"):
        dispatch.read_dispatch(cpu=True, fmt="orc")


def test_read_parquet_metadata_matches_pyarrow(parquet_file):
    metadata = pq.read_metadata(parquet_file)
    assert dispatch.read_parquet_metadata(parquet_file) == (metadata.num_rows, metadata.num_row_groups, ["a", "t", "s"])
    assert dispatch.read_parquet_metadata(parquet_file)[:2] == (3, 2)


def test_parquet_writer_dispatch(tmp_path):
    assert dispatch.parquet_writer_dispatch(pd.DataFrame()) is dispatch.ParquetFrameWriter
    frame = dispatch.make_df({"a": [1, 2], "t": [[1], []], "s": ["x", None]}, device="cpu")
    path = tmp_path / "out.parquet"
    with dispatch.parquet_writer_dispatch(frame, str(path), compression="snappy") as writer:
        writer.write_table(frame)
        writer.write_table(dispatch.to_arrow(frame))
    written = pq.read_table(path)
    assert written.num_rows == 4 and written.column("t").to_pylist() == [[1], [], [1], []]
    assert written.column("s").to_pylist() == ["x", None, "x", None]


# --------------------------------------------------------------------------- dicts of arrays
def test_dict_from_df_and_back(to_engine):
    frame = to_engine(dispatch.make_df({"id": [1, 2, 3], "score": [0.5, np.nan, 1.5], "tags": [[1], [], [2, 3]]}, device="cpu"))
    arrays = dispatch.dict_from_df(frame)
    assert list(arrays) == ["id", "score", values_key("tags"), offsets_key("tags")]  # the loader's keys
    host = {name: np.asarray(_host(array)) for name, array in arrays.items()}
    np.testing.assert_array_equal(host["id"], [1, 2, 3])
    np.testing.assert_array_equal(host["score"], [0.5, np.nan, 1.5])
    np.testing.assert_array_equal(host[values_key("tags")], [1, 2, 3])
    np.testing.assert_array_equal(host[offsets_key("tags")], [0, 1, 1, 3])
    back = _host(dispatch.df_from_dict(arrays))
    assert back.columns.tolist() == ["id", "score", "tags"]
    assert back["tags"].tolist() == [[1], [], [2, 3]]


def test_df_from_dict_forms():
    frame = dispatch.df_from_dict({
        "fixed": np.arange(6).reshape(3, 2),
        "pair": (np.array(["a", "b"]), np.array([0, 0, 2, 2])),
        "plain": [1.0, 2.0, 3.0],
    })
    assert frame["fixed"].tolist() == [[0, 1], [2, 3], [4, 5]]
    assert frame["pair"].tolist() == [[], ["a", "b"], []]
    assert frame["plain"].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(KeyError, match="needs both x__values and x__offsets"):
        dispatch.df_from_dict({"x__values": np.arange(2)})


def test_dict_from_df_refuses_what_arrays_cannot_hold():
    with pytest.raises(TypeError, match="holds strings"):
        dispatch.dict_from_df(pd.DataFrame({"s": ["a"]}))
    with pytest.raises(ValueError, match="null"):
        dispatch.dict_from_df(pd.DataFrame({"i": pd.array([1, None], dtype="Int64")}))


# ----------------------------------------------------------------------------------- nvtx
def test_annotate_without_nvtx_changes_nothing(monkeypatch):
    from tabflow.compat import dispatch as implementation

    monkeypatch.setattr(implementation, "_nvtx", lambda: None)

    def add(a, b):
        return a + b

    assert dispatch.annotate("add", color="green", domain="tabflow")(add) is add
    assert dispatch.annotate(add) is add
    with dispatch.annotate("block"):
        assert add(1, 2) == 3


def test_annotate_uses_nvtx_when_installed(monkeypatch):
    from tabflow.compat import dispatch as implementation

    calls = []

    class FakeNvtx:
        @staticmethod
        def annotate(*args, **kwargs):
            calls.append((args, kwargs))
            return lambda function: function

    monkeypatch.setattr(implementation, "_nvtx", lambda: FakeNvtx)

    @dispatch.annotate("fit", color="darkgreen")
    def fit():
        return 1

    assert fit() == 1 and calls == [(("fit",), {"color": "darkgreen"})]
