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

import dataclasses
from typing import Any

import dask
import pyarrow as pa

from tabflow.backends import backend_for, collection_engine, get_backend
from tabflow.io.readers._shared import require_unique_names
from tabflow.io.readers._source import ReadOptions, Source
from tabflow.schema.dtypes import canonical_dtype, is_masked

__all__ = ["read_frame"]


def read_frame(frame: Any, options: ReadOptions) -> Source:
    """The source of an in-memory frame, moved to the engine ``options.cpu`` asks for.

    A dask DataFrame keeps its partitions; its ``object`` columns that hold lists (as
    ``Dataset.to_ddf`` and ``pd.read_parquet`` give list columns on pandas) become list
    columns, of the dtype the first partition with rows says (the first that says one, for a
    column of empty lists of strings or of lists). A pandas or cuDF frame is split into
    ``options.npartitions`` partitions, or into partitions of about ``part_size`` bytes.
    ``options.dtypes`` casts columns, as for files (``"hex"``: hexadecimal strings to
    nullable int64), lazily in every partition.

    Raises
    ------
    TypeError
        When ``frame`` is not a DataFrame, or file-reading options were given.
    ValueError
        When ``frame`` repeats a column name.
    KeyError
        When ``dtypes`` names a column the frame lacks.
    """
    options.take_extra("in-memory DataFrame")
    if _is_dask_frame(frame):
        return _with_dtypes(_dask_source(frame, options.cpu), options)
    backend = backend_for(frame)
    if not backend.is_frame(frame):
        raise TypeError(f"Dataset expects paths or a DataFrame, got {type(frame).__name__}")
    _require_unique_columns(frame.columns)
    planned = None
    if options.cpu is False and backend.name == "pandas":
        # Planned from the pandas frame, whose dtypes say more than cuDF's will (Int64 without nulls).
        planned = _planned_dtypes(backend, backend.with_list_columns(frame))
        backend = get_backend("cudf")
        frame = backend.from_host(frame)
    elif options.cpu is True and backend.name != "pandas":
        frame = backend.to_host(frame)
        backend = get_backend("pandas")
    frame = backend.with_list_columns(frame)
    npartitions = options.npartitions
    if npartitions is None:
        npartitions = max(1, -(-backend.memory_usage(frame) // options.partition_bytes(backend)))
    planned = planned if planned is not None else _planned_dtypes(backend, frame)
    source = Source(backend.from_frame_ddf(frame, npartitions), backend.name, num_rows=len(frame), dtypes=planned)
    return _with_dtypes(source, options)


def _planned_dtypes(backend: Any, frame: Any) -> dict[str, str]:
    """The nullable-integer rule of :mod:`tabflow.schema.dtypes` applied to the data: an
    integer or boolean column holding a null is named masked (``"Int64"``), as pandas names
    it, also on cuDF, whose integer dtypes hold nulls without saying so."""
    return {str(name): backend.column_dtype(frame[name]) for name in frame.columns}


def _with_dtypes(source: Source, options: ReadOptions) -> Source:
    """``source`` with the ``dtypes=`` casts applied in every partition."""
    if not options.dtypes:
        return source
    ddf = source.ddf
    missing = [name for name in options.dtypes if name not in ddf.columns]
    if missing:
        raise KeyError(f"dtypes names column(s) {missing} that the DataFrame lacks; columns are {list(ddf.columns)}")
    backend = get_backend(source.engine)
    casts = {name: backend.canonical_dtype(dtype) for name, dtype in options.dtypes.items() if name not in options.hex_columns}
    wanted = {str(name): backend.canonical_dtype(dtype) for name, dtype in ddf.dtypes.items()}
    wanted.update(casts)
    wanted.update({name: "Int64" for name in options.hex_columns})
    ddf = ddf.map_partitions(_set_dtypes, casts, list(options.hex_columns), meta=backend.empty_frame(wanted))
    return dataclasses.replace(source, ddf=ddf)


def _set_dtypes(frame: Any, casts: dict, hex_columns: list) -> Any:
    backend = backend_for(frame)
    changed = {name: backend.astype(frame[name], dtype) for name, dtype in casts.items()}
    for name in hex_columns:
        try:
            changed[name] = backend.hex_to_int(frame[name])
        except ValueError as err:
            raise ValueError(f"column {name!r} read with dtype 'hex': {err}") from None
    out = frame.copy(deep=False)
    for name, column in changed.items():
        out[name] = column
    return out


def _dask_source(ddf: Any, cpu: bool | None) -> Source:
    engine = collection_engine(ddf)
    masked: dict[str, str] = {}
    if cpu is True and engine != "pandas":
        ddf, engine = ddf.to_backend("pandas"), "pandas"
    elif cpu is False and engine == "pandas":
        get_backend("cudf")  # a clear ImportError when cuDF is missing
        masked = _masked_dtypes(ddf.dtypes)
        ddf, engine = ddf.to_backend("cudf"), "cudf"
    _require_unique_columns(ddf.columns)
    if engine == "pandas":  # cuDF holds lists in list columns only
        return Source(_object_lists_as_list_columns(ddf), engine)
    return _engine_dtypes(ddf, masked)


def _masked_dtypes(dtypes: Any) -> dict[str, str]:
    """The columns of masked dtypes (``Int64``, ``boolean``), by their canonical names."""
    masked = {}
    for name, dtype in dtypes.items():
        try:
            canonical = canonical_dtype(dtype)
        except (TypeError, ValueError):  # a dtype without a canonical name (cuDF structs): not masked
            continue
        if is_masked(canonical):
            masked[str(name)] = canonical
    return masked


def _engine_dtypes(ddf: Any, masked: dict[str, str]) -> Source:
    """A cuDF collection with its columns in cuDF's own dtypes: ``to_backend("cudf")`` and
    frames a user built with ``cudf.from_pandas`` keep pandas' extension dtypes (Arrow lists,
    ``Int64``), which the engine does not take (see ``Backend.with_list_columns``). A column
    that was masked (``Int64``, in ``masked`` or in the collection's dtypes) stays planned so:
    the cuDF ``int64`` it becomes does not say that it holds nulls."""
    from dask.dataframe.utils import make_meta

    backend = get_backend("cudf")
    meta = make_meta(ddf)
    planned = {**masked, **_masked_dtypes(meta.dtypes)}
    native = backend.with_list_columns(meta)
    if native is not meta:
        ddf = ddf.map_partitions(backend.with_list_columns, meta=native)
    return Source(ddf, "cudf", dtypes=planned or None)


def _object_lists_as_list_columns(ddf: Any) -> Any:
    backend = get_backend("pandas")
    dtypes = dict(ddf.dtypes.items())
    objects = [name for name, dtype in dtypes.items() if dtype == object]  # noqa: E721 - NumPy's object dtype
    if not objects:
        return ddf
    lists: dict[str, str] = {}
    undecided = list(objects)
    for i in range(ddf.npartitions):
        # The first partition with rows tells what each column holds; a column of empty
        # lists of objects (strings, nested lists) there says no element type, and the
        # next partitions are asked.
        sample = ddf.partitions[i][undecided].compute()
        if not len(sample):
            continue
        sample = backend.with_list_columns(sample)
        for name in list(undecided):
            dtype = sample[name].dtype
            if not backend.is_list_dtype(dtype):
                undecided.remove(name)
            elif not _lacks_element_type(dtype.pyarrow_dtype):
                lists[name] = backend.canonical_dtype(dtype)
                undecided.remove(name)
        if not undecided:
            break
    if not lists:
        return ddf
    meta = {name: backend.engine_dtype(lists[name]) if name in lists else dtype for name, dtype in dtypes.items()}
    return ddf.map_partitions(_as_list_columns, lists, meta=meta)


def _lacks_element_type(arrow_type: pa.DataType) -> bool:
    while pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        arrow_type = arrow_type.value_type
    return pa.types.is_null(arrow_type)


def _as_list_columns(frame: Any, lists: dict[str, str]) -> Any:
    backend = backend_for(frame)
    frame = backend.with_list_columns(frame)
    # A partition of null rows only, or of rows pyarrow reads with another element dtype,
    # takes the sampled one, so that every partition agrees with the schema.
    changed = {
        name: backend.astype(frame[name], dtype) for name, dtype in lists.items()
        if backend.canonical_dtype(frame[name].dtype) != dtype
    }
    if not changed:
        return frame
    out = frame.copy(deep=False)
    for name, column in changed.items():
        out[name] = column
    return out


def _is_dask_frame(obj: Any) -> bool:
    return dask.is_dask_collection(obj) and hasattr(obj, "npartitions") and hasattr(obj, "columns")


def _require_unique_columns(columns: Any) -> None:
    # pandas lets a frame repeat a column name; selecting it then yields two columns, and the
    # schema (a mapping by name) would keep only one of them.
    require_unique_names(
        list(columns), "the DataFrame given to Dataset",
        "rename the repeated columns (df.columns = [...]) or drop them (df.loc[:, ~df.columns.duplicated()])",
    )
