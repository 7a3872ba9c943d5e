"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import resource
import sys


def rss_mb(field: str = "VmHWM") -> float:
    """This process's peak (``VmHWM``) or current (``VmRSS``) resident set size, in MB.

    Read from /proc rather than ``getrusage``: ``ru_maxrss`` survives fork and exec, so a
    phase process would report its parent's peak whenever that was higher.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    scale = 1 / 1024 if sys.platform != "darwin" else 1 / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


GENERATED_MARKER = "_GENERATED"


def criteo_data(workdir: str, rows: int, files: int, seed: int = 0, progress: bool = False,
                num_workers: int | None = None) -> str:
    """Synthetic Criteo-like parquet under ``workdir``, generated once per (rows, files, seed).

    Files are written by ``num_workers`` threads (default: one per CPU); the data do not
    depend on it. A marker written last tells a complete directory from an interrupted one,
    which is generated again. Shared by the benchmarks, so that they read the same files.
    """
    import os
    import shutil

    from tabflow.datasets import write_criteo

    directory = os.path.join(workdir, f"criteo-{rows}rows-{files}files-seed{seed}")
    marker = os.path.join(directory, GENERATED_MARKER)
    if os.path.exists(marker):
        return directory
    shutil.rmtree(directory, ignore_errors=True)
    print(f"generating {rows:,} rows into {directory} (not timed) ...", flush=True)
    write_criteo(directory, rows, num_files=files, seed=seed, progress=progress, num_workers=num_workers or os.cpu_count() or 1)
    with open(marker, "w", encoding="utf-8") as handle:
        handle.write("complete\n")
    return directory
