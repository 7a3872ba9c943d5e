"""Normalize: standardisation against a pandas reference (NVTabular 23.08's float64 output)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host

import tabflow as nvt
from tabflow import ops


@pytest.fixture
def frame(rng):
    n = 200
    x = rng.normal(10.0, 3.0, n)
    x[rng.choice(n, 15, replace=False)] = np.nan
    ints = pd.array(rng.integers(0, 1000, n), dtype="Int64")
    ints[rng.choice(n, 10, replace=False)] = pd.NA
    return pd.DataFrame({"x": x, "i": ints, "const": np.full(n, 4.0)})


def _reference(series: pd.Series) -> np.ndarray:
    values = series.astype("float64")
    std = values.std(ddof=1)
    return ((values - values.mean()) / (std if std > 0 else 1.0)).to_numpy(dtype="float64", na_value=np.nan)


def test_matches_pandas_reference(frame, to_engine):
    wf = nvt.Workflow(["x", "i", "const"] >> ops.Normalize())
    out = to_host(wf.fit_transform(nvt.Dataset(to_engine(frame), npartitions=4)).compute())
    for name in ["x", "i", "const"]:
        assert out[name].dtype == np.float64
        np.testing.assert_allclose(out[name].to_numpy(), _reference(frame[name]), rtol=1e-10, atol=1e-12)
    # Nulls stay null, and a constant column is only centred.
    assert out["x"].isna().tolist() == frame["x"].isna().tolist()
    assert out["i"].isna().tolist() == frame["i"].isna().tolist()
    assert (out["const"] == 0).all()
    assert wf.output_schema["x"].dtype == "float64"
    assert "continuous" in {str(t) for t in wf.output_schema["x"].tags}


def test_many_partitions_equal_one(frame):
    one = nvt.Workflow(["x", "i"] >> ops.Normalize()).fit(nvt.Dataset(frame, npartitions=1))
    many = nvt.Workflow(["x", "i"] >> ops.Normalize()).fit(nvt.Dataset(frame, npartitions=7))
    empties = nvt.Workflow(["x", "i"] >> ops.Normalize()).fit(dataset_with_empty_partitions(frame, 5))
    for wf in (many, empties):
        op_one, op = one.ops[0], wf.ops[0]
        for name in ["x", "i"]:
            assert op.means_[name] == pytest.approx(op_one.means_[name], rel=1e-12)
            assert op.stds_[name] == pytest.approx(op_one.stds_[name], rel=1e-12)


@pytest.mark.parametrize("out_dtype", ["float32", np.float32, np.dtype("float32")])
def test_out_dtype_and_save_load(frame, tmp_path, out_dtype):
    wf = nvt.Workflow(["x"] >> ops.Normalize(out_dtype=out_dtype))
    expected = wf.fit_transform(frame)
    assert expected["x"].dtype == np.float32 and wf.output_schema["x"].dtype == "float32"
    np.testing.assert_allclose(expected["x"], _reference(frame["x"]).astype("float32"), rtol=1e-6)
    if out_dtype != "float32":
        return  # numpy dtype objects are not JSON parameters; the string form is saved
    wf.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(frame), expected)


def test_unseen_values_and_all_null_column():
    train = pd.DataFrame({"x": [1.0, 2.0, 3.0], "n": [np.nan] * 3})
    with pytest.warns(UserWarning, match=r"Normalize: column\(s\) \['n'\] held no finite value"):
        wf = nvt.Workflow(["x", "n"] >> ops.Normalize()).fit(train)
    out = wf.transform(pd.DataFrame({"x": [5.0], "n": [1.0]}))
    assert out["x"].tolist() == [3.0]
    assert np.isnan(out["n"]).all()


def test_string_column_is_rejected():
    df = pd.DataFrame({"name": pd.array(["a", "b"], dtype="string")})
    with pytest.raises(TypeError, match="'name'"):
        nvt.Workflow(["name"] >> ops.Normalize()).fit(df)


@pytest.fixture
def with_infinities(rng):
    n = 300
    x = rng.normal(10.0, 3.0, n)
    x[rng.choice(n, 20, replace=False)] = np.nan
    x[[3, 150]] = np.inf
    x[[7, 299]] = -np.inf
    ints = pd.array(rng.integers(0, 100, n), dtype="Int64")
    ints[[0, 10]] = pd.NA
    return pd.DataFrame({"x": x, "i": ints, "const": np.where(np.arange(n) == 5, np.inf, 2.0)})


def _finite_reference(values: np.ndarray) -> np.ndarray:
    finite = values[np.isfinite(values)]
    std = finite.std(ddof=1)
    return (values - finite.mean()) / (std if std > 0 else 1.0)


def test_infinities_are_left_out_of_the_statistics(with_infinities, to_engine):
    frame = with_infinities
    wf = nvt.Workflow(["x", "i", "const"] >> ops.Normalize(out_dtype="float64"))
    out = to_host(wf.fit_transform(dataset_with_empty_partitions(to_engine(frame), 4)).compute())
    for name in ["x", "i", "const"]:
        values = frame[name].to_numpy("float64", na_value=np.nan)
        np.testing.assert_allclose(out[name].to_numpy(), _finite_reference(values), rtol=1e-10, atol=1e-12)
        # Infinities stay infinities with their sign; no finite row becomes NaN.
        assert (out[name][np.isposinf(values)] == np.inf).all() and (out[name][np.isneginf(values)] == -np.inf).all()
        assert out[name].isna().tolist() == np.isnan(values).tolist()
    op = wf.ops[0]
    finite = frame["x"][np.isfinite(frame["x"])]
    assert op.means_["x"] == pytest.approx(finite.mean(), rel=1e-12)
    assert op.stds_["x"] == pytest.approx(finite.std(ddof=1), rel=1e-12)
    # Served rows: an infinity unseen at fit time stays one too.
    served = wf.transform(pd.DataFrame({"x": [np.inf, -np.inf, op.means_["x"]], "i": [1, 2, 3], "const": [2.0, 3.0, -np.inf]}))
    assert served["x"].tolist() == [np.inf, -np.inf, 0.0] and served["const"].tolist() == [0.0, 1.0, -np.inf]


def test_column_without_finite_values_warns_and_is_null():
    train = pd.DataFrame({"x": [1.0, 2.0], "inf": [np.inf, -np.inf]})
    with pytest.warns(UserWarning, match=r"Normalize: column\(s\) \['inf'\] held no finite value"):
        wf = nvt.Workflow(["x", "inf"] >> ops.Normalize()).fit(train)
    assert wf.transform(train)["inf"].isna().all()


def _lists(rows, value_type=pa.float64()):  # noqa: B008 - a pyarrow type is an immutable value
    return pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(value_type))))


def test_list_columns_are_normalised_element_wise(to_engine):
    # NVTabular 23.08 flattens a list column, fits and applies the statistics on its elements.
    rows = [[1.0, 2.0], None, [], [3.0, None, 6.0]]
    frame = pd.DataFrame({"l": _lists(rows)})
    wf = nvt.Workflow(["l"] >> ops.Normalize())
    out = to_host(wf.fit_transform(to_engine(frame)))
    flat = pd.Series([1.0, 2.0, 3.0, np.nan, 6.0])
    mean, std = flat.mean(), flat.std(ddof=1)
    assert wf.ops[0].means == {"l": pytest.approx(mean)} and wf.ops[0].stds == {"l": pytest.approx(std)}
    got = [list(r) for r in out["l"].tolist()]
    expected = [[(1 - mean) / std, (2 - mean) / std], [], [], [(3 - mean) / std, None, (6 - mean) / std]]
    assert [len(r) for r in got] == [len(r) for r in expected]
    for g_row, e_row in zip(got, expected):
        for g, e in zip(g_row, e_row):
            assert (g is None or np.isnan(g)) if e is None else g == pytest.approx(e)
    assert wf.output_schema["l"].dtype == "list<float64>"


@pytest.mark.parametrize("op", [ops.Normalize(), ops.Normalize(out_dtype="float32"), ops.NormalizeMinMax(), ops.NormalizeMinMax(out_dtype="float32")], ids=repr)
def test_a_dict_of_arrays_transforms_as_the_frame_does(frame, op):
    # NVTabular's Normalize ops declared CPU_DICT_ARRAY / GPU_DICT_ARRAY: op.transform of a
    # dict of arrays (its Triton path) gives a dict of the selected columns.
    frame = frame.assign(f=frame["x"].fillna(0.0).to_numpy(), j=np.arange(len(frame)), z=np.where(np.arange(len(frame)) < 3, 0.0, 4.0))
    frame.loc[5, "z"] = np.inf
    names = ["f", "j", "const", "z"]
    workflow = nvt.Workflow(names >> op)
    expected = workflow.fit_transform(frame)
    fitted = workflow.output_node.op
    selector = nvt.ColumnSelector(names)
    arrays = {name: frame[name].to_numpy() for name in names} | {"unselected": np.zeros(len(frame))}
    for request in (arrays, {name: values.tolist() for name, values in arrays.items()}):
        out = fitted.transform(selector, request)
        assert list(out) == names
        for name in names:
            assert isinstance(out[name], np.ndarray) and out[name].dtype == expected[name].dtype, name
            assert out[name].tobytes() == expected[name].to_numpy().tobytes(), name
