"""NVTabular's dispatch helpers (``nvtabular.dispatch``, ``merlin.core.dispatch``) on tabflow's engines.

Custom ops and scripts written for NVTabular 23.08 call these functions to work on pandas
and cuDF alike (``make_df``, ``is_list_dtype``, ``hash_series``, ...); they run here with only
their imports changed (``from tabflow import dispatch``). Every function hands the engine
work to the :mod:`tabflow.backends` backend of its argument, so both engines give the same
answers, and cuDF is imported only when a cuDF object or ``device="gpu"`` is met.

Which engine a function uses: the one its data belongs to; where nothing says (``make_df()``,
``arange(5)``), the default engine, cuDF when it imports and a GPU is visible, else pandas
(:func:`tabflow.backends.default_engine`). ``device="cpu"`` / ``"gpu"`` names one outright.
Nothing probes the GPU at import: :data:`HAS_GPU`, :data:`DataFrameType` and
:data:`SeriesType` are worked out when first read.

Functions that answered differently on NVTabular's two engines give one answer here, and
functions whose merlin version relied on older pandas (strings and lists held in ``object``
columns) follow pandas 3; each says so in its Notes.

Examples
--------
>>> from tabflow import dispatch
>>> df = dispatch.make_df({"a": [1, 2], "tags": [[1], [2, 3]]}, device="cpu")
>>> type(df).__name__, dispatch.is_list_dtype(df["tags"]), dispatch.is_list_dtype(df["a"])
('DataFrame', True, False)
"""

from __future__ import annotations

import enum
import functools
import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any, Self

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tabflow.backends import (
    Backend,
    backend_for,
    collection_engine,
    default_engine,
    frame_library,
    get_backend,
    gpu_available,
    reset_gpu_memory,
)
from tabflow.backends.list_keys import list_column, offsets_key, values_key
from tabflow.schema import dtypes as dtype_names

__all__ = [
    # Computed on first read by the module's __getattr__ (importing must not probe the GPU).
    "HAS_GPU",  # noqa: F822
    "DataFrameType",  # noqa: F822
    "SeriesType",  # noqa: F822
    "ExtData",
    "ParquetFrameWriter",
    "get_lib",
    "reinitialize",
    "annotate",
    "is_dataframe_object",
    "is_series_object",
    "is_cpu_object",
    "is_series_or_dataframe_object",
    "is_list_dtype",
    "is_string_dtype",
    "list_val_dtype",
    "series_has_nulls",
    "hex_to_int",
    "hash_series",
    "random_uniform",
    "random_state",
    "get_random_state",
    "generate_local_seed",
    "arange",
    "array",
    "zeros",
    "coo_matrix",
    "make_df",
    "make_series",
    "nullable_series",
    "add_to_series",
    "concat",
    "concat_columns",
    "columnwise_explode",
    "dataframe_columnwise_explode",
    "flatten_list_column_values",
    "flatten_list_column",
    "pull_apart_list",
    "encode_list_column",
    "build_pandas_list_column",
    "build_cudf_list_column",
    "create_multihot_col",
    "to_arrow",
    "to_host",
    "from_host",
    "convert_data",
    "detect_format",
    "read_dispatch",
    "read_parquet_dispatch",
    "read_parquet_metadata",
    "parquet_writer_dispatch",
    "df_from_dict",
    "dict_from_df",
]

# Masked (nullable) dtype name of each plain one, floats included (merlin's nullable map).
_MASKED_NAMES = {plain: masked for masked, plain in dtype_names.MASKED.items()}
_DEVICES = ("cpu", "gpu")


# --------------------------------------------------------------------- lazy module attributes
def _engine_union(kind: str) -> Any:
    """``pandas.<kind>``, or ``pandas.<kind> | cudf.<kind>`` where the GPU engine works."""
    host = getattr(pd, kind)
    if not gpu_available():
        return host
    return host | getattr(frame_library("cudf"), kind)


# Read through the module's ``__getattr__``, so that importing tabflow neither imports cuDF
# nor looks for a GPU.
_LAZY_ATTRIBUTES: dict[str, Callable[[], Any]] = {
    "HAS_GPU": gpu_available,
    "DataFrameType": functools.partial(_engine_union, "DataFrame"),
    "SeriesType": functools.partial(_engine_union, "Series"),
}


def __getattr__(name: str) -> Any:
    """:data:`HAS_GPU`, :data:`DataFrameType` and :data:`SeriesType`, computed when read.

    ``HAS_GPU`` is True when cuDF imports and a CUDA device is visible. ``DataFrameType`` and
    ``SeriesType`` are the frame and series classes of the usable engines, for annotations
    and ``isinstance``: ``pandas.DataFrame``, or ``pandas.DataFrame | cudf.DataFrame`` when
    the GPU engine works.

    Raises
    ------
    AttributeError
        For any other name.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import DataFrameType, HAS_GPU
    >>> isinstance(pd.DataFrame(), DataFrameType), isinstance(HAS_GPU, bool)
    (True, True)
    """
    if name not in _LAZY_ATTRIBUTES:
        raise AttributeError(f"module 'tabflow.dispatch' has no attribute {name!r}")
    return _LAZY_ATTRIBUTES[name]()


# ----------------------------------------------------------------------------- engines
def _owner(obj: Any) -> Backend | None:
    """The backend whose frame, series, index or array ``obj`` is; None for other objects."""
    try:
        return backend_for(obj)
    except TypeError:
        return None


def _backend(like: Any = None) -> Backend:
    """The backend of ``like``, or the default engine's when ``like`` is None."""
    return get_backend(default_engine()) if like is None else backend_for(like)


def _device_backend(device: str | None, data: Any = None) -> Backend:
    """The engine ``device`` names; without one, the engine ``data`` belongs to, else the default."""
    if device is not None:
        if device not in _DEVICES:
            raise ValueError(f"device must be one of {_DEVICES} or None, got {device!r}")
        return get_backend(default_engine(cpu=device == "cpu"))  # a clear ImportError without cuDF
    values = data.values() if isinstance(data, Mapping) else [data]
    owners = [owner for owner in map(_owner, values) if owner is not None]
    return owners[0] if owners else get_backend(default_engine())


def _move(obj: Any, backend: Backend) -> Any:
    """``obj`` (a frame, series or array of either engine; anything else as it is) on ``backend``."""
    owner = _owner(obj)
    if owner is None or owner.name == backend.name:
        return obj
    return backend.from_host(owner.to_host(obj))


def _with_lists(backend: Backend, series: Any) -> Any:
    """``series`` with Python lists held as a list column (as frames get them)."""
    frame = backend.with_list_columns(series.to_frame())
    converted = frame[frame.columns[0]]
    converted.name = series.name
    return converted


