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
