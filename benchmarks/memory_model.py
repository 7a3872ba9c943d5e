"""Where the ETL's memory goes, per data shape: the parts of the memory model measured.

For each shape of ``benchmarks/etl.py`` (the Criteo job on the same rows spelled as hex ids,
long strings, integers, sparse columns, many small files, one large file, list columns), one
fresh process per shape measures

- **base**: resident memory with tabflow imported and the dataset opened;
- **vocabularies**: resident memory the fitted workflow keeps (after the fit, with freed
  memory handed back), over the distinct values of its categorical columns: bytes per
  distinct value;
- **a partition in flight**: the in-memory bytes of a partition as the fit reads it
  (string ids dictionary-encoded where the files store them so) and of its transformed
  output, with its rows;
- **peaks**: the highest resident memory while fitting and while transforming + writing
  (sampled every 5 ms), and the model's estimate, ``base + vocabularies + alive x
  (partition in + partition out)`` with ``alive`` the partitions computed at once (one per
  core, at most three while writing).

Usage::

    python benchmarks/memory_model.py --shape all --rows 5000000 --workdir /tmp/tabflow-bench
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etl  # noqa: E402
from _common import rss_mb  # noqa: E402


class _PeakSampler:
    """The highest resident memory seen between :meth:`start` and :meth:`stop`."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval, self.peak, self._running, self._thread = interval, 0.0, False, None

    def start(self) -> "_PeakSampler":
        self.peak, self._running = rss_mb("VmRSS"), True
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while self._running:
            self.peak = max(self.peak, rss_mb("VmRSS"))
            time.sleep(self.interval)

    def stop(self) -> float:
        self._running = False
        assert self._thread is not None
        self._thread.join()
        return max(self.peak, rss_mb("VmRSS"))


def _settled_rss() -> float:
    """Resident memory once what was freed is handed back."""
    import gc

    import pyarrow as pa

    from tabflow.io.memory import release_freed_memory

    gc.collect()
    pa.default_memory_pool().release_unused()  # what Arrow's pool keeps of freed buffers
    release_freed_memory()
    return rss_mb("VmRSS")


def _distinct_values(workflow: Any) -> int:
    """Distinct values the fitted vocabularies hold (over every Categorify column)."""
    from tabflow import ops

    total = 0
    for node in workflow.nodes:
        if isinstance(node.op, ops.Categorify):
            total += sum(len(vocab) for vocab in node.op.vocabs_.values())
    return total


def measure(options: argparse.Namespace) -> dict[str, Any]:
    """The memory model's parts for ``options.shape``, measured in this process."""
    import tabflow as nvt
    from tabflow.graph.schemas import dictionary_string_inputs
    from tabflow.io.memory import keep_large_buffers_mapped

    data_dir = etl.ensure_data(options)
    keep_large_buffers_mapped()  # as the fit and the writer set it
    dataset = nvt.Dataset(data_dir, engine="parquet", part_size=options.part_size, cpu=True)
    # A warm-up on a few rows first: what the first run imports and compiles (dask's
    # scheduler, the numba kernels) is part of the base, not of the vocabularies.
    sample = nvt.Dataset(dataset.to_ddf().head(2000, npartitions=1), cpu=True)
    warm = os.path.join(options.workdir, f"out-memory-warm-{options.shape}")
    etl.WORKFLOWS[options.workflow](options).fit(sample).transform(sample).to_parquet(warm)
    shutil.rmtree(warm, ignore_errors=True)
    del sample
    workflow = etl.WORKFLOWS[options.workflow](options)
    base = _settled_rss()

    sampler = _PeakSampler().start()
    workflow.fit(dataset)
    fit_peak = sampler.stop()
    fitted = _settled_rss()
    distinct = _distinct_values(workflow)

    backend = dataset.backend
    read = dataset.to_ddf(dictionary_strings=dictionary_string_inputs(workflow.nodes), arrow_lists=True, coalesce=True)
    partitions = read.npartitions
    part = read.partitions[0].compute(scheduler="sync")
    part_in = backend.memory_usage(part)
    part_out = backend.memory_usage(workflow.transform(nvt.Dataset(part)).to_ddf(arrow_lists=True).compute(scheduler="sync"))
    rows = len(part)
    del part

    out_dir = os.path.join(options.workdir, f"out-memory-{options.shape}")
    shutil.rmtree(out_dir, ignore_errors=True)
    settled = _settled_rss()
    sampler = _PeakSampler().start()
    workflow.transform(dataset).to_parquet(out_dir)
    write_peak = sampler.stop()
    shutil.rmtree(out_dir, ignore_errors=True)

    cores = os.cpu_count() or 1
    held = max(0.0, fitted - base)
    partition_mb = (part_in + part_out) / 2**20
    return {
        "shape": options.shape, "rows": dataset.num_rows, "partitions": partitions, "partition_rows": rows,
        "base_mb": base, "held_mb": held, "distinct": distinct,
        "bytes_per_distinct": held * 2**20 / distinct if distinct else 0.0,
        "partition_in_mb": part_in / 2**20, "partition_out_mb": part_out / 2**20,
        "fit_peak_mb": fit_peak, "write_peak_mb": write_peak, "write_start_mb": settled,
        "model_fit_mb": base + held + cores * part_in / 2**20,
        "model_write_mb": base + held + min(cores, 3) * partition_mb,
    }


