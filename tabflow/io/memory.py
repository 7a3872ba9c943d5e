"""Freed partition buffers go back to the operating system (glibc's ``malloc``).

glibc keeps memory freed by a program in its heaps, one per thread that allocated it, for
later allocations; only blocks of at least ``M_MMAP_THRESHOLD`` bytes get mappings of their
own, unmapped when freed. By default the threshold rises from 128 KiB to the size of each such
block freed (up to 32 MiB), so after the first partition a partition's columns (a few MB each)
come out of the heaps, and what one partition frees stays resident beside the next ones: on
the Criteo ETL (``benchmarks/etl.py``) about 0.3 GB more peak resident memory in the fit and
0.7 GB in the write. Mapping every buffer of 1 MiB or more instead returns it, but each new
buffer then costs a page fault per 4 KiB page: the same ETL took 20-25% longer.

So tabflow does both halves apart. :func:`keep_large_buffers_mapped` fixes the threshold at
32 MiB, glibc's own ceiling: a partition's columns and temporaries come from the heaps, where
memory freed within a partition is reused without faults. It also sets the size of free memory
at the top of a heap above which ``free`` hands it back (``M_TRIM_THRESHOLD``) to twice the
threshold, as glibc's dynamic rule does: fixing the threshold turns that rule off and leaves
128 KiB, so every free at the top of a heap gave back pages that the next allocation of the
partition faulted in again (a fifth of the page faults of the Criteo ETL's transform and
write). :func:`release_freed_memory`, called by the readers before each partition is read (by
the fit and again by the transform) and at the start of every fit task, hands the heaps' free
pages back (``malloc_trim``): resident memory follows the partitions and statistics alive.
:func:`release_arrow_memory`, at the start of every merge of a fit's statistics, hands back
what Arrow's memory pool keeps of the partitions read before it (the reads' buffers, which
the merges, in NumPy, never reuse): about 0.1 GB of the Criteo fit's peak at 10M rows. It is not
done per partition: there the pool's pages are reused by the next partition, and handing them
back made the transform 17-27% slower with its page faults.

``Workflow.fit`` and the parquet writer make the setting, once per process. The environment
variable ``TABFLOW_MMAP_THRESHOLD`` chooses the threshold in bytes (``0``: leave the allocator
as it is, and release nothing); a threshold given to glibc itself (``MALLOC_MMAP_THRESHOLD_``)
is left alone, as is any C library other than glibc, and so is a trim threshold given to glibc
(``MALLOC_TRIM_THRESHOLD_``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import threading

from tabflow.graph.executor import register_fit_task_hook

__all__ = ["keep_large_buffers_mapped", "release_freed_memory", "release_arrow_memory", "DEFAULT_MMAP_THRESHOLD", "THRESHOLD_VARIABLE"]

#: Buffers of at least this many bytes are mapped on their own (glibc's ceiling for its own
#: threshold: a column of 4 million int64 values).
DEFAULT_MMAP_THRESHOLD = 32 << 20
#: The environment variable that overrides :data:`DEFAULT_MMAP_THRESHOLD` (0 turns it off).
THRESHOLD_VARIABLE = "TABFLOW_MMAP_THRESHOLD"
_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_lock = threading.Lock()
_applied: int | None = None
_libc: ctypes.CDLL | None = None


def keep_large_buffers_mapped() -> int:
    """Fix glibc's mmap threshold (once per process); return the threshold set, or 0.

    Returns 0 where nothing was changed: not glibc, ``MALLOC_MMAP_THRESHOLD_`` set, or
    ``TABFLOW_MMAP_THRESHOLD=0``. A value of ``TABFLOW_MMAP_THRESHOLD`` that is not a
    number of bytes raises ValueError naming it.

    Examples
    --------
    >>> from tabflow.io.memory import keep_large_buffers_mapped
    >>> keep_large_buffers_mapped() in (0, 32 << 20)  # 0 off glibc
    True
    >>> keep_large_buffers_mapped() == keep_large_buffers_mapped()  # set once, then kept
    True
    """
    global _applied
    with _lock:
        if _applied is None:
            _applied = _apply(_threshold())
        return _applied


def release_freed_memory() -> bool:
    """Hand the memory the allocator holds free back to the operating system; True if it did.

    Does nothing (False) until :func:`keep_large_buffers_mapped` has set the threshold in this
    process, nor where it left the allocator alone. The readers call it before each partition,
    and every fit task as it starts: what earlier partitions and merges freed leaves resident
    memory before the next one allocates.

    Examples
    --------
    >>> from tabflow.io.memory import keep_large_buffers_mapped, release_freed_memory
    >>> release_freed_memory() == bool(keep_large_buffers_mapped())  # False off glibc
    True
    """
    if _libc is None:  # set only where a threshold was applied
        return False
    _libc.malloc_trim(0)
    return True


def release_arrow_memory() -> bool:
    """Hand the memory Arrow's default pool keeps free back to the operating system; True if
    it did.

    As :func:`release_freed_memory`, only where :func:`keep_large_buffers_mapped` set the
    allocator up in this process. Every merge of a fit's statistics calls it first.

    Examples
    --------
    >>> from tabflow.io.memory import keep_large_buffers_mapped, release_arrow_memory
    >>> release_arrow_memory() == bool(keep_large_buffers_mapped())  # False off glibc
    True
    """
    if _libc is None:  # set only where a threshold was applied
        return False
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    return True


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
    global _libc
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return 0
    if libc.mallopt(_M_MMAP_THRESHOLD, ctypes.c_int(threshold)) != 1:
        return 0
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        libc.mallopt(_M_TRIM_THRESHOLD, ctypes.c_int(min(2 * threshold, 2**31 - 1)))
    _libc = libc
    return threshold


# Every fit task (a partition's statistics, a merge of them) starts by releasing what earlier
# tasks freed: merges of large count tables free as much as they allocate. A merge also
# releases what Arrow's pool kept of the partitions read before it.
register_fit_task_hook(release_freed_memory)
register_fit_task_hook(release_arrow_memory, merges_only=True)
