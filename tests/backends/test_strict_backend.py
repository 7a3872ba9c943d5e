"""The strict engine: the pandas engine whose engine arrays follow CuPy's rules.

Each rule against a NumPy reference of the same values, so that code that passes here does on
cuDF what it does on pandas, and code that mixes host and device arrays fails here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabflow.backends import backend_for, get_backend, strict_engine
from tabflow.backends.strict_backend import BACKEND, DeviceArray


@pytest.fixture
def values():
    return BACKEND.column_values(pd.Series([1.0, None, 3.0, np.inf]), "float64", na_value=np.nan)


def test_the_switch_gives_pandas_objects_the_strict_engine_and_leaves_host_arrays_host():
    frame = pd.DataFrame({"a": [1]})
    before = backend_for(frame)  # the plain pandas engine, unless the suite runs on the strict one
    with strict_engine():
        with strict_engine():  # blocks nest
            assert backend_for(frame) is BACKEND
        assert backend_for(frame["a"]) is BACKEND
        assert backend_for(np.arange(2)) is get_backend("pandas")
        assert get_backend("pandas") is not BACKEND  # the host engine stays the host engine
    assert backend_for(frame) is before
    assert backend_for(DeviceArray(np.arange(2))) is BACKEND


def test_computations_on_device_arrays_match_numpy(values):
    reference = np.array([1.0, np.nan, 3.0, np.inf])
    values = values[~BACKEND.xp.isinf(values)]
    reference = reference[~np.isinf(reference)]
    xp = BACKEND.xp
    finite = values[xp.isfinite(values)]
    assert isinstance(finite, DeviceArray) and BACKEND.to_host(finite).tolist() == [1.0, 3.0]
    total = finite.sum()
    assert isinstance(total, DeviceArray) and total.ndim == 0 and float(total) == 4.0  # reductions are 0-d, as CuPy's
    assert BACKEND.to_host(xp.where(xp.isnan(values), -1.0, values * 2)).tolist() == [2.0, -1.0, 6.0]
    assert BACKEND.to_host(np.cumsum(finite)).tolist() == np.cumsum(reference[np.isfinite(reference)]).tolist()
    assert int(finite.astype("int64")[0]) == 1 and values.shape == (3,) and len(values) == 3
    assert BACKEND.to_host(BACKEND.from_host(reference)).tolist()[::2] == [1.0, 3.0]


@pytest.mark.parametrize(
    "mix",
    [
        lambda xp, d, h: xp.isfinite(h),  # a host array given to the device's functions
        lambda xp, d, h: d + h,  # an operator mixing the two
        lambda xp, d, h: np.concatenate([d, h]),  # a NumPy function given both
        lambda xp, d, h: d.take(h),  # a device array's method given a host array
    ],
)
def test_mixing_host_and_device_arrays_is_the_error_cupy_raises(values, mix):
    with pytest.raises(TypeError, match="host \\(NumPy\\) array"):
        mix(BACKEND.xp, values, np.arange(4))


def test_no_implicit_move_to_the_host_outside_pandas(values):
    with pytest.raises(TypeError, match="implicitly"):
        np.asarray(values)
    import pyarrow as pa

    with pytest.raises((TypeError, pa.ArrowInvalid)):  # as pyarrow refuses a CuPy array
        pa.array(values)
    # pandas objects take device arrays, as cuDF's take CuPy arrays; host index arrays are accepted.
    series = BACKEND.series(values, name="x")
    assert series.iloc[0] == 1.0 and len(pd.Series(values)) == 4
    assert BACKEND.to_host(values[np.array([0, 2])]).tolist() == [1.0, 3.0]


def test_engine_array_methods_return_device_arrays_and_take_them_back():
    import pyarrow as pa

    frame = pd.DataFrame({"k": ["a", None, "b"], "l": pd.Series([[1, 2], None, [3]], dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
    for array in (BACKEND.null_mask(frame["k"]), BACKEND.hash_values(frame["k"]), BACKEND.list_offsets(frame["l"]),
                  BACKEND.list_lengths(frame["l"]), BACKEND.columns_matrix(pd.DataFrame({"a": [1, 2]}), ["a"], "int64")):
        assert isinstance(array, DeviceArray)
    pandas = get_backend("pandas")
    assert BACKEND.to_host(BACKEND.list_offsets(frame["l"])).tolist() == pandas.list_offsets(frame["l"]).tolist() == [0, 2, 2, 3]
    assert BACKEND.to_host(BACKEND.hash_values(frame["k"])).tolist() == pandas.hash_values(frame["k"]).tolist()
    rebuilt = BACKEND.list_from_values_offsets(DeviceArray(np.array([5, 6])), BACKEND.list_offsets(pd.Series([[1], [2]], dtype=frame["l"].dtype)))
    assert [list(v) for v in rebuilt] == [[5], [6]]
    assert BACKEND.take_rows(pd.DataFrame({"a": [1, 2, 3]}), DeviceArray(np.array([2, 0])))["a"].tolist() == [3, 1]


# ------------------------------------------------------------------- cuDF's frame rules
def _as_tabflow_code(source: str, module: str = "tabflow.ops._strict_probe", **names):
    """Run ``source`` as code of a tabflow module (the rules look at their caller's module)
    and return its ``result``."""
    scope = {"__name__": module, "pd": pd, "np": np, "BACKEND": BACKEND, **names}
    exec(compile(source, f"<{module}>", "exec"), scope)
    return scope["result"]


def test_ops_see_no_masked_dtypes_as_on_cudf():
    masked = pd.Series([1, None], dtype="Int64").dtype
    assert _as_tabflow_code("result = BACKEND.canonical_dtype(dtype)", dtype=masked) == "int64"
    assert _as_tabflow_code("result = BACKEND.canonical_dtype(dtype)", dtype=pd.BooleanDtype()) == "bool"
    # The layers that plan dtypes (readers, the schema pass) keep the nullable-integer rule.
    assert _as_tabflow_code("result = BACKEND.canonical_dtype(dtype)", "tabflow.io.dataset", dtype=masked) == "Int64"
    assert BACKEND.canonical_dtype(masked) == "Int64" and BACKEND.column_dtype(pd.Series([1, None], dtype="Int64")) == "Int64"


@pytest.mark.parametrize(
    "values, dtype, fill",
    [([1, None], "Int64", 0.5), ([True, None], "boolean", 2), ([True, None], "boolean", 1), ([1, None], "Int8", 300),
     ([1, None], "UInt32", -1), ([1.5, None], "float32", True)],
)
def test_fills_a_column_cannot_hold_are_refused_as_on_cudf(values, dtype, fill):
    series = pd.Series(values, dtype=dtype)
    with pytest.raises(TypeError, match="Cannot safely cast non-equivalent"):
        BACKEND.fill_nulls(series, fill, "float64")
    # cuDF checks only a column that has nulls to fill; the pandas engine fills either way.
    assert BACKEND.fill_nulls(series.dropna(), fill, "float64").tolist() == series.dropna().astype("float64").tolist()


@pytest.mark.parametrize(
    "values, dtype, fill, canonical, expected",
    [([1, None], "Int64", 2.0, "int64", [1, 2]), ([True, None], "boolean", False, "bool", [True, False]),
     ([1.5, None], "float32", 7, "float32", [1.5, 7.0]), ([1, None], "Int8", 127, "int8", [1, 127]),
     (["a", None], "string", "z", "string", ["a", "z"])],
)
def test_fills_a_column_holds_exactly_are_made(values, dtype, fill, canonical, expected):
    assert BACKEND.fill_nulls(pd.Series(values, dtype=dtype), fill, canonical).tolist() == expected


def test_frames_of_repeated_labels_take_only_series_on_their_own_index():
    frame = pd.DataFrame({"a": [1, 2, 3], "b": [4.0, 5.0, 6.0]}, index=[0, 0, 1])
    built = BACKEND.frame_from_dict({"a": frame["a"] * 2, "b": BACKEND.to_float(frame["b"], "float64")}, index=frame.index)
    assert built["a"].tolist() == [2, 4, 6] and built.index.tolist() == [0, 0, 1]
    same_labels = frame["a"].set_axis(pd.Index([0, 0, 1]))  # equal labels, another index: cuDF reindexes
    with pytest.raises(ValueError, match="duplicate labels.*\\['a'\\]"):
        BACKEND.frame_from_dict({"a": same_labels, "b": frame["b"]}, index=frame.index)
    # Unique labels are aligned as pandas and cuDF align them.
    unique = pd.DataFrame({"a": [1, 2]}, index=[5, 6])
    assert BACKEND.frame_from_dict({"a": unique["a"].iloc[::-1]}, index=unique.index)["a"].tolist() == [1, 2]


def test_group_and_merge_rows_come_in_no_particular_order_to_tabflow_code():
    frame = pd.DataFrame({"k": [2, 1, 2, 3], "x": [1.0, 2.0, 3.0, 4.0]})
    right = pd.DataFrame({"k": [3, 2, 1], "y": ["c", "b", "a"]})
    already_on = backend_for(frame) is BACKEND  # the suite run with --strict-engine
    with strict_engine():
        code = "result = (frame.groupby('k', sort=False)['x'].sum().index.tolist(), frame.merge(right, on='k')['y'].tolist())"
        groups, merged = _as_tabflow_code(code, frame=frame, right=right)
        assert groups == [3, 1, 2] and merged == ["c", "b", "a", "b"]  # reversed: not first appearance, not left order
        sorted_groups = _as_tabflow_code("result = frame.groupby('k', sort=True)['x'].sum().index.tolist()", frame=frame)
        assert sorted_groups == [1, 2, 3]
        # Other callers (tests, the backends, pandas itself) get pandas' order.
        assert frame.groupby("k", sort=False)["x"].sum().index.tolist() == [2, 1, 3]
        assert _as_tabflow_code(code, "tabflow.backends.pandas_backend", frame=frame, right=right)[0] == [2, 1, 3]
    # The rules end with the outermost block.
    assert _as_tabflow_code(code, frame=frame, right=right)[0] == ([3, 1, 2] if already_on else [2, 1, 3])


def test_list_casts_are_refused_outside_the_backends():
    import pyarrow as pa

    lists = pd.Series([[1, 2], None], dtype=pd.ArrowDtype(pa.list_(pa.int32())))
    wider = pd.ArrowDtype(pa.list_(pa.int64()))
    with strict_engine():
        with pytest.raises(NotImplementedError, match="Casting list<item: int32>.*backend.astype"):
            _as_tabflow_code("result = lists.astype(wider)", lists=lists, wider=wider)
        assert _as_tabflow_code("result = lists.astype(lists.dtype)", lists=lists).dtype == lists.dtype
        assert BACKEND.astype(lists, "list<int64>").dtype == wider  # the backend casts lists on either engine


def test_xp_has_only_what_cupy_has():
    from tabflow.backends.strict_backend import CUPY_NAMES

    xp = BACKEND.xp
    for name in ("insert", "nanpercentile", "geomspace", "busday_count"):
        assert name not in CUPY_NAMES
        with pytest.raises(AttributeError, match=f"{name}\\(\\) is not in CuPy's namespace"):
            getattr(xp, name)
    assert int(xp.searchsorted(DeviceArray(np.array([1, 3])), 2)) == 1 and xp.int64 is np.int64
    assert isinstance(xp.random.default_rng, object)  # submodules are NumPy's whole
    assert len(CUPY_NAMES) > 400 and {"where", "cumsum", "isnan", "unique", "bincount"} <= CUPY_NAMES
