"""File discovery and partition planning for parquet, ORC, CSV and raw Criteo text.

Parquet and ORC are planned from file metadata alone: row groups (stripes) are grouped into
partitions of about ``part_size`` bytes, and each column's dtype is fixed once for the whole
dataset (an integer column with a null anywhere becomes a nullable integer everywhere), so a
partition's dtypes never depend on its contents.

Examples
--------
>>> from tabflow.io.readers import CRITEO_COLUMNS
>>> CRITEO_COLUMNS[:2], CRITEO_COLUMNS[-1], len(CRITEO_COLUMNS)
(['label', 'I1'], 'C26', 40)
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any, Mapping, Sequence

import dask.dataframe as dd

__all__ = [
    "expand_paths",
    "read_parquet_ddf",
    "read_orc_ddf",
    "read_csv_ddf",
    "CRITEO_COLUMNS",
    "CRITEO_DTYPES",
    "HEX_DTYPES",
    "DatasetReadError",
    "nullable_dtypes",
]

CRITEO_CONTINUOUS = [f"I{i}" for i in range(1, 14)]
CRITEO_CATEGORICAL = [f"C{i}" for i in range(1, 27)]
CRITEO_COLUMNS = ["label", *CRITEO_CONTINUOUS, *CRITEO_CATEGORICAL]
#: Raw Criteo click logs: label, 13 integer features, 26 hex-string features; empty = null.
CRITEO_DTYPES = {"label": "int64", **{c: "Int64" for c in CRITEO_CONTINUOUS}, **{c: "string" for c in CRITEO_CATEGORICAL}}

#: ``dtypes=`` values that read a CSV column of hexadecimal strings as (nullable) int64.
HEX_DTYPES = ("hex", "hex32", "hex64")

_SUFFIXES = {
    "parquet": (".parquet", ".parq", ".pq"),
    "orc": (".orc",),
    "csv": (".csv", ".tsv", ".txt", ".csv.gz", ".gz", ""),
}


class DatasetReadError(OSError):
    """A dataset file that is missing, unreadable, or inconsistent with the others."""


def _natural_key(path: str) -> list:
    return [int(tok) if tok.isdigit() else tok for tok in re.split(r"(\d+)", path)]


def expand_paths(source: str | Sequence[str], engine: str) -> list[str]:
    """Files named by a path, a glob, a directory, or a list of those, in natural order."""
    sources = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files: list[str] = []
    for item in sources:
        item = os.fspath(item)
        if os.path.isdir(item):
            found = [
                os.path.join(item, name)
                for name in os.listdir(item)
                if not name.startswith((".", "_"))
                and name != "schema.json"
                and os.path.isfile(os.path.join(item, name))
                and (engine == "csv" or name.endswith(_SUFFIXES.get(engine, ("",))))
            ]
            if not found:
                raise DatasetReadError(f"directory {item!r} holds no {engine} files")
            files.extend(sorted(found, key=_natural_key))
        elif any(ch in item for ch in "*?["):
            found = sorted(glob.glob(item), key=_natural_key)
            if not found:
                raise DatasetReadError(f"no file matches {item!r}")
            files.extend(found)
        elif os.path.exists(item):
            files.append(item)
        else:
            raise DatasetReadError(f"file {item!r} does not exist")
    return files


# ---------------------------------------------------------------------------------- parquet


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
        from tabflow.backends import get_backend

        path, row_groups = piece
        try:
            return get_backend(self.engine).read_parquet_part(path, list(row_groups), self.columns, self.dtypes)
        except OSError as err:
            raise DatasetReadError(f"cannot read parquet file {path!r}: {err}") from err


def plan_parquet(files: Sequence[str], part_size: int, backend: Any) -> tuple[list, dict[str, str], list[int]]:
    """Partitions (file, row groups), the dataset-wide dtypes and each partition's row count."""
    import pyarrow.parquet as pq

    pieces: list[tuple[str, tuple[int, ...]]] = []
    piece_rows: list[int] = []
    reference = None
    null_counts: dict[str, int] = {}
    arrow_types: dict[str, Any] = {}
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
        if reference is None:
            reference = names
            arrow_types = {n: schema.field(n).type for n in names}
            null_counts = {n: 0 for n in names}
        elif set(names) != set(reference):
            raise DatasetReadError(
                f"parquet file {path!r} has columns {sorted(names)}, unlike {files[0]!r} ({sorted(reference)}); "
                "all files of a dataset must share their columns"
            )
        column_index = {metadata.schema.column(i).path.split(".")[0]: i for i in range(metadata.num_columns)}
        group: list[int] = []
        group_bytes, group_rows = 0.0, 0
        for rg in range(metadata.num_row_groups):
            row_group = metadata.row_group(rg)
            for name in reference:
                idx = column_index.get(name)
                stats = row_group.column(idx).statistics if idx is not None else None
                if stats is None or not stats.has_null_count:
                    null_counts[name] += 1 if row_group.num_rows else 0
                else:
                    null_counts[name] += stats.null_count
            if expansion is None:
                expansion = _memory_expansion(path, row_group, backend, schema)
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
    dtypes = {name: backend.arrow_canonical_dtype(arrow_types[name], null_counts[name] > 0) for name in reference or []}
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
    pieces, planned, piece_rows = plan_parquet(files, part_size, backend)
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


