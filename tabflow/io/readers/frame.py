"""In-memory sources: a pandas or cuDF DataFrame, or a dask DataFrame of either.

Examples
--------
>>> import pandas as pd
>>> from tabflow.io.readers import ReadOptions, read_frame
>>> source = read_frame(pd.DataFrame({"a": range(10)}), ReadOptions(npartitions=3))
>>> source.engine, source.num_rows, source.ddf.npartitions
('pandas', 10, 3)
"""

from __future__ import annotations

from typing import Any

import dask

from tabflow.backends import backend_for, get_backend
from tabflow.io.readers._shared import require_unique_names
from tabflow.io.readers._source import ReadOptions, Source

__all__ = ["read_frame"]


def read_frame(frame: Any, options: ReadOptions) -> Source:
    """The source of an in-memory frame, moved to the engine ``options.cpu`` asks for.

    A dask DataFrame keeps its partitions; a pandas or cuDF frame is split into
    ``options.npartitions`` partitions, or into partitions of about ``part_size`` bytes.

    Raises
    ------
    TypeError
        When ``frame`` is not a DataFrame.
    ValueError
        When ``frame`` repeats a column name.
    """
    if _is_dask_frame(frame):
        return _dask_source(frame, options.cpu)
    backend = backend_for(frame)
    if not backend.is_frame(frame):
        raise TypeError(f"Dataset expects paths or a DataFrame, got {type(frame).__name__}")
    _require_unique_columns(frame.columns)
    if options.cpu is False and backend.name == "pandas":
        backend = get_backend("cudf")
        frame = backend.from_host(frame)
    elif options.cpu is True and backend.name != "pandas":
        frame = backend.to_host(frame)
        backend = get_backend("pandas")
    frame = backend.with_list_columns(frame)
    npartitions = options.npartitions
    if npartitions is None:
        npartitions = max(1, -(-backend.memory_usage(frame) // options.partition_bytes(backend)))
    return Source(backend.from_frame_ddf(frame, npartitions), backend.name, num_rows=len(frame))


def _dask_source(ddf: Any, cpu: bool | None) -> Source:
    # dask picks the collection class from the partitions' type (dask_cudf registers its
    # own), so the public class tells the engine.
    engine = "cudf" if type(ddf).__module__.startswith("dask_cudf") else "pandas"
    if cpu is True and engine != "pandas":
        ddf, engine = ddf.to_backend("pandas"), "pandas"
    elif cpu is False and engine == "pandas":
        get_backend("cudf")  # a clear ImportError when cuDF is missing
        ddf, engine = ddf.to_backend("cudf"), "cudf"
    _require_unique_columns(ddf.columns)
    return Source(ddf, engine)


def _is_dask_frame(obj: Any) -> bool:
    return dask.is_dask_collection(obj) and hasattr(obj, "npartitions") and hasattr(obj, "columns")


def _require_unique_columns(columns: Any) -> None:
    # pandas lets a frame repeat a column name; selecting it then yields two columns, and the
    # schema (a mapping by name) would keep only one of them.
    require_unique_names(
        list(columns), "the DataFrame given to Dataset",
        "rename the repeated columns (df.columns = [...]) or drop them (df.loc[:, ~df.columns.duplicated()])",
    )
