"""Every engine-facing path on each engine, against the pandas engine's own result.

The readers and the parquet writer on the engine, Categorify in each mode, datasets merged
across engines, pandas collections moved to the engine (extension dtypes inside cuDF frames),
list columns of another element type read from files, and ``TensorTable.from_df``. Each test
takes the ``engine`` parameter (pandas, the strict engine, cuDF where a GPU is); the pandas
engine's paths themselves are checked against plain pandas in their own modules.
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.backends import backend_for
from tabflow.table import TensorTable

N = 240
LIST = pd.ArrowDtype(pa.list_(pa.int64()))


@pytest.fixture
def frame():
    rng = np.random.default_rng(11)
    words = rng.choice(["apple", "fig", "kiwi", "pear", "plum"], N, p=[0.4, 0.3, 0.15, 0.1, 0.05]).astype(object)
    words[rng.random(N) < 0.05] = None
    counts = pd.array(rng.integers(0, 50, N), dtype="Int64")
    counts[rng.random(N) < 0.1] = pd.NA
    return pd.DataFrame({
        "rid": np.arange(N),
        "word": pd.array(words, dtype="string"),
        "shop": rng.integers(0, 7, N),
        "clicks": counts,
        "price": np.where(rng.random(N) < 0.05, np.nan, rng.gamma(2.0, 3.0, N)),
        "tags": pd.Series([[int(t) for t in rng.integers(1, 9, k)] if k < 4 else None for k in rng.integers(0, 5, N)], dtype=LIST),
    })


def _host(data) -> pd.DataFrame:
    data = data.compute() if hasattr(data, "compute") else data
    return backend_for(data).to_host(data)


def _cell(value):
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_cell(v) for v in value]
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


def assert_same_rows(got, expected, key="rid"):
    """The same rows (matched by ``key``), columns and values; floats to 1e-6."""
    got, expected = _host(got), _host(expected)
    assert list(got.columns) == list(expected.columns)
    got = got.sort_values(key).reset_index(drop=True)
    expected = expected.sort_values(key).reset_index(drop=True)
    for name in expected.columns:
        left, right = got[name], expected[name]
        if pd.api.types.is_float_dtype(right.dtype) and not isinstance(right.dtype, pd.ArrowDtype):
            np.testing.assert_allclose(left.to_numpy("float64", na_value=np.nan), right.to_numpy("float64", na_value=np.nan),
                                       rtol=1e-6, equal_nan=True, err_msg=name)
        else:
            assert [_cell(v) for v in left] == [_cell(v) for v in right], name


# ------------------------------------------------------------------------------ Categorify
CATEGORIFY_MODES = {
    "plain": (["word", "shop", "clicks"], {}),
    "freq_threshold": (["word", "shop"], {"freq_threshold": 10}),
    "num_buckets": (["word", "clicks"], {"num_buckets": 3, "freq_threshold": 15}),
    "max_size": (["word", "shop"], {"max_size": 3}),
    "dtype": (["word"], {"dtype": "int32"}),
    "combo": ([["word", "shop"]], {"encode_type": "combo"}),
    "joint": ([["shop", "tags"]], {"encode_type": "joint"}),
    "lists": (["tags"], {}),
    "given vocabularies": (["word"], {"vocabs": {"word": ["pear", "apple", "cherry"]}}),
    "split_out": (["word"], {"split_out": 2}),
}


@pytest.mark.parametrize("mode", sorted(CATEGORIFY_MODES))
def test_categorify_modes_match_the_pandas_engine(frame, engine, to_engine, mode, tmp_path):
    columns, options = CATEGORIFY_MODES[mode]
    if mode == "split_out":
        options = {**options, "out_path": str(tmp_path / engine)}

    def run(data):
        node = columns >> ops.Categorify(**options)
        workflow = nvt.Workflow(node + ["rid"])
        out = workflow.fit_transform(nvt.Dataset(data, npartitions=3))
        return workflow, out

    workflow, out = run(to_engine(frame))
    reference_workflow, reference = run(frame)
    assert_same_rows(out, reference)
    assert workflow.output_schema == reference_workflow.output_schema
    assert ops.get_embedding_sizes(workflow) == ops.get_embedding_sizes(reference_workflow)


# ------------------------------------------------------------------------ readers, writer
def _workflow():
    cats = ["word", "shop"] >> ops.Categorify()
    conts = ["price", "clicks"] >> ops.FillMissing(0.5) >> ops.LogOp() >> ops.Normalize()
    return nvt.Workflow(cats + conts + (["tags"] >> ops.Categorify()) + ["rid"])


def test_parquet_read_transformed_and_written_by_the_engine(frame, engine, tmp_path):
    """The engine's reader and parquet writer (cuDF's chunked GPU writer): the files read
    back as the pandas engine's."""
    for k in range(3):
        frame.iloc[k * 80:(k + 1) * 80].to_parquet(tmp_path / f"in_{k}.parquet", index=False)
    outputs = {}
    for side in {"pandas", engine}:
        dataset = nvt.Dataset(str(tmp_path), engine="parquet", cpu=side == "pandas")
        assert dataset.engine == ("pandas" if side == "pandas" else engine)
        workflow = _workflow()
        workflow.fit_transform(dataset).to_parquet(str(tmp_path / f"out-{side}"), output_files=2)
        outputs[side] = pd.concat([pq.read_table(tmp_path / f"out-{side}" / name).to_pandas() for name in ("part_0.parquet", "part_1.parquet")])
    assert_same_rows(outputs[engine], outputs["pandas"])
    read_back = nvt.Dataset(str(tmp_path / f"out-{engine}"), cpu=engine == "pandas")
    assert read_back.schema.column_names == _workflow().fit_schema(nvt.Dataset(str(tmp_path), engine="parquet").schema).output_schema.column_names
    assert_same_rows(read_back.compute(), outputs["pandas"])