def _is_list_series(backend: Backend, series: Any) -> bool:
    return dtype_names.is_list(backend.observed_dtype(series))


def _is_nested(backend: Backend, series: Any) -> bool:
    """True for a list column whose elements are lists.

    Such columns are taken apart on the host, one level at a time: the engines'
    ``list_values_series`` differ on them (pandas gives one level, cuDF the innermost
    values at once).
    """
    return dtype_names.is_list(dtype_names.element_dtype(backend.observed_dtype(series)))


def _flatten(backend: Backend, series: Any) -> tuple[Any, Any]:
    """The innermost values of a (nested) list column, and each row's offsets into them.

    Null lists are empty; nulls inside lists are kept.
    """
    if not _is_nested(backend, series):
        offsets = backend.list_offsets(series)
        return backend.list_values_series(series), offsets
    host, on_host = get_backend("pandas"), backend.to_host(series)
    offsets = host.list_offsets(on_host)
    values = host.list_values_series(on_host)
    while _is_list_series(host, values):
        inner = host.list_offsets(values)
        offsets = inner[offsets]
        values = host.list_values_series(values)
    return backend.from_host(values), backend.from_host(offsets)


def _as_array(backend: Backend, obj: Any) -> Any:
    """A series' values as an array (other objects unchanged)."""
    return backend.to_numpy(obj) if backend.is_series(obj) else obj


# ------------------------------------------------------------------------ what things are
class ExtData(enum.Enum):
    """The kinds of data :func:`detect_format` recognises (NVTabular's names and values).

    Examples
    --------
    >>> from tabflow.dispatch import ExtData
    >>> ExtData.PARQUET.value, ExtData["PANDAS"]
    (6, <ExtData.PANDAS: 3>)
    """

    DATASET = 0
    ARROW = 1
    CUDF = 2
    PANDAS = 3
    DASK_CUDF = 4
    DASK_PANDAS = 5
    PARQUET = 6
    CSV = 7


_FRAME_FORMATS = {"pandas": ExtData.PANDAS, "cudf": ExtData.CUDF}
_COLLECTION_FORMATS = {"pandas": ExtData.DASK_PANDAS, "cudf": ExtData.DASK_CUDF}
_FILE_FORMATS = {"parquet": ExtData.PARQUET, "pq": ExtData.PARQUET, "csv": ExtData.CSV}


def get_lib() -> Any:
    """The frame library of the default engine: the ``cudf`` module with a usable GPU, else ``pandas``.

    Examples
    --------
    >>> from tabflow.dispatch import HAS_GPU, get_lib
    >>> get_lib().__name__ == ("cudf" if HAS_GPU else "pandas")
    True
    """
    return frame_library(default_engine())


def reinitialize(managed_memory: bool = False) -> None:
    """Reset RMM's GPU memory pool (``managed_memory``: CUDA unified memory), as merlin's;
    nothing to reset where RMM is not installed (the pandas engine).

    Examples
    --------
    >>> from tabflow.dispatch import reinitialize
    >>> reinitialize()  # no RMM here: nothing to do
    """
    reset_gpu_memory(managed_memory)


def is_dataframe_object(x: Any) -> bool:
    """True for a pandas or cuDF DataFrame (not a dask collection).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import is_dataframe_object
    >>> is_dataframe_object(pd.DataFrame()), is_dataframe_object(pd.Series([1])), is_dataframe_object({})
    (True, False, False)
    """
    owner = _owner(x)
    return owner is not None and owner.is_frame(x)


def is_series_object(x: Any) -> bool:
    """True for a pandas or cuDF Series.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from tabflow.dispatch import is_series_object
    >>> is_series_object(pd.Series([1])), is_series_object(np.arange(2))
    (True, False)
    """
    owner = _owner(x)
    return owner is not None and owner.is_series(x)


def is_cpu_object(x: Any) -> bool:
    """True for a pandas DataFrame or Series (data the CPU engine holds).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import is_cpu_object
    >>> is_cpu_object(pd.Series([1])), is_cpu_object([1])
    (True, False)
    """
    host = get_backend("pandas")
    return host.is_frame(x) or host.is_series(x)


def is_series_or_dataframe_object(maybe_series_or_df: Any) -> bool:
    """True for a pandas or cuDF Series or DataFrame.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import is_series_or_dataframe_object
    >>> is_series_or_dataframe_object(pd.DataFrame()), is_series_or_dataframe_object(1)
    (True, False)
    """
    return is_series_object(maybe_series_or_df) or is_dataframe_object(maybe_series_or_df)


def is_list_dtype(ser: Any) -> bool:
    """True when ``ser`` holds or describes list values.

    Parameters
    ----------
    ser : series, dtype, array, ColumnSchema or other object
        A pandas or cuDF Series (a pandas ``object`` column of Python lists counts), a dask
        Series, a dtype (a pandas/Arrow/cuDF list dtype or a name such as ``"list<int64>"``),
        a NumPy or CuPy array (True when it has more than one dimension), or a
        :class:`~tabflow.schema.ColumnSchema` (its ``is_list``). Any other object is
        list-like or not, as ``pandas.api.types.is_list_like`` says.

    Notes
    -----
    merlin looked at the first value of a pandas column, as older pandas held lists only in
    ``object`` columns; the list dtype of tabflow's pandas 3 columns answers here, and for an
    ``object`` column the first non-null value decides (merlin read a leading null as "not a
    list").

    Examples
    --------
    >>> import pandas as pd
    >>> import pyarrow as pa
    >>> from tabflow.dispatch import is_list_dtype
    >>> is_list_dtype(pd.Series([None, [1, 2]])), is_list_dtype(pd.Series(["a", "b"]))
    (True, False)
    >>> is_list_dtype(pd.ArrowDtype(pa.list_(pa.int64()))), is_list_dtype("list<string>"), is_list_dtype("int64")
    (True, True, False)
    """
    if isinstance(getattr(ser, "is_list", None), bool):
        return ser.is_list
    if isinstance(ser, dd.Series):
        if is_list_dtype(ser.dtype):
            return True
        # dask reads list columns from parquet as objects: look at the values.
        return dtype_names.is_string(dtype_names.canonical_dtype(ser.dtype)) and is_list_dtype(ser.head())
    owner = _owner(ser)
    if owner is not None and owner.is_series(ser):
        return _is_list_series(owner, ser)
    if owner is not None and isinstance(ser, owner.xp.ndarray):
        return ser.ndim > 1
    try:
        return dtype_names.is_list(dtype_names.canonical_dtype(ser))
    except (TypeError, ValueError):
        return pd.api.types.is_list_like(ser)


