"""CSV and other delimited text: pyarrow's multithreaded parser with pandas' semantics.

Text is parsed by pyarrow (see :mod:`tabflow.io.readers._arrow_text`) whenever it can read
the options as pandas does; otherwise (``comment=``, ``thousands=``, a regex separator, ...,
and on the cuDF engine, which parses on the GPU) by the engine's ``read_csv_ddf`` (dask's
block-splitting reader), exactly as before. Either way a file is split into ``part_size``
byte ranges, and each column has one dtype in every partition.

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

from tabflow.io.fs import is_remote
from tabflow.io.readers._arrow_text import (
    COMPRESSED_SUFFIXES,
    check_csv_header,
    parse_hex_columns,
    read_text_ddf,
    text_syntax,
)
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
    """Delimited text read with these parser settings (the CSV and Criteo readers' shared body).

    pyarrow parses it when it can read the options as pandas does (each partition then
    readable directly); otherwise :func:`read_csv_ddf` reads it with pandas.
    """
    backend = options.backend
    extra = dict(options.extra)
    syntax = None if backend.parses_csv else text_syntax(sep, names, header, extra)
    if syntax is not None:
        _require_readable(paths)
        planned = read_text_ddf(
            list(paths), syntax, options.partition_bytes(), backend, names=names, dtypes=dtypes,
            hex_columns=options.hex_columns, usecols=extra.get("usecols"), storage_options=options.storage_options,
        )
        if planned is not None:
            ddf, (reader, pieces) = planned
            return Source(ddf, backend.name, direct=(reader, pieces), partition_sources=functools.partial(_piece_files, pieces))
    if options.storage_options:
        extra["storage_options"] = dict(options.storage_options)
    read = functools.partial(
        read_csv_ddf, part_size=options.partition_bytes(), backend=backend, sep=sep, names=names,
        header=header, dtypes=dtypes, hex_columns=options.hex_columns, **extra,
    )
    ddf = read(paths)
    # Integer and boolean columns of text are nullable (an empty field is a null): the
    # schema says so on every engine, also where the engine's dtype cannot (cuDF).
    planned = {str(name): nullable_dtype(backend.canonical_dtype(dtype)) for name, dtype in ddf.dtypes.items()}
    return Source(ddf, backend.name, partition_sources=functools.partial(_block_files, paths, read), dtypes=planned)


def _piece_files(pieces: Sequence[tuple]) -> list[str]:
    return [piece[0] for piece in pieces]


def _block_files(paths: Sequence[str], read: Any) -> list[str]:
    # The reader splits each file into blocks on its own: read the plan file by file.
    return [path for path in paths for _ in range(read([path]).npartitions)]


def _require_readable(files: Sequence[str]) -> None:
    for path in files:
        if not is_remote(path) and not os.access(path, os.R_OK):
            raise DatasetReadError(f"cannot read CSV file {path!r}: permission denied")


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
    """CSV (any separator, with a header or ``names=``) split into ``part_size`` blocks by
    the engine's own reader (``dask.dataframe.read_csv`` with pandas, ``dask_cudf`` with cuDF),
    which takes every ``pandas.read_csv`` option.

    ``hex_columns`` hold hexadecimal strings (Criteo ids): they are read as strings and
    parsed to nullable int64, as cuDF's ``"hex"`` CSV dtype does. URLs are read through
    fsspec (``storage_options=`` in ``kwargs``).
    """
    _require_readable(files)
    dtypes = {**(dtypes or {}), **{name: "string" for name in hex_columns}}
    engine_dtypes = {k: backend.engine_dtype(v) for k, v in dtypes.items()}
    if names is not None and header == "infer":
        header = None
    compression = "infer" if any(p.endswith(COMPRESSED_SUFFIXES) for p in files) else None
    if names is not None:
        require_unique_names(list(names), "names=", "pass distinct names")
    elif files and header is not None:
        check_csv_header(files[0], sep, header, compression, kwargs)
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
            ddf = ddf.map_partitions(parse_hex_columns, list(hex_columns), meta=backend.empty_frame(wanted))
        return ddf
    except (ValueError, OSError) as err:
        raise DatasetReadError(f"cannot read CSV files {list(files)[:3]}: {err}") from err
