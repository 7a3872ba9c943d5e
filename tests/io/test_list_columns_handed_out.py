"""List columns as users get them on the pandas engine: pandas' own form (pd.read_parquet).

Ops, the writer and the loaders work on Arrow list columns; every frame handed to a user
(Dataset.to_ddf / compute / head / tail / to_iter, Workflow.transform of frames and dask
DataFrames, an op's transform called on a pandas frame) holds them as ``object`` columns of
one NumPy array per row, as pandas' parquet reader gives them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow import ColumnSelector, ops

LIST_COLUMNS = ["ragged", "holes", "fixed", "words", "nested"]


def _table(rng, start: int, n: int) -> pa.Table:
    ragged = [None if i % 11 == 3 else [int(v) for v in rng.integers(0, 50, i % 5)] for i in range(start, start + n)]
    holes = [[i, None, i + 1] if i % 7 == 0 else [i] for i in range(start, start + n)]
    fixed = [[float(i), float(i) / 2] for i in range(start, start + n)]
    words = [[f"w{i % 3}", None][: 1 + (i % 2)] if i % 9 else [] for i in range(start, start + n)]
    nested = [[[i], [], [i, i + 1]] if i % 2 else [] for i in range(start, start + n)]
    return pa.table({
        "rid": pa.array(range(start, start + n), pa.int64()),
        "ragged": pa.array(ragged, pa.list_(pa.int64())),
        "holes": pa.array(holes, pa.list_(pa.int32())),
        "fixed": pa.array(fixed, pa.list_(pa.float32())),
        "words": pa.array(words, pa.list_(pa.string())),
        "nested": pa.array(nested, pa.list_(pa.list_(pa.int64()))),
    })


@pytest.fixture
def files(tmp_path, rng):
    # Several files, one of them without rows (an empty partition).
    paths = []
    for k, (start, n) in enumerate([(0, 40), (40, 0), (40, 25), (65, 35)]):
        path = tmp_path / f"part_{k}.parquet"
        pq.write_table(_table(rng, start, n), path)
        paths.append(str(path))
    return paths


@pytest.fixture
def reference(files):
    """What pandas itself reads from the same files."""
    return pd.concat([pd.read_parquet(p) for p in files], ignore_index=True)


def _same_frames(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    got, expected = got.reset_index(drop=True), expected.reset_index(drop=True)
    assert list(got.columns) == list(expected.columns)
    for name in LIST_COLUMNS:
        assert got[name].dtype == expected[name].dtype == object, name
        for row, (mine, theirs) in enumerate(zip(got[name], expected[name])):
            if theirs is None:
                assert mine is None, (name, row)
                continue
            assert isinstance(mine, np.ndarray) and mine.dtype == theirs.dtype, (name, row, mine, theirs)
            np.testing.assert_equal(mine.tolist() if mine.dtype == object else mine, theirs.tolist() if theirs.dtype == object else theirs)
    assert got["rid"].tolist() == expected["rid"].tolist()


def test_compute_head_tail_and_to_ddf_match_pandas_read_parquet(files, reference):
    ds = nvt.Dataset(files)
    _same_frames(ds.compute(), reference)
    ddf = ds.to_ddf()
    assert all(ddf.dtypes[name] == np.dtype(object) for name in LIST_COLUMNS)
    _same_frames(ddf.compute(), reference)
    _same_frames(ds.head(50), reference.iloc[:50])
    _same_frames(ds.tail(7), reference.iloc[-7:])
    _same_frames(ds.persist().compute(), reference)
    # Element dtypes are the schema's, except where pandas makes integers with a null float.
    row = ds.compute().iloc[0]
    assert (row["ragged"].dtype, row["fixed"].dtype, row["holes"].dtype) == (np.int64, np.float32, np.float64)
    assert ds.schema["holes"].dtype == "list<int32>" and ds.schema["nested"].dtype == "list<list<int64>>"


def test_to_iter_yields_pandas_form_per_partition(files, reference):
    parts = list(nvt.Dataset(files).to_iter())
    assert [len(p) for p in parts] == [40, 0, 25, 35]
    _same_frames(pd.concat(parts), reference)
    assert parts[1]["ragged"].dtype == object  # the empty partition too


def test_arrow_lists_hands_the_engine_form(files, reference):
    ds = nvt.Dataset(files)
    frame = ds.to_ddf(arrow_lists=True).compute()
    assert frame["holes"].dtype == pd.ArrowDtype(pa.list_(pa.int32()))
    assert frame["holes"].tolist()[0] == [0, None, 1]  # the null item stays a null
    assert {str(part["nested"].dtype) for part in ds.to_iter(arrow_lists=True)} == {"list<item: list<item: int64>>[pyarrow]"}


def test_what_users_got_reads_back_as_the_same_list_columns(files):
    ds = nvt.Dataset(files)
    wanted = {name: ds.schema[name].dtype for name in ["ragged", "fixed", "words", "nested"]}
    filtered = ds.to_ddf()
    filtered = filtered[filtered["rid"] % 2 == 1]  # a user's dask steps on what to_ddf gave
    for given in (ds.to_ddf(), ds.compute(), filtered):
        again = nvt.Dataset(given)
        assert {name: again.schema[name].dtype for name in wanted} == wanted
        # Integer lists that held nulls came out as floats: pandas' form cannot say int32 with a null.
        assert again.schema["holes"].dtype in ("list<int32>", "list<float64>")
        back = again.to_ddf(arrow_lists=True).compute().set_index("rid")["ragged"]
        assert back.tolist() == ds.to_ddf(arrow_lists=True).compute().set_index("rid")["ragged"][back.index].tolist()


def test_workflow_results_are_in_pandas_form_for_datasets_frames_and_dask(files):
    ds = nvt.Dataset(files)
    workflow = nvt.Workflow((["ragged"] >> ops.Categorify(dtype="int32")) + (["fixed"] >> ops.LogOp()) + ["rid"])
    workflow.fit(ds)
    from_dataset = workflow.transform(ds).compute()
    from_dask = workflow.transform(ds.to_ddf()).compute()
    from_frame = workflow.transform(ds.compute())
    for out in (from_dataset, from_dask, from_frame):
        assert out["ragged"].dtype == object and out["fixed"].dtype == object
        first = next(r for r in out["ragged"] if r is not None and len(r))
        assert first.dtype == np.int32 and out["fixed"].iloc[0].dtype == np.float32
    expected_fixed = [np.log1p(np.asarray(r, dtype=np.float32)) for r in ds.compute()["fixed"]]
    np.testing.assert_allclose(np.concatenate(from_dataset["fixed"].to_numpy()), np.concatenate(expected_fixed), rtol=1e-6)
    for out in (from_dask, from_frame):
        assert [list(r) if r is not None else None for r in out["ragged"]] == [
            list(r) if r is not None else None for r in from_dataset["ragged"]]


def test_an_op_called_on_a_frame_keeps_the_form_its_lists_came_in():
    rows = [[0, 1, 2], [5], [], None]
    selector = ColumnSelector(["y"])
    op = ops.ListSlice(0, 2)
    as_objects = op.transform(selector, pd.DataFrame({"y": rows}))
    assert as_objects["y"].dtype == object
    assert [None if r is None else r.tolist() for r in as_objects["y"]] == [[0, 1], [5], [], []]
    arrow = pd.DataFrame({"y": pd.Series(rows, dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
    as_arrow = op.transform(selector, arrow)
    assert as_arrow["y"].dtype == pd.ArrowDtype(pa.list_(pa.int64()))
    assert as_arrow["y"].tolist() == [[0, 1], [5], [], []]


def test_rows_are_views_of_one_buffer():
    from tabflow.backends import get_backend

    pandas = get_backend("pandas")
    frame = pandas.with_list_columns(pd.DataFrame({"g": [[1, 2], [3], [4, 5, 6]]}))
    rows = pandas.lists_as_arrays(frame)["g"].tolist()
    assert rows[0].base is not None and rows[0].base is rows[2].base  # no copy per row
    assert [r.tolist() for r in rows] == [[1, 2], [3], [4, 5, 6]]


def test_a_first_partition_of_empty_lists_does_not_decide_the_element_type():
    frame = pd.DataFrame({"w": [[], [], ["a"], ["b", None]], "n": [[], [], [[1]], [[2, 3], []]], "x": [1, 2, 3, 4]})
    ds = nvt.Dataset(frame, npartitions=2)
    handed = ds.to_ddf()
    assert handed.partitions[0].compute()["w"].tolist()[0].dtype == object  # says nothing of strings
    again = nvt.Dataset(handed)
    assert again.schema["w"].dtype == "list<string>" and again.schema["n"].dtype == "list<list<int64>>"
    back = again.to_ddf(arrow_lists=True).compute()
    assert back["w"].tolist() == [[], [], ["a"], ["b", None]] and back["n"].tolist() == [[], [], [[1]], [[2, 3], []]]