def is_string_dtype(dtype: Any) -> bool:
    """True for a string dtype (or a series or array holding strings).

    ``object``, pandas' string dtypes, Arrow strings and NumPy text dtypes are all strings,
    as they are for tabflow's schemas; a pandas ``object`` column of Python lists is not.
    An object that is no dtype is not a string dtype.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from tabflow.dispatch import is_string_dtype
    >>> is_string_dtype(np.dtype("O")), is_string_dtype(pd.StringDtype()), is_string_dtype(np.dtype("int64"))
    (True, True, False)
    >>> is_string_dtype(pd.Series(["a"])), is_string_dtype(pd.Series([["a"]]))
    (True, False)
    """
    owner = _owner(dtype)
    if owner is not None and owner.is_series(dtype):
        return dtype_names.is_string(owner.observed_dtype(dtype))
    if owner is not None and isinstance(dtype, owner.xp.ndarray):
        dtype = dtype.dtype
    try:
        return dtype_names.is_string(dtype_names.canonical_dtype(dtype))
    except (TypeError, ValueError):
        return False


def list_val_dtype(ser: Any) -> Any:
    """The dtype of the innermost values of a list column; None when ``ser`` holds no lists.

    A NumPy or CuPy array gives its own dtype. The dtype is the engine's for the values'
    canonical dtype: ``numpy.dtype("int64")`` for integers on either engine, pandas'
    ``StringDtype`` for strings on the pandas engine.

    Notes
    -----
    merlin inferred the dtype from a pandas column's first value through pandas internals
    (None for an empty column); here the list dtype says it, empty columns included.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import list_val_dtype
    >>> list_val_dtype(pd.Series([[[0, 1], [2]], [[3]]])), list_val_dtype(pd.Series([1, 2])) is None
    (dtype('int64'), True)
    """
    owner = _owner(ser)
    if owner is None:
        return None
    if isinstance(ser, owner.xp.ndarray):
        return ser.dtype
    if not owner.is_series(ser):
        return None
    canonical = owner.observed_dtype(ser)
    if not dtype_names.is_list(canonical):
        return None
    while dtype_names.is_list(canonical):
        canonical = dtype_names.element_dtype(canonical)
    return owner.engine_dtype(canonical)


def series_has_nulls(s: Any) -> bool:
    """True when the series holds a null (None, NA, NaN, a null list).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import series_has_nulls
    >>> series_has_nulls(pd.Series([1.0, None])), series_has_nulls(pd.Series([], dtype="int64"))
    (True, False)
    """
    return bool(backend_for(s).null_mask(s).any())


def annotate(*args: Any, **kwargs: Any) -> Any:
    """NVTX range around a function or a block, when the ``nvtx`` package is installed.

    Takes ``nvtx.annotate``'s arguments (``message``, ``color``, ``domain``, ...) and works
    as a decorator (``@annotate("fit", color="green")``, or bare ``@annotate``) and as a
    context manager (``with annotate("read"):``). Without ``nvtx`` it changes nothing: the
    decorator returns the function itself.

    Examples
    --------
    >>> from tabflow.dispatch import annotate
    >>> @annotate("double", color="green", domain="tabflow")
    ... def double(x):
    ...     return 2 * x
    >>> with annotate("block"):
    ...     double(21)
    42
    """
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return annotate()(args[0])
    nvtx = _nvtx()
    return nvtx.annotate(*args, **kwargs) if nvtx is not None else _NoAnnotation()


@functools.cache
def _nvtx() -> Any:
    return importlib.import_module("nvtx") if importlib.util.find_spec("nvtx") is not None else None


class _NoAnnotation:
    """:func:`annotate` without NVTX: a decorator and a context manager that do nothing."""

    def __call__(self, function: Callable) -> Callable:
        return function

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


# ------------------------------------------------------------------------ values and arrays
def hex_to_int(s: Any, dtype: Any = None) -> Any:
    """Hexadecimal strings as integers (nullable: nulls and ``""`` stay null).

    Parameters
    ----------
    s : pandas or cuDF Series
        Strings of 1 to 16 hex digits, with or without a ``0x`` prefix, in either case. A
        column that is not of strings is only cast.
    dtype : dtype, default int32
        The result's integer dtype; on the pandas engine its masked form (``Int32``), which
        holds the nulls.

    Raises
    ------
    ValueError
        For a value that is not hexadecimal (quoting it), or one that ``dtype`` cannot hold:
        values of ``0x80000000`` and above need ``dtype="int64"``.

    Notes
    -----
    Parsing is the engine's ``hex_to_int``, the same on both engines (merlin parsed with
    Python's ``int(x, 16)`` on CPU, which also took spaces and underscores, and cuDF's
    ``htoi`` on GPU). merlin parsed only ``object`` columns, so pandas 3's string columns
    were not parsed at all; every string dtype is parsed here. Values that overflow ``dtype`` are an
    error, not wrapped around.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import hex_to_int
    >>> hex_to_int(pd.Series(["ff", "0x10", None, "7FFFFFFF"])).tolist()
    [255, 16, <NA>, 2147483647]
    >>> hex_to_int(pd.Series(["ffffffff"]), dtype="int64").dtype
    Int64Dtype()
    """
    backend = backend_for(s)
    target = dtype_names.nullable_dtype(dtype_names.canonical_dtype(dtype or "int32"))
    parsed = backend.hex_to_int(s) if backend.is_string_dtype(s.dtype) else s
    converted = backend.conform_column(parsed, target)
    if converted.dtype != backend.engine_dtype(target):
        where = "" if s.name is None else f" of column {s.name!r}"
        raise ValueError(f"hexadecimal values{where} do not fit {target}; pass a wider dtype (dtype='int64')")
    return converted


def hash_series(ser: Any) -> Any:
    """tabflow's stable uint64 hash of each value; of each innermost value for list columns.

    This is the hash ``HashBucket``, ``HashedCross`` and ``Categorify(num_buckets=...)`` use
    (xxHash64 of each value's bytes, :mod:`tabflow.backends._hashing`), so
    ``hash_series(s) % n`` is the bucket ``HashBucket(n)`` gives. The result is an array of
    the engine (NumPy or CuPy).

    Notes
    -----
    It differs on purpose from merlin's, which was pandas' ``hash_array`` (SipHash, through
    ``hash_pandas_object``, which also hashed the index) on CPU and cuDF's MurmurHash3 on
    GPU: the two disagreed, so a value's bucket depended on the engine. This hash is the
    same on every engine, machine and run, and ignores the index.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import hash_series
    >>> hashes = hash_series(pd.Series(["a", "b", "a", None]))
    >>> hashes.dtype, bool(hashes[0] == hashes[2]), hex(int(hashes[3]))
    (dtype('uint64'), True, '0xffffffffffffffff')
    >>> len(hash_series(pd.Series([[1, 2], [], [3]])))
    3
    """
    backend = backend_for(ser)
    if _is_list_series(backend, ser):
        ser, _ = _flatten(backend, ser)
    return backend.hash_values(ser)


