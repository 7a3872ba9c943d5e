"""File discovery and partition planning for parquet, ORC, CSV and raw Criteo text.

Parquet and ORC are planned from file metadata alone: row groups (stripes) are grouped into
partitions of about ``part_size`` bytes, and each column's dtype is fixed once for the whole
dataset (an integer column with a null anywhere becomes a nullable integer everywhere), so a
partition's dtypes never depend on its contents.

A column's type is unified over the files' footers as Arrow's permissive schema
unification does (``pyarrow.unify_schemas(promote_options="permissive")``): int32 and int64
read as int64, int64 and float64 as float64, a null-typed column takes the other files' type,
dictionary-encoded strings are strings. Every partition is read with the unified dtypes, and
a value that does not fit them (uint64 above the int64 range, an integer beyond 2**53 read as
float64) is an error naming the file, never a silently changed value. Types that do not unify
(a string column in one file and a number in another) are an error naming both files.

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
    "read_error",
    "require_unique_names",
    "unify_types",
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


def read_error(kind: str, path: str, err: BaseException, row_group: int | None = None, unit: str = "row group") -> DatasetReadError:
    """A :class:`DatasetReadError` naming the file (and row group) that ``err`` came from.

    The original error is kept as ``__cause__`` by the ``raise ... from err`` of the caller.

    Examples
    --------
    >>> from tabflow.io.readers import read_error
    >>> str(read_error("parquet", "a.parquet", OSError("Corrupt snappy compressed data."), 2))[:60]
    "cannot read parquet file 'a.parquet' (row group 2): Corrupt "
    """
    where = f" ({unit} {row_group})" if row_group is not None else ""
    detail = " ".join(str(err).split()) or type(err).__name__
    message = f"cannot read {kind} file {path!r}{where}: {detail}"
    if type(err) is not ValueError:
        # A plain ValueError is tabflow's own (a value that does not fit the planned dtype)
        # and already says what to do; the readers' errors (pyarrow, cuDF) mean a bad file.
        message += " (the file looks truncated or corrupt: rewrite it, or leave it out of the dataset's paths)"
    return DatasetReadError(message)


def require_unique_names(names: Sequence[Any], where: str, fix: str, error: type[Exception] = ValueError) -> None:
    """``error`` (ValueError) naming the column names that ``names`` holds more than once.

    Examples
    --------
    >>> from tabflow.io.readers import require_unique_names
    >>> require_unique_names(["a", "b", "a"], "the frame", "rename one")
    Traceback (most recent call last):
    ...
    ValueError: the frame has the column name(s) ['a'] more than once (columns ['a', 'b', 'a']); tabflow needs distinct column names: rename one
    """
    seen: set = set()
    duplicates = [n for n in names if n in seen or seen.add(n)]
    if duplicates:
        raise error(
            f"{where} has the column name(s) {list(dict.fromkeys(duplicates))} more than once "
            f"(columns {list(names)}); tabflow needs distinct column names: {fix}"
        )


def _read_type(arrow_type: Any) -> Any:
    """The type a column is read as: dictionary-encoded values as their values."""
    import pyarrow as pa

    while pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return arrow_type


def unify_types(first: Any, second: Any) -> Any:
    """The type both Arrow types read as, or None when they do not unify.

    Arrow's permissive schema unification: integers widen (int32 + int64 -> int64, int32 +
    uint32 -> int64), integers and floats give a float wide enough for both (int64 +
    float64 -> float64), a null type takes the other type, string + large_string is a string.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from tabflow.io.readers import unify_types
    >>> unify_types(pa.int32(), pa.int64()), unify_types(pa.int64(), pa.float64()), unify_types(pa.string(), pa.int64())
    (DataType(int64), DataType(double), None)
    """
    import pyarrow as pa

    first, second = _read_type(first), _read_type(second)
    if first == second:
        return first
    if pa.types.is_null(first) or pa.types.is_null(second):
        return second if pa.types.is_null(first) else first
    try:
        schemas = [pa.schema([pa.field("c", first)]), pa.schema([pa.field("c", second)])]
        return pa.unify_schemas(schemas, promote_options="permissive").field(0).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


class _TypePlan:
    """Each column's type unified over the files seen so far, and the file it came from."""

    def __init__(self, kind: str, fixed: Sequence[str] = ()) -> None:
        self.kind = kind
        self.fixed = set(fixed)  # columns whose dtype the user gave: read as that, whatever the files hold
        self.types: dict[str, Any] = {}
        self.sources: dict[str, str] = {}
        self._last: Any = None

    def add(self, path: str, schema: Any, names: Sequence[str]) -> None:
        # Files of one dataset nearly always share one schema: comparing it whole is one
        # call per file instead of one per column and file.
        if self._last is not None and schema.equals(self._last, check_metadata=False):
            return
        self._last = schema
        for name in names:
            new = _read_type(schema.field(name).type)
            old = self.types.get(name)
            if old is None:
                self.types[name], self.sources[name] = new, path
                continue
            if new == old:
                continue
            merged = unify_types(old, new)
            if merged is None:
                if name in self.fixed:
                    continue
                raise DatasetReadError(
                    f"column {name!r} is {old} in {self.kind} file {self.sources[name]!r} but {new} in {path!r}, "
                    "and these types do not unify (strings, numbers, booleans and dates do not mix); "
                    f"pass dtypes={{{name!r}: 'string'}} (or another dtype every file's values convert to) to read "
                    "the column with one dtype, or rewrite the files so that the column has one type"
                )
            if merged != old:
                self.types[name], self.sources[name] = merged, path


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
    plan = _TypePlan("parquet", fixed)
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
    dtypes = {name: backend.arrow_canonical_dtype(plan.types[name], null_counts[name] > 0) for name in reference or []}
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
        except (DatasetReadError, MemoryError):
            raise
        except Exception as err:  # noqa: BLE001 - pyarrow and cuDF raise many types for bad files
            raise read_error("ORC", path, err, stripes[0] if len(stripes) == 1 else None, unit="stripe") from err


