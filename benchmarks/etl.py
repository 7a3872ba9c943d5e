"""ETL throughput and memory on Criteo-like data: tabflow against a pyarrow floor, a
hand-written Polars script and hand-written pandas, all measured in the same run.

Phases, each in its own Python process so that its peak resident memory is its own:

- ``floor``: pyarrow reads every input file and writes it back (snappy): the least work any
  parquet-to-parquet ETL must do;
- ``tabflow``: the workflow (``--workflow``) fitted on the files, then transformed and written
  as parquet;
- ``polars``: the same ETL as a hand-written Polars script (a lazy scan of every file for
  the statistics: one ``group_by`` count per categorical column and the moments of the
  continuous columns, collected together; then per input file a lazy scan, a left join per
  column and a streamed ``sink_parquet`` to its own output file), as a user who knows Polars
  writes it for data larger than memory;
- ``pandas``: the same ETL in hand-written pandas, streaming file by file (value counts
  added up, then a lookup per file).

With ``--gpu`` (tabflow on cuDF) the baselines are the GPU ones instead:

- ``gpu-floor``: cuDF reads every file and writes it back (snappy), on the GPU;
- ``cudf``: the same ETL as a hand-written cuDF script, file by file (value counts added up,
  moments of the log counts, then a join per column and cuDF's parquet writer);
- ``polars-gpu``: the Polars script above on Polars' GPU engine (cudf-polars), every query
  collected or sunk with ``GPUEngine(raise_on_fail=True)``, so nothing falls back to the CPU
  unnoticed.

A baseline that fails (a package missing, a query the GPU engine refuses) is reported and
left out; the others still run.

The baselines implement the ``categorify`` workflow's semantics exactly (tabflow's
Categorify index convention: 1 null, 2 out of vocabulary, then the values by descending
count, ties by value; FillMissing(0), Clip(0), LogOp to float32, Normalize with the sample
standard deviation to float64); ``--check`` compares their outputs with tabflow's, and with
``--gpu`` also runs the workflow (either one) on the CPU engine and compares tabflow's GPU
output with it, row for row (codes exactly, floats to 1e-5). The
printed ratios are total times over the floor's and over Polars', and peak RSS over Polars';
with ``--repeat N`` the phases run N times, interleaved, and the ratios print as min-max.
``--rows`` may name several sizes (``5000000,10000000``): everything runs at each, then each
system's peak RSS at the largest size is printed over its peak at the smallest (flat memory
reads about 1x).

``--cardinality 1000000,10000000`` measures vocabulary scaling instead: one string column
with that many distinct values (and as many rows, each value once or twice), fitted with
Categorify and transformed, time and peak RSS per size, for tabflow and Polars.

The data are generated once per (rows, files, seed, cardinality scale) into ``--workdir`` and
reused by later runs.

Usage::

    python benchmarks/etl.py --rows 5000000 --workdir /tmp/tabflow-bench --repeat 3
    python benchmarks/etl.py --rows 5000000,10000000 --workdir /tmp/tabflow-bench --repeat 2
    python benchmarks/etl.py --gpu --rows 6000000 --check     # cuDF: against gpu-floor, cudf, polars-gpu, the CPU engine
    python benchmarks/etl.py --gpu --workflow features --rows 1000000 --check --baselines ''   # GPU output == CPU output
    python benchmarks/etl.py --rows 200000 --check
    python benchmarks/etl.py --cardinality 1000000,10000000,50000000 --workdir /tmp/tabflow-bench
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

#: Targets for the ``categorify`` workflow: total time over the floor's and over Polars',
#: peak RSS over Polars'.
TARGET_FLOOR_RATIO = 1.5
TARGET_POLARS_RATIO = 0.5
TARGET_POLARS_RSS_RATIO = 1.0
#: With several ``--rows`` sizes: tabflow's peak RSS at the largest over that at the smallest.
TARGET_RSS_GROWTH = 1.1
#: Vocabulary-scaling memory bound (bytes) for the largest vocabulary measured.
TARGET_VOCAB_RSS = 8 * 2**30
#: Input files of the generated data per million rows (unless ``--files`` says).
FILES_PER_MILLION = 2
#: The categorify workflow on one GPU (fit + transform + write), rows per second.
TARGET_GPU_ROWS_PER_S = 20_000_000

# Categorify's index convention (tabflow.ops.categorify): 0 padding, 1 null, 2 out of
# vocabulary, then the vocabulary.
NULL_INDEX, OOV_INDEX, FIRST_VALUE_INDEX = 1, 2, 3


# ------------------------------------------------------------------------------ workflows


def categorify_workflow(options: argparse.Namespace) -> Any:
    """The NVTabular Criteo recipe: Categorify the ids, log-normalise the counts."""
    import tabflow as nvt
    from tabflow import ops
    from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS

    cats = CATEGORICAL_COLUMNS >> ops.Categorify(freq_threshold=options.freq_threshold)
    conts = CONTINUOUS_COLUMNS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    return nvt.Workflow(cats + conts + ["label"])


def features_workflow(options: argparse.Namespace) -> Any:
    """Feature engineering without vocabularies: hashing, crosses, buckets and statistics.

    Every id is hashed, two id pairs are crossed, the counts are bucketized, and four ids
    get target encodings of the label (out of fold on this training data) and per-id
    count/mean statistics of two counts (JoinGroupby).
    """
    import tabflow as nvt
    from tabflow import ops
    from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS

    encoded = CATEGORICAL_COLUMNS[:4]
    hashed = CATEGORICAL_COLUMNS >> ops.HashBucket(num_buckets=2**20)
    crossed = [CATEGORICAL_COLUMNS[0:2], CATEGORICAL_COLUMNS[2:4]] >> ops.HashedCross(num_buckets=2**18)
    bucketized = CONTINUOUS_COLUMNS >> ops.FillMissing() >> ops.Bucketize(boundaries=[0, 1, 2, 5, 10, 20, 50, 100, 1000])
    target_encoded = encoded >> ops.TargetEncoding("label", kfold=3, p_smooth=20)
    grouped = encoded >> ops.JoinGroupby(cont_cols=CONTINUOUS_COLUMNS[:2], stats=["count", "mean"])
    return nvt.Workflow(hashed + crossed + bucketized + target_encoded + grouped + ["label"])


#: Workflows that ``--workflow`` can name: a function from the parsed options to a Workflow.
WORKFLOWS: dict[str, Callable[[argparse.Namespace], Any]] = {
    "categorify": categorify_workflow,
    "features": features_workflow,
}


# --------------------------------------------------------------------------------- phases


def _peak_rss_bytes() -> int:
    return int(rss_mb() * 2**20)


def _parquet_files(directory: str) -> list[str]:
    return sorted(
        (os.path.join(directory, name) for name in os.listdir(directory) if name.endswith(".parquet")),
        key=lambda path: int(os.path.basename(path).split("_")[-1].split(".")[0]),
    )


def _fresh_output(options: argparse.Namespace, name: str) -> str:
    out_dir = os.path.join(options.workdir, f"out-{name}")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    return out_dir


def _finish(options: argparse.Namespace, out_dir: str) -> None:
    if not options.keep and not options.check:
        shutil.rmtree(out_dir, ignore_errors=True)


def run_floor(options: argparse.Namespace) -> dict[str, Any]:
    """Read every file with pyarrow and write it back with the same (snappy) compression."""
    import pyarrow.parquet as pq

    out_dir = _fresh_output(options, "floor")
    start = time.perf_counter()
    rows = 0
    for path in _parquet_files(options.data_dir):
        table = pq.read_table(path)
        pq.write_table(table, os.path.join(out_dir, os.path.basename(path)), compression="snappy")
        rows += table.num_rows
        del table
    seconds = time.perf_counter() - start
    _finish(options, out_dir)
    return {"rows": rows, "seconds": seconds, "peak_rss": _peak_rss_bytes()}


def run_tabflow(options: argparse.Namespace, name: str = "tabflow") -> dict[str, Any]:
    """Fit the workflow, then transform and write parquet; time the two separately."""
    from dask.utils import parse_bytes

    import tabflow as nvt

    out_dir = os.path.join(options.workdir, f"out-{name}-{options.workflow}")
    shutil.rmtree(out_dir, ignore_errors=True)
    cpu = {"auto": None, "cpu": True, "gpu": False}[options.device]
    client = _cluster_client(options)  # started before the clock: a cluster is set up once, not per job
    dataset = nvt.Dataset(options.data_dir, engine="parquet", part_size=options.part_size, cpu=cpu, client=client)
    workflow = WORKFLOWS[options.workflow](options)
    workflow.client = client

    start = time.perf_counter()
    workflow.fit(dataset)
    fitted = time.perf_counter()
    fit_rss = _peak_rss_bytes()
    workflow.transform(dataset).to_parquet(out_dir)
    done = time.perf_counter()
    _finish(options, out_dir)
    part_size = options.part_size or "128MB"  # Dataset's default
    return {
        "rows": dataset.num_rows,
        "engine": dataset.engine,
        "npartitions": dataset.npartitions,
        "part_size": int(parse_bytes(part_size)) if isinstance(part_size, str) else int(part_size),
        "fit_seconds": fitted - start,
        "seconds": done - start,
        "fit_peak_rss": fit_rss,
        "peak_rss": _peak_rss_bytes(),
    }


def run_tabflow_cpu(options: argparse.Namespace) -> dict[str, Any]:
    """The same workflow on the CPU engine (pandas): the reference ``--gpu --check`` compares
    the GPU engine's output with."""
    options.device = "cpu"
    return run_tabflow(options, name="tabflow-cpu")


