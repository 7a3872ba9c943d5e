"""The backend contract: every method an engine provides, with its types.

Ops, readers, the workflow and the loader reach pandas or cuDF only through these methods
(see :func:`tabflow.backends.backend_for`). :class:`~tabflow.backends.pandas_backend.PandasBackend`
and :class:`~tabflow.backends.cudf_backend.CudfBackend` implement exactly this list, with the
same parameters (``tests/backends/test_protocol.py`` checks both, and that nothing outside
``tabflow.backends`` calls a method that is not listed here).

What a dtype *name* means is not an engine question and is not here: see
:mod:`tabflow.schema.dtypes`.

Where arrays live
-----------------
Two kinds of arrays cross this seam, and every method below says which one it takes and
returns:

``EngineArray``
    An array of the engine's array module, :attr:`Backend.xp`: NumPy for pandas, CuPy (in GPU
    memory) for cuDF. Compute on it with ``backend.xp`` functions and its own methods
    (``values.sum()``, ``values[mask]``), index the engine's series with it, and turn a
    reduction into a Python number with ``float()`` / ``int()`` / ``bool()``. Never give it
    to a NumPy function that needs host memory, to pyarrow, or mix it with a ``HostArray``
    in one expression: on cuDF that is a ``TypeError``, or a silent copy from the GPU.
``HostArray``
    A :class:`numpy.ndarray` in host memory, whatever the engine: what :meth:`Backend.to_numpy`
    and :meth:`Backend.to_host` return. NumPy, SciPy and pyarrow work on it; ``backend.xp``
    functions do not (CuPy refuses host arrays).

:meth:`Backend.to_host` moves an ``EngineArray`` to a ``HostArray`` and
:meth:`Backend.from_host` the other way. Ops pick one side per computation (see
``ARCHITECTURE.md``): statistics reduce on the engine and hand Python numbers or small host
tables to ``combine_partials``; per-row results stay engine arrays until they become series
again. The strict engine (:mod:`tabflow.backends.strict_backend`) runs the pandas engine
with ``EngineArray`` of a type of its own, so that the CPU test suite catches an op that
mixes the two kinds before a GPU does. Making tensors of engine arrays is the loader's job.

``Frame``, ``Series`` and ``Index`` are the engine's (pandas or cuDF) objects. Besides the
methods of :class:`Backend`, code calls a short list of methods on them directly, the ones both
engines share with the same meaning: :data:`FRAME_METHODS` (``tests/backends/test_protocol.py``
scans ``tabflow/ops`` for any other pandas method called on a frame and every module for any
other method called on a known engine frame, and runs every listed one on cuDF against pandas).

Examples
--------
>>> from tabflow.backends import Backend, get_backend
>>> import inspect
>>> "columns_matrix" in dict(inspect.getmembers(Backend))
True
>>> get_backend("pandas").columns_matrix  # doctest: +ELLIPSIS
<bound method PandasBackend.columns_matrix of ...>
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence, TypeAlias, Union

import numpy as np

if TYPE_CHECKING:  # names for type checkers only: importing cupy here would probe for a GPU
    import cupy
    import pandas as pd

__all__ = ["Backend", "FRAME_METHODS", "Allocate", "HostArray", "EngineArray", "Frame", "Series", "Index", "ParquetFileWriter"]

#: A frame of either engine: ``pandas.DataFrame`` or ``cudf.DataFrame``. Type checkers see
#: it through pandas (cuDF follows pandas' API for the methods ops call, see FRAME_METHODS);
#: at run time the name is a string, so cuDF is never imported for an annotation.
Frame: TypeAlias = "pd.DataFrame"
#: A series of either engine.
Series: TypeAlias = "pd.Series"
#: An index of either engine.
Index: TypeAlias = "pd.Index"

#: The pandas-API methods code may call on an engine's frames, series and group-bys (besides
#: :class:`Backend`'s), because pandas and cuDF give them the same meaning. Reductions and
#: conversions that engine arrays share (``sum``, ``astype``, ``to_numpy``, ...) are listed too;
#: ``tolist`` is not (cuDF's series refuse it: ``Backend.to_host`` first).
FRAME_METHODS = frozenset({
    # missing values
    "isna", "notna", "fillna", "dropna", "where", "mask",
    # shape and labels
    "assign", "drop", "drop_duplicates", "rename", "reset_index", "sort_values", "shift", "set_index", "to_frame",
    "sample",
    # group-bys and arithmetic
    "groupby", "agg", "transform", "multiply", "map",
    # reductions and conversions (arrays have them too)
    "all", "any", "sum", "min", "max", "mean", "astype", "clip", "copy", "take", "to_numpy",
    "to_dict", "memory_usage",
    # writing a host table (the vocabulary files)
    "to_parquet",
})
#: A NumPy array in host memory, whatever the engine (see "Where arrays live" above).
HostArray = np.ndarray
#: An array of the engine's array module :attr:`Backend.xp` (see "Where arrays live" above);
#: the strict engine's :class:`~tabflow.backends.strict_backend.DeviceArray` stands in for
#: ``cupy.ndarray`` in the CPU tests.
EngineArray = Union[np.ndarray, "cupy.ndarray"]
#: ``allocate(shape, dtype) -> HostArray``: host memory for a result (the loader's pool).
Allocate = Callable[[tuple, Any], np.ndarray]


class ParquetFileWriter(Protocol):
    """One parquet file being written from frames of one engine (:meth:`Backend.parquet_file_writer`)."""

    def write(self, frame: Frame) -> None:
        """Append the frame's rows (every frame has the same columns and dtypes)."""

    def close(self) -> None:
        """Finish the file (the footer); closing again does nothing."""


