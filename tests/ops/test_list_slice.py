"""ListSlice: Python-slice truncation and fixed-length padding of list columns."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops
from tabflow.schema import Tags


def list_series(rows, value_type):
    return pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(value_type))))


@pytest.fixture
def rows(rng):
    data = [list(map(int, rng.integers(0, 100, k))) for k in rng.integers(0, 8, 150)]
    data[3] = None
    data[4] = []
    data[9] = [1, None, 3]
    return data


@pytest.fixture
def frame(rows):
    words = [None if r is None else [f"w{v}" if v is not None else None for v in r] for r in rows]
    return pd.DataFrame({"ints": list_series(rows, pa.int64()), "words": list_series(words, pa.string())})


def _python(rows, start, end, length=None, pad=0):
    if end is None and start > 0:  # NVTabular: one positive argument is the end
        start, end = 0, start
    out = []
    for row in rows:
        row = (row or [])[start:end]
        if length is not None:
            row = row[:length] + [pad] * (length - len(row[:length]))
        out.append(row)
    return out


def _arrow(dataset):
    # The op's own output, null items inside integer lists included (pandas' form of a list
    # column turns those rows into float arrays with NaN).
    return dataset.to_ddf(arrow_lists=True).compute()


def _lists(series):
    return [list(r) for r in series.tolist()]


@pytest.mark.parametrize(("start", "end"), [(0, 3), (2, None), (-3, None), (-4, -1), (1, -1), (-2, 5), (3, 3), (10, None)])
def test_matches_python_slicing(frame, rows, start, end, engine, to_engine):
    workflow = nvt.Workflow(["ints"] >> ops.ListSlice(start, end))
    out = to_host(_arrow(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=4))))
    assert _lists(out["ints"]) == _python(rows, start, end)
    assert workflow.output_schema["ints"].dtype == "list<int64>"


@pytest.mark.parametrize(("start", "end", "length"), [(0, 4, 4), (-3, None, 3), (-5, -2, 3), (1, 3, 2), (5, None, 5)])
def test_pad_gives_fixed_length(frame, rows, start, end, length):
    workflow = nvt.Workflow(["ints"] >> ops.ListSlice(start, end, pad=True, pad_value=-1))
    out = _arrow(workflow.fit_transform(dataset_with_empty_partitions(frame)))
    assert _lists(out["ints"]) == _python(rows, start, end, length, -1)
    assert workflow.output_schema["ints"].value_count == {"min": length, "max": length}


def test_string_lists_keep_type_and_inner_nulls(frame, rows):
    workflow = nvt.Workflow(["words"] >> ops.ListSlice(-2, pad=True, pad_value=""))
    out = _arrow(workflow.fit_transform(nvt.Dataset(frame)))
    expected = [[None if v is None else f"w{v}" for v in r] for r in _python(rows, -2, None)]
    expected = [r + [""] * (2 - len(r)) for r in expected]
    assert _lists(out["words"]) == expected
    assert workflow.output_schema["words"].dtype == "list<string>"


def test_all_empty_lists_are_padded(frame):
    empty = pd.DataFrame({"ints": list_series([[], None], pa.int64())})
    out = nvt.Workflow(["ints"] >> ops.ListSlice(0, 2, pad=True)).fit_transform(empty)
    assert _lists(out["ints"]) == [[0, 0], [0, 0]]


def test_save_load_round_trip(frame, tmp_path):
    workflow = nvt.Workflow(["ints"] >> ops.ListSlice(-3, pad=True, pad_value=7)).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))


def test_errors(frame):
    with pytest.raises(TypeError, match="'x'"):
        nvt.Workflow(["x"] >> ops.ListSlice(0, 2)).fit(pd.DataFrame({"x": [1]}))
    with pytest.raises(ValueError, match="padded length"):
        nvt.Workflow(["ints"] >> ops.ListSlice(0, pad=True)).fit(frame)
    with pytest.raises(TypeError, match="start must be an integer"):
        nvt.Workflow(["ints"] >> ops.ListSlice(None)).fit(frame)
    with pytest.raises(ValueError, match="same sign"):
        nvt.Workflow(["ints"] >> ops.ListSlice(-2, 3, pad=True)).fit(frame)


def test_one_positive_argument_keeps_the_first_items_as_nvtabular(frame, rows):
    # NVTabular 23.08: ListSlice(n) truncates to the first n items, ListSlice(-n) keeps the last n.
    out = _arrow(nvt.Workflow(["ints"] >> ops.ListSlice(2)).fit_transform(nvt.Dataset(frame)))
    assert _lists(out["ints"]) == [(r or [])[:2] for r in rows]
    out = _arrow(nvt.Workflow(["ints"] >> ops.ListSlice(-2)).fit_transform(nvt.Dataset(frame)))
    assert _lists(out["ints"]) == [(r or [])[-2:] for r in rows]
    assert ops.ListSlice(2).get_params() == {"start": 2, "end": None, "pad": False, "pad_value": 0}


def test_output_is_tagged_list_as_in_nvtabular():
    items = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([[1, 2, 3], [4]])))
    wf = nvt.Workflow(["items"] >> ops.ListSlice(0, 2, pad=True)).fit(pd.DataFrame({"items": items}))
    column = wf.output_schema["items"]
    assert Tags.LIST in column.tags
    assert [list(r) for r in wf.transform(pd.DataFrame({"items": items}))["items"].tolist()] == [[1, 2], [4, 0]]
    assert (column.value_count["min"], column.value_count["max"]) == (2, 2)