def _cluster_client(options: argparse.Namespace) -> Any:
    """A dask client on a one-worker cluster (``--cluster local`` / ``local-cuda``), or None."""
    if options.cluster == "none":
        return None
    import distributed

    if options.cluster == "local-cuda":
        from dask_cuda import LocalCUDACluster

        cluster = LocalCUDACluster(n_workers=1, dashboard_address=":0", silence_logs=40)
    else:
        cluster = distributed.LocalCluster(n_workers=1, dashboard_address=":0", silence_logs=40)
    return distributed.Client(cluster)


def run_polars(options: argparse.Namespace, engine: Any = "auto", name: str = "polars") -> dict[str, Any]:
    """The categorify ETL as a hand-written Polars script (``engine``: Polars' engine for
    every query, the GPU engine for ``polars-gpu``)."""
    import polars as pl

    # Criteo's column names, spelled out: importing tabflow (and pandas, dask) would add
    # their memory to Polars' peak RSS.
    CATEGORICAL_COLUMNS = [f"C{i}" for i in range(1, 27)]
    CONTINUOUS_COLUMNS = [f"I{i}" for i in range(1, 14)]
    out_dir = _fresh_output(options, name)
    files = _parquet_files(options.data_dir)
    start = time.perf_counter()
    scan = pl.scan_parquet(files)
    # Fit: one count per categorical column and the moments of the log counts, in one collect.
    counts = [
        scan.select(c).drop_nulls().group_by(c).len().filter(pl.col("len") >= max(options.freq_threshold, 1))
        for c in CATEGORICAL_COLUMNS
    ]
    # LogOp computes log(x + 1) in float32; Normalize works in float64.
    logs = [(pl.col(c).fill_null(0).clip(lower_bound=0).cast(pl.Float32) + 1).log().cast(pl.Float64)
            for c in CONTINUOUS_COLUMNS]
    moments = scan.select([x.mean().alias(f"{c}_mean") for x, c in zip(logs, CONTINUOUS_COLUMNS)]
                          + [x.std(ddof=1).alias(f"{c}_std") for x, c in zip(logs, CONTINUOUS_COLUMNS)])
    if engine == "auto":
        *vocab_counts, stats = pl.collect_all([*counts, moments])
    else:  # each query on the given engine (collect_all runs on the CPU engine)
        *vocab_counts, stats = [query.collect(engine=engine) for query in [*counts, moments]]
    stats = stats.row(0, named=True)
    vocabs = [
        table.sort(["len", c], descending=[True, False])
        .with_row_index(f"{c}__index", offset=FIRST_VALUE_INDEX)
        .select(c, pl.col(f"{c}__index").cast(pl.Int64))
        for table, c in zip(vocab_counts, CATEGORICAL_COLUMNS)
    ]
    fitted = time.perf_counter()
    # Transform: one streamed query per input file (a left join per column, then the null and
    # out-of-vocabulary slots), sunk to its own output file, so that Polars holds one file's
    # rows at a time, as it would be written by hand for a dataset larger than memory.
    for path in files:
        out = pl.scan_parquet(path)
        for vocab, c in zip(vocabs, CATEGORICAL_COLUMNS):
            out = out.join(vocab.lazy(), on=c, how="left", maintain_order="left")
        out = out.select(
            [pl.when(pl.col(c).is_null()).then(NULL_INDEX).otherwise(pl.col(f"{c}__index").fill_null(OOV_INDEX))
             .cast(pl.Int64).alias(c) for c in CATEGORICAL_COLUMNS]
            + [((x - stats[f"{c}_mean"]) / stats[f"{c}_std"]).alias(c) for x, c in zip(logs, CONTINUOUS_COLUMNS)]
            + [pl.col("label")]
        )
        target = os.path.join(out_dir, os.path.basename(path))
        if engine == "auto":
            out.sink_parquet(target, compression="snappy")
        else:
            out.sink_parquet(target, compression="snappy", engine=engine)
    done = time.perf_counter()
    rows = pl.scan_parquet(files).select(pl.len()).collect().item()
    _finish(options, out_dir)
    return {"rows": rows, "fit_seconds": fitted - start, "seconds": done - start, "peak_rss": _peak_rss_bytes()}