# -------------------------------------------------------------------------------------- ORC


class OrcPartReader:
    def __init__(self, engine: str, dtypes: Mapping[str, str]) -> None:
        self.engine = engine
        self.dtypes = dict(dtypes)

    def __call__(self, piece: tuple[str, tuple[int, ...]]) -> Any:
        from tabflow.backends import get_backend

        path, stripes = piece
        try:
            return get_backend(self.engine).read_orc_part(path, list(stripes), list(self.dtypes), self.dtypes)
        except OSError as err:
            raise DatasetReadError(f"cannot read ORC file {path!r}: {err}") from err


def read_orc_ddf(files: Sequence[str], part_size: int, backend: Any, dtypes: Mapping[str, str] | None = None):
    import pyarrow.orc as orc

    pieces = []
    planned: dict[str, str] = {}
    num_rows = 0
    for path in files:
        try:
            reader = orc.ORCFile(path)
        except Exception as err:  # noqa: BLE001
            raise DatasetReadError(f"cannot read ORC file {path!r} ({err})") from err
        if not planned:
            # ORC footers carry no per-column null counts that pyarrow exposes: integer columns
            # are planned as nullable so that every partition agrees.
            planned = {f.name: backend.arrow_canonical_dtype(f.type, True) for f in reader.schema}
        elif set(planned) != set(reader.schema.names):
            raise DatasetReadError(
                f"ORC file {path!r} has columns {sorted(reader.schema.names)}, unlike {files[0]!r} "
                f"({sorted(planned)}); all files of a dataset must share their columns"
            )
        num_rows += reader.nrows
        if reader.nstripes == 0:
            continue
        # Stripes are stored compressed; about 4x is their in-memory size.
        bytes_per_stripe = max(1, os.path.getsize(path) * 4 // reader.nstripes)
        per_part = max(1, part_size // bytes_per_stripe)
        stripes = list(range(reader.nstripes))
        for i in range(0, len(stripes), per_part):
            pieces.append((path, tuple(stripes[i : i + per_part])))
    if not pieces:
        pieces.append((files[0], ()))
    planned.update(dtypes or {})
    ddf = dd.from_map(
        OrcPartReader(backend.name, planned), pieces, meta=backend.empty_frame(planned),
        label="tabflow-read-orc", enforce_metadata=False,
    )
    return ddf, num_rows


# -------------------------------------------------------------------------------------- CSV


def nullable_dtypes(dtypes: Mapping[str, str]) -> dict[str, str]:
    """Canonical dtypes with integer and boolean ones as their masked (nullable) dtypes.

    A text file can hold an empty field in any column, so a requested ``int32`` column is
    read as ``Int32`` (on cuDF every integer column is nullable anyway).

    Examples
    --------
    >>> from tabflow.io.readers import nullable_dtypes
    >>> nullable_dtypes({"a": "int32", "b": "uint8", "c": "bool", "d": "float32", "e": "Int64"})
    {'a': 'Int32', 'b': 'UInt8', 'c': 'boolean', 'd': 'float32', 'e': 'Int64'}
    """
    return {name: _masked(dtype) for name, dtype in dtypes.items()}


def _masked(canonical: str) -> str:
    if canonical == "bool":
        return "boolean"
    if canonical.startswith(("int", "uint")):
        return canonical.capitalize().replace("Uint", "UInt")
    return canonical


def read_csv_ddf(
    files: Sequence[str],
    part_size: int,
    backend: Any,
    sep: str = ",",
    names: Sequence[str] | None = None,
    header: Any = "infer",
    dtypes: Mapping[str, str] | None = None,
    hex_columns: Sequence[str] = (),
    **kwargs: Any,
):
    """CSV (any separator, with a header or ``names=``) split into ``part_size`` blocks.

    ``hex_columns`` hold hexadecimal strings (Criteo ids): they are read as strings and
    parsed to nullable int64, as cuDF's ``"hex"`` CSV dtype does.
    """
    for path in files:
        if not os.access(path, os.R_OK):
            raise DatasetReadError(f"cannot read CSV file {path!r}: permission denied")
    dtypes = {**(dtypes or {}), **{name: "string" for name in hex_columns}}
    engine_dtypes = {k: backend.engine_dtype(v) for k, v in dtypes.items()}
    if names is not None and header == "infer":
        header = None
    compression = "infer" if any(p.endswith((".gz", ".bz2", ".xz", ".zst")) for p in files) else None
    blocksize = None if compression else part_size
    options = dict(sep=sep, names=list(names) if names else None, header=header, compression=compression, **kwargs)
    try:
        ddf = backend.read_csv_ddf(list(files), blocksize, dtype=engine_dtypes or None, **options)
        # dask infers dtypes from the first block only: an integer column whose nulls sit in a
        # later block would be int64 there and float64 later. Reading every integer (and
        # boolean) column as its masked nullable dtype keeps one dtype for all partitions.
        nullable = {}
        for name, dtype in ddf.dtypes.items():
            canonical = backend.canonical_dtype(dtype)
            if name not in engine_dtypes and (canonical.startswith(("int", "uint")) or canonical == "bool"):
                nullable[name] = backend.engine_dtype(
                    "boolean" if canonical == "bool" else canonical.capitalize().replace("Uint", "UInt")
                )
        if nullable:
            ddf = backend.read_csv_ddf(list(files), blocksize, dtype={**engine_dtypes, **nullable}, **options)
        if hex_columns:
            wanted = {str(n): backend.canonical_dtype(t) for n, t in ddf.dtypes.items()}
            wanted.update({name: "Int64" for name in hex_columns})
            ddf = ddf.map_partitions(_parse_hex_columns, list(hex_columns), meta=backend.empty_frame(wanted))
        return ddf
    except (ValueError, OSError) as err:
        raise DatasetReadError(f"cannot read CSV files {list(files)[:3]}: {err}") from err


def _parse_hex_columns(frame: Any, names: list[str]) -> Any:
    from tabflow.backends import backend_for

    backend = backend_for(frame)
    parsed = {}
    for name in names:
        try:
            parsed[name] = backend.hex_to_int(frame[name])
        except ValueError as err:
            raise ValueError(f"column {name!r} read with dtype 'hex': {err}") from None
    return frame.assign(**parsed)