def random_uniform(size: Any) -> Any:
    """Uniform samples on [0, 1) from the global generator of the default engine's array module.

    Examples
    --------
    >>> from tabflow.dispatch import random_uniform
    >>> values = random_uniform(size=4)
    >>> values.shape, bool(((values >= 0) & (values < 1)).all())
    ((4,), True)
    """
    return _backend().xp.random.uniform(size=size)


def random_state(seed: int | None, like_df: Any = None) -> Any:
    """A new ``RandomState`` of NumPy, or of CuPy for cuDF data (``like_df``, else the default engine).

    Raises
    ------
    TypeError
        When ``like_df`` belongs to neither engine (merlin raised ValueError).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import random_state
    >>> state = random_state(42, like_df=pd.Series([1]))
    >>> type(state).__module__, int(state.randint(1000)) == int(random_state(42, like_df=pd.Series([1])).randint(1000))
    ('numpy.random.mtrand', True)
    """
    return _backend(like_df).xp.random.RandomState(seed)


def get_random_state() -> Any:
    """The global ``RandomState`` of the default engine (NumPy's, or CuPy's with a usable GPU).

    Notes
    -----
    merlin returned a fresh, unseeded NumPy state on CPU, so ``numpy.random.seed`` did not
    reach it; this is the global one on both engines.

    Examples
    --------
    >>> from tabflow.dispatch import get_random_state
    >>> get_random_state() is get_random_state()
    True
    """
    return _backend().global_random_state()


def generate_local_seed(global_rank: int, global_size: int) -> int:
    """One seed per worker, drawn from the global random state: ``global_rank``'s of ``global_size``.

    Workers that seeded the global generator alike draw the same list and each takes its own
    entry, so they get different but reproducible seeds.

    Notes
    -----
    The seed is returned as a Python int; merlin also reseeded CuPy's global generator with
    it on GPU, which is left to the caller here.

    Examples
    --------
    >>> from tabflow.dispatch import generate_local_seed, get_random_state
    >>> get_random_state().seed(1); rank_2 = generate_local_seed(2, 4)
    >>> get_random_state().seed(1); rank_2 == generate_local_seed(2, 4), rank_2 == generate_local_seed(3, 4)
    (True, False)
    """
    seeds = get_random_state().randint(0, 2**32, size=global_size, dtype=np.int64)
    return int(seeds[global_rank])


def arange(size: int, like_df: Any = None, dtype: Any = None) -> Any:
    """``arange(size)`` of NumPy, or of CuPy for cuDF data (``like_df``, else the default engine).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import arange
    >>> arange(3, like_df=pd.DataFrame(), dtype="int32").tolist()
    [0, 1, 2]
    """
    return _backend(like_df).xp.arange(size, dtype=dtype)


def array(x: Any, like_df: Any = None, dtype: Any = None) -> Any:
    """``array(x)`` of NumPy, or of CuPy for cuDF data (``like_df``, else the default engine).

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.dispatch import array
    >>> array([1, 2], like_df=np.zeros(1), dtype="float32")
    array([1., 2.], dtype=float32)
    """
    return _backend(like_df).xp.array(x, dtype=dtype)


def zeros(size: Any, like_df: Any = None, dtype: Any = None) -> Any:
    """``zeros(size)`` of NumPy, or of CuPy for cuDF data (``like_df``, else the default engine).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import zeros
    >>> zeros(2, like_df=pd.Series([1]), dtype="int8").tolist()
    [0, 0]
    """
    return _backend(like_df).xp.zeros(size, dtype=dtype)


def coo_matrix(data: Any, row: Any, col: Any, shape: tuple[int, int] | None = None) -> Any:
    """A sparse COO matrix with ``data[i]`` at ``(row[i], col[i])``.

    SciPy's for host data, CuPy's for CuPy arrays; other sequences go to the default engine.

    Notes
    -----
    merlin passed ``(data, row, col)`` to the constructor as one tuple, which SciPy refuses
    ("invalid input format"); this builds ``coo_matrix((data, (row, col)))`` as meant.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.dispatch import coo_matrix
    >>> coo_matrix(np.array([5.0, 7.0]), np.array([0, 2]), np.array([1, 0])).toarray().tolist()
    [[0.0, 5.0], [0.0, 0.0], [7.0, 0.0]]
    """
    return (_owner(data) or _backend()).coo_matrix(data, row, col, shape=shape)


# ---------------------------------------------------------------------- frames and series
def make_df(_like_df: Any = None, device: str | None = None) -> Any:
    """A DataFrame of the chosen engine from a dict, a frame, a series, an array, an Arrow table or nothing.

    Parameters
    ----------
    _like_df : optional
        The data: anything the engine's DataFrame constructor takes (a dict of columns, a
        list of records, an array), a frame or series of either engine (moved when
        ``device`` names the other), a ``pyarrow.Table``, or None for an empty frame.
        Columns of Python lists become list columns.
    device : {"cpu", "gpu"}, optional
        ``"cpu"``: pandas; ``"gpu"``: cuDF. None keeps the engine the data belongs to
        (data of no engine, such as Python lists, goes to the default engine).

    Raises
    ------
    ImportError
        For ``device="gpu"`` when cuDF is not installed, with what to install.
    ValueError
        For another ``device``.

    Notes
    -----
    merlin returned a pandas frame for ``device="gpu"`` when cuDF was missing, or when the
    data was a pandas frame; here ``"gpu"`` always means cuDF. Columns of Python lists are
    list columns (pandas' Arrow list dtype), not ``object`` columns as in older pandas.

    Examples
    --------
    >>> from tabflow.dispatch import make_df
    >>> df = make_df({"a": [1, 2], "tags": [["x"], ["y", "z"]]}, device="cpu")
    >>> type(df).__module__.split(".")[0], list(df.columns), df["tags"].tolist()[1]
    ('pandas', ['a', 'tags'], ['y', 'z'])
    >>> make_df(device="cpu").shape
    (0, 0)
    """
    backend = _device_backend(device, _like_df)
    if _like_df is None:
        return backend.empty_frame({})
    if isinstance(_like_df, pa.Table):
        return backend.from_arrow(_like_df)
    data = _move(_like_df, backend)
    if backend.is_frame(data):
        return data
    if backend.is_series(data):
        return data.to_frame()
    if isinstance(data, Mapping):
        data = {name: _move(column, backend) for name, column in data.items()}
    return backend.with_list_columns(frame_library(backend.name).DataFrame(data))


