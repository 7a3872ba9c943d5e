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
                num_workers: int | None = None, cardinality_scale: float = 1.0, format: str = "parquet",
                ids: str = "hex", nulls: str = "criteo", multi_hot: tuple[str, ...] = (),
                row_group_size: int | None = None) -> str:
    """Synthetic Criteo-like parquet (or, ``format="criteo_text"``, raw Criteo text files) under
    ``workdir``, generated once per (rows, files, seed, cardinality scale, format, shape).

    ``ids``, ``nulls``, ``multi_hot`` and ``row_group_size`` are :func:`tabflow.datasets.write_criteo`'s
    (the shape of the data and its row groups). Files are written by ``num_workers`` threads
    (default: one per CPU); the data do not depend on it. A marker written last tells a
    complete directory from an interrupted one, which is generated again. Shared by the
    benchmarks, so that they read the same files.
    """
    import os
    import shutil

    from tabflow.datasets import write_criteo

    scale = "" if cardinality_scale == 1.0 else f"-card{cardinality_scale:g}"
    text = "" if format == "parquet" else f"-{format}"
    shape = "".join([
        "" if ids == "hex" else f"-{ids}",
        "" if nulls == "criteo" else f"-{nulls}",
        f"-multihot{'+'.join(multi_hot)}" if multi_hot else "",
        f"-rg{row_group_size}" if row_group_size else "",
    ])
    directory = os.path.join(workdir, f"criteo-{rows}rows-{files}files-seed{seed}{scale}{text}{shape}")
    marker = os.path.join(directory, GENERATED_MARKER)
    if os.path.exists(marker):
        return directory
    shutil.rmtree(directory, ignore_errors=True)
    print(f"generating {rows:,} rows into {directory} (not timed) ...", flush=True)
    write_criteo(directory, rows, num_files=files, format=format, seed=seed, progress=progress,
                 cardinality_scale=cardinality_scale, num_workers=num_workers or os.cpu_count() or 1,
                 ids=ids, nulls=nulls, multi_hot=multi_hot, row_group_size=row_group_size)
    with open(marker, "w", encoding="utf-8") as handle:
        handle.write("complete\n")
    return directory


def finish_options(parser, options, baselines, files_per_million: int):
    """The checks and defaults every data benchmark applies to its parsed options: the file
    count (``files_per_million`` per million rows, at least one), a byte-count ``part_size``
    given as digits, and ``--baselines`` as a list of known names."""
    if options.files is None:
        options.files = max(1, files_per_million * options.rows // 1_000_000)
    if options.part_size is not None and options.part_size.isdigit():
        options.part_size = int(options.part_size)
    options.baselines = [name for name in options.baselines.split(",") if name]
    unknown = sorted(set(options.baselines) - set(baselines))
    if unknown:
        parser.error(f"unknown baseline(s) {unknown}; choose among {list(baselines)}")
    return options
