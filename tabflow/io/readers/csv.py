"""CSV and other delimited text: dask's block-splitting text reader, with stable dtypes.

Examples
--------
>>> import pathlib, tempfile
>>> from tabflow.io.readers import ReadOptions, read_csv
>>> path = str(pathlib.Path(tempfile.mkdtemp(), "x.csv"))
>>> _ = pathlib.Path(path).write_text("id,n\\nff,1\\n10,2\\n")
>>> source = read_csv([path], ReadOptions(cpu=True, dtypes={"id": "hex"}))
>>> frame = source.ddf.compute()
>>> frame["id"].tolist(), str(frame["n"].dtype), source.partition_sources() == [path]
([255, 16], 'Int64', True)
"""

from __future__ import annotations

import functools
import os
from typing import Any, Mapping, Sequence

from tabflow.backends import backend_for
from tabflow.io.fs import is_remote
from tabflow.io.readers._shared import DatasetReadError, require_unique_names
from tabflow.io.readers._source import ReadOptions, Source
from tabflow.schema.dtypes import nullable_dtype

__all__ = ["read_csv", "read_text", "read_csv_ddf", "nullable_dtypes"]


def read_csv(paths: Sequence[str], options: ReadOptions) -> Source:
    """The CSV reader: any separator (default ``,``), a header line or ``names=``.

    Integer columns are read as nullable integers: an empty field is a null.
    """
    return read_text(
        paths, options, sep=options.sep or ",", names=options.names, header=options.header,
        dtypes=nullable_dtypes(options.canonical_dtypes),
    )


def read_text(
    paths: Sequence[str], options: ReadOptions, sep: str, names: Sequence[str] | None, header: Any,
    dtypes: Mapping[str, str],
) -> Source:
    """Delimited text read with these parser settings (the CSV and Criteo readers' shared body)."""
    extra = dict(options.extra)
    if options.storage_options:
        extra["storage_options"] = dict(options.storage_options)
    read = functools.partial(
        read_csv_ddf, part_size=options.partition_bytes(), backend=options.backend, sep=sep, names=names,
        header=header, dtypes=dtypes, hex_columns=options.hex_columns, **extra,
    )
    return Source(read(paths), options.backend.name, partition_sources=functools.partial(_block_files, paths, read))


def _block_files(paths: Sequence[str], read: Any) -> list[str]:
    # The reader splits each file into blocks on its own: read the plan file by file.
    return [path for path in paths for _ in range(read([path]).npartitions)]


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
    return {name: nullable_dtype(dtype) for name, dtype in dtypes.items()}


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
    parsed to nullable int64, as cuDF's ``"hex"`` CSV dtype does. URLs are read through
    fsspec (``storage_options=`` in ``kwargs``).
    """
    for path in files:
        if not is_remote(path) and not os.access(path, os.R_OK):
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
            if name not in engine_dtypes and nullable_dtype(canonical) != canonical:
                nullable[name] = backend.engine_dtype(nullable_dtype(canonical))
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
    passed = {k: options[k] for k in ("quotechar", "escapechar", "comment", "encoding", "skipinitialspace", "storage_options") if k in options}
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
    backend = backend_for(frame)
    parsed = {}
    for name in names:
        try:
            parsed[name] = backend.hex_to_int(frame[name])
        except ValueError as err:
            raise ValueError(f"column {name!r} read with dtype 'hex': {err}") from None
    return frame.assign(**parsed)