def test_csv_read_by_the_engine(frame, engine, tmp_path):
    text = frame.drop(columns=["tags"])
    for k in range(2):
        text.iloc[k * 120:(k + 1) * 120].to_csv(tmp_path / f"part_{k}.csv", index=False)
    ours = nvt.Dataset(str(tmp_path), engine="csv", cpu=engine == "pandas")
    reference = nvt.Dataset(str(tmp_path), engine="csv", cpu=True)
    assert ours.schema.dtypes == reference.schema.dtypes
    assert_same_rows(ours.compute(), reference.compute())
    workflow, reference_workflow = nvt.Workflow(["word"] >> ops.Categorify()), nvt.Workflow(["word"] >> ops.Categorify())
    assert_same_rows(workflow.fit_transform(ours).compute().assign(rid=np.arange(N)),
                     reference_workflow.fit_transform(reference).compute().assign(rid=np.arange(N)))


def test_orc_read_by_the_engine(frame, engine, tmp_path):
    table = pa.Table.from_pandas(frame, preserve_index=False)
    orc.write_table(table.slice(0, 150), tmp_path / "a.orc", stripe_size=1024)
    orc.write_table(table.slice(150), tmp_path / "b.orc")
    ours = nvt.Dataset(str(tmp_path), engine="orc", cpu=engine == "pandas")
    reference = nvt.Dataset(str(tmp_path), engine="orc", cpu=True)
    assert ours.schema.dtypes == reference.schema.dtypes
    assert_same_rows(ours.compute(), reference.compute())


def test_lists_of_another_element_type_are_cast_when_read(frame, engine, tmp_path):
    """Files that hold one list column as list<int32> and list<int64>: planned list<int64>,
    every partition holds it (cuDF refuses list casts, so the engine casts through Arrow)."""
    narrow = pa.Table.from_pandas(frame.iloc[:120][["rid", "tags"]], preserve_index=False)
    narrow = narrow.cast(pa.schema([("rid", pa.int64()), ("tags", pa.list_(pa.int32()))]))
    pq.write_table(narrow, tmp_path / "part_0.parquet")
    frame.iloc[120:][["rid", "tags"]].to_parquet(tmp_path / "part_1.parquet", index=False)
    dataset = nvt.Dataset(str(tmp_path), cpu=engine == "pandas")
    assert dataset.schema["tags"].dtype == "list<int64>"
    backend = dataset.backend
    parts = list(dataset.to_iter(arrow_lists=True))
    assert [backend.canonical_dtype(part["tags"].dtype) for part in parts] == ["list<int64>", "list<int64>"]
    assert_same_rows(dataset.compute(), frame[["rid", "tags"]])