def make_series(_like_ser: Any = None, device: str | None = None) -> Any:
    """A Series of the chosen engine (see :func:`make_df` for ``device``).

    Examples
    --------
    >>> from tabflow.dispatch import make_series
    >>> s = make_series([[1], [2, 3]], device="cpu")
    >>> type(s).__name__, s.tolist()
    ('Series', [[1], [2, 3]])
    """
    backend = _device_backend(device, _like_ser)
    data = _move(_like_ser, backend)
    if backend.is_series(data):
        return data
    return _with_lists(backend, backend.series(data))


def nullable_series(data: Any, like_df: Any, dtype: Any) -> Any:
    """A series of ``data`` with the nullable form of ``dtype``, of ``like_df``'s engine.

    On the pandas engine integers, booleans and floats take their masked dtype (``Int8``,
    ``boolean``, ``Float32``, ...), so None is ``<NA>``; cuDF columns are all nullable.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from tabflow.dispatch import nullable_series
    >>> nullable_series([1, None], pd.DataFrame(), np.dtype("int8"))
    0       1
    1    <NA>
    dtype: Int8
    """
    backend = backend_for(like_df)
    canonical = dtype_names.canonical_dtype(dtype)
    return backend.series(data, dtype=backend.engine_dtype(_MASKED_NAMES.get(canonical, canonical)))


def add_to_series(series: Any, to_add: Any, prepend: bool = True) -> Any:
    """``series`` with the values ``to_add`` before it (``prepend=True``) or after it.

    The index labels of both parts are kept, as ``concat`` keeps them.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import add_to_series
    >>> add_to_series(pd.Series([5, 6]), [0]).tolist(), add_to_series(pd.Series([5]), [9], prepend=False).tolist()
    ([0, 5, 6], [5, 9])
    """
    addition = backend_for(series).series(to_add)
    return concat([addition, series] if prepend else [series, addition])


def concat(objs: Sequence[Any], **kwargs: Any) -> Any:
    """``concat`` of the engine of ``objs[0]`` (pandas, cuDF or dask), with its keyword arguments.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import concat
    >>> concat([pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [2]})], ignore_index=True)["a"].tolist()
    [1, 2]
    """
    objs = list(objs)
    if isinstance(objs[0], (dd.DataFrame, dd.Series)):
        return dd.concat(objs, **kwargs)
    return frame_library(backend_for(objs[0]).name).concat(objs, **kwargs)


def concat_columns(args: Sequence[Any]) -> Any:
    """Frames side by side, row by row by position (or dicts merged, later keys winning).

    Every frame's index is dropped first, so frames line up by position and the result has
    a new range index; a shorter frame is filled with nulls. A single frame is returned as
    it is.

    Raises
    ------
    TypeError
        For something that is neither a frame nor a mapping (merlin returned None).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import concat_columns
    >>> left, right = pd.DataFrame({"a": [1, 2]}, index=[7, 8]), pd.DataFrame({"b": [3, 4]})
    >>> concat_columns([left, right]).to_dict("list")
    {'a': [1, 2], 'b': [3, 4]}
    >>> concat_columns([{"a": 1}, {"b": 2}])
    {'a': 1, 'b': 2}
    """
    args = list(args)
    if len(args) == 1:
        return args[0]
    first = args[0] if args else None
    if isinstance(first, MutableMapping):
        merged = type(first)()
        for mapping in args:
            merged.update(mapping)
        return merged
    if not is_dataframe_object(first):
        raise TypeError(f"concat_columns takes frames or mappings, got {type(first).__name__}")
    return backend_for(first).concat_columns([frame.reset_index(drop=True) for frame in args])


# ----------------------------------------------------------------------------- list columns
def columnwise_explode(series: Any) -> Any:
    """A list column spread over columns ``<name>_0``, ``<name>_1``, ...: element ``i`` of each row in column ``i``.

    There are as many columns as the longest list has elements; shorter, empty and null lists
    leave nulls (integer columns with nulls take their masked dtype). The rows keep the
    series' index.

    Notes
    -----
    merlin's frame had a new range index; this one keeps the series' index, so it lines up
    with the frame the series came from.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import columnwise_explode
    >>> columnwise_explode(pd.Series([[1, 2], [3], None], name="x"))
       x_0   x_1
    0    1     2
    1    3  <NA>
    2 <NA>  <NA>
    """
    backend = backend_for(series)
    if _is_nested(backend, series):
        return backend.from_host(_explode(get_backend("pandas"), backend.to_host(series)))
    return _explode(backend, series)


def _explode(backend: Backend, series: Any) -> Any:
    values = backend.list_values_series(series)
    offsets = backend.list_offsets(series)
    xp = backend.xp
    lengths = offsets[1:] - offsets[:-1]
    width = int(lengths.max()) if len(lengths) else 0
    columns = {}
    for position in range(width):
        present = lengths > position
        column = values.take(xp.where(present, offsets[:-1] + position, 0))
        if not bool(present.all()):
            canonical = backend.canonical_dtype(column.dtype)
            if dtype_names.nullable_dtype(canonical) != canonical:
                # Integers and booleans hold the gaps as nulls, not as floats.
                column = backend.astype(column, dtype_names.nullable_dtype(canonical))
            column = column.where(present)
        column.index = series.index
        columns[f"{series.name}_{position}"] = column
    # Elements of lists of lists are lists: they make list columns, as in any frame.
    return backend.with_list_columns(backend.frame_from_dict(columns, index=series.index))


def dataframe_columnwise_explode(dataframe: Any) -> Any:
    """``dataframe`` with each list column replaced by its :func:`columnwise_explode` columns.

    The other columns keep their order and come first, then the exploded columns of each
    list column in turn (merlin's order); the index is kept.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import dataframe_columnwise_explode
    >>> frame = pd.DataFrame({"t": [[1, 2], [3]], "id": [10, 11]})
    >>> list(dataframe_columnwise_explode(frame).columns)
    ['id', 't_0', 't_1']
    """
    backend = backend_for(dataframe)
    kept, exploded = [], []
    for name in dataframe.columns:
        if is_list_dtype(dataframe[name]):
            exploded.append(columnwise_explode(dataframe[name]))
        else:
            kept.append(name)
    return backend.concat_columns([dataframe[kept]] + exploded)


def flatten_list_column_values(s: Any) -> Any:
    """The innermost values of a list column, row after row, as a series (a NumPy or CuPy array flattened).

    Null lists contribute nothing; nulls inside lists are kept. A column that holds no lists
    is returned as it is.

    Notes
    -----
    merlin's CPU version flattened one level and its GPU version every level; both engines
    flatten every level here.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import flatten_list_column_values
    >>> flatten_list_column_values(pd.Series([[[1], [2, 3]], None, [[4]]])).tolist()
    [1, 2, 3, 4]
    """
    owner = _owner(s)
    if owner is not None and isinstance(s, owner.xp.ndarray):
        return s.flatten()
    backend = backend_for(s)
    if not _is_list_series(backend, s):
        return s
    return _flatten(backend, s)[0]


