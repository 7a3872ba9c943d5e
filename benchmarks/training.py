"""Training throughput: fastai's TabularModel fed by TorchAsyncItr, end to end, on a GPU or the CPU.

The seed notebook's job (``notebooks/02-fastai-training.ipynb``) at scale, each step timed:

1. data: ``--rows`` Criteo-like rows (``write_criteo``, files written in parallel threads;
   not timed), the last file(s) kept for validation;
2. ETL: the Criteo workflow (``Categorify(freq_threshold=15)``, ``FillMissing >> Clip >>
   LogOp >> Normalize``) fitted on the training files, both splits transformed to shuffled
   parquet (timed and reported, not part of the training rate);
3. loader alone: one shuffled epoch of ``TorchAsyncItr`` to ``--device``, no model;
4. training: ``Learner.fit_one_cycle`` of ``TabularModel`` (the notebook's layers and
   embedding sizes: ``[200, 100]``, ``min(16, suggested)``), rows/s over the training
   batches (validation excluded), then the validation AUC;
5. on CUDA, a profiled plain PyTorch loop over the same model and loader: how much of the
   host-to-device copy time runs while kernels of another stream run (copies overlapping
   compute), whether the copies come from pinned memory, how long the training loop waited
   for batches, and the peak GPU memory against one chunk's tensors.

The headline ratio is training rows/s against 659k rows/s, the seed notebook's published
figure (395M rows in 600 s).

Usage::

    python benchmarks/training.py --device cuda --rows 32000000 --workdir /data/bench
    python benchmarks/training.py --rows 400000 --batch-size 8192      # a quick CPU run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

# The scripts run as files (python benchmarks/x.py) and are also loaded by path in tests.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import criteo_data, rss_mb  # noqa: E402

SEED_ROWS_PER_S = 395_000_000 / 600
#: Training rate over the seed notebook's: on the CPU, and on one GPU.
TARGET = 2.0
TARGET_GPU = 10.0
#: The loader alone to CUDA, rows per second, and the share of its copy time that overlaps kernels.
TARGET_LOADER_ROWS_PER_S = 20_000_000
TARGET_OVERLAP = 0.8
_RESULT = "RESULT "


# ----------------------------------------------------------------------------- data + ETL


def prepare(options: argparse.Namespace) -> tuple[Any, Any, Any, dict[str, float]]:
    """Raw data, then the ETL on the chosen engine; returns (workflow, train, valid, timings)."""
    import tabflow as nvt
    from tabflow.demo import criteo_workflow, run_etl, split_train_valid

    raw = criteo_data(options.workdir, options.rows, options.files, seed=options.seed)
    files = sorted((os.path.join(raw, f) for f in os.listdir(raw) if f.endswith(".parquet")),
                   key=lambda p: int(p.rsplit("_", 1)[-1].split(".")[0]))
    train_files, valid_files = split_train_valid(files)
    cpu = {"auto": None, "cpu": True, "gpu": False}[options.etl_engine]
    train_raw = nvt.Dataset(train_files, engine="parquet", part_size=options.part_size, cpu=cpu)
    valid_raw = nvt.Dataset(valid_files, engine="parquet", part_size=options.part_size, cpu=cpu)
    processed = os.path.join(options.workdir, f"processed-{options.rows}rows-{train_raw.engine}")
    workflow = criteo_workflow(freq_threshold=options.freq_threshold)
    timings = run_etl(workflow, train_raw, valid_raw, processed, progress=False, seed=options.seed)
    timings["engine"] = train_raw.engine
    read_cpu = options.device == "cpu" or train_raw.engine == "pandas"
    train = nvt.Dataset(os.path.join(processed, "train"), engine="parquet", part_size=options.loader_part_size, cpu=read_cpu)
    valid = nvt.Dataset(os.path.join(processed, "valid"), engine="parquet", part_size=options.loader_part_size, cpu=read_cpu)
    return workflow, train, valid, timings


def host_read(dataset: Any, options: argparse.Namespace) -> Any:
    """The same files read by the pandas engine (chunks built in pinned host memory, then
    copied to the GPU), where ``dataset`` reads them with cuDF."""
    import tabflow as nvt

    return dataset if dataset.engine == "pandas" else nvt.Dataset(dataset.paths, engine="parquet", part_size=options.loader_part_size, cpu=True)


# ----------------------------------------------------------------------------- loader alone


def loader_alone(train: Any, options: argparse.Namespace) -> dict[str, Any]:
    import torch

    from tabflow.demo import make_loader

    cuda = options.device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    rows = 0
    start = time.perf_counter()
    with make_loader(train, options.batch_size, True, device=options.device, seed=options.seed,
                     parts_per_chunk=options.parts_per_chunk) as itr:
        for x_cat, _x_cont, _y in itr:
            rows += int(x_cat.shape[0])
        if cuda:
            torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    result = {"rows": rows, "seconds": seconds}
    if cuda:
        result["gpu_peak_bytes"] = int(torch.cuda.max_memory_allocated() - base)
    return result


# ----------------------------------------------------------------------------- fastai training


def fastai_training(workflow: Any, train: Any, valid: Any, options: argparse.Namespace) -> dict[str, Any]:
    from tabflow.demo import DemoConfig, train_tabular

    config = DemoConfig(
        rows=options.rows, workdir=options.workdir, batch_size=options.batch_size, epochs=options.epochs,
        seed=options.seed, layers=[int(n) for n in options.layers.split(",")], lr=options.lr, progress=False,
    )
    trained = train_tabular(workflow, train, valid, config, device=options.device)
    return {"rows": train.num_rows * options.epochs, "seconds": trained["seconds"], "auc": trained["auc"],
            "valid_loss": trained["valid_loss"]}


# ----------------------------------------------------------------------------- CUDA overlap


def _model(workflow: Any, options: argparse.Namespace) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastai.tabular.model import TabularModel

    from tabflow.demo import CATEGORICAL, CONTINUOUS
    from tabflow.ops import get_embedding_sizes

    sizes = get_embedding_sizes(workflow)
    embeddings = [(sizes[c][0], min(16, sizes[c][1])) for c in CATEGORICAL]
    return TabularModel(emb_szs=embeddings, n_cont=len(CONTINUOUS), out_sz=2,
                        layers=[int(n) for n in options.layers.split(",")])


def _intervals_overlap(spans: list[tuple[float, float]], others: list[tuple[float, float]]) -> float:
    """Total length of ``spans`` covered by the union of ``others`` (both lists of (start, end))."""
    merged: list[list[float]] = []
    for start, end in sorted(others):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    import bisect

    starts = [m[0] for m in merged]
    covered = 0.0
    for start, end in spans:
        i = max(0, bisect.bisect_right(starts, start) - 1)
        while i < len(merged) and merged[i][0] < end:
            covered += max(0.0, min(end, merged[i][1]) - max(start, merged[i][0]))
            i += 1
    return covered


def copy_overlap(trace_path: str) -> dict[str, Any]:
    """Read a profiler trace: host-to-device copies and the kernels of other streams."""
    with open(trace_path, encoding="utf-8") as handle:
        events = json.load(handle)["traceEvents"]
    copies, kernels = [], []
    for event in events:
        cat = str(event.get("cat", "")).lower()
        if "dur" not in event:
            continue
        span = (float(event["ts"]), float(event["ts"]) + float(event["dur"]))
        stream = (event.get("args") or {}).get("stream")
        if cat == "gpu_memcpy" and "HtoD" in event.get("name", ""):
            copies.append((span, stream, event.get("name", "")))
        elif cat == "kernel":
            kernels.append((span, stream))
    copy_time = sum(e - s for (s, e), _, _ in copies)
    overlapped = 0.0
    for stream in {s for _, s, _ in copies}:
        spans = [span for span, s, _ in copies if s == stream]
        others = [span for span, s in kernels if s != stream]
        overlapped += _intervals_overlap(spans, others)
    big = [(span, name) for span, _, name in copies if span[1] - span[0] > 50.0]  # chunk copies, not scalars
    return {
        "htod_copies": len(copies),
        "htod_copy_ms": copy_time / 1000,
        "htod_overlapped_ms": overlapped / 1000,
        "overlap_fraction": overlapped / copy_time if copy_time else 0.0,
        "copy_streams": sorted({str(s) for _, s, _ in copies}),
        "kernel_streams": sorted({str(s) for _, s in kernels}),
        "large_copies": len(big),
        "large_copies_pinned": sum("Pinned" in name for _, name in big),
        "kernel_ms": sum(e - s for (s, e), _ in kernels) / 1000,
    }


def profiled_loop(workflow: Any, train: Any, options: argparse.Namespace) -> dict[str, Any]:
    """A plain training loop (Adam, cross-entropy) under torch.profiler, plus its timing."""
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    from tabflow.demo import make_loader

    device = torch.device(options.device)
    model = _model(workflow, options).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(x_cat: Any, x_cont: Any, y: Any) -> Any:
        loss = F.cross_entropy(model(x_cat, x_cont), y.reshape(-1).long())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    trace = os.path.join(options.workdir, "training_trace.json")
    # The same loop without the profiler first: the rate a plain PyTorch loop reaches.
    plain_rows, plain_start = 0, time.perf_counter()
    with make_loader(train, options.batch_size, True, device=device, seed=options.seed,
                     parts_per_chunk=options.parts_per_chunk) as itr:
        for batch in itr:
            step(*batch)
            plain_rows += int(batch[0].shape[0])
        torch.cuda.synchronize()
    plain_seconds = time.perf_counter() - plain_start
    waited = 0.0
    steps = 0
    rows = 0
    with make_loader(train, options.batch_size, True, device=device, seed=options.seed,
                     parts_per_chunk=options.parts_per_chunk) as itr:
        it = iter(itr)
        for _ in range(3):  # warm-up: kernels compiled, allocator primed
            step(*next(it))
        torch.cuda.synchronize()
        start = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            while steps < options.profile_steps:
                before = time.perf_counter()
                try:
                    batch = next(it)
                except StopIteration:
                    break
                waited += time.perf_counter() - before
                step(*batch)
                steps += 1
                rows += int(batch[0].shape[0])
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    prof.export_chrome_trace(trace)
    result = copy_overlap(trace)
    result.update(steps=steps, rows=rows, seconds=seconds, waited_s=waited, trace=trace, plain_rows=plain_rows,
                  plain_seconds=plain_seconds)
    return result


# ----------------------------------------------------------------------------- report


def _rate(rows: float, seconds: float) -> float:
    return rows / seconds if seconds > 0 else float("inf")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of synthetic data (default: %(default)s)")
    parser.add_argument("--files", type=int, default=None, help="raw files (default: one per 2M rows, at least 4)")
    parser.add_argument("--workdir", default="demo_output", help="where data, ETL output and the trace go")
    parser.add_argument("--device", default=None, help="torch device: cuda, cuda:1 or cpu (default: cuda if available)")
    parser.add_argument("--etl-engine", choices=["auto", "cpu", "gpu"], default="cpu", help="ETL engine (default: %(default)s)")
    parser.add_argument("--part-size", default="256MB", help="ETL partition size (default: %(default)s)")
    parser.add_argument("--loader-part-size", default="256MB", help="loader partition size (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=65536)
    parser.add_argument("--parts-per-chunk", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--layers", default="200,100", help="TabularModel hidden layers (default: %(default)s)")
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--freq-threshold", type=int, default=15)
    parser.add_argument("--profile-steps", type=int, default=60, help="steps of the profiled loop on CUDA")
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args(argv)

    import torch

    if options.device is None:
        options.device = "cuda" if torch.cuda.is_available() else "cpu"
    if options.files is None:
        options.files = max(4, options.rows // 2_000_000)
    options.workdir = os.path.abspath(options.workdir)
    os.makedirs(options.workdir, exist_ok=True)
    cuda = options.device.startswith("cuda")
    where = torch.cuda.get_device_name(torch.device(options.device)) if cuda else f"{os.cpu_count()} CPU(s)"
    print(f"training benchmark: {options.rows:,} rows, batch {options.batch_size:,}, device {options.device} ({where}), "
          f"torch {torch.__version__}", flush=True)

    workflow, train, valid, etl = prepare(options)
    etl_rows = etl["rows"]
    print(f"ETL ({etl['engine']}): fit {etl['fit']:.1f} s ({_rate(train.num_rows, etl['fit']):,.0f} rows/s), "
          f"transform+write {etl['transform']:.1f} s ({_rate(etl_rows, etl['transform']):,.0f} rows/s); "
          f"{train.num_rows:,} training and {valid.num_rows:,} validation rows", flush=True)

    # The loader alone: from the host (pandas reads, pinned chunks copied to the GPU) and,
    # where the ETL ran on cuDF, from the GPU (cuDF reads, chunks handed to torch by DLPack).
    sources = {"host": host_read(train, options)}
    if train.engine == "cudf":
        sources["cuDF"] = train
    alone = {}
    for name, source in sources.items():
        alone[name] = loader_alone(source, options)
        result = alone[name]
        line = f"loader alone (TorchAsyncItr -> {options.device}, shuffled, {name} reads): {result['rows']:,} rows in " \
               f"{result['seconds']:.2f} s: {_rate(result['rows'], result['seconds']):,.0f} rows/s"
        if "gpu_peak_bytes" in result:
            row_bytes = 8 * 26 + 4 * 13 + 4
            chunk = options.parts_per_chunk * max(source.partition_lengths()) * row_bytes
            line += f"; peak GPU memory {result['gpu_peak_bytes'] / 2**20:,.0f} MiB = {result['gpu_peak_bytes'] / chunk:.1f} x one chunk's tensors ({chunk / 2**20:,.0f} MiB)"
            result["chunk_bytes"] = chunk
        print(line, flush=True)
    if cuda:
        print(f"loader target: >= {TARGET_LOADER_ROWS_PER_S:,.0f} rows/s to CUDA", flush=True)

    trained = fastai_training(workflow, train, valid, options)
    rate = _rate(trained["rows"], trained["seconds"])
    print(f"training (fastai TabularModel [{options.layers}], {options.epochs} epoch(s)): {trained['rows']:,} rows in "
          f"{trained['seconds']:.1f} s: {rate:,.0f} rows/s; validation AUC {trained['auc']:.4f}", flush=True)
    ratio = rate / SEED_ROWS_PER_S
    target = TARGET_GPU if cuda else TARGET
    print(f"ratio training / seed notebook (659k rows/s): {ratio:.2f}x (target >= {target:.0f}x{' on one GPU' if cuda else ''}) "
          f"{'OK' if ratio >= target else 'BELOW TARGET'}", flush=True)

    profiled: dict[str, Any] = {}
    if cuda:
        # Profiled on the host path, where chunks are copied to the GPU (cuDF chunks are not).
        profiled = profiled_loop(workflow, sources["host"], options)
        print(
            f"profiled plain loop: {profiled['steps']} steps, {_rate(profiled['rows'], profiled['seconds']):,.0f} rows/s "
            f"(under the profiler), waited for batches {profiled['waited_s']:.2f} of {profiled['seconds']:.2f} s; "
            f"host-to-device copies {profiled['htod_copy_ms']:.1f} ms on stream(s) {profiled['copy_streams']}, "
            f"{100 * profiled['overlap_fraction']:.0f}% of it overlapping kernels of other streams "
            f"(kernels on {profiled['kernel_streams']}); {profiled['large_copies_pinned']} of {profiled['large_copies']} "
            f"chunk copies from pinned memory (targets: all, and >= {100 * TARGET_OVERLAP:.0f}% overlapping); "
            f"plain loop without the profiler {_rate(profiled['plain_rows'], profiled['plain_seconds']):,.0f} rows/s", flush=True)
    result = {"etl": etl, "loader": alone, "training": trained, "profile": profiled, "peak_rss_mb": rss_mb(),
              "device": where, "rows": options.rows, "batch_size": options.batch_size}
    print(_RESULT + json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
