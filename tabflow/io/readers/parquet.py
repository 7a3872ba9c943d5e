"""Parquet: partitions planned from the files' footers, read directly or through dask.

Row groups are grouped into partitions of about ``part_size`` bytes, and each column's dtype
is fixed once for the whole dataset (an integer column with a null anywhere becomes a
nullable integer everywhere), so a partition's dtypes never depend on its contents. Column
types are unified across files (see :func:`tabflow.io.readers.unify_types`); a value that
does not fit the unified dtype is an error naming the file and row group.

Examples
--------
>>> import os, tempfile, pandas as pd
>>> from tabflow.io.readers import ReadOptions, read_parquet
>>> path = os.path.join(tempfile.mkdtemp(), "x.parquet")
>>> pd.DataFrame({"a": [1, 2, 3]}).to_parquet(path)
>>> source = read_parquet([path], ReadOptions(cpu=True))
>>> source.num_rows, source.partition_lengths, source.partition_sources() == [path]
(3, [3], True)
"""

from __future__ import annotations

import functools
from typing import Any, Mapping, Sequence

import dask.dataframe as dd

from tabflow.backends import get_backend
from tabflow.io.readers._shared import (
    DatasetReadError,
    TypePlan,
    read_error,
    require_unique_names,
)
from tabflow.io.readers._source import ReadOptions, Source
from tabflow.schema.dtypes import arrow_canonical_dtype

__all__ = ["read_parquet", "read_parquet_ddf", "plan_parquet", "ParquetPartReader"]


def read_parquet(paths: Sequence[str], options: ReadOptions) -> Source:
    """The parquet reader: partitions planned from the footers, each readable directly."""
    options.require_no_hex("parquet")
    ddf, lengths, (reader, pieces) = read_parquet_ddf(paths, options.partition_bytes(), options.backend, options.canonical_dtypes)
    return Source(
        ddf, options.backend.name, num_rows=sum(lengths), partition_lengths=lengths, direct=(reader, pieces),
        partition_sources=functools.partial(_piece_files, pieces),
    )


def _piece_files(pieces: Sequence[tuple[str, Any]]) -> list[str]:
    return [path for path, _ in pieces]


class ParquetPartReader:
    """Reads one planned partition (a file and some of its row groups)."""

    def __init__(self, engine: str, dtypes: Mapping[str, str], columns: Sequence[str] | None = None) -> None:
        self.engine = engine
        self.dtypes = dict(dtypes)
        self.columns = list(columns) if columns else None

    def with_columns(self, columns: Sequence[str]) -> "ParquetPartReader":
        """The same reader restricted to ``columns`` (in that order)."""
        return ParquetPartReader(self.engine, {c: self.dtypes[c] for c in columns}, columns=columns)

    def __call__(self, piece: tuple[str, tuple[int, ...]]) -> Any:
        path, row_groups = piece
        backend = get_backend(self.engine)
        try:
            return backend.read_parquet_part(path, list(row_groups), self.columns, self.dtypes)
        except (DatasetReadError, MemoryError):
            raise
        except Exception as err:  # noqa: BLE001 - pyarrow and cuDF raise many types for bad files
            raise read_error("parquet", path, err, self._failing_row_group(backend, path, row_groups)) from err

    def _failing_row_group(self, backend: Any, path: str, row_groups: Sequence[int]) -> int | None:
        """The first of ``row_groups`` that fails on its own (read again only after a failure)."""
        if len(row_groups) <= 1:
            return row_groups[0] if row_groups else None
        for row_group in row_groups:
            try:
                backend.read_parquet_part(path, [row_group], self.columns, self.dtypes)
            except Exception:  # noqa: BLE001
                return row_group
        return None