def read_orc_ddf(files: Sequence[str], part_size: int, backend: Any, dtypes: Mapping[str, str] | None = None):
    import pyarrow.orc as orc

    pieces = []
    reference: list[str] | None = None
    plan = _TypePlan("ORC", list(dtypes or {}))
    num_rows = 0
    for path in files:
        try:
            reader = orc.ORCFile(path)
        except Exception as err:  # noqa: BLE001
            raise DatasetReadError(f"cannot read ORC file {path!r} ({err})") from err
        names = list(reader.schema.names)
        require_unique_names(
            names, f"ORC file {path!r}", "rewrite the file with the repeated column renamed or dropped", DatasetReadError
        )
        if reference is None:
            reference = names
        elif set(reference) != set(names):
            raise DatasetReadError(
                f"ORC file {path!r} has columns {sorted(names)}, unlike {files[0]!r} "
                f"({sorted(reference)}); all files of a dataset must share their columns"
            )
        plan.add(path, reader.schema, names)
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
    # ORC footers carry no per-column null counts that pyarrow exposes: integer columns are
    # planned as nullable so that every partition agrees.
    planned = {name: backend.arrow_canonical_dtype(plan.types[name], True) for name in reference or []}
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
    if names is not None:
        require_unique_names(list(names), "names=", "pass distinct names")
    elif files and header is not None:
        _check_csv_header(files[0], sep, header, compression, kwargs)
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


def _check_csv_header(path: str, sep: str, header: Any, compression: Any, options: Mapping[str, Any]) -> None:
    """DatasetReadError naming a column name that the header line of ``path`` repeats.

    The CSV parsers rename a repeated name (``a``, ``a.1``), which would silently hand the
    second column to code that asks for the first; the header line is read raw to see it.
    """
    import pandas as pd

    if not isinstance(header, int) and header != "infer":
        return  # a multi-line header: the parser reports its own problems
    skip = options.get("skiprows", 0)
    if not isinstance(skip, int):
        return  # rows skipped by a list or a function: the header line is not known here
    skip += 0 if header == "infer" else header
    passed = {k: options[k] for k in ("quotechar", "escapechar", "comment", "encoding", "skipinitialspace") if k in options}
    try:
        first = pd.read_csv(
            path, sep=sep, header=None, nrows=1, dtype=str, keep_default_na=False,
            skiprows=skip, compression=compression or "infer", **passed,
        )
    except Exception:  # noqa: BLE001 - unreadable or empty: the real read reports it with its context
        return
    if len(first):
        require_unique_names(
            first.iloc[0].tolist(), f"the header of CSV file {path!r}",
            "rename the repeated column in the file, or pass names=[...] with distinct names and header=0",
            DatasetReadError,
        )


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
