"""The stable hash: xxHash64 (seed 0) checked against the reference xxhash package.

The kernel is compared with the package where it is installed (the ``dev`` extra); the
columns' hashes, on every engine, with the package or with the kernel so checked
(``_op_helpers.xxh64``), so that they run without it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import dataset_with_empty_partitions, to_host, xxh64

import tabflow as nvt
from tabflow import ops
from tabflow.backends import _hashing, get_backend

NULL = 2**64 - 1
STRINGS = [
    "",
    "a",
    "abc",
    "criteo",
    "é",
    "héllo wörld ✓ 日本語",
    "🙂" * 3,
    "x" * 31,
    "y" * 32,
    "z" * 33,
    "0123456789abcdef" * 9 + "tail",
]
INTS = [0, 1, -1, 42, -42, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 123456789012345]


def ref_string(value):
    return NULL if value is None else xxh64(value.encode("utf-8"))


def ref_int(value):
    return NULL if value is None else xxh64(int(value).to_bytes(8, "little", signed=True))


@pytest.mark.parametrize("value", STRINGS)
def test_bytes_kernel_matches_reference(value):
    xxhash = pytest.importorskip("xxhash")  # the reference package itself (the dev extra)
    data = value.encode("utf-8")
    assert _hashing.xxh64_bytes(data) == xxhash.xxh64_intdigest(data, 0)
    assert _hashing.xxh64_bytes(data, seed=12345) == xxhash.xxh64_intdigest(data, 12345)


def test_every_length_up_to_100_matches_reference():
    # Covers each tail path (8-, 4- and 1-byte steps) with and without the 32-byte stripes.
    xxhash = pytest.importorskip("xxhash")
    rng = np.random.default_rng(0)
    blob = rng.integers(0, 256, 100, dtype=np.uint8).tobytes()
    for n in range(101):
        assert _hashing.xxh64_bytes(blob[:n]) == xxhash.xxh64_intdigest(blob[:n], 0), n


def test_string_column_matches_reference(backend, to_engine):
    values = [*STRINGS, None]
    frame = pd.DataFrame({"s": pd.array(values, dtype="string")})
    hashed = backend.to_host(backend.hash_values(to_engine(frame)["s"]))
    assert np.asarray(hashed, dtype=np.uint64).tolist() == [ref_string(v) for v in values]


def test_string_storages_agree():
    backend = get_backend("pandas")
    values = ["b", None, "a", "", "ü"]
    expected = [ref_string(v) for v in values]
    variants = [
        pd.Series(values, dtype="string[pyarrow]"),
        pd.Series(values, dtype="string[python]"),
        pd.Series(values, dtype=object),
        pd.Series(values, dtype="category"),
        pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, pa.large_string()))),
    ]
    for series in variants:
        assert backend.hash_values(series).tolist() == expected, series.dtype
    # A slice of an Arrow array has a non-zero offset into the shared buffers.
    sliced = pd.Series(values, dtype="string[pyarrow]").iloc[2:]
    assert backend.hash_values(sliced).tolist() == expected[2:]


def test_integer_columns_match_reference(backend, to_engine):
    frame = pd.DataFrame({"i": pd.array([*INTS, None], dtype="Int64")})
    hashed = backend.to_host(backend.hash_values(to_engine(frame)["i"]))
    assert np.asarray(hashed, dtype=np.uint64).tolist() == [ref_int(v) for v in [*INTS, None]]


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32", "Int16", "UInt64"])
def test_integers_of_any_width_hash_their_int64_value(dtype):
    values = [0, 1, 7, 100]
    series = pd.Series(values, dtype=dtype)
    assert get_backend("pandas").hash_values(series).tolist() == [ref_int(v) for v in values]


def test_uint64_beyond_int64_keeps_its_bits():
    series = pd.Series(np.array([2**64 - 1, 2**63], dtype=np.uint64))
    assert get_backend("pandas").hash_values(series).tolist() == [ref_int(-1), ref_int(-(2**63))]


def test_bools_and_floats():
    backend = get_backend("pandas")
    assert backend.hash_values(pd.Series([True, False])).tolist() == [ref_int(1), ref_int(0)]
    floats = pd.Series([3.0, -0.0, 2.5, np.nan, -7.0])
    bits = np.array([2.5]).view(np.int64)[0]
    assert backend.hash_values(floats).tolist() == [ref_int(3), ref_int(0), ref_int(bits), NULL, ref_int(-7)]
    # A float column read from data with nulls hashes like the integer column.
    ints = pd.Series([3, None, -7], dtype="Int64")
    assert backend.hash_values(ints).tolist() == backend.hash_values(pd.Series([3.0, np.nan, -7.0])).tolist()


def test_unsupported_values_raise_naming_the_column():
    backend = get_backend("pandas")
    with pytest.raises(TypeError, match="'when'"):
        backend.hash_values(pd.Series(pd.to_datetime(["2020-01-01"]), name="when"))
    with pytest.raises(TypeError, match="'mixed'"):
        backend.hash_values(pd.Series([1, "a"], dtype=object, name="mixed"))


def test_hash_combine_is_order_dependent_and_wraps():
    a = np.array([1, 2**64 - 1], dtype=np.uint64)
    b = np.array([2, 3], dtype=np.uint64)
    ab, ba = _hashing.hash_combine(a, b), _hashing.hash_combine(b, a)
    assert ab.dtype == np.uint64 and (ab != ba).all()
    expected = [(int(x) ^ ((int(y) + 0x9E3779B97F4A7C15 + (int(x) << 6) + (int(x) >> 2)) % 2**64)) for x, y in zip(a, b)]
    assert ab.tolist() == expected


def test_buckets_do_not_depend_on_partitioning(rng):
    n = 500
    strings = rng.choice(["u%d" % i for i in range(50)], n).astype(object)
    strings[rng.integers(0, n, 20)] = None
    frame = pd.DataFrame({"s": pd.array(strings, dtype="string"), "i": rng.integers(-(10**12), 10**12, n)})
    workflow = nvt.Workflow(["s", "i"] >> ops.HashBucket(97))
    one = to_host(workflow.fit_transform(nvt.Dataset(frame, npartitions=1)).compute())
    many = to_host(workflow.fit_transform(nvt.Dataset(frame, npartitions=7)).compute())
    gaps = to_host(workflow.fit_transform(dataset_with_empty_partitions(frame, 5)).compute())
    pd.testing.assert_frame_equal(one, many)
    pd.testing.assert_frame_equal(one, gaps)
    expected = [ref_string(v if isinstance(v, str) else None) % 97 for v in strings]
    assert one["s"].tolist() == expected


FLOATS = [
    0.0, -0.0, 3.0, -7.0, 10.0, 10.5, 10.9, -10.5, 0.1, 1e-300, 5e-324, 2.0**52 + 0.5, 2.0**62,
    -(2.0**63), 2.0**63, 1.5e300, -1.5e300, np.inf, -np.inf, np.nan,
]


def ref_float(value):
    """The documented rule: NaN is null; an integral float in the int64 range hashes as that
    integer (-0.0 as 0); anything else (fractions, +/-inf, |x| >= 2**63) hashes the 8
    little-endian bytes of its IEEE-754 float64."""
    import struct

    if value is None or np.isnan(value):
        return NULL
    if np.isfinite(value) and value == np.floor(value) and -(2.0**63) <= value < 2.0**63:
        return ref_int(int(value))
    return xxh64(struct.pack("<d", value))


def test_float_columns_match_reference(backend, to_engine):
    frame = pd.DataFrame({"f": FLOATS})
    hashed = np.asarray(backend.to_host(backend.hash_values(to_engine(frame)["f"])), dtype=np.uint64).tolist()
    assert hashed == [ref_float(v) for v in FLOATS]
    # Non-integral floats no longer share a bucket with their integer part.
    assert len({hashed[FLOATS.index(v)] for v in (10.0, 10.5, 10.9)}) == 3
    assert hashed[FLOATS.index(10.0)] == ref_int(10) and hashed[FLOATS.index(-0.0)] == ref_int(0)


@pytest.mark.parametrize("dtype", ["float32", "Float64", "float64[pyarrow]"])
def test_float_dtypes_hash_their_float64_value(dtype):
    values = [10.5, 0.1, None, -3.0, float("inf")]
    series = pd.Series(values, dtype=dtype)
    # float32 values are widened to float64 first: float32 0.1 is 0.10000000149011612.
    widened = [None if v is None else float(np.float32(v)) if dtype == "float32" else v for v in values]
    assert get_backend("pandas").hash_values(series).tolist() == [ref_float(v) for v in widened]


def test_hash_buckets_of_floats_do_not_depend_on_the_rest_of_the_batch():
    # Fitted on integers; the served batch is a float column whose other values differ.
    workflow = nvt.Workflow(["x"] >> ops.HashBucket(1000)).fit(pd.DataFrame({"x": [10, 11, 12]}))
    expected = {v: ref_float(v) % 1000 for v in (10.0, 10.5, 10.9)}
    for batch in ([10.0, 10.5, 10.9], [10.0, 10.5], [10.5, np.nan], [10.9], [10.0], [10.0, np.inf], [10.5, 11.0]):
        out = workflow.transform(pd.DataFrame({"x": batch}))["x"].tolist()
        for value, bucket in zip(batch, out):
            if value in expected:
                assert bucket == expected[value], (batch, value)
    assert workflow.transform(pd.DataFrame({"x": [10]}))["x"].tolist() == [expected[10.0]]