def plan_parquet(
    files: Sequence[str], part_size: int, backend: Any, fixed: Sequence[str] = ()
) -> tuple[list, dict[str, str], list[int]]:
    """Partitions (file, row groups), the dataset-wide dtypes and each partition's row count.

    Only footers are read (plus a small sample of one row group when string columns make
    the in-memory size unknown). ``fixed`` names columns whose dtype the caller sets: files
    whose types for them do not unify are not an error.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    pieces: list[tuple[str, tuple[int, ...]]] = []
    piece_rows: list[int] = []
    reference = None
    null_counts: dict[str, int] = {}
    plan = TypePlan("parquet", fixed)
    expansion: float | None = None
    for path in files:
        try:
            metadata = pq.read_metadata(path)
        except Exception as err:  # noqa: BLE001 - pyarrow raises several types for bad files
            raise DatasetReadError(
                f"cannot read parquet file {path!r} ({err}); check that it is a complete parquet file "
                "or pass engine='csv' for text files"
            ) from err
        schema = metadata.schema.to_arrow_schema()
        names = [n for n in schema.names if not n.startswith("__index_level_")]
        require_unique_names(
            names, f"parquet file {path!r}", "rewrite the file with the repeated column renamed or dropped",
            DatasetReadError,
        )
        if reference is None:
            reference = names
            null_counts = {n: 0 for n in names}
        elif set(names) != set(reference):
            raise DatasetReadError(
                f"parquet file {path!r} has columns {sorted(names)}, unlike {files[0]!r} ({sorted(reference)}); "
                "all files of a dataset must share their columns"
            )
        plan.add(path, schema, names)
        # A column of Arrow's null type holds nothing but nulls, whatever its statistics say.
        all_null = {n for n in names if pa.types.is_null(schema.field(n).type)}
        column_index = {metadata.schema.column(i).path.split(".")[0]: i for i in range(metadata.num_columns)}
        group: list[int] = []
        group_bytes, group_rows = 0.0, 0
        for rg in range(metadata.num_row_groups):
            row_group = metadata.row_group(rg)
            for name in reference:
                idx = column_index.get(name)
                stats = row_group.column(idx).statistics if idx is not None else None
                if name in all_null or stats is None or not stats.has_null_count:
                    null_counts[name] += 1 if row_group.num_rows else 0
                else:
                    null_counts[name] += stats.null_count
            if expansion is None:
                try:
                    expansion = _memory_expansion(path, row_group, backend, schema)
                except Exception as err:  # noqa: BLE001 - the sample read meets a corrupt page first
                    raise read_error("parquet", path, err, rg) from err
            row_group_bytes = row_group.total_byte_size * expansion
            # Close the partition before it would outgrow part_size (a lone oversized row
            # group still makes one partition: row groups are never split).
            if group and group_bytes + row_group_bytes > part_size:
                pieces.append((path, tuple(group)))
                piece_rows.append(group_rows)
                group, group_bytes, group_rows = [], 0.0, 0
            group.append(rg)
            group_bytes += row_group_bytes
            group_rows += row_group.num_rows
        if group or metadata.num_row_groups == 0:
            pieces.append((path, tuple(group)))
            piece_rows.append(group_rows)
    dtypes = {name: arrow_canonical_dtype(plan.types[name], null_counts[name] > 0) for name in reference or []}
    return pieces, dtypes, piece_rows


_EXPANSION_SAMPLE_ROWS = 8192


def _memory_expansion(path: str, row_group: Any, backend: Any, schema: Any) -> float:
    """In-memory bytes per uncompressed parquet byte.

    Parquet's uncompressed sizes understate what a frame holds (string columns become
    Python-visible string arrays with offsets and masks), so partitions planned from the
    metadata alone came out several times larger than ``part_size``. Null-free numeric
    columns hold exactly their item size per row; anything else is measured on a small sample.
    """
    if not row_group.num_rows or not row_group.total_byte_size:
        return 1.0
    per_row_parquet = row_group.total_byte_size / row_group.num_rows
    fixed = _fixed_width_row_bytes(row_group, schema)
    if fixed is not None:
        return max(1.0, fixed / per_row_parquet)
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as handle:
        batch = next(handle.iter_batches(batch_size=_EXPANSION_SAMPLE_ROWS, row_groups=[0]), None)
    if batch is None or not batch.num_rows:
        return 1.0
    import pyarrow as pa

    frame = backend.from_arrow(pa.Table.from_batches([batch]))
    return max(1.0, backend.memory_usage(frame) / batch.num_rows / per_row_parquet)


def _fixed_width_row_bytes(row_group: Any, schema: Any) -> int | None:
    """Bytes per row in memory when every column is a null-free integer, float or boolean
    (one byte per boolean), else None: reading a sample would measure the same."""
    import pyarrow as pa

    if row_group.num_columns != len(schema):
        return None  # nested columns: leaves and fields differ
    total = 0
    for index, field in enumerate(schema):
        kind = field.type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
            return None
        stats = row_group.column(index).statistics
        if stats is None or not stats.has_null_count or stats.null_count:
            return None  # a null may turn the column into a masked (wider) one
        total += max(1, kind.bit_width // 8)
    return total


def read_parquet_ddf(files: Sequence[str], part_size: int, backend: Any, dtypes: Mapping[str, str] | None = None):
    """A dask DataFrame over the files, the rows of each partition, and ``(reader, pieces)``:
    calling ``reader(pieces[i])`` reads partition ``i`` without going through dask."""
    pieces, planned, piece_rows = plan_parquet(files, part_size, backend, fixed=list(dtypes or {}))
    unknown = sorted(set(dtypes or {}) - set(planned))
    if unknown:
        raise KeyError(f"dtypes names column(s) {unknown} that the parquet files lack; columns are {list(planned)}")
    planned.update(dtypes or {})
    # Naming the columns drops pandas' stored index columns and fixes the column order, so
    # every partition matches the planned ``meta`` whatever order each file stores.
    reader = ParquetPartReader(backend.name, planned, columns=list(planned))
    ddf = dd.from_map(
        reader, pieces, meta=backend.empty_frame(planned), label="tabflow-read-parquet", enforce_metadata=False
    )
    return ddf, piece_rows, (reader, pieces)
