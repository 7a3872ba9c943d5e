"""List columns handed to users: the cost of pandas' form over the Arrow form tabflow holds.

A parquet file of one ragged ``list<int64>`` column (0-9 items per row) and one int64 column
is read whole, each path timed ``--repeat`` times (the best is printed):

- ``arrow``: ``Dataset(path).to_ddf(arrow_lists=True).compute()``, the form ops, the writer
  and the loaders read (no conversion);
- ``pandas form``: ``Dataset(path).to_ddf().compute()``, one NumPy array per row, as users
  get it;
- ``pd.read_parquet``: pandas' own reader on the same file (the same form, the baseline);
- ``back to Arrow``: that frame given back (``Backend.with_list_columns``, what
  ``Dataset(frame)`` does to it).

Run: ``python benchmarks/list_columns.py --rows 1000000``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import tabflow as nvt  # noqa: E402
from tabflow.backends import get_backend  # noqa: E402


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", default=None, help="where the parquet file is written (default: a temporary directory)")
    return parser.parse_args(argv)


def _best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    rng = np.random.default_rng(0)
    offsets = np.zeros(options.rows + 1, dtype=np.int32)
    np.cumsum(rng.integers(0, 10, options.rows), out=offsets[1:])
    items = pa.array(rng.integers(0, 1000, int(offsets[-1])))
    table = pa.table({"g": pa.ListArray.from_arrays(pa.array(offsets), items), "x": np.arange(options.rows)})
    with tempfile.TemporaryDirectory(dir=options.workdir) as directory:
        path = os.path.join(directory, "lists.parquet")
        pq.write_table(table, path)
        dataset = nvt.Dataset(path)
        arrow = _best(lambda: dataset.to_ddf(arrow_lists=True).compute(scheduler="synchronous"), options.repeat)
        handed = _best(lambda: dataset.to_ddf().compute(scheduler="synchronous"), options.repeat)
        reference = _best(lambda: pd.read_parquet(path), options.repeat)
        frame = dataset.to_ddf().compute(scheduler="synchronous")
        back = _best(lambda: get_backend("pandas").with_list_columns(frame), options.repeat)
    print(f"{options.rows:,} rows, {int(offsets[-1]):,} list items; best of {options.repeat}")
    print(f"arrow (to_ddf(arrow_lists=True)): {arrow:.3f} s")
    print(f"pandas form (to_ddf()): {handed:.3f} s (conversion {handed - arrow:.3f} s)")
    print(f"pd.read_parquet: {reference:.3f} s")
    print(f"back to Arrow (Dataset(frame)): {back:.3f} s")
    print(f"ratio pandas form / pd.read_parquet: {handed / reference:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
