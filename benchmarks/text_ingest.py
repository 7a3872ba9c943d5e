"""Text ingest throughput and memory: tabflow's Criteo reader against pyarrow.csv and pandas.

Phases, each in its own Python process so that its peak resident memory is its own, all
reading the same raw Criteo text files (tab-separated, no header, empty fields for nulls,
written once by ``tabflow.datasets.write_criteo(format="criteo_text")``):

- ``floor``: ``pyarrow.csv.read_csv`` of each file with Criteo's column types (multithreaded),
  into an Arrow table: the least work any reader of these files does;
- ``tabflow``: ``Dataset(files, engine="criteo")``, every partition read through dask (pandas
  frames with Criteo's dtypes: int64 label, nullable Int64 counts, Arrow-backed strings);
- ``pandas``: ``pandas.read_csv`` of each file with the same dtypes;
- ``dask-pandas``: the same files through dask's pandas-based block reader
  (``tabflow.io.readers.read_csv_ddf``), which tabflow used before reading text with pyarrow.

Every phase reads file by file (or partition by partition) and keeps nothing, so peak RSS is
one file's (one partition's) worth plus the imports (a memory-mapped file's pages count too).
The printed ratios are wall times over the floor's and over pandas', measured in the same run,
and CPU times (user + system, all threads): on a machine shared with other work the CPU time
is the steadier measure of the work done. With ``--repeat N`` the phases run N times,
interleaved, and the ratios print as min-max.

Usage::

    python benchmarks/text_ingest.py --rows 2000000 --repeat 3 --workdir /tmp/tabflow-bench
    python benchmarks/text_ingest.py --rows 20000 --part-size 1MB
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Sequence

# The scripts run as files (python benchmarks/x.py) and are also loaded by path in tests.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import criteo_data, finish_options, rss_mb  # noqa: E402

#: tabflow's reading time over pyarrow.csv's.
TARGET_FLOOR_RATIO = 1.2
BASELINES = ("pandas", "dask-pandas")


def _text_files(directory: str) -> list[str]:
    names = [name for name in os.listdir(directory) if name.startswith("day_")]
    return [os.path.join(directory, name) for name in sorted(names, key=lambda name: int(name.split("_")[1]))]


def _peak_rss_bytes() -> int:
    return int(rss_mb() * 2**20)


def _cpu_seconds() -> float:
    """User + system CPU time of this process so far, all threads."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _criteo_engine_dtypes() -> dict[str, Any]:
    from tabflow.backends import get_backend
    from tabflow.io.readers import CRITEO_DTYPES

    pandas = get_backend("pandas")
    return {name: pandas.engine_dtype(dtype) for name, dtype in CRITEO_DTYPES.items()}


# --------------------------------------------------------------------------------- phases
# Each phase is a function reading a list of files and returning ``(rows, facts)``.


