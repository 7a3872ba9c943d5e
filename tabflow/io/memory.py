"""Freed partition buffers go back to the operating system (glibc's ``malloc``).

glibc serves an allocation of at least ``M_MMAP_THRESHOLD`` bytes with a mapping of its own,
unmapped when it is freed. The threshold starts at 128 KiB, but by default it rises to the
size of each such block freed (up to 32 MiB): once the first partition's columns have been
freed, the next partitions' columns (a few MB each) are carved out of the heaps instead,
where freed pages stay resident and the heaps of several threads fragment. Measured on the
Criteo ETL (``benchmarks/etl.py``), that added about 0.3 GB to the fit's peak resident
memory and 0.7 GB to the write's. Setting the threshold once, as :func:`keep_large_buffers_mapped`
does, keeps it where it is: buffers of a partition's size are mapped and unmapped, and
resident memory follows the partitions alive.

The setting is process-wide and is made by ``Workflow.fit`` and the parquet writer. The
environment variable ``TABFLOW_MMAP_THRESHOLD`` chooses the threshold in bytes (``0``:
leave the allocator as it is); a threshold given to glibc itself
(``MALLOC_MMAP_THRESHOLD_``) is left alone, as is any C library other than glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import threading

__all__ = ["keep_large_buffers_mapped", "DEFAULT_MMAP_THRESHOLD", "THRESHOLD_VARIABLE"]

#: Buffers of at least this many bytes are mapped on their own (a column of 128K int64 values).
DEFAULT_MMAP_THRESHOLD = 1 << 20
#: The environment variable that overrides :data:`DEFAULT_MMAP_THRESHOLD` (0 turns it off).
THRESHOLD_VARIABLE = "TABFLOW_MMAP_THRESHOLD"
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
_lock = threading.Lock()
_applied: int | None = None


def keep_large_buffers_mapped() -> int:
    """Fix glibc's mmap threshold (once per process); return the threshold set, or 0.

    Returns 0 where nothing was changed: not glibc, ``MALLOC_MMAP_THRESHOLD_`` set, or
    ``TABFLOW_MMAP_THRESHOLD=0``. A value of ``TABFLOW_MMAP_THRESHOLD`` that is not a
    number of bytes raises ValueError naming it.

    Examples
    --------
    >>> from tabflow.io.memory import keep_large_buffers_mapped
    >>> keep_large_buffers_mapped() in (0, 1 << 20)  # 0 off glibc
    True
    >>> keep_large_buffers_mapped() == keep_large_buffers_mapped()  # set once, then kept
    True
    """
    global _applied
    with _lock:
        if _applied is None:
            _applied = _apply(_threshold())
        return _applied


def _threshold() -> int:
    text = os.environ.get(THRESHOLD_VARIABLE)
    if text is None:
        return DEFAULT_MMAP_THRESHOLD
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"{THRESHOLD_VARIABLE} must be a number of bytes (0 to leave the allocator alone), got {text!r}")
    return value


def _apply(threshold: int) -> int:
    if not threshold or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return 0
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return 0
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return 0
    return threshold if libc.mallopt(_M_MMAP_THRESHOLD, ctypes.c_int(threshold)) == 1 else 0