def report(results: Sequence[dict[str, Any]]) -> None:
    print("| shape | distinct values | held by the fitted workflow | per distinct value | partition in / out (rows) | fit peak (model) | write peak (model) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['shape']} | {r['distinct'] / 1e6:.2f}M | {r['held_mb']:.0f} MB | {r['bytes_per_distinct']:.1f} B "
            f"| {r['partition_in_mb']:.0f} / {r['partition_out_mb']:.0f} MB ({r['partition_rows']:,}) "
            f"| {r['fit_peak_mb'] / 1024:.2f} GiB ({r['model_fit_mb'] / 1024:.2f}) "
            f"| {r['write_peak_mb'] / 1024:.2f} GiB ({r['model_write_mb'] / 1024:.2f}) |"
        )
    base = [r["base_mb"] for r in results]
    print(f"base (tabflow imported, dataset open): {min(base):.0f}-{max(base):.0f} MB; cores: {os.cpu_count()}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="all", help="comma-separated shapes among " + ", ".join(etl.SHAPES) + " (or 'all')")
    parser.add_argument("--rows", default="5000000", help="rows of generated data")
    parser.add_argument("--workdir", default=None, help="where data goes (default: a temp dir)")
    parser.add_argument("--part-size", default=None, help="tabflow partition size, e.g. 64MB (default: Dataset's)")
    parser.add_argument("--json", action="store_true", help="print each shape's measurements as JSON too")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # measure --shape in this process
    options = parser.parse_args(argv)
    shapes = list(etl.SHAPES) if options.shape == "all" else [s for s in options.shape.split(",") if s]
    unknown = [s for s in shapes if s not in etl.SHAPES]
    if unknown or not shapes:
        parser.error(f"--shape takes shapes among {list(etl.SHAPES)} or 'all', got {options.shape!r}")
    options.shapes = shapes
    return options


def _shape_options(options: argparse.Namespace, shape: str, workdir: str) -> argparse.Namespace:
    """etl.py's options for one shape (its data generator, workflow and partition size)."""
    argv = ["--shape", shape, "--rows", options.rows, "--workdir", workdir, "--baselines", ""]
    if options.part_size:
        argv += ["--part-size", str(options.part_size)]
    return etl.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    workdir = options.workdir or os.path.join(os.environ.get("TMPDIR", "/tmp"), "tabflow-bench")
    if options.one:
        print(json.dumps(measure(_shape_options(options, options.shapes[0], workdir))))
        return 0
    results = []
    for shape in options.shapes:
        etl.ensure_data(_shape_options(options, shape, workdir))  # generated before the measuring process
        command = [sys.executable, os.path.abspath(__file__), "--one", "--shape", shape, "--rows", options.rows, "--workdir", workdir]
        if options.part_size:
            command += ["--part-size", str(options.part_size)]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        results.append(result)
        if options.json:
            print(json.dumps(result))
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
