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


def _run(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter (the setting is process-wide and made once)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("MALLOC_MMAP_THRESHOLD_", memory.THRESHOLD_VARIABLE)}
    environ.update(env)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=environ,
                            cwd=os.getcwd(), check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.skipif(not _GLIBC, reason="the threshold is glibc's")
def test_freed_partition_buffers_leave_resident_memory():
    # Once a 16 MB buffer has been freed, glibc's default (dynamic) threshold is 16 MB and
    # the next 4 MB buffers are carved from its heap, which keeps them resident when freed.
    # With the threshold fixed, each is mapped on its own and unmapped when freed, whatever
    # was allocated after it.
    code = """
        import numpy as np
        from tabflow.io.memory import keep_large_buffers_mapped
        def rss():
            for line in open("/proc/self/status"):
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) * 1024
        print(keep_large_buffers_mapped())
        big = np.ones(16 << 20, np.uint8)
        del big
        blocks, kept = [], []
        for _ in range(12):  # 48 MB in 4 MB buffers, each followed by a small one that stays
            blocks.append(np.ones(4 << 20, np.uint8))
            kept.append(np.ones(200 << 10, np.uint8))
        before = rss()
        del blocks
        print(before - rss())
    """
    on = _run(code).split()
    assert int(on[0]) == memory.DEFAULT_MMAP_THRESHOLD
    assert int(on[1]) >= 44 << 20  # the 48 MB went back to the system
    off = _run(code, **{memory.THRESHOLD_VARIABLE: "0"}).split()
    assert int(off[0]) == 0 and int(off[1]) < 16 << 20  # glibc's default kept them


def test_threshold_from_the_environment():
    code = "from tabflow.io.memory import keep_large_buffers_mapped; print(keep_large_buffers_mapped())"
    assert _run(code, **{memory.THRESHOLD_VARIABLE: "0"}) == "0"
    assert _run(code, MALLOC_MMAP_THRESHOLD_="65536") == "0"  # glibc's own setting is left alone
    assert _run(code, **{memory.THRESHOLD_VARIABLE: "262144"}) == ("262144" if _GLIBC else "0")


def test_bad_threshold_names_the_variable(monkeypatch):
    monkeypatch.setenv(memory.THRESHOLD_VARIABLE, "1GB")
    with pytest.raises(ValueError, match=f"{memory.THRESHOLD_VARIABLE} must be a number of bytes.*'1GB'"):
        memory._threshold()
