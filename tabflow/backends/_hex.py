"""Compiled hexadecimal parsing over Arrow string buffers (numba, loaded on first use).

The engine kernel behind ``hex_to_int`` (:mod:`tabflow.ops.hex_to_int`, CSV ``hex_columns``):
kept in its own module, imported by the pandas backend on first use, so that importing
tabflow does not import numba.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["parse_hex_buffers"]


@numba.njit(cache=True)
def _digit(c):
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


@numba.njit(cache=True)
def _parse_hex(data, offsets, valid):
    n = offsets.shape[0] - 1
    out = np.zeros(n, dtype=np.int64)
    present = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        start = offsets[i]
        end = offsets[i + 1]
        if not valid[i] or start == end:
            continue
        if end - start >= 2 and data[start] == 48 and (data[start + 1] == 120 or data[start + 1] == 88):
            start += 2
        if start == end or end - start > 16:
            return out, present, i
        acc = np.uint64(0)
        for j in range(start, end):
            d = _digit(data[j])
            if d < 0:
                return out, present, i
            acc = (acc << np.uint64(4)) | np.uint64(d)
        out[i] = np.int64(acc)
        present[i] = True
    return out, present, -1


def parse_hex_buffers(data: np.ndarray, offsets: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Parse Arrow-style string buffers as hex: ``(int64 values, present mask, bad row)``.

    ``bad row`` is the position of the first value that is not hex, or -1.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends._hex import parse_hex_buffers
    >>> values, present, bad = parse_hex_buffers(np.frombuffer(b"ffzz", np.uint8), np.array([0, 2, 4]), np.ones(2, bool))
    >>> int(values[0]), bad
    (255, 1)
    """
    values, present, bad = _parse_hex(
        np.ascontiguousarray(data, dtype=np.uint8),
        np.ascontiguousarray(offsets, dtype=np.int64),
        np.ascontiguousarray(valid, dtype=np.bool_),
    )
    return values, present, int(bad)
