"""Streaming, atomic parquet writer behind :meth:`tabflow.Dataset.to_parquet`.

Partitions are computed a few at a time and streamed into exactly ``output_files`` open
parquet writers, so memory is bounded by the partitions in flight, not by the dataset. Files
are written into a temporary sibling directory together with ``_schema.json``; only when every
file is closed is that directory published as the requested path (:mod:`tabflow.io.atomic`),
so an interrupted write never leaves a directory that looks like a complete dataset, and only
a previous dataset (or, with ``overwrite=True``, anything) is ever replaced.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tabflow.io.atomic import check_target, discard, publish, temporary_directory
from tabflow.io.partitions import iter_partitions
from tabflow.io.shuffle import Shuffle
from tabflow.schema import SCHEMA_FILENAME, Schema

__all__ = ["write_parquet"]

# Below this many rows a partition is not split further across files (tiny row groups would
# make the output slow to read).
_MIN_SLICE_ROWS = 8192


def write_parquet(
    ddf: Any,
    output_path: str,
    schema: Schema,
    backend: Any,
    output_files: int,
    shuffle: Shuffle | None = None,
    seed: int | None = None,
    client: Any = None,
    cast: Mapping[str, str] | None = None,
    file_names: Sequence[str] | None = None,
    partition_files: Sequence[int] | None = None,
    overwrite: bool = False,
) -> list[str]:
    """Write ``ddf`` to ``output_files`` parquet files plus ``_schema.json``; return the paths.

    ``file_names`` names the files (default ``part_<k>.parquet``); ``partition_files`` sends
    each whole partition to the file of that index (rows shuffled within it under
    ``Shuffle.PER_PARTITION``) instead of spreading partitions over the files. An existing
    ``output_path`` is replaced only if it is empty or a previous dataset (it holds
    ``_schema.json``), or when ``overwrite`` is set.
    """
    if output_files < 1:
        raise ValueError(f"output_files must be at least 1, got {output_files}")
    output_path = os.path.abspath(output_path)
    check_target(output_path, "dataset", overwrite)
    nparts = ddf.npartitions
    if shuffle is None and output_files > nparts and partition_files is None:
        ddf = ddf.repartition(npartitions=output_files)
        nparts = ddf.npartitions
    names = list(file_names) if file_names is not None else [f"part_{k}.parquet" for k in range(output_files)]
    tmp = temporary_directory(output_path)
    arrow_schema = _portable_schema(backend.to_arrow(backend.empty_frame(schema.dtypes)).schema.remove_metadata())
    rng = np.random.default_rng(seed)
    writers: list[Any] = []
    try:
        writers = [pq.ParquetWriter(os.path.join(tmp, name), arrow_schema) for name in names]
        for index, frame in enumerate(iter_partitions(ddf, client=client)):
            if cast:
                frame = frame.astype({k: backend.engine_dtype(v) for k, v in cast.items() if k in frame.columns})
            table = backend.to_arrow(frame[schema.column_names]).replace_schema_metadata(None)
            if table.schema != arrow_schema:
                table = table.cast(arrow_schema)
            if partition_files is not None:
                if shuffle is not None:
                    table = table.take(pa.array(rng.permutation(table.num_rows)))
                routed = [(partition_files[index], table)]
            else:
                routed = _route(table, index, nparts, output_files, shuffle, rng)
            for file_index, piece in routed:
                if piece.num_rows:
                    writers[file_index].write_table(piece)
    except BaseException:
        for writer in writers:
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - already failing; the temp dir is removed below
                pass
        discard(tmp)
        raise
    try:
        for writer in writers:
            writer.close()
        schema.to_json(os.path.join(tmp, SCHEMA_FILENAME))
        publish(tmp, output_path, "dataset", overwrite)
    except BaseException:
        discard(tmp)
        raise
    return [os.path.join(output_path, name) for name in names]


def _portable(arrow_type: pa.DataType) -> pa.DataType:
    # 64-bit offsets only matter past 2 GB per column chunk; plain string/list types are the
    # ones every reader (cuDF, Spark, older pyarrow) handles.
    if pa.types.is_large_string(arrow_type):
        return pa.string()
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return pa.list_(_portable(arrow_type.value_type))
    return arrow_type


def _portable_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, _portable(f.type), nullable=f.nullable) for f in schema])


def _route(table: pa.Table, index: int, nparts: int, nfiles: int, shuffle: Shuffle | None, rng: np.random.Generator):
    """Yield (file index, rows) pieces of partition ``index``."""
    if shuffle is None:
        yield index * nfiles // nparts, table
        return
    permutation = rng.permutation(table.num_rows)
    if shuffle is Shuffle.PER_WORKER:
        # Random file per row; a stable sort by file keeps each file's rows in random order.
        targets = rng.integers(0, nfiles, size=table.num_rows)
        order = permutation[np.argsort(targets[permutation], kind="stable")]
        grouped = table.take(pa.array(order))
        bounds = np.searchsorted(targets[order], np.arange(nfiles + 1))
        for k in range(nfiles):
            yield k, grouped.slice(bounds[k], bounds[k + 1] - bounds[k])
        return
    shuffled = table.take(pa.array(permutation))
    slices = int(min(nfiles, max(1, table.num_rows // _MIN_SLICE_ROWS)))
    start_file = index % nfiles
    edges = np.linspace(0, table.num_rows, slices + 1).astype(np.int64)
    for j in range(slices):
        yield (start_file + j) % nfiles, shuffled.slice(edges[j], edges[j + 1] - edges[j])