def read_floor(files: Sequence[str], options: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """pyarrow.csv.read_csv of each file with Criteo's column types, into Arrow tables."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from tabflow.io.readers import CRITEO_COLUMNS, CRITEO_DTYPES

    types = {name: pa.int64() if dtype in ("int64", "Int64") else pa.string() for name, dtype in CRITEO_DTYPES.items()}
    read_options = pcsv.ReadOptions(column_names=CRITEO_COLUMNS)
    parse_options = pcsv.ParseOptions(delimiter="\t")
    convert_options = pcsv.ConvertOptions(column_types=types, strings_can_be_null=True)
    rows = 0
    for path in files:
        table = pcsv.read_csv(path, read_options=read_options, parse_options=parse_options, convert_options=convert_options)
        rows += table.num_rows
        del table
    return rows, {}


def read_tabflow(files: Sequence[str], options: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """Every partition of ``Dataset(files, engine="criteo")``, computed by dask and dropped."""
    import tabflow as nvt

    dataset = nvt.Dataset(list(files), engine="criteo", cpu=True, part_size=options.part_size)
    lengths = dataset.to_ddf().map_partitions(len).compute()
    return int(lengths.sum()), {"npartitions": dataset.npartitions, "pyarrow": dataset._direct is not None}


def read_pandas(files: Sequence[str], options: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """pandas.read_csv of each file with Criteo's dtypes."""
    import pandas as pd

    from tabflow.io.readers import CRITEO_COLUMNS

    dtypes = _criteo_engine_dtypes()
    rows = 0
    for path in files:
        frame = pd.read_csv(path, sep="\t", names=CRITEO_COLUMNS, header=None, dtype=dtypes)
        rows += len(frame)
        del frame
    return rows, {}


def read_dask_pandas(files: Sequence[str], options: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """The files through dask's pandas-based block reader, every partition computed and dropped."""
    from dask.utils import parse_bytes

    from tabflow.backends import get_backend
    from tabflow.io.readers import CRITEO_COLUMNS, CRITEO_DTYPES, read_csv_ddf

    part_size = int(parse_bytes(options.part_size or "128MB")) if not isinstance(options.part_size, int) else options.part_size
    ddf = read_csv_ddf(
        list(files), part_size, get_backend("pandas"), sep="\t", names=CRITEO_COLUMNS, header=None, dtypes=CRITEO_DTYPES,
    )
    return int(ddf.map_partitions(len).compute().sum()), {}


def run_phase(read: Callable[..., tuple[int, dict[str, Any]]], options: argparse.Namespace) -> dict[str, Any]:
    """Time ``read`` over the data files, after reading a one-line file once untimed: costs
    paid once per process (lazy imports, a first dask graph) are not what is measured."""
    read([_warmup_file(options.data_dir)], options)
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    rows, facts = read(_text_files(options.data_dir), options)
    return {
        "rows": rows, "seconds": time.perf_counter() - start, "cpu_seconds": _cpu_seconds() - cpu_start,
        "peak_rss": _peak_rss_bytes(), **facts,
    }


def _warmup_file(data_dir: str) -> str:
    """A one-line Criteo file next to the data (its own directory: not a data file)."""
    directory = os.path.join(os.path.dirname(data_dir), "warmup")
    path = os.path.join(directory, "day_0")
    if not os.path.exists(path):
        os.makedirs(directory, exist_ok=True)
        with open(path + ".tmp", "w", encoding="ascii") as handle:
            handle.write("\t".join(["1"] + ["2"] * 13 + ["68fd1e64"] * 26) + "\n")
        os.replace(path + ".tmp", path)
    return path


PHASES: dict[str, Callable[..., tuple[int, dict[str, Any]]]] = {
    "floor": read_floor,
    "tabflow": read_tabflow,
    "pandas": read_pandas,
    "dask-pandas": read_dask_pandas,
}


def _run_phase_process(phase: str, options: argparse.Namespace) -> dict[str, Any]:
    """Run one phase in a fresh interpreter and return what it reports (its last line)."""
    command = [sys.executable, os.path.abspath(__file__), "--phase", phase, "--data-dir", options.data_dir]
    if options.part_size is not None:
        command += ["--part-size", str(options.part_size)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"benchmark phase {phase!r} failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------- report
def _rate(rows: int, seconds: float) -> str:
    return f"{rows / seconds:>12,.0f} rows/s" if seconds > 0 else "inf rows/s"


def _span(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.2f}x" if len(values) == 1 or f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}-{high:.2f}x"


LABELS = {
    "floor": "pyarrow.csv floor (Arrow tables):",
    "tabflow": "tabflow Dataset(engine='criteo'):",
    "pandas": "pandas.read_csv:",
    "dask-pandas": "dask + pandas block reader (before):",
}


def report(options: argparse.Namespace, runs: list[dict[str, dict[str, Any]]]) -> dict[str, list[float]]:
    """Print each run's phases, then the ratios over runs; return the ratio lists."""
    for number, results in enumerate(runs, 1):
        tab = results["tabflow"]
        counts = {name: result["rows"] for name, result in results.items()}
        if len(set(counts.values())) != 1:
            raise RuntimeError(f"the phases read different row counts: {counts}")
        parser = "pyarrow" if tab["pyarrow"] else "pandas (fallback)"
        print(f"-- run {number}: {tab['rows']:,} rows, {options.files} files, {tab['npartitions']} tabflow partitions, "
              f"tabflow parser {parser}")
        for name, result in results.items():
            print(f"{LABELS[name]:38}{result['seconds']:8.2f} s {_rate(result['rows'], result['seconds'])}"
                  f"  CPU {result['cpu_seconds']:7.2f} s  peak RSS {result['peak_rss'] / 2**20:,.0f} MB")
    ratios = {}
    for name in runs[0]:
        if name != "tabflow":
            ratios[name] = [r["tabflow"]["seconds"] / r[name]["seconds"] for r in runs]
            ratios[f"{name} cpu"] = [r["tabflow"]["cpu_seconds"] / r[name]["cpu_seconds"] for r in runs]
    print(f"== over {len(runs)} run(s), min-max:")
    print(f"ratio tabflow / pyarrow.csv floor time: {_span(ratios['floor'])} (target <= {TARGET_FLOOR_RATIO:g}x); "
          f"CPU time {_span(ratios['floor cpu'])}")
    for name in BASELINES:
        if name in ratios:
            rss = [r["tabflow"]["peak_rss"] / r[name]["peak_rss"] for r in runs]
            print(f"ratio tabflow / {LABELS[name].rstrip(':')} time: {_span(ratios[name])}; "
                  f"CPU time {_span(ratios[name + ' cpu'])}; peak RSS {_span(rss)}")
    return ratios


# ----------------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of generated data")
    parser.add_argument("--files", type=int, default=None, help="text files (default: one per million rows)")
    parser.add_argument("--part-size", default=None, help="tabflow partition size, e.g. 64MB (default: Dataset's)")
    parser.add_argument("--workdir", default=None, help="where the data go (default: a temp dir, removed after)")
    parser.add_argument("--baselines", default=",".join(BASELINES), help=f"comma-separated, among {list(BASELINES)}")
    parser.add_argument("--repeat", type=int, default=1, help="run every phase this many times, interleaved")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    finish_options(parser, options, BASELINES, files_per_million=1)
    return options


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    if options.phase:
        # Child process: run one phase, report it as one JSON line.
        print(json.dumps(run_phase(PHASES[options.phase], options)), flush=True)
        return 0
    temporary = options.workdir is None
    options.workdir = os.path.abspath(options.workdir or tempfile.mkdtemp(prefix="tabflow-text-"))
    os.makedirs(options.workdir, exist_ok=True)
    try:
        options.data_dir = criteo_data(options.workdir, options.rows, options.files, seed=options.seed, format="criteo_text")
        runs = []
        for _ in range(options.repeat):
            results = {"floor": _run_phase_process("floor", options), "tabflow": _run_phase_process("tabflow", options)}
            for name in options.baselines:
                results[name] = _run_phase_process(name, options)
            runs.append(results)
        report(options, runs)
    finally:
        if temporary:
            shutil.rmtree(options.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