# --------------------------------------------------- frames and collections of pandas dtypes
def test_pandas_collection_moved_to_the_engine(frame, engine):
    """A dask collection of pandas frames given to the engine (``to_backend``): cuDF keeps
    pandas' extension dtypes (Arrow lists, Int64) in its frames; the dataset holds the
    engine's own, and list ops, Categorify and the loader's list arrays work on them."""
    collection = dd.from_pandas(frame, npartitions=3)
    dataset = nvt.Dataset(collection, cpu=engine == "pandas")
    assert dataset.schema["tags"].dtype == "list<int64>" and dataset.schema["clicks"].dtype == "Int64"
    backend = dataset.backend
    part = dataset.to_ddf(arrow_lists=True).partitions[0].compute()
    assert backend.is_list_dtype(part["tags"].dtype)
    node = (["tags", "clicks"] >> ops.LogOp() >> ops.Normalize()) + (["word"] >> ops.Categorify()) + ["rid"]
    out = nvt.Workflow(node).fit_transform(dataset).compute()
    reference = nvt.Workflow((["tags", "clicks"] >> ops.LogOp() >> ops.Normalize()) + (["word"] >> ops.Categorify()) + ["rid"])
    assert_same_rows(out, reference.fit_transform(nvt.Dataset(frame, npartitions=3)).compute())
    # What the loaders read of a list column (cuDF: the list dtype's element_type).
    values, offsets = backend.list_column_values(part["tags"], "int64")
    rows = _host(part)["tags"]
    assert backend.to_host(values).tolist() == [v for row in rows for v in (_cell(row) or [])]
    assert backend.to_host(offsets).tolist() == np.cumsum([0] + [len(_cell(row) or []) for row in rows]).tolist()


def test_datasets_merged_across_engines(frame, engine, to_engine):
    """The right side is moved to the left's engine, pandas' extension dtypes included."""
    right = frame[["rid", "tags", "clicks"]].iloc[::2]
    left = nvt.Dataset(to_engine(frame[["rid", "word", "price"]]), npartitions=2)
    merged = nvt.Dataset.merge(left, nvt.Dataset(right, npartitions=2, cpu=True), on="rid", how="left")
    assert merged.engine == left.engine
    # Planned from both sides: the unmatched rows' nulls are said by the dtype on cuDF too.
    assert merged.schema["clicks"].dtype == "Int64" and merged.schema["tags"].dtype == "list<int64>"
    reference = frame[["rid", "word", "price"]].merge(right, on="rid", how="left")
    assert_same_rows(merged.compute(), reference)
    assert merged.backend.is_list_dtype(merged.to_ddf(arrow_lists=True).partitions[0].compute()["tags"].dtype)
    out = nvt.Workflow((["tags"] >> ops.Categorify()) + (["clicks"] >> ops.FillMissing(0.5)) + ["rid"]).fit_transform(merged)
    expected = nvt.Workflow((["tags"] >> ops.Categorify()) + (["clicks"] >> ops.FillMissing(0.5)) + ["rid"]).fit_transform(
        nvt.Dataset(reference, npartitions=2))
    assert_same_rows(out.compute(), expected.compute())


# ------------------------------------------------------------------------- TensorTable
def test_tensor_table_from_the_engines_frame(engine, to_engine):
    host = pd.DataFrame({
        "a": np.arange(4, dtype="int32"),
        "x": [0.5, 1.5, 2.5, 3.5],
        "l": pd.Series([[1, 2], [], [3], [4, 5, 6]], dtype=LIST),
        "e": pd.Series([[[1.0, 2.0]], [], [[3.0, 4.0], [5.0, 6.0]], [[7.0, 8.0]]], dtype=pd.ArrowDtype(pa.list_(pa.list_(pa.float64())))),
    })
    table = TensorTable.from_df(to_engine(host))
    xp = np if engine == "pandas" else __import__("cupy")
    assert all(isinstance(column.values, xp.ndarray) for column in table.values())
    get = (lambda array: array) if engine == "pandas" else (lambda array: array.get())
    assert get(table["a"].values).tolist() == [0, 1, 2, 3] and get(table["a"].values).dtype == np.int32
    assert get(table["l"].values).tolist() == [1, 2, 3, 4, 5, 6] and get(table["l"].offsets).tolist() == [0, 2, 2, 3, 6]
    assert get(table["e"].values).shape == (4, 2) and get(table["e"].offsets).tolist() == [0, 1, 1, 3, 4]
    with pytest.raises(ValueError, match="'n'"):
        TensorTable.from_df(to_engine(pd.DataFrame({"n": pd.array([1, None], dtype="Int64")})))
