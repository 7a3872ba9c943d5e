"""Helpers that write the loader tests' small parquet data sets."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tabflow.schema import ColumnSchema, Schema, Tags

# Rows per file and row-group size: with part_size=1 every row group is one partition, so the
# partitions have uneven lengths (37, 37, 26, 20, 20, 13, 45, 45).
FILES = [(100, 37), (53, 20), (90, 45)]
NUM_ROWS = sum(n for n, _ in FILES)
CATS = ["c1", "c2"]
CONTS = ["x1", "x2"]
LABEL = "label"


def make_frame(num_rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=num_rows)
    x1[::7] = np.nan
    lengths = rng.integers(0, 4, size=num_rows)
    tags = [list(rng.integers(1, 20, size=k)) for k in lengths]
    frame = pd.DataFrame(
        {
            "row_id": np.arange(num_rows, dtype=np.int64),
            "c1": rng.integers(1, 10, size=num_rows),
            "c2": rng.integers(1, 5, size=num_rows).astype(np.int32),
            "x1": x1,
            "x2": rng.random(num_rows).astype(np.float32),
            "label": rng.integers(0, 2, size=num_rows),
        }
    )
    frame["tags"] = pd.Series(tags, dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    return frame


def write_dataset(directory: str, frame: pd.DataFrame, files=FILES, schema: Schema | None = None) -> str:
    os.makedirs(directory, exist_ok=True)
    start = 0
    for k, (rows, group) in enumerate(files):
        table = pa.Table.from_pandas(frame.iloc[start : start + rows], preserve_index=False)
        pq.write_table(table, os.path.join(directory, f"part_{k}.parquet"), row_group_size=group)
        start += rows
    if schema is not None:
        schema.to_json(os.path.join(directory, "schema.json"))
    return directory


def tagged_schema(frame: pd.DataFrame) -> Schema:
    tags = {**{c: Tags.CATEGORICAL for c in CATS}, **{c: Tags.CONTINUOUS for c in CONTS}, LABEL: Tags.TARGET}
    return Schema([ColumnSchema(name, dtype="float64", tags={tags[name]} if name in tags else ()) for name in frame.columns])
