"""Workflow: fitting passes, lazy vs immediate transform, legacy ops, schemas, save/load."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.ops import NotFittedError, Operator, StatOperator
from tabflow.schema import Tags
from tabflow.serialize import LoadError, SaveError


class Center(StatOperator):
    """Subtracts the mean (map / combine / finalize)."""

    def __init__(self, offset: float = 0.0) -> None:
        self.offset = offset

    def fit_partition(self, col_selector, df):
        return {n: (float(df[n].sum()), len(df)) for n in col_selector.names}

    def combine_partials(self, partials):
        return {n: (sum(p[n][0] for p in partials), sum(p[n][1] for p in partials)) for n in partials[0]}

    def fit_finalize(self, partial):
        self.means_ = {n: s / c for n, (s, c) in partial.items()}

    def transform(self, col_selector, df):
        self.check_is_fitted()
        return pd.DataFrame({n: df[n] - self.means_[n] + self.offset for n in col_selector.names}, index=df.index)

    @property
    def output_dtype(self):
        return "float64"


class LegacyScale(StatOperator):
    """NVTabular-style: ``fit`` returns dask objects, ``fit_finalize`` stores any attribute."""

    def __init__(self) -> None:
        self.maxes = None

    def fit(self, col_selector, ddf):
        return ddf[col_selector.names].abs().max()

    def fit_finalize(self, dask_stats):
        self.maxes = {k: float(v) for k, v in dask_stats.items()}

    def transform(self, col_selector, df):
        return pd.DataFrame({n: df[n] / self.maxes[n] for n in col_selector.names}, index=df.index)


class Sum(Operator):
    def transform(self, col_selector, df):
        return pd.DataFrame({"total": df[col_selector.names].sum(axis=1)}, index=df.index)

    def output_column_names(self, col_selector):
        return nvt.ColumnSelector(["total"])


@pytest.fixture
def frame(rng):
    n = 400
    return pd.DataFrame(
        {
            "x": rng.normal(3.0, 2.0, n),
            "y": rng.integers(-50, 50, n).astype("int64"),
            "s": rng.choice(["a", "b"], n),
            "unused": rng.random(n),
        }
    )


def _graph():
    scaled = ["x", "y"] >> Center >> Center(offset=1.0) >> LegacyScale()
    normalized = ["x"] >> ops.Clip(min_value=2.0) >> ops.Normalize() >> Operator()
    return (scaled - ["x"]) + normalized + (["x", "y"] >> Sum()) + ["s"]


def _reference(frame):
    x, y = frame["x"], frame["y"].astype(float)
    cx = x - x.mean() + 1.0
    cy = y - y.mean() + 1.0
    clipped = x.clip(lower=2.0)
    normalized = ((clipped - clipped.mean()) / clipped.std()).astype("float32")
    return cx / cx.abs().max(), cy / cy.abs().max(), normalized


def test_lazy_and_immediate_transform_agree(frame):
    ds = nvt.Dataset(frame, npartitions=4)
    lazy_wf = nvt.Workflow(_graph())
    lazy = lazy_wf.fit_transform(ds)
    assert isinstance(lazy, nvt.Dataset) and lazy.npartitions == 4
    lazy_df = lazy.compute().reset_index(drop=True)
    eager = nvt.Workflow(_graph()).fit_transform(frame)
    pd.testing.assert_frame_equal(lazy_df, eager)
    # The fitted workflow also transforms a plain frame the same way.
    pd.testing.assert_frame_equal(lazy_wf.transform(frame), eager)
    assert eager.columns.tolist() == ["y", "x", "total", "s"]
    _, ry, rx = _reference(frame)
    np.testing.assert_allclose(eager["y"].to_numpy(), ry.to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(eager["x"].to_numpy(), rx.to_numpy(), rtol=1e-5)
    np.testing.assert_allclose(eager["total"].to_numpy(), (frame["x"] + frame["y"]).to_numpy())
    # The declared output dtypes are the real ones.
    assert {c: str(t) for c, t in lazy.to_ddf().dtypes.items()} == {c: str(t) for c, t in eager.dtypes.items()}


def test_multi_pass_statistics_match_pandas(frame):
    wf = nvt.Workflow(["x", "y"] >> Center >> Center(offset=1.0) >> LegacyScale())
    out = wf.fit_transform(nvt.Dataset(frame, npartitions=5)).compute()
    rx, ry, _ = _reference(frame)
    np.testing.assert_allclose(out["x"].to_numpy(), rx.to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(out["y"].to_numpy(), ry.to_numpy(), rtol=1e-10)
    first, second = [op for op in wf.ops if isinstance(op, Center)]
    assert first.means_["x"] == pytest.approx(frame["x"].mean())
    assert second.means_["x"] == pytest.approx(0.0, abs=1e-12)


def test_statistics_do_not_depend_on_partitioning(frame):
    def fitted(npartitions):
        wf = nvt.Workflow(["x"] >> ops.Normalize())
        wf.fit(nvt.Dataset(frame, npartitions=npartitions))
        return wf.ops[0].means_["x"], wf.ops[0].stds_["x"]

    one, many = fitted(1), fitted(17)
    assert one == pytest.approx(many, rel=1e-12)
    assert one == pytest.approx((frame["x"].mean(), frame["x"].std()), rel=1e-12)


def test_refit_is_idempotent(frame):
    wf = nvt.Workflow(["x"] >> Center())
    wf.fit(frame)
    first = dict(wf.ops[0].means_)
    wf.fit(frame)
    assert wf.ops[0].means_ == first


def test_transform_before_fit(frame):
    with pytest.raises(NotFittedError, match="fit"):
        nvt.Workflow(["x"] >> Center()).transform(frame)
    wf = nvt.Workflow(["x"] >> Center())
    wf.fit_schema(nvt.Dataset(frame).schema)
    with pytest.raises(NotFittedError, match="Center"):
        wf.transform(frame)


def test_schemas(frame):
    wf = nvt.Workflow((["x"] >> ops.Normalize()) + ["s"]).fit(frame)
    assert wf.input_schema.column_names == ["x", "s"]  # "y" and "unused" are not read
    assert wf.output_schema.column_names == ["x", "s"]
    assert wf.output_schema["x"].dtype == "float64"  # Normalize's default, as NVTabular 23.08
    assert Tags.CONTINUOUS in wf.output_schema["x"].tags
    assert wf.output_dtypes == {"x": "float64", "s": "string"}


def test_transform_dataset_with_extra_columns(frame, tmp_path):
    wf = nvt.Workflow(["x"] >> ops.Normalize()).fit(frame[["x"]])
    ds = nvt.Dataset(frame, npartitions=3)
    out = wf.transform(ds)
    assert out.schema.column_names == ["x"]
    assert out.compute().columns.tolist() == ["x"]
    with pytest.raises(KeyError, match=r"lacks column\(s\) \['x'\]"):
        wf.transform(frame[["y"]])


def test_transform_conforms_dtypes_to_the_fitted_ones(frame):
    with_nulls = frame.assign(y=pd.array(frame["y"], dtype="Int64"))
    with_nulls.loc[3, "y"] = pd.NA
    wf = nvt.Workflow(["y"] + (["s"] >> Operator())).fit(with_nulls)
    assert wf.input_schema["y"].dtype == "Int64"
    # This partition happens to have no nulls: its int64 column is read as the fitted Int64.
    out = wf.transform(nvt.Dataset(frame, npartitions=2)).compute()
    assert str(out["y"].dtype) == "Int64"
    eager = wf.transform(frame.astype({"s": "str"}))
    assert eager["s"].dtype == out["s"].dtype


def test_transform_a_dask_frame(frame):
    import dask.dataframe as dd

    wf = nvt.Workflow(["x"] >> ops.Clip(max_value=3.0)).fit(frame)
    out = wf.transform(dd.from_pandas(frame, npartitions=2))
    assert hasattr(out, "npartitions") and out.compute()["x"].max() <= 3.0


def test_op_returning_wrong_columns(frame):
    class Wrong(Operator):
        def transform(self, col_selector, df):
            return df.rename(columns={"x": "z"})

    with pytest.raises(ValueError, match=r"did not return column\(s\) \['x'\]"):
        nvt.Workflow(["x"] >> Wrong()).fit_transform(frame)


# ------------------------------------------------------------------------------ save/load


def test_save_load_round_trip(frame, tmp_path):
    wf = nvt.Workflow(_graph()).fit(nvt.Dataset(frame, npartitions=3))
    expected = wf.transform(frame)
    path = tmp_path / "wf"
    wf.save(str(path))
    files = sorted(os.listdir(path))
    assert "workflow.json" in files
    assert not [f for f in files if f.endswith((".pkl", ".pickle", ".cloudpickle"))]
    for name in files:
        with open(path / name, "rb") as handle:
            assert not handle.read(2).startswith(b"\x80"), f"{name} looks like a pickle"
    loaded = nvt.Workflow.load(str(path))
    pd.testing.assert_frame_equal(loaded.transform(frame), expected)
    assert loaded.output_schema == wf.output_schema
    legacy = [op for op in loaded.ops if isinstance(op, LegacyScale)][0]
    assert legacy.maxes == [op for op in wf.ops if isinstance(op, LegacyScale)][0].maxes
    assert os.listdir(tmp_path) == ["wf"]


def test_save_is_atomic_and_replaces(frame, tmp_path):
    path = tmp_path / "wf"
    nvt.Workflow(["x"] >> ops.Normalize()).fit(frame).save(str(path))

    class Unsaveable(Operator):
        def __init__(self, fn=None) -> None:
            self.fn = fn

    bad = nvt.Workflow(["x"] >> Unsaveable(fn=object())).fit(frame)
    with pytest.raises(SaveError, match="Unsaveable.*'fn'"):
        bad.save(str(path))
    assert os.listdir(tmp_path) == ["wf"]
    assert "Normalize" in (path / "workflow.json").read_text()
    nvt.Workflow(["x"] >> Center()).fit(frame).save(str(path))
    assert "Center" in (path / "workflow.json").read_text() and os.listdir(tmp_path) == ["wf"]


def test_load_unknown_op_never_imports(frame, tmp_path):
    path = tmp_path / "wf"
    nvt.Workflow(["x"] >> ops.Normalize()).fit(frame).save(str(path))
    document = json.loads((path / "workflow.json").read_text())
    for node in document["nodes"]:
        if "op" in node:
            node["op"]["class"] = "tabflow_evil_module.Payload"
    (path / "workflow.json").write_text(json.dumps(document))
    with pytest.raises(LoadError, match="tabflow_evil_module.Payload"):
        nvt.Workflow.load(str(path))
    assert "tabflow_evil_module" not in sys.modules


def test_load_errors(tmp_path):
    with pytest.raises(LoadError, match="not a saved tabflow workflow"):
        nvt.Workflow.load(str(tmp_path))
    (tmp_path / "workflow.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(LoadError, match="not a tabflow workflow"):
        nvt.Workflow.load(str(tmp_path))


def _upper(col):
    return col.str.upper()


def test_save_before_fit_saves_the_graph_to_fit_later(tmp_path):
    # As in NVTabular: a workflow described in one script, fitted after loading in another.
    frame = pd.DataFrame(
        {"c": ["a", "b", None, "a", "b", "b"], "x": [1.0, None, 3.0, 5.0, None, 7.0], "e": ["u", "v", "u", None, "v", "u"]}
    )
    node = (["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing() >> ops.Normalize()) + (["e"] >> ops.LambdaOp(_upper))
    nvt.Workflow(node).save(str(tmp_path / "wf"))
    document = json.loads((tmp_path / "wf" / "workflow.json").read_text())
    assert document["input_schema"] is None and all("output_schema" not in entry for entry in document["nodes"])

    loaded = nvt.Workflow.load(str(tmp_path / "wf"), trust_code=True)
    assert loaded.input_schema is None and loaded.output_schema is None
    with pytest.raises(NotFittedError, match="fit"):
        loaded.transform(frame)
    out = loaded.fit_transform(nvt.Dataset(frame, npartitions=2)).compute().reset_index(drop=True)

    filled = frame["x"].fillna(0.0)
    expected_x = (filled - filled.mean()) / filled.std()
    np.testing.assert_allclose(out["x"].to_numpy(dtype=float), expected_x.to_numpy(), rtol=1e-4)
    assert out["e"].tolist()[:3] == ["U", "V", "U"] and pd.isna(out["e"].iloc[3])
    # Equal categories get equal codes, the null its own.
    codes = out["c"]
    assert codes[1] == codes[4] == codes[5] and codes[0] == codes[3] and len({codes[0], codes[1], codes[2]}) == 3
    # Fitted and saved again, it loads with its statistics.
    loaded.save(str(tmp_path / "fitted"))
    again = nvt.Workflow.load(str(tmp_path / "fitted"), trust_code=True)
    pd.testing.assert_frame_equal(again.transform(frame), loaded.transform(frame))


class _StringLength(ops.Operator):
    """A user op that changes the dtype (string -> integer) without declaring it."""

    def transform(self, col_selector, df):
        return df[col_selector.names].apply(lambda column: column.str.len())


def test_user_op_output_dtype_is_observed_on_a_sample():
    frame = pd.DataFrame({"title": pd.Series(["ab", "abcd", None, "x"], dtype="string")})
    workflow = nvt.Workflow(["title"] >> _StringLength() >> ops.FillMissing(0) >> ops.Normalize())
    out = workflow.fit_transform(frame)
    lengths = pd.Series([2.0, 4.0, 0.0, 1.0])
    expected = (lengths - lengths.mean()) / lengths.std()
    np.testing.assert_allclose(out["title"].to_numpy(), expected.to_numpy(), rtol=1e-6)
    assert workflow.output_schema["title"].dtype == "float64"  # Normalize's default, as NVTabular 23.08


class _DaysSincePublished(Operator):
    """As NVTabular-era scripts write it: output names as a plain list, no output_dtype, and
    a transform that only works on date strings."""

    def transform(self, col_selector, df):
        for column in col_selector.names:
            published = df[column].astype("datetime64[ns]")
            df[column + "_days"] = (df["now"].astype("datetime64[ns]") - published).dt.days.astype("float64")
        return df

    def output_column_names(self, col_selector):
        return [column + "_days" for column in col_selector.names]

    @property
    def dependencies(self):
        return ["now"]


def test_user_op_on_date_strings_with_list_output_names():
    frame = pd.DataFrame({
        "published": pd.Series(["2016-06-01 00:00:00", None, "2016-06-20 12:00:00", "2016-05-01 00:00:00"], dtype="string"),
        "now": pd.Series(["2016-06-30 00:00:00"] * 4, dtype="string"),
    })
    workflow = nvt.Workflow(["published"] >> _DaysSincePublished() >> ops.FillMedian())
    out = workflow.fit_transform(frame)
    days = (pd.Timestamp("2016-06-30") - pd.to_datetime(frame["published"])).dt.days.astype("float64")
    expected = days.fillna(days.median())
    np.testing.assert_allclose(out["published_days"].to_numpy(), expected.to_numpy())
    assert workflow.output_schema["published_days"].dtype == "float64"


def test_lambda_returning_lists_makes_a_multi_hot_column():
    frame = pd.DataFrame({"genres": pd.Series(["Drama|Comedy", "Comedy", "Action|Drama|Comedy"], dtype="string")})
    workflow = nvt.Workflow(["genres"] >> ops.LambdaOp(lambda col: col.str.split("|")) >> ops.Categorify())
    out = workflow.fit_transform(frame)
    assert workflow.output_schema["genres"].dtype == "list<int64>" and workflow.output_schema["genres"].is_list
    # Vocabulary by descending frequency (ties by value) after 0 = padding, 1 = null, 2 = OOV.
    counts = frame["genres"].str.split("|").explode().value_counts()
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    codes = {value: i + 3 for i, value in enumerate(order)}
    expected = [[codes[v] for v in row.split("|")] for row in frame["genres"]]
    assert [list(row) for row in out["genres"]] == expected


def test_lambda_dtype_inference_tries_digit_strings():
    frame = pd.DataFrame({"zip": pd.Series(["02139", "10001", "94105"], dtype="string")})
    workflow = nvt.Workflow(["zip"] >> ops.LambdaOp(lambda col: col.astype("int64") // 1000))
    out = workflow.fit_transform(frame)
    assert workflow.output_schema["zip"].dtype == "int64"
    assert out["zip"].tolist() == [2, 10, 94]
    # A function that fails on the data fails while fitting, with its own error (a TypeError or,
    # on older pandas, an IntCastingNaNError) and a note on what ran it.
    with pytest.raises((TypeError, ValueError), match=r"LambdaOp on column\(s\) \['zip'\] ran on the first rows[\s\S]*dtype="):
        nvt.Workflow(["zip"] >> ops.LambdaOp(lambda col: col.map({"x": 1}).astype("int64"))).fit_transform(frame)


def test_serving_a_non_number_in_a_numeric_column_names_column_and_value():
    train = pd.DataFrame({"age": pd.array([31, 45, None, 27], dtype="Int64"), "city": ["a", "b", "a", "c"]})
    conts = ["age"] >> ops.FillMedian() >> ops.Normalize()
    workflow = nvt.Workflow(conts + (["city"] >> ops.Categorify())).fit(train)
    request = pd.DataFrame({"age": ["40", "abc"], "city": ["a", "b"]}, index=[7, 8])
    with pytest.raises(ValueError, match=r"column 'age' holds 'abc' \(row 8\), which is not a number.*Int64.*send numbers or nulls"):
        workflow.transform(request)
    # Digit strings are numbers: the same request with a valid age is served as ints would be.
    served = workflow.transform(pd.DataFrame({"age": ["40", None], "city": ["a", "b"]}))
    expected = workflow.transform(pd.DataFrame({"age": pd.array([40, None], dtype="Int64"), "city": ["a", "b"]}))
    pd.testing.assert_frame_equal(served, expected)