def _log_counts(frame: Any, c: str) -> Any:
    """LogOp of a count column as the baselines compute it: log(x + 1) in float32 (as LogOp),
    then float64 (as Normalize works); ``frame`` is pandas or cuDF."""
    import numpy as np

    return np.log(frame[c].fillna(0).clip(lower=0).astype("float32") + 1).astype("float64")


def _file_by_file_fit(lib: Any, files: Sequence[str], freq_threshold: int) -> tuple[int, dict[str, Any], dict[str, tuple]]:
    """The fit of the file-by-file baselines, with ``lib`` pandas or cuDF: one file in memory
    at a time, value counts added up and the log counts' sums kept. Returns the rows, each
    categorical column's counts at or above ``freq_threshold`` (a series indexed by value)
    and each continuous column's (mean, sample std)."""
    import numpy as np

    from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS

    counts: dict[str, list] = {c: [] for c in CATEGORICAL_COLUMNS}
    sums = {c: [0.0, 0.0, 0] for c in CONTINUOUS_COLUMNS}  # sum, sum of squares, count
    rows = 0
    for path in files:
        frame = lib.read_parquet(path)
        rows += len(frame)
        for c in CATEGORICAL_COLUMNS:
            counts[c].append(frame[c].value_counts())
        for c in CONTINUOUS_COLUMNS:
            x = _log_counts(frame, c)
            sums[c][0] += float(x.sum())
            sums[c][1] += float((x * x).sum())
            sums[c][2] += len(x)
    totals = {}
    for c in CATEGORICAL_COLUMNS:
        total = lib.concat(counts[c]).groupby(level=0).sum()
        totals[c] = total[total >= max(freq_threshold, 1)]
    moments = {}
    for c, (total, squares, n) in sums.items():
        mean = total / n
        moments[c] = (mean, np.sqrt(max(squares - n * mean * mean, 0.0) / (n - 1)))
    return rows, totals, moments


