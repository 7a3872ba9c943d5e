"""Readers: one module per file format, registered by engine name and file suffix.

Every reader is a function ``read(paths, options) -> Source``: it takes the expanded file
list and a :class:`ReadOptions` (``Dataset``'s arguments), and returns a :class:`Source` (the
dask frame plus what the files' metadata tell: row counts, a direct per-partition reader,
each partition's file). ``Dataset`` is built from a ``Source`` alone; in-memory frames become
one through :func:`read_frame`.

Adding a format is one module with its reader, imported and registered at the end of this
file (or one :func:`register` call from outside the package)::

    register("jsonl", read_json_lines, suffixes=(".jsonl",))
    Dataset("data/*.jsonl")  # or Dataset(path, engine="jsonl")

Examples
--------
>>> from tabflow.io.readers import CRITEO_COLUMNS, format_for
>>> CRITEO_COLUMNS[:2], CRITEO_COLUMNS[-1], len(CRITEO_COLUMNS)
(['label', 'I1'], 'C26', 40)
>>> format_for("parquet").suffixes
('.parquet', '.parq', '.pq')
"""

from __future__ import annotations

from tabflow.io.readers._registry import (
    Format,
    expand_paths,
    format_for,
    guess_format,
    open_source,
    read_files,
    register,
)
from tabflow.io.readers._shared import (
    DatasetChangedError,
    DatasetReadError,
    read_error,
    require_unique_names,
    unify_types,
)
from tabflow.io.readers._source import HEX_DTYPES, ReadOptions, Source, check_part_size
from tabflow.io.readers.criteo import (
    CRITEO_CATEGORICAL,
    CRITEO_COLUMNS,
    CRITEO_CONTINUOUS,
    CRITEO_DTYPES,
    read_criteo,
)
from tabflow.io.readers.csv import nullable_dtypes, read_csv, read_csv_ddf
from tabflow.io.readers.frame import read_frame
from tabflow.io.readers.orc import read_orc, read_orc_ddf
from tabflow.io.readers.parquet import (
    ParquetPartReader,
    gather_pieces,
    plan_parquet,
    read_parquet,
    read_parquet_ddf,
)

__all__ = [
    # the registry and the reader contract
    "register",
    "format_for",
    "guess_format",
    "open_source",
    "read_files",
    "expand_paths",
    "Format",
    "Source",
    "ReadOptions",
    "check_part_size",
    # one reader per format
    "read_parquet",
    "read_orc",
    "read_csv",
    "read_criteo",
    "read_frame",
    # format helpers
    "read_parquet_ddf",
    "plan_parquet",
    "gather_pieces",
    "ParquetPartReader",
    "read_orc_ddf",
    "read_csv_ddf",
    "nullable_dtypes",
    "HEX_DTYPES",
    "CRITEO_COLUMNS",
    "CRITEO_DTYPES",
    "CRITEO_CONTINUOUS",
    "CRITEO_CATEGORICAL",
    # errors and type unification
    "DatasetReadError",
    "DatasetChangedError",
    "read_error",
    "require_unique_names",
    "unify_types",
]

# The registry of file formats, in the order the "pass engine=..." message lists them.
register("parquet", read_parquet, suffixes=(".parquet", ".parq", ".pq"))
register("csv", read_csv, suffixes=(".csv", ".tsv", ".csv.gz"), any_name=True)  # text files often have no suffix
register("orc", read_orc, suffixes=(".orc",))
register("criteo", read_criteo)  # raw click logs (day_0, ...): only by engine="criteo"
