"""Filter: keep the rows a user function selects."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops
from tabflow.serialize import UntrustedCodeError
from tabflow.testing import assert_frame_equal

# pandas' own text dtype (``str`` on pandas 3), what tabflow holds strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")


@nvt.register_function
def positive_price(df):
    """Registered, so a saved workflow names it and loads without trusting code."""
    return df["price"] > 0


def cheap_rows(df):
    return df[df["price"] < 5]


def with_null_mask(df):
    return df["price"].isna().map({True: None, False: True}).astype("boolean")


@pytest.fixture
def frame(rng):
    n = 100
    price = rng.normal(2, 4, n)
    price[[3, 4]] = np.nan
    return pd.DataFrame({"price": price, "item": pd.array(rng.choice(["a", "b", "c"], n), dtype=STRING)})


def test_mask_function(frame, engine, to_engine):
    workflow = nvt.Workflow(["price", "item"] >> ops.Filter(positive_price))
    out = to_host(workflow.fit_transform(nvt.Dataset(to_engine(frame), npartitions=4)).compute())
    assert_frame_equal(out, frame[frame["price"] > 0])


def test_function_returning_frame_and_null_mask(frame):
    out = nvt.Workflow(["price", "item"] >> ops.Filter(cheap_rows)).fit_transform(frame)
    # NVTabular 23.08 renumbers the kept rows (reset_index(drop=True)).
    expected = frame[frame["price"] < 5].reset_index(drop=True)
    pd.testing.assert_index_equal(out.index, expected.index)
    assert_frame_equal(out, expected)
    kept = nvt.Workflow(["price"] >> ops.Filter(with_null_mask)).fit_transform(frame)
    assert len(kept) == len(frame) - 2  # a null in the mask drops the row


def test_empty_partitions_and_many_partitions(frame):
    workflow = nvt.Workflow(["price", "item"] >> ops.Filter(positive_price))
    one = to_host(workflow.fit_transform(nvt.Dataset(frame, npartitions=1)).compute())
    gaps = to_host(workflow.fit_transform(dataset_with_empty_partitions(frame, 7)).compute())
    pd.testing.assert_frame_equal(one, gaps)


def test_whole_graph_filter_after_concat(frame):
    features = (["price"] >> ops.FillMissing(0.0)) + ["item"]
    workflow = nvt.Workflow(features >> ops.Filter(positive_price))
    out = workflow.fit_transform(frame)
    assert list(out.columns) == ["price", "item"] and (out["price"] > 0).all()


def test_filter_in_one_branch_raises(frame):
    workflow = nvt.Workflow((["price"] >> ops.Filter(positive_price)) + ["item"])
    with pytest.raises(ValueError, match="row filter"):
        workflow.fit_transform(frame)


def test_wrong_length_mask_raises(frame):
    with pytest.raises(ValueError, match="one boolean per row"):
        nvt.Workflow(["price"] >> ops.Filter(lambda df: [True])).fit_transform(frame)


def test_save_load(frame, tmp_path):
    workflow = nvt.Workflow(["price", "item"] >> ops.Filter(positive_price)).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), workflow.transform(frame))
    assert loaded.ops[0].f is positive_price  # registered: by name, no trust needed
    with_lambda = nvt.Workflow(["price", "item"] >> ops.Filter(lambda df: df["price"] > 0)).fit(frame)
    with_lambda.save(str(tmp_path / "x"))
    with pytest.raises(UntrustedCodeError, match=r'Filter(?s:.*)lambda df: df\["price"\] > 0(?s:.*)trust_code=True'):
        nvt.Workflow.load(str(tmp_path / "x")).transform(frame)
    trusted = nvt.Workflow.load(str(tmp_path / "x"), trust_code=True)
    pd.testing.assert_frame_equal(trusted.transform(frame), with_lambda.transform(frame))


def test_kept_rows_get_a_fresh_index_as_in_nvtabular(frame, to_engine):
    out = to_host(nvt.Workflow(["price", "item"] >> ops.Filter(positive_price)).fit_transform(to_engine(frame)))
    expected = frame[frame["price"] > 0].reset_index(drop=True)
    assert out.index.tolist() == list(range(len(expected)))
    assert_frame_equal(out, expected[["price", "item"]])