def run_pandas(options: argparse.Namespace) -> dict[str, Any]:
    """The categorify ETL in hand-written pandas, one file in memory at a time."""
    import numpy as np
    import pandas as pd

    from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS

    out_dir = _fresh_output(options, "pandas")
    files = _parquet_files(options.data_dir)

    start = time.perf_counter()
    rows, totals, moments = _file_by_file_fit(pd, files, options.freq_threshold)
    vocabs = {}
    for c, total in totals.items():
        order = pd.DataFrame({"value": total.index, "count": total.to_numpy()}).sort_values(
            ["count", "value"], ascending=[False, True], kind="stable")
        vocabs[c] = pd.Index(order["value"].to_numpy())
    fitted = time.perf_counter()
    for path in files:
        frame = pd.read_parquet(path)
        out = {}
        for c in CATEGORICAL_COLUMNS:
            codes = vocabs[c].get_indexer(frame[c]).astype("int64")
            codes = np.where(codes < 0, OOV_INDEX, codes + FIRST_VALUE_INDEX)
            out[c] = np.where(frame[c].isna().to_numpy(), NULL_INDEX, codes)
        for c in CONTINUOUS_COLUMNS:
            mean, std = moments[c]
            out[c] = ((_log_counts(frame, c) - mean) / std).to_numpy()
        out["label"] = frame["label"].to_numpy()
        pd.DataFrame(out).to_parquet(os.path.join(out_dir, os.path.basename(path)), compression="snappy", index=False)
    done = time.perf_counter()
    _finish(options, out_dir)
    return {"rows": rows, "fit_seconds": fitted - start, "seconds": done - start, "peak_rss": _peak_rss_bytes()}


def run_gpu_floor(options: argparse.Namespace) -> dict[str, Any]:
    """Read every file with cuDF and write it back (snappy): the GPU's least work."""
    import cudf

    out_dir = _fresh_output(options, "gpu-floor")
    start = time.perf_counter()
    rows = 0
    for path in _parquet_files(options.data_dir):
        frame = cudf.read_parquet(path)
        frame.to_parquet(os.path.join(out_dir, os.path.basename(path)), compression="snappy", index=False)
        rows += len(frame)
        del frame
    seconds = time.perf_counter() - start
    _finish(options, out_dir)
    return {"rows": rows, "seconds": seconds, "peak_rss": _peak_rss_bytes()}


def run_cudf(options: argparse.Namespace) -> dict[str, Any]:
    """The categorify ETL as a hand-written cuDF script, one file on the GPU at a time."""
    import cudf
    import cupy as cp

    from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS

    out_dir = _fresh_output(options, "cudf")
    files = _parquet_files(options.data_dir)

    start = time.perf_counter()
    rows, totals, moments = _file_by_file_fit(cudf, files, options.freq_threshold)
    vocabs = {}
    for c, total in totals.items():
        order = cudf.DataFrame({c: total.index, "count": total.values}).sort_values(["count", c], ascending=[False, True])
        vocabs[c] = cudf.DataFrame({c: order[c].reset_index(drop=True),
                                    "code": cp.arange(FIRST_VALUE_INDEX, FIRST_VALUE_INDEX + len(order), dtype="int64")})
    fitted = time.perf_counter()
    for path in files:
        frame = cudf.read_parquet(path)
        position = cp.arange(len(frame), dtype="int64")
        out = {}
        for c in CATEGORICAL_COLUMNS:
            keyed = cudf.DataFrame({c: frame[c], "row": position})
            joined = keyed.merge(vocabs[c], on=c, how="left").sort_values("row")
            codes = joined["code"].fillna(OOV_INDEX).astype("int64").values
            out[c] = cp.where(frame[c].isna().values, NULL_INDEX, codes)
        for c in CONTINUOUS_COLUMNS:
            mean, std = moments[c]
            out[c] = ((_log_counts(frame, c) - mean) / std).values
        out["label"] = frame["label"].values
        cudf.DataFrame(out).to_parquet(os.path.join(out_dir, os.path.basename(path)), compression="snappy", index=False)
    done = time.perf_counter()
    _finish(options, out_dir)
    return {"rows": rows, "fit_seconds": fitted - start, "seconds": done - start, "peak_rss": _peak_rss_bytes()}


