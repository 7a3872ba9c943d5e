"""glibc's mmap threshold, fixed by fit and the parquet writer (tabflow.io.memory)."""

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
    environ = {k: v for k, v in os.environ.items() if k not in ("MALLOC_MMAP_THRESHOLD_", memory.THRESHOLD_VARIABLE)}
    environ.update(env)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=environ,
                            cwd=os.getcwd(), check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.skipif(not _MALLINFO2, reason="the threshold is glibc's; its account (mallinfo2) needs glibc 2.33")
def test_freed_partition_buffers_leave_resident_memory():
    # Once a 16 MB buffer has been freed, glibc's default (dynamic) threshold is 16 MB and
    # the next 4 MB buffers are carved from its heap, which keeps them resident when freed.
    # With the threshold fixed, each is mapped on its own and unmapped when freed, whatever
    # was allocated after it. The allocator's own account (mallinfo2: bytes in mappings of
    # their own, and bytes of heap) says where they went; resident-set sizes would also move
    # with whatever else the kernel does to the process's pages meanwhile.
    code = """
        import ctypes
        import numpy as np
        from tabflow.io.memory import keep_large_buffers_mapped

        class MallInfo2(ctypes.Structure):
            _fields_ = [(name, ctypes.c_size_t) for name in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                "uordblks", "fordblks", "keepcost")]

        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = MallInfo2
        def mapped():
            return libc.mallinfo2().hblkhd
        print(keep_large_buffers_mapped())
        big = np.ones(16 << 20, np.uint8)
        del big
        start = mapped()
        blocks, kept = [], []
        for _ in range(12):  # 48 MB in 4 MB buffers, each followed by a small one that stays
            blocks.append(np.ones(4 << 20, np.uint8))
            kept.append(np.ones(200 << 10, np.uint8))
        held = mapped()
        del blocks
        print(held - start, held - mapped())
    """
    on = [int(word) for word in _run(code).split()]
    assert on[0] == memory.DEFAULT_MMAP_THRESHOLD
    assert on[1] >= 48 << 20 and on[2] >= 48 << 20  # mapped one by one, and unmapped when freed
    off = [int(word) for word in _run(code, **{memory.THRESHOLD_VARIABLE: "0"}).split()]
    assert off[0] == 0 and off[1] < 4 << 20 and off[2] < 4 << 20  # glibc's default kept them in its heap


def test_threshold_from_the_environment():
    code = "from tabflow.io.memory import keep_large_buffers_mapped; print(keep_large_buffers_mapped())"
    assert _run(code, **{memory.THRESHOLD_VARIABLE: "0"}) == "0"
    assert _run(code, MALLOC_MMAP_THRESHOLD_="65536") == "0"  # glibc's own setting is left alone
    assert _run(code, **{memory.THRESHOLD_VARIABLE: "262144"}) == ("262144" if _GLIBC else "0")


def test_bad_threshold_names_the_variable(monkeypatch):
    monkeypatch.setenv(memory.THRESHOLD_VARIABLE, "1GB")
    with pytest.raises(ValueError, match=f"{memory.THRESHOLD_VARIABLE} must be a number of bytes.*'1GB'"):
        memory._threshold()