def flatten_list_column(s: Any) -> Any:
    """A one-column frame (named like ``s``) of :func:`flatten_list_column_values`.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import flatten_list_column
    >>> flatten_list_column(pd.Series([["a"], ["b", "c"]], name="tags"))["tags"].tolist()
    ['a', 'b', 'c']
    """
    return backend_for(s).frame_from_dict({s.name: flatten_list_column_values(s)})


def pull_apart_list(original: Any, device: str | None = None) -> tuple[Any, Any]:
    """The innermost values of a list column and each row's int64 offsets into them, as two series.

    ``values[offsets[i]:offsets[i + 1]]`` are row ``i``'s values (a null list is empty).
    ``device`` chooses the engine of the result as in :func:`make_df`; None keeps
    ``original``'s.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import pull_apart_list
    >>> values, offsets = pull_apart_list(pd.Series([[1, 2], None, [3]]))
    >>> values.tolist(), offsets.tolist()
    ([1, 2, 3], [0, 2, 2, 3])
    """
    backend = backend_for(original)
    values, offsets = _flatten(backend, original)
    return make_series(values, device), make_series(offsets, device)


def encode_list_column(original: Any, encoded: Any, dtype: Any = None) -> Any:
    """A list column with ``original``'s rows and index holding ``encoded``, one value per innermost value.

    ``encoded`` is what an op computed from :func:`flatten_list_column_values` of
    ``original``: a series or array as long as that, cast to ``dtype`` when given.

    Notes
    -----
    merlin's CPU version made a new range index and no name; this keeps ``original``'s
    index and name. A null list comes back as an empty list.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from tabflow.dispatch import encode_list_column
    >>> original = pd.Series([["a", "b"], [], ["c"]], name="tags")
    >>> encode_list_column(original, np.array([10, 11, 12]), dtype="int32").tolist()
    [[10, 11], [], [12]]
    """
    backend = backend_for(original)
    _, offsets = _flatten(backend, original)
    values = _move(encoded, backend)
    if not backend.is_series(values):
        values = backend.xp.asarray(values)
    if dtype is not None:
        values = values.astype(dtype)
    return backend.list_from_values_offsets(values, offsets, index=original.index, name=original.name)


def _list_column(backend: Backend, elements: Any, row_lengths: Any) -> Any:
    """A list column of ``backend`` holding ``elements``, ``row_lengths[i]`` of them in row ``i``."""
    xp = backend.xp
    lengths = xp.asarray(_as_array(backend, _move(row_lengths, backend)), dtype=xp.int64)
    offsets = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(lengths)])
    return backend.list_from_values_offsets(_move(elements, backend), offsets)


def build_pandas_list_column(elements: Any, row_lengths: Any) -> Any:
    """A pandas list column whose row ``i`` holds the next ``row_lengths[i]`` of ``elements``.

    Notes
    -----
    The column has pandas' Arrow list dtype, as tabflow's list columns do (merlin's held
    NumPy arrays in an ``object`` column).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import build_pandas_list_column
    >>> build_pandas_list_column(pd.Series([1, 2, 3]), pd.Series([2, 0, 1])).tolist()
    [[1, 2], [], [3]]
    """
    return _list_column(get_backend("pandas"), elements, row_lengths)


def build_cudf_list_column(new_elements: Any, new_offsets: Any) -> Any:
    """A cuDF list column (a Series) from flat values and ``len + 1`` offsets.

    Raises
    ------
    ImportError
        When cuDF is not installed (merlin returned an empty list).

    Examples
    --------
    >>> from tabflow.dispatch import build_cudf_list_column
    >>> try:
    ...     column = build_cudf_list_column([1, 2, 3], [0, 2, 3])
    ... except ImportError:  # no cuDF installed
    ...     column = None
    >>> column is None or column.to_arrow().to_pylist() == [[1, 2], [3]]
    True
    """
    backend = get_backend("cudf")
    return backend.list_from_values_offsets(_move(new_elements, backend), _as_array(backend, _move(new_offsets, backend)))


def create_multihot_col(offsets: Any, elements: Any) -> Any:
    """A list column of ``elements``' engine: row ``i`` holds ``elements[offsets[i]:offsets[i + 1]]``.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import create_multihot_col
    >>> create_multihot_col(pd.Series([0, 1, 3]), pd.Series(["a", "b", "c"])).tolist()
    [['a'], ['b', 'c']]
    """
    backend = _owner(elements) or _backend()
    return backend.list_from_values_offsets(_move(elements, backend), _as_array(backend, _move(offsets, backend)))


# ---------------------------------------------------------------------- moving and converting
def to_arrow(x: Any) -> Any:
    """A frame as a ``pyarrow.Table`` (without its index), a series as a ``pyarrow.Array``.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import to_arrow
    >>> to_arrow(pd.DataFrame({"a": [1]}, index=[5])).column_names, to_arrow(pd.Series([1, None])).null_count
    (['a'], 1)
    """
    if isinstance(x, (pa.Table, pa.Array, pa.ChunkedArray)):
        return x
    backend = backend_for(x)
    if backend.is_series(x):
        return backend.to_arrow(x.to_frame()).column(0).combine_chunks()
    return backend.to_arrow(x)


def to_host(x: Any) -> Any:
    """A cuDF DataFrame as a ``pyarrow.Table`` in host memory (to cache it); anything else unchanged.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import to_host
    >>> frame = pd.DataFrame({"a": [1]})
    >>> to_host(frame) is frame
    True
    """
    if is_dataframe_object(x) and not is_cpu_object(x):
        return backend_for(x).to_arrow(x)
    return x


def from_host(x: Any) -> Any:
    """A pandas DataFrame or ``pyarrow.Table`` as a cuDF DataFrame; anything else unchanged.

    Raises
    ------
    ImportError
        For a pandas frame or Arrow table when cuDF is not installed.

    Examples
    --------
    >>> from tabflow.dispatch import from_host
    >>> from_host([1, 2])
    [1, 2]
    """
    if isinstance(x, pa.Table):
        return get_backend("cudf").from_arrow(x)
    if get_backend("pandas").is_frame(x):
        return get_backend("cudf").from_host(x)
    return x


