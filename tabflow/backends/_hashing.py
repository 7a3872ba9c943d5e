"""The one stable hash of tabflow: xxHash64 over a documented byte form of each value.

Hash ops (HashBucket, HashedCross, hashed out-of-vocabulary buckets) must give the same
bucket for the same value on every run, machine, partitioning and engine, so they never use
Python's salted ``hash`` or pandas' ``hash_pandas_object``. Every value is hashed as follows:

- **strings**: xxHash64 (seed :data:`SEED` = 0) of the value's UTF-8 bytes; the empty string
  hashes the empty byte sequence.
- **integers and booleans** of any width: widened to int64 (uint64 values above the int64
  range keep their bit pattern), then xxHash64 of the 8 little-endian bytes.
- **floats** (float32 widened to float64 first): an integral value in the int64 range
  hashes exactly as that integer, so ``3.0`` and ``3`` share a bucket whichever dtype a
  column was read with (``-0.0`` and ``0.0`` are the integer ``0``). Every other value -- a
  fraction such as ``10.5``, ``+inf``, ``-inf``, a magnitude of ``2**63`` or more -- is
  xxHash64 of the 8 little-endian bytes of its IEEE-754 float64, so ``10.0``, ``10.5`` and
  ``10.9`` hash differently. ``NaN`` is a null. A float's hash never depends on the other
  values of its column or batch.
- **nulls** (None, NA, NaN) hash to :data:`NULL_HASH` = 2**64 - 1, the value cuDF's
  ``hash_values(method="xxhash64")`` gives a null, so a null lands in a fixed bucket
  (``NULL_HASH % num_buckets``) on both engines.

For a single string or int64 column this is exactly what libcudf's ``xxhash_64`` computes
(the value's bytes through standard XXH64 with the given seed, ``2**64 - 1`` for a null),
so ``Series.hash_values(method="xxhash64", seed=0)`` on an int64-widened or string cuDF
column gives the same numbers. The host kernels below are numba-compiled loops over
Arrow's string offsets and bytes: no Python call per value.

Crosses combine per-column hashes with :func:`hash_combine` (order-dependent).

The kernels belong to the engine layer: ops get hashes from ``backend.hash_values`` and
only combine them (HashedCross, multi-column Categorify keys) with :func:`hash_combine`.

Examples
--------
>>> from tabflow.backends._hashing import xxh64_bytes
>>> hex(xxh64_bytes(b""))
'0xef46db3751d8e999'
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

__all__ = [
    "SEED",
    "NULL_HASH",
    "xxh64_bytes",
    "hash_string_buffers",
    "hash_int64",
    "float_keys",
    "hash_combine",
]

#: Seed of every tabflow hash (changing it would change every bucket).
SEED = 0
#: Hash of a null value (matches cuDF's xxhash64 of a null).
NULL_HASH = np.uint64(0xFFFFFFFFFFFFFFFF)

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


# numba keeps these arithmetic in uint64 only if every operand is uint64: a plain Python int
# mixed with uint64 would promote to float64, so every constant and shift is typed.
@numba.njit(inline="always", cache=True)
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@numba.njit(inline="always", cache=True)
def _round(acc, lane):
    acc = acc + lane * _P2
    acc = _rotl(acc, 31)
    return acc * _P1


@numba.njit(inline="always", cache=True)
def _merge_round(acc, val):
    acc = acc ^ _round(np.uint64(0), val)
    return acc * _P1 + _P4


@numba.njit(inline="always", cache=True)
def _avalanche(h):
    h = h ^ (h >> np.uint64(33))
    h = h * _P2
    h = h ^ (h >> np.uint64(29))
    h = h * _P3
    return h ^ (h >> np.uint64(32))


# Byte reads index with uint64: numba wraps a negative signed index around (a compare and an
# add per byte), which keeps LLVM from fusing the eight byte loads into one word load.
# Unsigned, a read is one load: xxHash64 of 50-byte strings ran in half the time.
@numba.njit(inline="always", cache=True)
def _read64(data, pos):
    # The eight bytes at ``pos`` as a little-endian integer.
    value = np.uint64(0)
    at = np.uint64(pos)
    for k in range(8):
        value |= np.uint64(data[at + np.uint64(k)]) << np.uint64(8 * k)
    return value


@numba.njit(inline="always", cache=True)
def _read32(data, pos):
    value = np.uint64(0)
    at = np.uint64(pos)
    for k in range(4):
        value |= np.uint64(data[at + np.uint64(k)]) << np.uint64(8 * k)
    return value


@numba.njit(cache=True)
def _xxh64(data, start, length, seed):
    pos = start
    end = start + length
    if length >= 32:
        v1 = seed + _P1 + _P2
        v2 = seed + _P2
        v3 = seed
        v4 = seed - _P1
        limit = end - 32
        while pos <= limit:
            v1 = _round(v1, _read64(data, pos))
            v2 = _round(v2, _read64(data, pos + 8))
            v3 = _round(v3, _read64(data, pos + 16))
            v4 = _round(v4, _read64(data, pos + 24))
            pos += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge_round(h, v1)
        h = _merge_round(h, v2)
        h = _merge_round(h, v3)
        h = _merge_round(h, v4)
    else:
        h = seed + _P5
    h = h + np.uint64(length)
    while pos + 8 <= end:
        h = h ^ _round(np.uint64(0), _read64(data, pos))
        h = _rotl(h, 27) * _P1 + _P4
        pos += 8
    if pos + 4 <= end:
        h = h ^ (_read32(data, pos) * _P1)
        h = _rotl(h, 23) * _P2 + _P3
        pos += 4
    while pos < end:
        h = h ^ (np.uint64(data[np.uint64(pos)]) * _P5)
        h = _rotl(h, 11) * _P1
        pos += 1
    return _avalanche(h)


@numba.njit(cache=True)
def _hash_strings(data, offsets, valid, seed, null_hash):
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        if valid[i]:
            out[i] = _xxh64(data, offsets[i], offsets[i + 1] - offsets[i], seed)
        else:
            out[i] = null_hash
    return out


@numba.njit(cache=True)
def _hash_int64(values, valid, seed, null_hash):
    # The 8-byte case of _xxh64 unrolled: one lane, no stripe loop, no byte assembly.
    out = np.empty(values.shape[0], dtype=np.uint64)
    base = seed + _P5 + np.uint64(8)
    for i in range(values.shape[0]):
        if valid[i]:
            h = base ^ _round(np.uint64(0), np.uint64(values[i]))
            out[i] = _avalanche(_rotl(h, 27) * _P1 + _P4)
        else:
            out[i] = null_hash
    return out


def xxh64_bytes(data: bytes, seed: int = SEED) -> int:
    """xxHash64 of one byte string, as a Python int (for documentation and tests).

    Examples
    --------
    >>> from tabflow.backends._hashing import xxh64_bytes
    >>> xxh64_bytes("é".encode()) == xxh64_bytes(b"\\xc3\\xa9")
    True
    """
    buffer = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, dtype=np.uint8)
    return int(_xxh64(buffer, 0, len(data), np.uint64(seed)))


def hash_string_buffers(data: np.ndarray, offsets: np.ndarray, valid: np.ndarray, seed: int = SEED) -> np.ndarray:
    """Hash of each string given Arrow-style buffers.

    Parameters
    ----------
    data : uint8 array
        The concatenated UTF-8 bytes.
    offsets : int64 array, length n + 1
        String ``i`` is ``data[offsets[i]:offsets[i + 1]]``.
    valid : bool array, length n
        False where the value is null (its hash is :data:`NULL_HASH`).

    Returns
    -------
    numpy.ndarray of uint64

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends._hashing import hash_string_buffers, xxh64_bytes
    >>> h = hash_string_buffers(np.frombuffer(b"abc", np.uint8), np.array([0, 1, 3]), np.array([True, True]))
    >>> int(h[1]) == xxh64_bytes(b"bc")
    True
    """
    data = np.ascontiguousarray(data, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    valid = np.ascontiguousarray(valid, dtype=np.bool_)
    return _hash_strings(data, offsets, valid, np.uint64(seed), NULL_HASH)


def hash_int64(values: np.ndarray, valid: np.ndarray | None = None, seed: int = SEED) -> np.ndarray:
    """Hash of each int64 value (its 8 little-endian bytes); invalid entries get NULL_HASH.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends._hashing import hash_int64, xxh64_bytes
    >>> int(hash_int64(np.array([-1]))[0]) == xxh64_bytes(b"\\xff" * 8)
    True
    """
    values = np.asarray(values)
    # uint64 keeps its bit pattern; every narrower integer (and bool) widens by value.
    values = values.view(np.int64) if values.dtype == np.uint64 else values.astype(np.int64, copy=False)
    values = np.ascontiguousarray(values)
    if valid is None:
        valid = np.ones(values.shape[0], dtype=np.bool_)
    return _hash_int64(values, np.ascontiguousarray(valid, dtype=np.bool_), np.uint64(seed), NULL_HASH)


def float_keys(values: Any, xp: Any = np) -> tuple[Any, Any]:
    """int64 keys of float values (integral -> the integer, else the float64 bit pattern).

    The bit pattern as int64 is the float64's 8 little-endian bytes, so hashing a key with
    :func:`hash_int64` is xxHash64 of those bytes. Infinities and magnitudes of ``2**63`` or
    more are not integral here. Works on numpy or cupy arrays (``xp``). Returns
    ``(keys, valid)``; NaN is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends._hashing import float_keys
    >>> keys, valid = float_keys(np.array([3.0, -0.0, np.nan, 10.5]))
    >>> keys[:2].tolist(), valid.tolist(), bool(keys[3] == np.array([10.5]).view(np.int64)[0])
    ([3, 0], [True, True, False, True], True)
    """
    values = xp.asarray(values, dtype=xp.float64)
    valid = ~xp.isnan(values)
    # 2**63 itself does not fit int64, so the upper bound is strict.
    integral = valid & (xp.floor(values) == values) & (values >= -(2.0**63)) & (values < 2.0**63)
    safe = xp.where(integral, values, 0.0)
    keys = xp.where(integral, safe.astype(xp.int64), values.view(xp.int64))
    return keys, valid


def hash_combine(seed: Any, value: Any) -> Any:
    """Order-dependent mix of two uint64 hash arrays (numpy or cupy), for crosses.

    ``seed ^ (value + 0x9E3779B97F4A7C15 + (seed << 6) + (seed >> 2))`` with wrap-around
    uint64 arithmetic: the 64-bit form of the classic ``hash_combine``. A cross of columns
    ``a, b, c`` is ``hash_combine(hash_combine(h(a), h(b)), h(c))``.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends._hashing import hash_combine
    >>> a, b = np.array([1], np.uint64), np.array([2], np.uint64)
    >>> bool(hash_combine(a, b)[0] != hash_combine(b, a)[0])
    True
    """
    return seed ^ (value + _GOLDEN + (seed << np.uint64(6)) + (seed >> np.uint64(2)))