def run_polars_gpu(options: argparse.Namespace) -> dict[str, Any]:
    """The Polars script of :func:`run_polars` on Polars' GPU engine."""
    import polars as pl

    return run_polars(options, engine=pl.GPUEngine(raise_on_fail=True), name="polars-gpu")


def run_vocab(options: argparse.Namespace) -> dict[str, Any]:
    """Fit Categorify on one string column of ``options.vocab_size`` distinct values and
    transform it to parquet (tabflow, or Polars with ``--vocab-engine polars``)."""
    path = _vocab_data(options)
    out_dir = _fresh_output(options, f"vocab-{options.vocab_engine}")
    start = time.perf_counter()
    if options.vocab_engine == "tabflow":
        import tabflow as nvt
        from tabflow import ops

        workflow = nvt.Workflow(["id"] >> ops.Categorify())
        dataset = nvt.Dataset(path, engine="parquet")
        workflow.fit(dataset)
        fitted = time.perf_counter()
        workflow.transform(dataset).to_parquet(out_dir)
    else:
        import polars as pl

        scan = pl.scan_parquet(os.path.join(path, "*.parquet"))
        vocab = (scan.group_by("id").len().filter(pl.col("id").is_not_null()).sort(["len", "id"], descending=[True, False])
                 .with_row_index("index", offset=FIRST_VALUE_INDEX).select("id", pl.col("index").cast(pl.Int64)).collect())
        fitted = time.perf_counter()
        (scan.join(vocab.lazy(), on="id", how="left", maintain_order="left")
         .select(pl.when(pl.col("id").is_null()).then(NULL_INDEX).otherwise(pl.col("index").fill_null(OOV_INDEX)).alias("id"))
         .sink_parquet(os.path.join(out_dir, "part_0.parquet")))
    done = time.perf_counter()
    _finish(options, out_dir)
    return {"fit_seconds": fitted - start, "seconds": done - start, "peak_rss": _peak_rss_bytes()}


PHASES: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "floor": run_floor,
    "tabflow": run_tabflow,
    "tabflow-cpu": run_tabflow_cpu,
    "polars": run_polars,
    "pandas": run_pandas,
    "gpu-floor": run_gpu_floor,
    "cudf": run_cudf,
    "polars-gpu": run_polars_gpu,
    "vocab": run_vocab,
}
#: Hand-written baselines on the CPU (``--cpu``, the default) and on the GPU (``--gpu``).
CPU_BASELINES = ("polars", "pandas")
GPU_BASELINES = ("cudf", "polars-gpu")
BASELINES = CPU_BASELINES + GPU_BASELINES


def _run_phase_process(phase: str, options: argparse.Namespace, extra: Sequence[str] = ()) -> dict[str, Any]:
    """Run one phase in a fresh interpreter and return what it reports (its last line)."""
    command = [sys.executable, os.path.abspath(__file__), "--phase", phase, "--data-dir", options.data_dir]
    command += _forwarded_arguments(options) + list(extra)
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"benchmark phase {phase!r} failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _forwarded_arguments(options: argparse.Namespace) -> list[str]:
    arguments = [
        "--rows", str(options.rows), "--files", str(options.files), "--workdir", options.workdir,
        "--workflow", options.workflow, "--freq-threshold", str(options.freq_threshold), "--device", options.device,
        "--cardinality-scale", str(options.cardinality_scale), "--seed", str(options.seed), "--cluster", options.cluster,
    ]
    if options.part_size is not None:
        arguments += ["--part-size", str(options.part_size)]
    if options.keep:
        arguments.append("--keep")
    if options.check:
        arguments.append("--check")
    return arguments


# ------------------------------------------------------------------------------ data


def ensure_data(options: argparse.Namespace) -> str:
    """Generate the input parquet unless the work directory already holds the same data."""
    return criteo_data(options.workdir, options.rows, options.files, seed=options.seed, progress=options.progress,
                       cardinality_scale=options.cardinality_scale)