def convert_data(x: Any, cpu: bool | None = True, to_collection: bool | None = None, npartitions: int = 1) -> Any:
    """Data moved to the CPU (pandas) or GPU (cuDF) engine, as a frame or a dask collection.

    Parameters
    ----------
    x : frame, dask DataFrame or pyarrow.Table
        The data. A dask collection stays one (each partition moved).
    cpu : bool or None, default True
        True: pandas; False: cuDF; None: the default engine.
    to_collection : bool, optional
        Return a frame as a dask DataFrame of ``npartitions`` partitions.
    npartitions : int, default 1

    Raises
    ------
    ImportError
        For the GPU when cuDF is not installed (merlin raised RuntimeError).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from tabflow.dispatch import convert_data
    >>> type(convert_data(pa.table({"a": [1, 2]}))).__name__
    'DataFrame'
    >>> convert_data(pa.table({"a": [1, 2, 3]}), to_collection=True, npartitions=2).npartitions
    2
    """
    backend = get_backend(default_engine(cpu=cpu))
    if isinstance(x, dd.DataFrame):
        return x if collection_engine(x) == backend.name else x.to_backend(backend.name)
    frame = backend.from_arrow(x) if isinstance(x, pa.Table) else _move(x, backend)
    return backend.from_frame_ddf(frame, npartitions) if to_collection else frame


def detect_format(data: Any) -> ExtData:
    """What ``data`` is, as an :class:`ExtData` member.

    A tabflow Dataset (anything with ``to_ddf``), a dask DataFrame of either engine, a
    pandas or cuDF DataFrame, an Arrow table, or a path (or list of paths, by the first)
    ending in ``.parquet``, ``.pq`` or ``.csv``.

    Raises
    ------
    ValueError
        For anything else.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import detect_format
    >>> detect_format(pd.DataFrame()), detect_format(["day_0.parquet", "day_1.parquet"]), detect_format("x.csv")
    (<ExtData.PANDAS: 3>, <ExtData.PARQUET: 6>, <ExtData.CSV: 7>)
    """
    if callable(getattr(data, "to_ddf", None)):
        return ExtData.DATASET
    if isinstance(data, dd.DataFrame):
        return _COLLECTION_FORMATS[collection_engine(data)]
    if isinstance(data, pa.Table):
        return ExtData.ARROW
    if is_dataframe_object(data):
        return _FRAME_FORMATS[backend_for(data).name]
    path = data[0] if isinstance(data, (list, tuple)) and data else data
    file_format = _FILE_FORMATS.get(str(path).rsplit(".", maxsplit=1)[-1])
    if file_format is None:
        raise ValueError(f"data format not recognized: {type(data).__name__} {str(data)[:80]!r}")
    return file_format


# ------------------------------------------------------------------------------------- files
def read_dispatch(df: Any = None, cpu: bool | None = None, collection: bool = False, fmt: str = "parquet") -> Callable:
    """The function that reads ``fmt`` files into frames of the chosen engine.

    Parameters
    ----------
    df : frame, optional
        Read into this frame's engine (when ``cpu`` is None).
    cpu : bool, optional
        True: pandas; False: cuDF. With neither ``cpu`` nor ``df``: the default engine.
    collection : bool, default False
        False: a function ``read(path, **kwargs)`` returning one frame, read the way
        tabflow reads side tables (the engine's ``read_table``: list columns, masked
        integers for integers with nulls). True: dask's ``read_parquet`` / ``read_csv`` for
        the engine, returning a dask DataFrame (dask's own dtypes).
    fmt : {"parquet", "csv"}, default "parquet"

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import read_dispatch
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pd.DataFrame({"a": pd.array([1, None], dtype="Int64")}).to_parquet(path)
    >>> read_dispatch(cpu=True)(path)["a"].tolist()
    [1, <NA>]
    >>> read_dispatch(pd.DataFrame(), collection=True)(path).npartitions
    1
    """
    if fmt not in ("parquet", "csv"):
        raise ValueError(f"fmt must be 'parquet' or 'csv', got {fmt!r}")
    if cpu is not None:
        backend = get_backend(default_engine(cpu=cpu))
    else:
        owner = _owner(df)
        backend = owner if owner is not None and owner.is_frame(df) else _backend()
    if collection:
        return functools.partial(_read_collection, backend.name, fmt)
    if fmt == "parquet":
        return functools.partial(_read_parquet_table, backend)
    return functools.partial(backend.read_table, kind=fmt)


def _read_parquet_table(backend: Any, path: Any, **kwargs: Any) -> Any:
    # merlin's read_dispatch was pd.read_parquet / cudf.read_parquet, which give back the
    # index a frame was written with (Categorify's unique files keep the encoded index
    # there); the engine's side-table reader returns a default index, so restore it from one
    # file's pandas metadata: named index columns, or a stored range that fits the rows read.
    frame = backend.read_table(path, kind="parquet", **kwargs)
    if not (isinstance(path, (str, os.PathLike)) and os.path.isfile(path)):
        return frame
    stored = (pq.read_schema(path).pandas_metadata or {}).get("index_columns", [])
    names = [entry for entry in stored if isinstance(entry, str)]
    if names and all(name in frame.columns for name in names):
        frame = frame.set_index(names)
        # pandas stores an unnamed index as "__index_level_0__", which reads back unnamed.
        frame.index.names = [None if str(n).startswith("__index_level_") else n for n in frame.index.names]
    elif len(stored) == 1 and isinstance(stored[0], dict) and stored[0].get("kind") == "range":
        start, stop, step = stored[0]["start"], stored[0]["stop"], stored[0]["step"]
        if len(range(start, stop, step)) == len(frame):
            frame.index = pd.RangeIndex(start, stop, step, name=stored[0].get("name"))
    return frame


def _read_collection(engine: str, fmt: str, path: Any, **kwargs: Any) -> Any:
    # dask's readers make the collection of the configured dataframe backend, whose names are
    # tabflow's engine names.
    with dask.config.set({"dataframe.backend": engine}):
        return (dd.read_csv if fmt == "csv" else dd.read_parquet)(path, **kwargs)


def read_parquet_dispatch(df: Any) -> Callable:
    """:func:`read_dispatch` for parquet into ``df``'s engine.

    Examples
    --------
    >>> import pandas as pd
    >>> import os, tempfile
    >>> from tabflow.dispatch import read_parquet_dispatch
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pd.DataFrame({"a": [1, 2]}, index=pd.RangeIndex(3, 5)).to_parquet(path)
    >>> read_parquet_dispatch(pd.DataFrame())(path).index.tolist()
    [3, 4]
    """
    return read_dispatch(df=df, fmt="parquet")


