"""Serving latency: one request through a loaded Criteo workflow, against a hand-written function.

The workflow is the NVTabular Criteo recipe (``benchmarks/etl.py``'s ``categorify``
workflow): ``Categorify(freq_threshold)`` on the 26 string ids, ``FillMissing >> Clip(0) >>
LogOp >> Normalize`` on the 13 counts. It is fitted on generated Criteo-like rows, saved,
loaded, and the label is removed from its inputs (``remove_inputs(["label"])``), as a server
does. Requests are rows of another day of the same log (another seed: unseen ids and nulls
included), one row each, and every path transforms the same requests in the same order:

- ``hand-written``: a Python function doing the same dict lookups and arithmetic on a dict of
  Python values (the floor of per-request work in Python; its log is float64 where tabflow's
  is float32, so its values agree to float32 precision);
- ``transform(dict)``: ``workflow.transform`` of the same dict (the serving plan; a dict of
  NumPy arrays comes back);
- ``transform(frame)``: ``workflow.transform`` of a one-row pandas frame with the fitted
  dtypes (the serving plan; a pandas frame comes back);
- ``transform(JSON frame)``: ``workflow.transform`` of ``pd.DataFrame([body])``, the frame
  pandas builds from the same dict (pandas' own dtypes: ``str``; ``int64``, or ``object``
  for a count that is null beside ints);
- ``pandas work alone``: the pandas work ``transform(frame)`` does, without the plan's own:
  the frame's column labels, its dtypes and cells (read from its blocks, see
  ``tabflow.backends._pandas_blocks``), and an answer frame of the output dtypes built from
  blocks;
- ``public pandas calls``: the same through pandas' public API alone (``frame.dtypes``,
  ``frame.iat`` a cell, ``pd.DataFrame`` and ``pd.concat`` for the answer): what a frame
  request would cost without reading blocks;
- ``batch path``: the graph run on the one-row frame by the in-memory batch executor, what
  ``transform`` of a small frame did before the serving plan (fewer requests: it is slow).

Each path's latency is timed request by request; p50 and p99 are printed per run, then the
ratios to the hand-written function's p50 and p99 (min-max over ``--repeat`` runs). Every
path of every run gets its own copies of the frames (made untimed), as a server gets frames
nothing has read: pandas keeps facts about a frame once read (its dtypes, the common dtype of
its rows), so frames read again would time faster than requests do. The data and the
workflow are made once per (rows, seed) under ``--workdir``.

Usage::

    python benchmarks/serving.py --workdir /tmp/tabflow-bench --repeat 3
    python benchmarks/serving.py --rows 20000 --requests 200
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Sequence

# The scripts run as files (python benchmarks/x.py) and are also loaded by path in tests.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import criteo_data, rss_mb  # noqa: E402

#: Target: the serving plan's p50 over the hand-written function's p50 (dict and frame requests).
TARGET_RATIO = 20.0

# Categorify's index convention (tabflow.ops.categorify): 1 null, 2 out of vocabulary.
NULL_INDEX, OOV_INDEX = 1, 2


def fitted_workflow(options: argparse.Namespace) -> Any:
    """The Criteo workflow fitted on the generated data, saved, loaded, without the label."""
    import tabflow as nvt
    from tabflow import ops
    from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS

    path = os.path.join(options.workdir, f"serving-workflow-{options.rows}rows-seed{options.seed}-ft{options.freq_threshold}")
    if not os.path.exists(os.path.join(path, "workflow.json")):
        data = criteo_data(options.workdir, options.rows, options.files, seed=options.seed)
        cats = CATEGORICAL_COLUMNS >> ops.Categorify(freq_threshold=options.freq_threshold)
        conts = CONTINUOUS_COLUMNS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
        workflow = nvt.Workflow(cats + conts + ["label"])
        start = time.perf_counter()
        workflow.fit(nvt.Dataset(data, engine="parquet"))
        print(f"fitted on {options.rows:,} rows in {time.perf_counter() - start:.1f} s (not timed below)")
        workflow.save(path, overwrite=True)
    return nvt.Workflow.load(path).remove_inputs(["label"])


def handwritten(workflow: Any) -> Callable[[dict], dict]:
    """A hand-written function with the workflow's lookups and arithmetic on a dict."""
    from tabflow import ops

    tables, scales = {}, []
    for node in workflow.nodes:
        if isinstance(node.op, ops.Categorify):
            for column in node.output_schema.column_names:
                vocab = node.op.vocabs_[node.op.encodings_[column]]
                first = 2 + node.op.oov_slots_[node.op.encodings_[column]]
                tables[column] = {value: first + i for i, value in enumerate(vocab["value"].tolist())}
        elif isinstance(node.op, ops.Normalize):
            for column in node.output_schema.column_names:
                std = node.op.stds_[column]
                scales.append((column, node.op.means_[column], std if std > 0 else 1.0))
    table_items, log1p = list(tables.items()), math.log1p

    def transform(request: dict) -> dict:
        out = {}
        for name, table in table_items:
            value = request[name]
            out[name] = NULL_INDEX if value is None else table.get(value, OOV_INDEX)
        for name, mean, std in scales:
            value = request[name]
            value = 0.0 if value is None else max(float(value), 0.0)
            out[name] = (log1p(value) - mean) / std
        return out

    return transform