def _vocab_data(options: argparse.Namespace) -> str:
    """One string column holding ``vocab_size`` distinct 16-character values, each once and
    a tenth of them twice (shuffled), in files of at most 5M rows; made once per size."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    size = options.vocab_size
    directory = os.path.join(options.workdir, f"vocab-{size}")
    marker = os.path.join(directory, "_GENERATED")
    if os.path.exists(marker):
        return directory
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    rng = np.random.default_rng(options.seed)
    per_file = 5_000_000
    for k, first in enumerate(range(0, size, per_file)):
        ids = np.arange(first, min(first + per_file, size), dtype=np.uint64)
        ids = np.concatenate([ids, ids[: len(ids) // 10]])
        rng.shuffle(ids)
        # Distinct ids as fixed-width hex text (Criteo's ids are 8 hex digits; 16 keep 50M distinct).
        text = np.char.zfill(np.char.mod("%x", ids * np.uint64(0x9E3779B97F4A7C15) % np.uint64(2**63)), 16)
        pq.write_table(pa.table({"id": pa.array(text.astype(object), pa.string())}), os.path.join(directory, f"part_{k}.parquet"))
    with open(marker, "w", encoding="utf-8") as handle:
        handle.write("complete\n")
    return directory


# ------------------------------------------------------------------------------- checks


def check_outputs(options: argparse.Namespace, phases: Sequence[str]) -> None:
    """The baselines wrote what tabflow wrote: the same codes exactly, the same numbers to
    float32 rounding (the logs are float32 and libraries' float32 logarithms may differ in
    the last bit; sums run in other orders). Raises AssertionError otherwise."""
    import numpy as np
    import pandas as pd

    def read(name: str) -> pd.DataFrame:
        directory = os.path.join(options.workdir, f"out-{name}")
        return pd.concat([pd.read_parquet(p) for p in _parquet_files(directory)], ignore_index=True)

    reference = read(f"tabflow-{options.workflow}")
    for phase in phases:
        other = read(phase)[list(reference.columns)]
        for column in reference.columns:
            ours, theirs = reference[column].to_numpy(), other[column].to_numpy()
            if reference[column].dtype.kind == "f":
                np.testing.assert_allclose(theirs, ours, rtol=1e-6, atol=1e-6, err_msg=f"{phase}: {column}")
            else:
                np.testing.assert_array_equal(theirs.astype("int64"), ours.astype("int64"), err_msg=f"{phase}: {column}")
        print(f"check: {phase} wrote the same {len(reference):,} rows as tabflow")


def check_engines(options: argparse.Namespace) -> int:
    """tabflow on the GPU (cuDF) wrote what tabflow on the CPU (pandas) wrote: the same
    columns and rows in the same order (the files read one after the other: the engines may
    cut partitions, and so files, at other rows), codes and hashes exactly, floats to 1e-5
    (float32 logarithms and sums in another order differ in the last bits). Returns the rows
    compared; raises AssertionError naming the column and the first differing row otherwise."""
    import numpy as np
    import pandas as pd

    def read(name: str) -> pd.DataFrame:
        directory = os.path.join(options.workdir, f"out-{name}-{options.workflow}")
        return pd.concat([pd.read_parquet(p) for p in _parquet_files(directory)], ignore_index=True)

    ours, reference = read("tabflow"), read("tabflow-cpu")
    assert list(ours.columns) == list(reference.columns), f"columns {list(ours.columns)} != {list(reference.columns)}"
    assert len(ours) == len(reference), f"{len(ours)} rows on the GPU, {len(reference)} on the CPU"
    for column in reference.columns:
        left, right = ours[column], reference[column]
        if right.dtype.kind == "f":
            np.testing.assert_allclose(left.to_numpy("float64", na_value=np.nan), right.to_numpy("float64", na_value=np.nan),
                                       rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=f"column {column}")
        else:
            np.testing.assert_array_equal(left.to_numpy(), right.to_numpy(), err_msg=f"column {column}")
    print(f"check: tabflow on the GPU wrote the same {len(reference):,} rows as tabflow on the CPU "
          f"(workflow {options.workflow}, {len(reference.columns)} columns; codes and hashes exact, floats to 1e-5)")
    return len(reference)


# ------------------------------------------------------------------------------- report


def _gib(value: float) -> str:
    return f"{value / 2**30:.2f} GiB"


def _rate(rows: int, seconds: float) -> str:
    return f"{rows / seconds:>12,.0f} rows/s" if seconds > 0 else "inf rows/s"


def _span(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.2f}x" if len(values) == 1 or f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}-{high:.2f}x"


def report(options: argparse.Namespace, runs: list[dict[str, dict[str, Any]]]) -> dict[str, list[float]]:
    """Print each run's phases, then the ratios over runs; return the ratio lists."""
    for number, results in enumerate(runs, 1):
        floor, tab = results["floor"], results["tabflow"]
        rows = tab["rows"]
        cluster = "" if options.cluster == "none" else f", on a one-worker {options.cluster} cluster"
        print(f"-- run {number}: {rows:,} rows, {options.files} files, workflow {options.workflow}, engine {tab['engine']}{cluster}, "
              f"{tab['npartitions']} partitions of {tab['part_size'] / 1e6:.0f} MB")
        print(f"pyarrow floor (read + write, snappy): {floor['seconds']:8.2f} s {_rate(floor['rows'], floor['seconds'])}"
              f"  peak RSS {_gib(floor['peak_rss'])}")
        if "gpu-floor" in results:
            gpu_floor = results["gpu-floor"]
            print(f"cuDF floor (GPU read + write, snappy): {gpu_floor['seconds']:7.2f} s {_rate(gpu_floor['rows'], gpu_floor['seconds'])}")
        print(f"tabflow fit:                          {tab['fit_seconds']:8.2f} s {_rate(rows, tab['fit_seconds'])}"
              f"  peak RSS {_gib(tab['fit_peak_rss'])}")
        print(f"tabflow transform + write:            {tab['seconds'] - tab['fit_seconds']:8.2f} s "
              f"{_rate(rows, tab['seconds'] - tab['fit_seconds'])}")
        print(f"tabflow total:                        {tab['seconds']:8.2f} s {_rate(rows, tab['seconds'])}"
              f"  peak RSS {_gib(tab['peak_rss'])}")
        for name in BASELINES:
            if name in results:
                base = results[name]
                print(f"{name + ' (hand-written) total:':38}{base['seconds']:8.2f} s {_rate(rows, base['seconds'])}"
                      f"  peak RSS {_gib(base['peak_rss'])}  (fit {base['fit_seconds']:.2f} s)")
    ratios: dict[str, list[float]] = {"floor": [r["tabflow"]["seconds"] / r["floor"]["seconds"] for r in runs]}
    if all("gpu-floor" in r for r in runs):
        ratios["gpu-floor"] = [r["tabflow"]["seconds"] / r["gpu-floor"]["seconds"] for r in runs]
    for name in BASELINES:
        if all(name in r for r in runs):
            ratios[name] = [r["tabflow"]["seconds"] / r[name]["seconds"] for r in runs]
            ratios[f"{name} rss"] = [r["tabflow"]["peak_rss"] / r[name]["peak_rss"] for r in runs]
    targets = options.workflow == "categorify"
    print(f"== over {len(runs)} run(s), min-max:")
    print(f"ratio tabflow / pyarrow floor: {_span(ratios['floor'])}"
          + (f" (target <= {TARGET_FLOOR_RATIO:g}x)" if targets else " (no target for this workflow)"))
    if "polars" in ratios:
        print(f"ratio tabflow / Polars time: {_span(ratios['polars'])} (target <= {TARGET_POLARS_RATIO:g}x)")
        print(f"ratio tabflow / Polars peak RSS: {_span(ratios['polars rss'])} (target <= {TARGET_POLARS_RSS_RATIO:g}x)")
    if "pandas" in ratios:
        print(f"ratio tabflow / pandas time: {_span(ratios['pandas'])}; peak RSS {_span(ratios['pandas rss'])}")
    if "gpu-floor" in ratios:
        rates = [r["tabflow"]["rows"] / r["tabflow"]["seconds"] for r in runs]
        print(f"tabflow on the GPU: {min(rates):,.0f}-{max(rates):,.0f} rows/s (target >= {TARGET_GPU_ROWS_PER_S:,.0f}); "
              f"ratio tabflow / cuDF floor: {_span(ratios['gpu-floor'])}")
    for name in GPU_BASELINES:
        if name in ratios:
            print(f"ratio tabflow / hand-written {name} time: {_span(ratios[name])} (target < 1x)")
    return ratios


