"""The framework_utils tests' small data set: a raw frame and its ETL output.

The test modules wrap these in fixtures themselves: a conftest.py here would clash with
tests/loader/conftest.py under --doctest-modules (both import as the module ``conftest``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

CATS = ["user", "item"]
MULTI_HOT = ["tags"]
CONTS = ["x1", "x2"]
LABEL = "y"
NUM_ROWS = 640


def make_frame(num_rows: int = NUM_ROWS, seed: int = 0) -> pd.DataFrame:
    """Raw rows whose label depends on every feature kind, so that a model can learn it."""
    rng = np.random.default_rng(seed)
    user = rng.integers(0, 12, num_rows)
    item = rng.integers(0, 9, num_rows)
    tags = [list(rng.choice(6, size=k, replace=False)) for k in rng.integers(0, 4, num_rows)]
    x1, x2 = rng.normal(size=num_rows), rng.normal(size=num_rows)
    y = 0.8 * x1 - 0.5 * x2 + (user % 3) * 0.7 + np.array([len(t) for t in tags]) * 0.3 + rng.normal(0, 0.05, num_rows)
    frame = pd.DataFrame({"user": [f"u{u}" for u in user], "item": item, "x1": x1, "x2": x2, "y": y.astype(np.float32)})
    frame["tags"] = pd.Series([[f"t{t}" for t in row] for row in tags], dtype=pd.ArrowDtype(pa.list_(pa.string())))
    return frame


def write_etl_output(root) -> tuple[str, object, pd.DataFrame]:
    """``(output directory, fitted workflow, transformed frame)`` of a Categorify + Normalize workflow."""
    import tabflow as nvt
    from tabflow import ops

    frame = make_frame()
    cats = (CATS + MULTI_HOT) >> ops.Categorify()
    conts = CONTS >> ops.Normalize()
    workflow = nvt.Workflow(cats + conts + [LABEL])
    workflow.fit(nvt.Dataset(frame, npartitions=3))
    out_dir = str(root / "train")
    workflow.transform(nvt.Dataset(frame, npartitions=3)).to_parquet(
        output_path=out_dir, shuffle=None, cats=CATS + MULTI_HOT, conts=CONTS, labels=[LABEL]
    )
    return out_dir, workflow, pd.read_parquet(out_dir)


def leaked_loader_threads(before: set) -> list:
    """tabflow loader threads started since ``before`` (a set of threads) that are still alive."""
    import gc
    import threading

    gc.collect()
    return [t for t in threading.enumerate() if t not in before and t.name.startswith("tabflow") and t.is_alive()]
