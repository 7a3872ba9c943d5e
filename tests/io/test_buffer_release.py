"""glibc's mmap threshold, fixed by fit and the parquet writer, and freed memory released
before each partition is read (tabflow.io.memory)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap

import pytest

from tabflow.io import memory

_GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
# mallinfo2, the allocator's account in 64-bit counters, came with glibc 2.33.
_MALLINFO2 = _GLIBC and tuple(int(part) for part in platform.libc_ver()[1].split(".")[:2]) >= (2, 33)


def _run(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter (the setting is process-wide and made once)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", memory.THRESHOLD_VARIABLE)}
    environ.update(env)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=environ,
                            cwd=os.getcwd(), check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.skipif(not _MALLINFO2, reason="the threshold is glibc's; its account (mallinfo2) needs glibc 2.33")
def test_partition_buffers_come_from_the_heap_and_freed_ones_leave_resident_memory():
    # Once a 16 MB buffer has been freed, glibc's default (dynamic) threshold is 16 MB; fixed
    # at 32 MiB it is the same from the start, so 4 MB buffers come from the heap (no mapping,
    # no page faults when memory is reused), whatever was allocated before. Freed between
    # small buffers that stay, they are in the middle of the heap, which glibc keeps resident;
    # release_freed_memory hands their pages back. The allocator's own account (mallinfo2:
    # bytes in mappings of their own) says where the buffers went; resident memory, read
    # before and after the release, moves by far more than anything else the process does.
    code = """
        import ctypes, os
        import numpy as np
        from tabflow.io.memory import keep_large_buffers_mapped, release_freed_memory

        class MallInfo2(ctypes.Structure):
            _fields_ = [(name, ctypes.c_size_t) for name in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                "uordblks", "fordblks", "keepcost")]

        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = MallInfo2
        def mapped():
            return libc.mallinfo2().hblkhd
        def resident():
            with open("/proc/self/statm") as statm:
                return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        print(keep_large_buffers_mapped())
        big = np.ones(16 << 20, np.uint8)
        del big
        start = mapped()
        blocks, kept = [], []
        for _ in range(12):  # 48 MB in 4 MB buffers, each followed by a small one that stays
            blocks.append(np.ones(4 << 20, np.uint8))
            kept.append(np.ones(200 << 10, np.uint8))
        print(mapped() - start)
        del blocks
        before = resident()
        released = release_freed_memory()
        print(int(released), before - resident())
    """
    on = [int(word) for word in _run(code).split()]
    assert on[0] == memory.DEFAULT_MMAP_THRESHOLD
    assert on[1] < 4 << 20  # from the heap, not mapped one by one
    assert on[2] == 1 and on[3] >= 40 << 20  # the freed 48 MB left resident memory
    off = [int(word) for word in _run(code, **{memory.THRESHOLD_VARIABLE: "0"}).split()]
    assert off[0] == 0 and off[2] == 0 and off[3] < 4 << 20  # left alone: glibc kept them resident


@pytest.mark.skipif(not _GLIBC, reason="the trim threshold is glibc's")
def test_memory_freed_at_the_top_of_the_heap_stays_until_released():
    # glibc's dynamic rule keeps free memory at the top of a heap up to twice the mmap
    # threshold; with the threshold fixed it would hand back anything over 128 KiB at every
    # free, and the next buffer of the partition would fault its pages in again. Freed, a
    # 20 MB buffer stays resident (reused by the next one without faults) until
    # release_freed_memory hands it back; a trim threshold given to glibc itself is obeyed.
    code = """
        import os
        import numpy as np
        from tabflow.io.memory import keep_large_buffers_mapped, release_freed_memory

        def resident():
            with open("/proc/self/statm") as statm:
                return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        keep_large_buffers_mapped()
        buffer = np.ones(20 << 20, np.uint8)
        before = resident()
        del buffer
        freed = resident()
        release_freed_memory()
        print(before - freed, freed - resident())
    """
    kept, released = (int(word) for word in _run(code).split())
    assert kept < 4 << 20 and released >= 16 << 20
    kept, released = (int(word) for word in _run(code, MALLOC_TRIM_THRESHOLD_="131072").split())
    assert kept >= 16 << 20 and released < 4 << 20


def test_the_readers_release_freed_memory_before_each_partition(tmp_path, monkeypatch):
    import pandas as pd

    import tabflow as nvt
    from tabflow.io.readers import _arrow_text, orc, parquet

    calls = []
    for module in (parquet, orc, _arrow_text):
        monkeypatch.setattr(module, "release_freed_memory", lambda: calls.append(1) or True)
    frame = pd.DataFrame({"a": range(10), "s": [str(i) for i in range(10)]})
    for k in range(3):
        frame.to_parquet(tmp_path / f"part{k}.parquet")
        frame.to_csv(tmp_path / f"part{k}.csv", index=False)
    nvt.Dataset(sorted(str(p) for p in tmp_path.glob("*.parquet")), engine="parquet").to_ddf().compute()
    assert len(calls) == 3
    nvt.Dataset(sorted(str(p) for p in tmp_path.glob("*.csv")), engine="csv").to_ddf().compute()
    assert len(calls) == 6


def test_threshold_from_the_environment():
    code = "from tabflow.io.memory import keep_large_buffers_mapped; print(keep_large_buffers_mapped())"
    assert _run(code, **{memory.THRESHOLD_VARIABLE: "0"}) == "0"
    assert _run(code, MALLOC_MMAP_THRESHOLD_="65536") == "0"  # glibc's own setting is left alone
    assert _run(code, **{memory.THRESHOLD_VARIABLE: "262144"}) == ("262144" if _GLIBC else "0")


def test_bad_threshold_names_the_variable(monkeypatch):
    monkeypatch.setenv(memory.THRESHOLD_VARIABLE, "1GB")
    with pytest.raises(ValueError, match=f"{memory.THRESHOLD_VARIABLE} must be a number of bytes.*'1GB'"):
        memory._threshold()