def answer_parts(workflow: Any) -> tuple[list[Any], Any]:
    """One zeroed 2-D array per run of output columns of one dtype, and the output labels."""
    import numpy as np

    from tabflow.backends import _host_arrays

    dtypes = [_host_arrays.value_dtype(str(column.dtype)) for column in workflow.output_schema]
    parts = [np.zeros((len(list(run)), 1), dtype=dtype) for dtype, run in itertools.groupby(dtypes)]
    return parts, _host_arrays.column_labels(workflow.output_schema.column_names)


def pandas_work(workflow: Any) -> Callable[[Any], Any]:
    """The pandas work the serving plan does for a frame of the fitted layout, alone: the
    frame's labels, dtypes and cells, and an answer frame from prebuilt arrays."""
    from tabflow.backends import _host_arrays

    positions = list(range(len(workflow.input_schema)))
    parts, labels = answer_parts(workflow)

    def work(frame: Any) -> Any:
        _host_arrays.frame_layout(frame)
        _host_arrays.frame_cells(frame, positions)
        return _host_arrays.frame_of_parts([part.copy() for part in parts], labels, frame.index)

    return work


def public_pandas_calls(workflow: Any) -> Callable[[Any], Any]:
    """:func:`pandas_work` through pandas' public API only."""
    from tabflow.backends import _host_arrays

    positions = list(range(len(workflow.input_schema)))
    parts, labels = answer_parts(workflow)

    def calls(frame: Any) -> Any:
        frame.columns.tolist(), frame.dtypes.tolist()
        _host_arrays.cells_by_iat(frame, positions)
        return _host_arrays.frame_of_parts_by_pandas([part.copy() for part in parts], labels, frame.index)

    return calls


def make_requests(workflow: Any, options: argparse.Namespace) -> tuple[list[dict], list[Any], list[Any]]:
    """``--requests`` one-row requests, as dicts of Python values, as pandas frames of the
    fitted dtypes and as the frames pandas builds from the dicts."""
    import pandas as pd

    from tabflow.datasets import generate_criteo

    frame = generate_criteo(options.requests, seed=options.seed + 1)[workflow.input_schema.column_names]
    # As a JSON body gives them: str, int, None for a missing value.
    dicts = [{name: None if pd.isna(value) else value for name, value in row.items()} for row in frame.to_dict("records")]
    frames = [frame.iloc[[i]].reset_index(drop=True) for i in range(len(frame))]
    return dicts, frames, [pd.DataFrame([body]) for body in dicts]


def latencies(function: Callable[[Any], Any], requests: Sequence[Any]) -> list[float]:
    """Seconds per call, request by request."""
    clock, times = time.perf_counter, []
    for request in requests:
        start = clock()
        function(request)
        times.append(clock() - start)
    return times


