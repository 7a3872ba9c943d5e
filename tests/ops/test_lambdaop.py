"""LambdaOp: per-column functions, dependencies, dtype inference, saving."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops
from tabflow.backends import backend_for
from tabflow.schema import Tags
from tabflow.serialize import SaveError, UntrustedCodeError

# pandas' own text dtype (``str`` on pandas 3), what tabflow holds strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")


@nvt.register_function
def add_one(col):
    return col + 1


def times_qty(col, dep):
    return col * dep["qty"]


@pytest.fixture
def frame(rng):
    n = 50
    price = rng.uniform(1, 10, n)
    price[[0, 9]] = np.nan
    words = rng.choice(["ab", "abc", "a"], n).astype(object)
    words[[3]] = None
    return pd.DataFrame({"price": price, "qty": rng.integers(1, 5, n), "word": pd.array(words, dtype=STRING)})


def test_per_column_function_and_inferred_dtypes(frame, to_engine):
    node = (
        (nvt.ColumnSelector(["price", "qty"]) >> add_one)
        + (nvt.ColumnSelector(["word"]) >> (lambda col: col.str.len()))
    )
    wf = nvt.Workflow(node)
    result = wf.fit_transform(nvt.Dataset(to_engine(frame), npartitions=3)).compute()
    # The schema names the engine's dtypes: on cuDF a column with nulls is named plainly
    # (int32), and only on the host does it become pandas' masked Int32.
    backend = backend_for(result)
    assert {c: backend.canonical_dtype(result[c].dtype) for c in result.columns} == wf.output_schema.dtypes
    out = to_host(result)
    assert wf.output_schema["price"].dtype == "float64" and wf.output_schema["qty"].dtype == "int64"
    np.testing.assert_array_equal(out["price"], frame["price"] + 1)
    np.testing.assert_array_equal(out["qty"], frame["qty"] + 1)
    expected = frame["word"].str.len()
    np.testing.assert_array_equal(out["word"].to_numpy("float64", na_value=np.nan), expected.to_numpy("float64", na_value=np.nan))


def test_given_dtype_tags_and_properties(frame):
    op = ops.LambdaOp(lambda col: col * 2, dtype="float32", tags=[Tags.CONTINUOUS], properties={"unit": "eur"})
    wf = nvt.Workflow(["qty"] >> op)
    out = wf.fit_transform(frame)
    assert out["qty"].dtype == np.float32
    column = wf.output_schema["qty"]
    assert column.dtype == "float32" and Tags.CONTINUOUS in column.tags and column.properties["unit"] == "eur"


@pytest.mark.parametrize("dependency", ["qty", ["qty"], nvt.ColumnSelector(["qty"])])
def test_dependency(frame, dependency):
    wf = nvt.Workflow(["price"] >> ops.LambdaOp(times_qty, dependency=dependency))
    out = to_host(wf.fit_transform(dataset_with_empty_partitions(frame)).compute())
    assert out.columns.tolist() == ["price"]
    np.testing.assert_array_equal(out["price"], frame["price"] * frame["qty"])


def test_two_argument_function_without_dependency_gets_the_input_frame(frame):
    wf = nvt.Workflow(["price", "qty"] >> ops.LambdaOp(lambda col, df: col / df["qty"]))
    out = wf.fit_transform(frame)
    np.testing.assert_allclose(out["price"], frame["price"] / frame["qty"])
    assert (out["qty"] == 1).all()


def test_numpy_ufunc_and_array_result(frame):
    out = nvt.Workflow(["price"] >> ops.LambdaOp(np.sqrt)).fit_transform(frame)
    np.testing.assert_allclose(out["price"], np.sqrt(frame["price"]))
    out = nvt.Workflow(["qty"] >> ops.LambdaOp(lambda col: col.to_numpy() * 3)).fit_transform(frame)
    np.testing.assert_array_equal(out["qty"], frame["qty"] * 3)


def test_save_load_named_function(frame, tmp_path):
    wf = nvt.Workflow(["price", "qty"] >> ops.LambdaOp(add_one)).fit(frame)
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.ops[0].f is add_one
    pd.testing.assert_frame_equal(loaded.transform(frame), wf.transform(frame))


def test_a_lambda_saves_as_code_that_runs_only_when_trusted(frame, tmp_path):
    wf = nvt.Workflow(["qty"] >> ops.LambdaOp(lambda col: col + 1)).fit(frame)
    assert wf.transform(frame)["qty"].tolist() == (frame["qty"] + 1).tolist()
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    with pytest.raises(UntrustedCodeError, match=r"node \d+ \(LambdaOp\), parameter 'f'(?s:.*)lambda col: col \+ 1"):
        loaded.transform(frame)
    trusted = nvt.Workflow.load(str(tmp_path / "wf"), trust_code=True)
    pd.testing.assert_frame_equal(trusted.transform(frame), wf.transform(frame))


def test_saving_code_over_unsaveable_values_names_the_variable(frame, tmp_path):
    lock = object()
    wf = nvt.Workflow(["qty"] >> ops.LambdaOp(lambda col: col if lock else col, dtype="int64")).fit(frame)
    with pytest.raises(SaveError, match="LambdaOp.*'f'.*variable 'lock'"):
        wf.save(str(tmp_path / "wf"))
    assert not (tmp_path / "wf").exists()


def test_inference_failure_asks_for_dtype(frame):
    # The function fails on the real data, as it would in transform: its own error, with a
    # note naming the op, the column and the way to skip the observation.
    with pytest.raises(AttributeError, match="no_such_method") as info:
        nvt.Workflow(["word"] >> ops.LambdaOp(lambda col: col.no_such_method())).fit(frame)
    assert "['word']" in "".join(info.value.__notes__) and "dtype=" in "".join(info.value.__notes__)
    with pytest.raises(TypeError, match="callable"):
        nvt.Workflow(["qty"] >> ops.LambdaOp("not a function")).fit(frame)


def test_output_dtype_is_learned_from_the_real_data_not_invented_values():
    """NVTabular learns a LambdaOp's dtype while fitting: the function only ever sees the
    user's own values, so date parsing of a date column warns about nothing."""
    import warnings

    seen = []

    def days(col):
        seen.extend(col.dropna().tolist())
        return (pd.to_datetime(col, format="%Y-%m-%d") - pd.Timestamp("2020-01-01")).dt.days

    dates = ["2020-01-05", None, "2020-03-01", "2021-01-01", "2020-01-02", None]
    frame = pd.DataFrame({"day": pd.array(dates, dtype=STRING), "n": range(6)})
    dataset = nvt.Dataset(frame, npartitions=3)
    workflow = nvt.Workflow(["day"] >> ops.LambdaOp(days) >> ops.FillMissing(-1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = workflow.fit_transform(dataset).to_ddf().compute()
    assert set(seen) <= {d for d in dates if d is not None}
    expected = days(frame["day"]).fillna(-1)
    assert workflow.output_schema["day"].dtype == str(expected.dtype) == str(out["day"].dtype)
    assert out["day"].tolist() == expected.tolist()


def test_dtype_is_observed_on_the_first_non_empty_partition():
    frame = pd.DataFrame({"x": pd.array([None, 4, 6, None, 1], dtype="Int64")})
    dataset = dataset_with_empty_partitions(frame)
    workflow = nvt.Workflow(["x"] >> ops.LambdaOp(lambda col: col // 2) >> ops.Normalize())
    out = workflow.fit_transform(dataset).to_ddf().compute()
    halves = frame["x"] // 2
    assert workflow.graph.output_node.parents[0].output_schema["x"].dtype == "Int64"
    np.testing.assert_allclose(out["x"].to_numpy("float64", na_value=np.nan), ((halves - halves.mean()) / halves.std()).to_numpy("float64", na_value=np.nan))


def test_planned_dtype_is_unknown_until_the_workflow_sees_data():
    from tabflow.schema import ColumnSchema, Schema

    workflow = nvt.Workflow(["word"] >> ops.LambdaOp(lambda col: col.str.len()))
    workflow.fit_schema(Schema([ColumnSchema("word", dtype="string")]))
    assert workflow.output_schema["word"].dtype == "unknown"
    # A stateless graph needs no fit: the first transform sees the data.
    frame = pd.DataFrame({"word": pd.array(["ab", None, "abcd"], dtype=STRING)})
    out = nvt.Workflow(["word"] >> ops.LambdaOp(lambda col: col.str.len())).transform(nvt.Dataset(frame, npartitions=2))
    expected = frame["word"].str.len()  # pandas 3's ``str``: float64, NaN where the string is missing
    assert out.schema["word"].dtype == str(expected.dtype)
    got = out.to_ddf().compute()["word"]
    np.testing.assert_array_equal(got.to_numpy("float64", na_value=np.nan), expected.to_numpy("float64", na_value=np.nan))


def test_dtype_after_a_statistics_op_is_observed_once_it_is_fitted():
    frame = pd.DataFrame({"c": ["a", "b", None, "a", "c", "a"]})
    workflow = nvt.Workflow(["c"] >> ops.Categorify() >> ops.LambdaOp(lambda col: (col * 2).astype("int16")))
    out = workflow.fit_transform(nvt.Dataset(frame, npartitions=2)).to_ddf().compute()
    assert workflow.output_schema["c"].dtype == "int16" == str(out["c"].dtype)


def test_declared_dtype_skips_the_observation():
    calls = []

    def f(col):
        calls.append(len(col))
        return col * 2

    frame = pd.DataFrame({"x": [1, 2, 3, 4]})
    workflow = nvt.Workflow(["x"] >> ops.LambdaOp(f, dtype="float32")).fit(nvt.Dataset(frame, npartitions=2))
    assert calls == [] and workflow.output_schema["x"].dtype == "float32"
    assert workflow.transform(frame)["x"].dtype == np.float32


def test_target_of_a_learned_dtype_is_checked_once_seen():
    """NVTabular's TargetEncoding on a LambdaOp target: the target's dtype is known only from
    the data, and the op checks it once seen."""
    frame = pd.DataFrame({"post": [1, 2, 3, 4, 5, 1], "author": ["a", "a", "b", "b", None, "a"]})
    label = nvt.ColumnSelector(["post"]) >> ops.LambdaOp(lambda col: (col > 3).astype("int8"))
    workflow = nvt.Workflow(["author"] >> ops.TargetEncoding(label, kfold=1, p_smooth=0))
    out = workflow.fit_transform(frame)
    means = (frame["post"] > 3).groupby(frame["author"]).mean()
    assert out["TE_author_post"].tolist()[:4] == pytest.approx([means["a"], means["a"], means["b"], means["b"]])
    text = nvt.ColumnSelector(["author"]) >> ops.LambdaOp(lambda col: col.str.upper())
    with pytest.raises(TypeError, match="numeric or boolean, got dtype string"):
        nvt.Workflow(["post"] >> ops.TargetEncoding(text, kfold=1)).fit(frame)