def read_parquet_metadata(path: Any) -> tuple[int, int, list[str]]:
    """``(rows, row groups, column names)`` of a parquet file, from its footer (pyarrow, on either engine).

    Notes
    -----
    merlin listed the parquet schema's leaf names (a list column ``tags`` read as
    ``element``); these are the columns' own names.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import read_parquet_metadata
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "m.parquet")
    >>> pd.DataFrame({"a": [1, 2, 3], "tags": [[1], [], [2]]}).to_parquet(path, row_group_size=2, index=False)
    >>> read_parquet_metadata(path)
    (3, 2, ['a', 'tags'])
    """
    metadata = pq.read_metadata(path)
    return metadata.num_rows, metadata.num_row_groups, metadata.schema.to_arrow_schema().names


class ParquetFrameWriter(pq.ParquetWriter):
    """pyarrow's ``ParquetWriter`` whose ``write_table`` also takes pandas and cuDF frames.

    Frames go through Arrow on the host (without their index), so either engine writes the
    same files.

    Examples
    --------
    >>> import pandas as pd
    >>> import pyarrow as pa
    >>> from tabflow.dispatch import ParquetFrameWriter
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "w.parquet")
    >>> with ParquetFrameWriter(path, pa.schema([("a", pa.int64())])) as writer:
    ...     writer.write_table(pd.DataFrame({"a": [1, 2]}))
    >>> pd.read_parquet(path)["a"].tolist()
    [1, 2]
    """

    def write_table(self, table: Any, row_group_size: int | None = None) -> None:
        super().write_table(to_arrow(table), row_group_size=row_group_size)


def parquet_writer_dispatch(df: Any, path: Any = None, **kwargs: Any) -> Any:
    """:class:`ParquetFrameWriter`, or one opened at ``path`` with ``df``'s Arrow schema.

    ``kwargs`` go to the writer (``compression=``, ...).

    Notes
    -----
    merlin gave cuDF frames cuDF's own writer; here one writer serves both engines.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import parquet_writer_dispatch
    >>> frame = pd.DataFrame({"a": [1], "s": ["x"]})
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "d.parquet")
    >>> with parquet_writer_dispatch(frame, path, compression="zstd") as writer:
    ...     writer.write_table(frame)
    ...     writer.write_table(frame)
    >>> len(pd.read_parquet(path))
    2
    """
    if path is None:
        return ParquetFrameWriter
    return ParquetFrameWriter(path, to_arrow(df).schema, **kwargs)


# ----------------------------------------------------------------------- dicts of arrays
def _split_key(key: str) -> tuple[str, int | None]:
    """``(column, 0 for values / 1 for offsets)`` of a ragged key, ``(key, None)`` otherwise."""
    column = list_column(key)
    if column is None:
        return key, None
    return column, 0 if key == values_key(column) else 1


def _column_from_array(backend: Backend, values: Any, name: str) -> Any:
    """A series of a 1-D array; a fixed-size list column (nested per extra dimension) of more."""
    if values.ndim <= 1:
        return backend.series(values, name=name)
    rows, width = values.shape[0], values.shape[1]
    inner = _column_from_array(backend, values.reshape((rows * width,) + values.shape[2:]), name)
    offsets = backend.xp.arange(rows + 1, dtype=backend.xp.int64) * width
    return backend.list_from_values_offsets(inner, offsets, name=name)


def df_from_dict(col_dict: Mapping[str, Any]) -> Any:
    """A frame from a dict of arrays, as the loader lays batches out.

    ``name: array`` is a column (a 2-D array a column of equal-length lists); a list column
    is ``name__values`` with ``name__offsets`` (``rows + 1`` offsets), or ``name: (values,
    offsets)``. NumPy arrays (or anything ``numpy.asarray`` reads, such as CPU tensors) give
    a pandas frame, CuPy arrays a cuDF frame.

    Raises
    ------
    KeyError
        For ``name__values`` without ``name__offsets`` or the other way round.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.dispatch import df_from_dict
    >>> df = df_from_dict({"id": np.array([1, 2]), "tags__values": np.array([7, 8, 9]), "tags__offsets": np.array([0, 1, 3])})
    >>> df["id"].tolist(), df["tags"].tolist()
    ([1, 2], [[7], [8, 9]])
    """
    # name -> an array, or {0: values, 1: offsets} for a list column
    entries: dict[str, Any] = {}
    for key, value in col_dict.items():
        name, part = _split_key(key)
        if part is None:
            entries[name] = dict(enumerate(value)) if isinstance(value, tuple) else value
            continue
        pair = entries.setdefault(name, {})
        if not isinstance(pair, dict):
            raise KeyError(f"{key!r} names list column {name!r}, which is also given as a plain array")
        pair[part] = value
    arrays = [array for entry in entries.values() for array in (entry.values() if isinstance(entry, dict) else [entry])]
    backend = next((owner for owner in map(_owner, arrays) if owner is not None), get_backend("pandas"))

    def as_array(value: Any) -> Any:
        return _move(value if _owner(value) is not None else np.asarray(value), backend)

    columns = {}
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            columns[name] = _column_from_array(backend, as_array(entry), name)
            continue
        if sorted(entry) != [0, 1]:
            raise KeyError(f"list column {name!r} needs both {values_key(name)} and {offsets_key(name)}")
        columns[name] = backend.list_from_values_offsets(as_array(entry[0]), as_array(entry[1]), name=name)
    return backend.frame_from_dict(columns)


def _column_array(backend: Backend, series: Any) -> Any:
    canonical = backend.canonical_dtype(series.dtype)
    if dtype_names.is_string(canonical):
        raise TypeError(f"column {series.name!r} holds strings, which arrays for tensors cannot: encode them first (Categorify)")
    plain = dtype_names.unmasked_dtype(canonical)
    return backend.column_values(series, plain, na_value=np.nan if dtype_names.is_float(plain) else None)


def dict_from_df(df: Any) -> dict[str, Any]:
    """A frame as a dict of arrays of its engine (NumPy or CuPy), laid out as :func:`df_from_dict` reads it.

    A list column ``name`` becomes ``name__values`` (its innermost values) and
    ``name__offsets`` (int64, ``rows + 1``); a null list is empty.

    Raises
    ------
    ValueError
        For a null in an integer or boolean column, or inside a list (NaN stays in floats).
    TypeError
        For a string column.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.dispatch import dict_from_df
    >>> arrays = dict_from_df(pd.DataFrame({"id": [1, 2], "tags": [[7], [8, 9]]}))
    >>> {name: array.tolist() for name, array in arrays.items()}
    {'id': [1, 2], 'tags__values': [7, 8, 9], 'tags__offsets': [0, 1, 3]}
    """
    backend = backend_for(df)
    arrays = {}
    for name in df.columns:
        column = df[name]
        if _is_list_series(backend, column):
            values, offsets = _flatten(backend, column)
            arrays[values_key(name)] = _column_array(backend, values)
            arrays[offsets_key(name)] = offsets
        else:
            arrays[name] = _column_array(backend, column)
    return arrays
