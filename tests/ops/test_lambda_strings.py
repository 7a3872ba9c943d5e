"""LambdaOp on string columns and column groups, with Rename postfixes (notebook patterns)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.backends import backend_for
from tabflow.serialize import UntrustedCodeError
from tabflow.testing import assert_frame_equal


@nvt.register_function
def first_ten(col):
    return col.str.slice(0, 10)


@pytest.fixture
def data(rng):
    n = 120
    words = np.array(["Toy Story (1995)", "Jumanji", "Grumpier Old Men (1995)", "Heat", "a", ""])
    df = pd.DataFrame({
        "title": rng.choice(words, n),
        "genre": rng.choice(["Comedy", "Drama", "Sci-Fi"], n),
        "city": rng.choice(["Paris", "Lyon"], n),
    }).astype("str")
    df.loc[rng.random(n) < 0.1, "title"] = None
    return df


def _host(frame):
    return backend_for(frame).to_host(frame)


def test_slice_then_rename_postfix(data, engine, to_engine):
    short = nvt.ColumnSelector(["title"]) >> (lambda col: col.str.slice(0, 10)) >> ops.Rename(postfix="_short")
    wf = nvt.Workflow(short + ["title"])
    out = _host(wf.fit_transform(nvt.Dataset(to_engine(data), npartitions=3)).compute())
    assert out.columns.tolist() == ["title_short", "title"]
    expected = data["title"].str.slice(0, 10)
    assert out["title_short"].isna().tolist() == expected.isna().tolist()
    assert out["title_short"].dropna().tolist() == expected.dropna().tolist()
    assert wf.output_schema["title_short"].dtype == "string"


def test_column_group_lower_and_length(data):
    group = nvt.ColumnSelector(["genre", "city"])
    lower = group >> (lambda col: col.str.lower()) >> ops.Rename(postfix="_lc")
    length = group >> ops.LambdaOp(lambda col: col.str.len(), dtype="int64") >> ops.Rename(postfix="_len")
    out = nvt.Workflow(lower + length).fit_transform(data)
    assert out.columns.tolist() == ["genre_lc", "city_lc", "genre_len", "city_len"]
    assert out["genre_lc"].tolist() == data["genre"].str.lower().tolist()
    assert out["city_len"].tolist() == data["city"].str.len().tolist()
    assert str(out["genre_len"].dtype) == "int64"


def test_dependency_joins_two_string_columns(data):
    op = ops.LambdaOp(lambda col, dep: col + "|" + dep["city"], dependency=["city"])
    out = nvt.Workflow(["genre"] >> op >> ops.Rename(name="genre_city")).fit_transform(data)
    assert out["genre_city"].tolist() == (data["genre"] + "|" + data["city"]).tolist()


def test_empty_partition_and_explicit_op(data):
    wf = nvt.Workflow(["title"] >> ops.LambdaOp(first_ten) >> ops.Rename(postfix="_short"))
    wf.fit(data)
    empty = wf.transform(data.iloc[:0])
    assert empty.columns.tolist() == ["title_short"] and len(empty) == 0


def test_save_load_registered_function_and_lambda(data, tmp_path):
    wf = nvt.Workflow(["title"] >> ops.LambdaOp(first_ten) >> ops.Rename(postfix="_short"))
    expected = wf.fit_transform(data)
    wf.save(str(tmp_path / "wf"))
    assert_frame_equal(nvt.Workflow.load(str(tmp_path / "wf")).transform(data), expected)
    anonymous = nvt.Workflow(nvt.ColumnSelector(["title"]) >> (lambda col: col.str.upper()))
    expected = anonymous.fit_transform(data)
    anonymous.save(str(tmp_path / "lambda"))
    loaded = nvt.Workflow.load(str(tmp_path / "lambda"))
    assert loaded.output_schema == anonymous.output_schema
    with pytest.raises(UntrustedCodeError, match="lambda col: col.str.upper()"):
        loaded.transform(data)
    assert_frame_equal(nvt.Workflow.load(str(tmp_path / "lambda"), trust_code=True).transform(data), expected)