class Backend(Protocol):
    """The methods and attributes both engines provide (one line each; engines document more)."""

    #: Engine name: ``"pandas"`` or ``"cudf"``.
    name: str
    #: Array module of the engine's arrays (``EngineArray``): ``numpy`` or ``cupy``. Its
    #: functions take engine arrays only.
    xp: Any
    #: Whether the engine parses delimited text itself (:meth:`read_csv_ddf`): cuDF does, on
    #: the GPU. Otherwise the text readers parse with pyarrow's multithreaded CSV reader and
    #: convert with :meth:`from_arrow` (pandas' own parser is several times slower).
    parses_csv: bool

    # ------------------------------------------------------------------ types
    @staticmethod
    def is_frame(obj: Any) -> bool:
        """True when ``obj`` is a data frame of this engine."""

    @staticmethod
    def is_series(obj: Any) -> bool:
        """True when ``obj`` is a series of this engine."""

    def canonical_dtype(self, dtype: Any) -> str:
        """Canonical name (:mod:`tabflow.schema.dtypes`) of an engine dtype, Python type or name."""

    def engine_dtype(self, canonical: str) -> Any:
        """This engine's dtype object for a canonical name."""

    def is_list_dtype(self, dtype: Any) -> bool:
        """True for an engine dtype of list columns."""

    def is_string_dtype(self, dtype: Any) -> bool:
        """True for an engine dtype of string columns."""

    def is_numeric_dtype(self, dtype: Any) -> bool:
        """True for an engine dtype of integer or float columns (not booleans)."""

    def observed_dtype(self, values: Any) -> str:
        """Canonical name of what a user function returned (a series or an array)."""

    def column_dtype(self, series: Series) -> str:
        """Canonical name of a column's dtype by the nullable-integer rule of
        :mod:`tabflow.schema.dtypes`: the masked name (``"Int64"``) where an integer or
        boolean column holds a null, also on cuDF, whose dtypes do not say so."""

    # ----------------------------------------------------------- construction
    def empty_frame(self, dtypes: Mapping[str, str]) -> Frame:
        """A zero-row frame with the given canonical dtypes (dask ``meta``)."""

    def frame_from_dict(self, columns: Mapping[str, Any], index: Any = None) -> Frame:
        """A frame of the given columns (without copying them where the engine allows)."""

    def series(self, values: Any, name: str | None = None, index: Any = None, dtype: Any = None) -> Series:
        """A series of this engine."""

    def with_index(self, obj: Any, index: Index) -> Any:
        """A series or frame with ``index`` (of this engine, as long as ``obj``) as its row
        labels, row for row: values are not aligned on labels, nor copied. pandas'
        ``set_axis``, which cuDF lacks."""

    def concat_columns(self, frames: Sequence[Frame]) -> Frame:
        """Frames side by side (``None`` entries skipped)."""

    def concat_rows(self, frames: Sequence[Frame]) -> Frame:
        """Frames one after the other, with a new range index."""

    def astype(self, obj: Any, canonical: str) -> Any:
        """A series or frame cast to a canonical dtype."""

    def conform_column(self, series: Series, canonical: str) -> Series:
        """``series`` cast to ``canonical`` when no value changes, else unchanged."""

    def fill_nulls(self, series: Series, value: Any, canonical: str) -> Series:
        """``series`` with its missing values replaced by ``value``, as ``canonical``: what
        ``fillna(value)`` then a cast give, a new series either way."""

    def to_float(self, series: Series, dtype: str = "float32") -> Series:
        """A numeric series as a float dtype whose missing values are what the engine skips
        in reductions and group aggregations (NaN for pandas, null for cuDF, where a NaN is
        a value): nulls, and NaN already in the data, are missing on both engines."""

    def to_numpy(self, series: Series, dtype: Any = None, na_value: Any = None) -> HostArray:
        """A series' values copied to host memory as ``dtype``, nulls as ``na_value`` (as
        ``object``: Python values, nulls None unless ``na_value`` says)."""

    # -------------------------------------------------------------- host moves
    def to_host(self, obj: Any) -> Any:
        """A frame or series as pandas (with the pandas engine's dtypes), an ``EngineArray``
        as a ``HostArray``; anything else unchanged."""

    def from_host(self, obj: Any) -> Any:
        """A pandas frame, series or index as this engine's, a ``HostArray`` as an ``EngineArray``."""

    def writable(self, frame: Frame) -> Frame:
        """``frame`` with columns that view read-only memory (Arrow buffers) copied, so that
        in-place edits (``frame.loc[i, c] = v``) work; a frame handed to users goes through it."""

    def with_list_columns(self, frame: Frame) -> Frame:
        """``frame`` with columns of Python lists as list columns."""

    def lists_as_arrays(self, frame: Frame) -> Frame:
        """``frame`` with its list columns in the form the engine's users know: on pandas an
        ``object`` column of one NumPy array per row, as ``pd.read_parquet`` gives it; on
        cuDF the list columns as they are. ``frame`` itself when nothing changes. The inverse
        of :meth:`with_list_columns`; frames handed to users go through it, ops never see its
        result."""

    # ------------------------------------------------------------- list columns
    def list_offsets(self, series: Series) -> EngineArray:
        """int64 offsets (``len(series) + 1``) of a list column's items (:meth:`list_values_series`);
        a null list is empty."""

    def list_values_series(self, series: Series) -> Series:
        """Items of a list column, one level down, as a series (nulls inside lists kept); the
        items of a list of lists are lists."""

    def list_lengths(self, series: Series) -> EngineArray:
        """int64 length of each list (0 for a null list)."""

    def list_from_values_offsets(
        self, values: Series | EngineArray | HostArray, offsets: EngineArray | HostArray, index: Any = None,
        name: str | None = None,
    ) -> Series:
        """A list column from flat values (a series or an array) and offsets."""

    # ---------------------------------------------------- rows and loader arrays
    def slice_rows(self, frame: Frame, start: int, stop: int) -> Frame:
        """Rows ``start:stop`` by position."""

    def sort_rows(self, frame: Frame, by: Sequence[str], ascending: bool | Sequence[bool] = True, na_position: str = "last") -> Frame:
        """Rows ordered by the columns ``by``, rows of equal keys in their order (a stable
        sort), index labels kept."""

    def take_rows(self, frame: Frame, positions: EngineArray | HostArray) -> Frame:
        """Rows at the given positions, in that order, with a new range index."""

    def column_values(self, series: Series, dtype: str, na_value: float | None = None) -> EngineArray:
        """A scalar column as a 1-D ``dtype`` array (maybe a read-only view); nulls are ``na_value`` or a ValueError."""

    def columns_matrix(
        self, frame: Frame, names: Sequence[str], dtype: str, na_value: float | None = None, allocate: Allocate | None = None
    ) -> EngineArray:
        """Scalar columns as one new C-contiguous ``[rows, len(names)]`` array; host memory from ``allocate``."""

    def list_column_values(self, series: Series, dtype: str) -> tuple[EngineArray, EngineArray]:
        """A list column as flat ``dtype`` values and int64 offsets; a null element is a ValueError.
        Lists of lists give the innermost values and offsets counting them."""

    def list_column_levels(self, series: Series, dtype: str) -> tuple[EngineArray, tuple[EngineArray, ...]]:
        """A list column of any nesting as its innermost ``dtype`` values and the int64
        offsets of each level, the rows' first; a null element is a ValueError."""

    # ---------------------------------------------------------- statistics helpers
    def value_counts(self, series: Series) -> Series:
        """Counts of each non-null value (of each element for list columns)."""

    def sum_counts(self, frames: Sequence[Frame], count_column: str) -> Frame:
        """One row per distinct key of count tables, ``count_column`` summed (null keys kept)."""

    def lookup_table(self, keys: Any) -> Any:
        """A reusable lookup structure over unique keys (a series, or a frame of key columns)."""

    def lookup_table_holds_keys(self, table: Any) -> bool:
        """Whether :meth:`lookup_table_keys` can rebuild the keys of a :meth:`lookup_table`
        from the table alone: the keys need not be kept beside it."""

    def lookup_table_keys(self, table: Any) -> Any:
        """The keys of a :meth:`lookup_table` that holds them (:meth:`lookup_table_holds_keys`),
        rebuilt: a host series equal to the one the table was built from."""

    def lookup(self, table: Any, keys: Any) -> EngineArray:
        """int64 position of each key in a :meth:`lookup_table`, -1 where absent: a new,
        writable array, which the caller may turn into its result in place."""

    def map_distinct(self, series: Any, function: Callable[[Any], Any], dtype: str) -> EngineArray | None:
        """``function`` of each row of a column that holds its distinct values apart (a
        dictionary-encoded column), computed once per distinct value; None for other columns.

        ``function`` takes a series of the distinct values (ending in a null) in the engine's
        string dtype and returns one value per entry; the result holds, per row, its value's
        answer as ``dtype``. A caller given None computes row by row.
        """

    def null_mask(self, obj: Any) -> EngineArray:
        """Boolean array: nulls of a series, all-null rows of a frame."""

    def hash_rows(self, frame: Frame) -> EngineArray:
        """One uint64 hash per row from its values (the same on both engines)."""

    def merge_keep_order(
        self, left: Frame, right: Frame, left_on: Sequence[str], right_on: Sequence[str], how: str = "left"
    ) -> Frame:
        """Join ``right`` onto ``left`` keeping the left rows' order and index labels."""

    def sparse_rowwise_dot(
        self, left: Any, left_rows: EngineArray | HostArray, right: Any, right_rows: EngineArray | HostArray
    ) -> EngineArray:
        """``left[left_rows[i]] . right[right_rows[i]]`` for CSR matrices (host or engine), as float64."""

    def coo_matrix(self, data: Any, row: Any, col: Any, shape: tuple[int, int] | None = None) -> Any:
        """A COO sparse matrix of the engine (SciPy or CuPy) with ``data[i]`` at ``(row[i], col[i])``."""

    def global_random_state(self) -> Any:
        """The global ``RandomState`` of :attr:`xp` (the one ``xp.random.seed`` seeds)."""

    def hash_values(self, series: Series) -> EngineArray:
        """Stable uint64 xxHash64 of each value (:mod:`tabflow.backends._hashing`)."""

    def hex_to_int(self, series: Series) -> Series:
        """Hexadecimal strings as a nullable int64 series (ValueError naming a bad value)."""

    # --------------------------------------------------------------------- I/O
    def read_table(self, path: str, kind: str | None = None, **kwargs: Any) -> Frame:
        """A whole parquet file/directory or CSV file as one frame."""

    def read_parquet_parts(
        self, parts: Sequence[tuple[str, Sequence[int] | None]], columns: Sequence[str] | None, dtypes: Mapping[str, str],
        dictionary_strings: Sequence[str] = (),
    ) -> Frame:
        """Some row groups of one or more parquet files (``(path, row groups)``, None: all),
        in order, as one frame with the planned canonical dtypes; string columns in
        ``dictionary_strings`` may stay dictionary-encoded (an engine may decode)."""

    def from_arrow(self, table: Any, dtypes: Mapping[str, str] | None = None, dictionary_strings: Sequence[str] = ()) -> Frame:
        """An Arrow table as a frame, each column cast to its planned canonical dtype
        (``dictionary_strings``: as :meth:`read_parquet_parts`)."""

    def to_arrow(self, frame: Frame) -> Any:
        """A frame as an Arrow table (without its index)."""

    def parquet_file_writer(self, path: str, row_group_size: int | None = None) -> ParquetFileWriter | None:
        """A writer of this engine's frames into one parquet file, encoding where the frames
        live (cuDF: on the GPU), or None where tabflow writes Arrow tables with pyarrow
        (pandas)."""

    def read_csv_ddf(self, paths: list[str], blocksize: int | None, **kwargs: Any) -> Any:
        """CSV files as a dask collection of this engine's frames."""

    def read_orc_part(
        self, path: str, stripes: Sequence[int] | None, columns: Sequence[str] | None, dtypes: Mapping[str, str]
    ) -> Frame:
        """Some stripes of one ORC file with the planned canonical dtypes."""

    def from_frame_ddf(self, frame: Frame, npartitions: int) -> Any:
        """An in-memory frame as a dask collection of ``npartitions`` partitions."""

    def from_map_ddf(self, read: Callable[[Any], Frame], pieces: Sequence[Any], meta: Frame, label: str) -> Any:
        """A dask collection of one partition per piece, ``read(piece)``, described by ``meta``
        (the readers' partitions; strings stay in the dtypes ``read`` gives them)."""

    @staticmethod
    def total_memory() -> int:
        """Bytes of the memory this engine's frames live in (host RAM or the current GPU's)."""

    def memory_usage(self, frame: Frame) -> int:
        """Bytes a frame's columns occupy."""
