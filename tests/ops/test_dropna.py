"""Dropna: a row filter over the selected columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops
from tabflow.testing import assert_frame_equal

# pandas' own text dtype (``str`` on pandas 3), what tabflow holds strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")


@pytest.fixture
def frame(rng):
    n = 80
    x = rng.normal(size=n)
    x[rng.integers(0, n, 10)] = np.nan
    s = rng.choice(["a", "b"], n).astype(object)
    s[rng.integers(0, n, 10)] = None
    rows = [[1]] * n
    rows[3] = None
    rows[4] = []
    return pd.DataFrame(
        {
            "x": x,
            "s": pd.array(s, dtype=STRING),
            "l": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(pa.int64())))),
        }
    )


def test_matches_pandas_dropna(frame, engine, to_engine):
    workflow = nvt.Workflow(["x", "s", "l"] >> ops.Dropna())
    out = to_host(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=4)).to_ddf(arrow_lists=True).compute())
    assert_frame_equal(out, frame.dropna())
    assert 4 in frame.dropna().index  # an empty list is not null


def test_empty_partitions_and_in_memory(frame):
    workflow = nvt.Workflow(["x", "s"] >> ops.Dropna())
    parts = to_host(workflow.fit_transform(dataset_with_empty_partitions(frame)).compute())
    pd.testing.assert_frame_equal(parts, to_host(workflow.transform(frame)))


def test_filter_then_stats_op_fits_on_kept_rows(frame):
    kept_rows = ["x", "s"] >> ops.Dropna()
    workflow = nvt.Workflow((kept_rows - ["s"]) >> ops.Normalize(out_dtype="float64"))
    out = workflow.fit_transform(frame)
    kept = frame.dropna(subset=["x", "s"])["x"]
    np.testing.assert_allclose(out["x"], (kept - kept.mean()) / kept.std())


def test_filtered_branch_next_to_unfiltered_raises(frame):
    workflow = nvt.Workflow((["x"] >> ops.Dropna()) + ["s"])
    with pytest.raises(ValueError, match="row filter"):
        workflow.fit_transform(frame)


def test_save_load_round_trip(frame, tmp_path):
    workflow = nvt.Workflow(["x", "s"] >> ops.Dropna()).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))


def test_kept_rows_get_a_fresh_index_as_in_nvtabular(frame):
    # NVTabular 23.08: dropna(subset=selected).reset_index(drop=True).
    out = nvt.Workflow(["x", "s"] >> ops.Dropna()).fit_transform(frame.set_index(np.arange(len(frame)) * 10))
    expected = frame[["x", "s"]].dropna().reset_index(drop=True)
    pd.testing.assert_index_equal(out.index, expected.index)
    assert_frame_equal(out, expected)