def percentile(times: Sequence[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def check_agreement(workflow: Any, reference: Callable[[dict], dict], dicts: list[dict], frames: list[Any], json_frames: list[Any]) -> None:
    """The paths compute the same thing: equal codes, values equal to float32 precision,
    and the plan's frame identical to the batch path's."""
    import numpy as np
    import pandas as pd

    from tabflow.graph.executor import GraphRunner

    batch = GraphRunner([workflow.output_node], workflow.input_schema)
    for request, frame, json_frame in list(zip(dicts, frames, json_frames))[:20]:
        served = workflow.transform(request)
        expected = reference(request)
        for name, value in expected.items():
            if isinstance(value, int):
                assert int(served[name][0]) == value, (name, served[name], value)
            else:
                assert np.isclose(served[name][0], value, rtol=1e-5, atol=1e-6), (name, served[name], value)
        pd.testing.assert_frame_equal(workflow.transform(frame), batch.transform(frame), check_exact=True)
        pd.testing.assert_frame_equal(workflow.transform(json_frame), batch.transform(json_frame), check_exact=True)


def run(workflow: Any, options: argparse.Namespace, dicts: list[dict], frames: list[Any], json_frames: list[Any]) -> dict[str, list[float]]:
    from tabflow.graph.executor import GraphRunner

    reference = handwritten(workflow)
    batch = GraphRunner([workflow.output_node], workflow.input_schema)
    return {
        "hand-written": latencies(reference, dicts),
        "transform(dict)": latencies(workflow.transform, dicts),
        "transform(frame)": latencies(workflow.transform, unread(frames)),
        "transform(JSON frame)": latencies(workflow.transform, unread(json_frames)),
        "pandas work alone": latencies(pandas_work(workflow), unread(frames)),
        "public pandas calls": latencies(public_pandas_calls(workflow), unread(frames)),
        "batch path": latencies(batch.transform, unread(frames[: options.batch_requests])),
    }


def unread(frames: list[Any]) -> list[Any]:
    """Copies of ``frames`` that nothing has read yet."""
    return [frame.copy() for frame in frames]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.3f} ms"


def _span(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.1f}x" if len(values) == 1 or f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}x"


def report(runs: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Print each run's p50/p99 per path, then the ratios to the hand-written function."""
    for number, result in enumerate(runs, 1):
        print(f"-- run {number}")
        for name, times in result.items():
            print(f"{name + ':':23} p50 {_ms(percentile(times, 50))}  p99 {_ms(percentile(times, 99))}  ({len(times)} requests)")
    ratios: dict[str, list[float]] = {}
    for name in runs[0]:
        if name == "hand-written":
            continue
        for q in (50, 99):
            ratios[f"{name} p{q}"] = [percentile(r[name], q) / percentile(r["hand-written"], q) for r in runs]
    print(f"== over {len(runs)} run(s), min-max, ratio to the hand-written function:")
    for key, values in ratios.items():
        target = f" (target <= {TARGET_RATIO:g}x)" if key in ("transform(dict) p50", "transform(frame) p50") else ""
        print(f"{key + ':':29} {_span(values)}{target}")
    return ratios


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows the workflow is fitted on")
    parser.add_argument("--files", type=int, default=None, help="parquet files (default: two per million rows)")
    parser.add_argument("--freq-threshold", type=int, default=2, help="Categorify frequency threshold")
    parser.add_argument("--requests", type=int, default=2000, help="one-row requests timed per path and run")
    parser.add_argument("--batch-requests", type=int, default=50, help="requests timed through the slow batch path")
    parser.add_argument("--repeat", type=int, default=3, help="runs; ratios print as min-max over them")
    parser.add_argument("--workdir", default=None, help="where data and the workflow go (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args(argv)
    if options.files is None:
        options.files = max(1, 2 * options.rows // 1_000_000)
    return options


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    temporary = options.workdir is None
    options.workdir = os.path.abspath(options.workdir or tempfile.mkdtemp(prefix="tabflow-serving-"))
    os.makedirs(options.workdir, exist_ok=True)
    try:
        workflow = fitted_workflow(options)
        dicts, frames, json_frames = make_requests(workflow, options)
        start = time.perf_counter()
        plan = workflow.compile_serving()
        print(f"serving plan: {plan!r}, built in {_ms(time.perf_counter() - start).strip()}; "
              f"ops run by their transform: {plan.fallbacks or 'none'}")
        check_agreement(workflow, handwritten(workflow), dicts, frames, json_frames)
        runs = [run(workflow, options, dicts, frames, json_frames) for _ in range(options.repeat)]
        report(runs)
        print(f"peak RSS {rss_mb():.0f} MB")
    finally:
        if temporary:
            shutil.rmtree(options.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