def run_cardinality(options: argparse.Namespace) -> int:
    """Vocabulary scaling: time and peak RSS of tabflow and Polars per vocabulary size."""
    print(f"{'distinct values':>16} {'engine':>8} {'fit s':>8} {'total s':>8} {'peak RSS':>10}  RSS per value")
    largest_rss = 0.0
    engines = ["tabflow"] + (["polars"] if _has_polars() and "polars" in options.baselines else [])
    for size in options.cardinality:
        for engine in engines:
            extra = ["--vocab-size", str(size), "--vocab-engine", engine]
            result = _run_phase_process("vocab", options, extra)
            per_value = result["peak_rss"] / size
            print(f"{size:>16,} {engine:>8} {result['fit_seconds']:8.2f} {result['seconds']:8.2f} "
                  f"{_gib(result['peak_rss']):>10}  {per_value:8.0f} B")
            if engine == "tabflow":
                largest_rss = result["peak_rss"]
    print(f"largest vocabulary: tabflow peak RSS {_gib(largest_rss)} (target <= {_gib(TARGET_VOCAB_RSS)})")
    return 0


def _has_polars() -> bool:
    try:
        import polars  # noqa: F401
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="5000000",
                        help="rows of generated data; comma-separated sizes (e.g. 5000000,10000000) run the "
                             "benchmark at each and compare tabflow's peak RSS across them")
    parser.add_argument("--files", type=int, default=None, help="parquet files (default: two per million rows)")
    parser.add_argument("--cardinality-scale", type=float, default=2.0,
                        help="multiplies every vocabulary size of the generated data (2.0: up to ~1.4M values)")
    parser.add_argument("--part-size", default=None, help="tabflow partition size, e.g. 64MB (default: Dataset's)")
    parser.add_argument("--workdir", default=None, help="where data and outputs go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the written outputs (data is always kept)")
    parser.add_argument("--workflow", choices=sorted(WORKFLOWS), default="categorify")
    parser.add_argument("--freq-threshold", type=int, default=0, help="Categorify frequency threshold")
    parser.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto", help="tabflow engine")
    parser.add_argument("--gpu", dest="device", action="store_const", const="gpu", help="same as --device gpu (cuDF)")
    parser.add_argument("--cpu", dest="device", action="store_const", const="cpu", help="same as --device cpu (pandas)")
    parser.add_argument("--cluster", choices=["none", "local", "local-cuda"], default="none",
                        help="run tabflow on a one-worker dask LocalCluster / dask-cuda LocalCUDACluster (started untimed)")
    parser.add_argument("--baselines", default=None,
                        help="comma-separated hand-written baselines to run with the categorify workflow ('' for none; "
                             f"default {','.join(CPU_BASELINES)}, with --gpu {','.join(GPU_BASELINES)})")
    parser.add_argument("--repeat", type=int, default=1, help="run every phase this many times, interleaved")
    parser.add_argument("--check", action="store_true",
                        help="compare the baselines' outputs with tabflow's (with --gpu, also tabflow's with the CPU engine's)")
    parser.add_argument("--cardinality", default=None,
                        help="comma-separated vocabulary sizes: measure vocabulary scaling instead (e.g. 1000000,10000000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", action="store_true", help="show a progress bar while generating data")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    parser.add_argument("--vocab-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--vocab-engine", choices=["tabflow", "polars"], default="tabflow", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    try:
        options.sizes = [int(float(size)) for size in options.rows.split(",")]
    except ValueError:
        parser.error(f"--rows takes row counts separated by commas, got {options.rows!r}")
    if not options.sizes or min(options.sizes) < 1:
        parser.error(f"--rows takes positive row counts, got {options.rows!r}")
    options.rows = options.sizes[0]
    options.files_given = options.files
    if options.baselines is None:
        options.baselines = ",".join(GPU_BASELINES if options.device == "gpu" else CPU_BASELINES)
    finish_options(parser, options, BASELINES, files_per_million=FILES_PER_MILLION)
    if options.cardinality is not None:
        options.cardinality = [int(float(size)) for size in options.cardinality.split(",")]
    return options


def run_size(options: argparse.Namespace, baselines: list[str]) -> list[dict[str, dict[str, Any]]]:
    """Every phase at ``options.rows`` rows, ``options.repeat`` times interleaved; the ratios
    are printed (and the outputs checked with ``--check``). A baseline that fails is removed
    from ``baselines`` and left out."""
    options.data_dir = ensure_data(options)
    floors = ["floor"] + (["gpu-floor"] if options.device == "gpu" else [])
    runs = []
    for _ in range(options.repeat):
        results = {name: _run_phase_process(name, options) for name in floors}
        results["tabflow"] = _run_phase_process("tabflow", options)
        for name in list(baselines):
            try:
                results[name] = _run_phase_process(name, options)
            except RuntimeError as err:  # reported and left out: the other phases still count
                print(f"baseline {name} failed, left out: {str(err)[-1500:]}")
                baselines.remove(name)
        runs.append(results)
    report(options, runs)
    if options.check and baselines:
        check_outputs(options, [name for name in baselines if all(name in r for r in runs)])
    if options.check and options.device == "gpu":
        reference = _run_phase_process("tabflow-cpu", options)
        print(f"tabflow on the CPU (the check's reference): {reference['seconds']:8.2f} s "
              f"{_rate(reference['rows'], reference['seconds'])}")
        check_engines(options)
    return runs


def report_growth(sizes: Sequence[int], peaks: dict[int, dict[str, list[int]]]) -> float:
    """Print each system's peak RSS at the largest size over that at the smallest (min-max
    over the runs' pairings); return tabflow's largest such ratio."""
    small, large = min(sizes), max(sizes)
    print(f"== peak RSS at {large:,} rows over {small:,} rows, min-max:")
    worst = 0.0
    for name in peaks[large]:
        if name not in peaks[small]:
            continue
        growth = [big / little for big in peaks[large][name] for little in peaks[small][name]]
        target = f" (target <= {TARGET_RSS_GROWTH:g}x)" if name == "tabflow" else ""
        print(f"{name}: {_span(growth)}{target}")
        if name == "tabflow":
            worst = max(growth)
    return worst


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    if options.phase:
        # Child process: run one phase, report it as one JSON line.
        print(json.dumps(PHASES[options.phase](options)), flush=True)
        return 0
    temporary = options.workdir is None
    options.workdir = os.path.abspath(options.workdir or tempfile.mkdtemp(prefix="tabflow-etl-"))
    os.makedirs(options.workdir, exist_ok=True)
    try:
        if options.cardinality:
            options.data_dir = options.workdir
            return run_cardinality(options)
        baselines = [name for name in options.baselines if options.workflow == "categorify"]
        if any(name.startswith("polars") for name in baselines) and not _has_polars():
            print("polars is not installed: skipping the Polars baselines (pip install polars)")
            baselines = [name for name in baselines if not name.startswith("polars")]
        peaks = {}
        for size in options.sizes:
            options.rows = size
            options.files = options.files_given or max(1, FILES_PER_MILLION * size // 1_000_000)
            runs = run_size(options, baselines)
            peaks[size] = {name: [r[name]["peak_rss"] for r in runs] for name in ("tabflow", *baselines) if all(name in r for r in runs)}
        if len(options.sizes) > 1:
            report_growth(options.sizes, peaks)
    finally:
        if temporary and not options.keep:
            shutil.rmtree(options.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
