"""Frames handed to users (Dataset.compute/head/tail, the data generators) can be edited in place.

Readers keep numeric columns as read-only views of Arrow buffers (the loader reads every
partition each epoch); a user who edits a computed frame must not meet "assignment destination
is read-only", nor edit several rows with one label, nor change the data it came from.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.datasets import generate_criteo
from tabflow.tools import data_gen


@pytest.fixture
def source(rng):
    n = 1200
    frame = pd.DataFrame(
        {
            "i": rng.integers(-5, 5, n),
            "f": rng.normal(size=n),
            "n": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(0, 9, n)), dtype="Int64"),
            "s": pd.Series(rng.choice(["a", "b", None], n), dtype="str"),
            "l": pd.Series([[int(v), 1] for v in rng.integers(0, 4, n)], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
        }
    )
    frame.loc[rng.random(n) < 0.1, "f"] = np.nan
    return frame


@pytest.fixture
def files(source, tmp_path):
    paths = []
    for k in range(3):
        path = tmp_path / f"part_{k}.parquet"
        source.iloc[k * 400 : (k + 1) * 400].to_parquet(path, index=False)
        paths.append(str(path))
    return paths


def _edits_one_row_of_every_column(frame: pd.DataFrame) -> None:
    before = frame.copy(deep=True)
    middle = len(frame) // 2
    untouched = np.ones(len(frame), dtype=bool)
    untouched[[0, middle]] = False
    for position, column in enumerate(frame.columns):
        if isinstance(frame[column].dtype, np.dtype):
            assert np.asarray(frame[column].array).flags.writeable, column
        if isinstance(frame[column].dtype, pd.ArrowDtype) and pa.types.is_list(frame[column].dtype.pyarrow_dtype):
            continue  # pandas cannot set one list cell of an Arrow list column, whatever made the frame
        value = frame[column].dropna().iloc[-1]
        # One cell each (.at/.iat take a row's array as one value on every pandas version).
        frame.at[frame.index[middle], column] = value
        frame.iat[0, position] = value
        same = np.array_equal if isinstance(value, np.ndarray) else (lambda a, b: a == b)  # a list column's rows
        assert same(frame[column].iloc[0], value) and same(frame[column].iloc[middle], value), column
        pd.testing.assert_series_equal(frame[column][untouched], before[column][untouched])
    number = frame.select_dtypes("number").columns[0]
    values = frame[number].to_numpy(copy=True)
    values[0] = 1  # a copy is the user's to write; copy-on-write hands out views read-only
    frame[number] = frame[number] * 2  # whole-column assignment


def test_a_computed_file_dataset_is_writable_with_one_label_per_row(files, source):
    dataset = nvt.Dataset(files)
    frame = dataset.compute()
    assert frame.index.tolist() == list(range(len(source)))
    _edits_one_row_of_every_column(frame)
    pd.testing.assert_frame_equal(dataset.compute()[["i", "f"]], source[["i", "f"]])  # the files are untouched


def test_a_single_partition_head_and_tail_are_writable(files):
    # Nothing concatenates (copies) the partition's columns here.
    for frame in (nvt.Dataset(files[0]).compute(), nvt.Dataset(files).head(50), nvt.Dataset(files).tail(50)):
        _edits_one_row_of_every_column(frame)


def test_a_computed_transform_is_writable(files):
    workflow = nvt.Workflow((["s"] >> ops.Categorify()) + (["f"] >> ops.FillMissing() >> ops.Normalize()) + ["i", "l"])
    out = workflow.fit_transform(nvt.Dataset(files, part_size=10_000))
    frame = out.compute()
    assert frame.index.is_unique and len(frame) == 1200
    _edits_one_row_of_every_column(frame)


def test_a_computed_in_memory_frame_keeps_its_index_and_the_original_is_untouched(source):
    indexed = source.set_index(pd.Index(np.arange(len(source)) * 10 + 7, name="row_id"))
    frame = nvt.Dataset(indexed, npartitions=3).compute()
    assert frame.index.equals(indexed.index)
    _edits_one_row_of_every_column(frame)
    again = nvt.Dataset(indexed, npartitions=3).compute()
    pd.testing.assert_frame_equal(again[["i", "f", "n"]], indexed[["i", "f", "n"]])


def test_generated_frames_are_writable():
    _edits_one_row_of_every_column(generate_criteo(500, seed=3))
    generator = data_gen.DatasetGen(data_gen.UniformDistro(), seed=0, cpu=True)
    columns = {
        "conts": [data_gen.ContCol("f", None, 0.0, 1.0, per_nan=10), data_gen.ContCol("i", "int32", 0, 100)],
        "cats": [data_gen.CatCol("c", None, 50, per_nan=5), data_gen.CatCol("k", "int64", 20)],
        "labels": [data_gen.LabelCol("y", None, 2)],
    }
    for entries in (False, True):
        _edits_one_row_of_every_column(generator.create_df(300, columns, entries=entries))
    _edits_one_row_of_every_column(generator.create_labels(300, columns["labels"]).assign(f=0.5))
