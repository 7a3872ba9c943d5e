"""The pandas + numpy engine: the reference implementation of the :class:`~tabflow.backends.Backend` protocol.

List (multi-hot) columns are held as ``pd.ArrowDtype(pa.list_(...))`` so that values and
offsets are available without a Python loop; strings use pandas' NA-based Arrow string
dtype; integer columns that contain nulls use the masked ``Int64``-style dtypes (the
nullable-integer rule of :mod:`tabflow.schema.dtypes`). Arrays returned are NumPy arrays.

Examples
--------
>>> from tabflow.backends import get_backend
>>> be = get_backend("pandas")
>>> s = be.list_from_values_offsets([1, 2, 3], [0, 2, 3], name="tags")
>>> be.list_offsets(s).tolist()
[0, 2, 3]
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tabflow.backends._pandas_blocks import masked_parts
from tabflow.backends.protocol import Allocate
from tabflow.schema import dtypes as dtype_names

__all__ = ["PandasBackend", "BACKEND"]


def _default_string_dtype() -> pd.StringDtype:
    # pandas' own string dtype, the one ``pd.read_csv``, ``pd.read_parquet`` and ``pd.Series``
    # give text: ``str`` on pandas 3 (Arrow storage, missing values NaN). A pandas that still
    # infers ``object`` for text gets the Arrow-backed ``string`` dtype (missing values
    # ``pd.NA``), the Arrow storage being what the string kernels read without a copy.
    default = pd.api.types.pandas_dtype("str")
    if isinstance(default, pd.StringDtype) and default.storage == "pyarrow":
        return default
    return pd.StringDtype("pyarrow")


# Asked once: dtypes are named for every column of every served request.
_STRING_DTYPE = _default_string_dtype()


def _pandas_string_dtype() -> pd.StringDtype:
    return _STRING_DTYPE


def _own_strings(build: Any, *args: Any, **kwargs: Any) -> dd.DataFrame:
    # dask's ``dataframe.convert-string`` casts every collection it builds to the NA-based
    # ``string`` dtype, also columns already held as pandas' ``str``: collections are built
    # with it off, their partitions holding strings as the reader or the user made them.
    with dask.config.set({"dataframe.convert-string": False}):
        return build(*args, **kwargs)


def _text_as_strings(frame: Any) -> Any:
    """A pandas or dask frame with its ``object`` columns in the engine's string dtype."""
    # pandas reads a column with no values (a file of only a header) as ``object``: every
    # text column comes out in the engine's string dtype, as the Arrow reader gives it.
    text = [name for name, dtype in frame.dtypes.items() if isinstance(dtype, np.dtype) and dtype.kind == "O"]
    if not text:
        return frame
    return frame.astype(dict.fromkeys(text, _pandas_string_dtype()))


class _KeysBesideTable:
    """What the vocabulary lookup tables share: the keys a table was built from are kept
    beside it only when the table cannot rebuild them equal (:meth:`_rebuilt_keys`)."""

    _keys: pd.Series | None

    def _keep_keys(self, keys: pd.Series, rebuildable: bool) -> None:
        # Rebuilt keys must equal the series given, index included: a default one.
        on_default_index = isinstance(keys.index, pd.RangeIndex) and keys.index.start == 0 and keys.index.step == 1
        self._keys = None if rebuildable and on_default_index else keys

    def _rebuilt_keys(self) -> pd.Series:
        raise NotImplementedError

    @property
    def holds_keys(self) -> bool:
        """Whether the keys are rebuilt from the table (none are held beside it)."""
        return self._keys is None

    @property
    def keys(self) -> pd.Series:
        """The keys the table was built from: the series given, or an equal one rebuilt."""
        return self._rebuilt_keys() if self._keys is None else self._keys

    @property
    def index(self) -> pd.Index:
        """The keys as a pandas Index (for lookups of keys of another type than the table's)."""
        return pd.Index(self.keys)


class StringLookup(_KeysBesideTable):
    """Vocabulary lookup table of string keys: a :class:`~tabflow.backends._string_table.StringTable`
    over the keys' Arrow buffers, and the keys as a :class:`pandas.Index` for keys that are not
    strings (which equal none of them).

    A table of short strings holds each key whole (as an integer): the keys are then not kept
    beside it but rebuilt from it when asked for (:attr:`keys`, :attr:`index`), so that a
    vocabulary needs its table only (see :meth:`PandasBackend.lookup_table_keys`).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends import get_backend
    >>> pandas = get_backend("pandas")
    >>> table = pandas.lookup_table(pd.Series(["red", "green"], dtype="string[pyarrow]"))
    >>> pandas.lookup(table, pd.Series(["green", None, "blue", "red"], dtype="str")).tolist()
    [1, -1, -1, 0]
    >>> table.holds_keys, table.keys.tolist()
    (True, ['red', 'green'])
    """

    def __init__(self, keys: pd.Series, buffers: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        from tabflow.backends._string_table import StringTable

        self._table = StringTable(*buffers)
        self._dtype, self._name = keys.dtype, keys.name
        # Rebuilt keys are Arrow-backed strings.
        arrow_strings = isinstance(keys.dtype, pd.StringDtype) and keys.dtype.storage == "pyarrow"
        self._keep_keys(keys, self._table.holds_strings and arrow_strings)

    @classmethod
    def of_short_strings(cls, keys: np.ndarray, rows: np.ndarray) -> "StringLookup":
        """The table of short strings (the engine's string dtype) given as their keys,
        strictly ascending, and the row of each (see
        :meth:`~tabflow.backends._string_table.StringTable.of_keys`); it gives the strings
        back as a series named ``value``.

        Examples
        --------
        >>> import numpy as np
        >>> from tabflow.backends.pandas_backend import StringLookup
        >>> lookup = StringLookup.of_short_strings(np.array([0x61 << 56, 0x62 << 56], np.uint64), np.array([1, 0]))
        >>> lookup.holds_keys, lookup.keys.tolist(), lookup.keys.name  # "a" is row 1, "b" row 0
        (True, ['b', 'a'], 'value')
        """
        from tabflow.backends._string_table import StringTable

        lookup = cls.__new__(cls)
        lookup._table = StringTable.of_keys(keys, rows)
        lookup._dtype, lookup._name, lookup._keys = _pandas_string_dtype(), "value", None
        return lookup

    def _rebuilt_keys(self) -> pd.Series:
        data, offsets = self._table.strings()
        values = pa.LargeStringArray.from_buffers(len(self._table), pa.py_buffer(offsets), pa.py_buffer(data))
        return pd.Series(pd.array(values, dtype=self._dtype), name=self._name)

    def positions(self, data: np.ndarray, offsets: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """int64 position of each string of Arrow-style buffers, -1 where absent or null
        (a new array, in Arrow's memory pool: see :func:`_pooled_empty`)."""
        return self._table.positions(data, offsets, valid, out=_pooled_empty(len(valid), np.dtype(np.int64)))

    def dictionary_positions(self, encoded: pa.ChunkedArray) -> np.ndarray:
        """int64 position of each value of dictionary-encoded strings, -1 where absent or null.

        Each chunk's dictionary is looked up once and its indices take the answers: a
        column read with its parquet dictionary costs one lookup per distinct value.
        """
        out = _pooled_empty(len(encoded), np.dtype(np.int64))
        start = 0
        for chunk in encoded.chunks:
            found = self._table.positions(*_arrow_string_buffers(chunk.dictionary))
            # One slot past the dictionary answers -1: where null indices point.
            found = np.append(found, -1)
            out[start : start + len(chunk)] = found[_dictionary_indices(chunk)]
            start += len(chunk)
        return out

    def __len__(self) -> int:
        return len(self._table)


class IntegerLookup(_KeysBesideTable):
    """Vocabulary lookup table of integer keys (any integer dtype, nulls left out): their
    :func:`~tabflow.backends._string_table.integer_keys` held sorted
    (:class:`~tabflow.backends._string_table.SortedKeys`), looked up by a walk of the
    sorted keys of each column asked about (or, in a table of few keys, by hashing); keys
    that are not integers (or unsigned ones past int64) are looked up in a
    :class:`pandas.Index` of the keys.

    Keys of a NumPy integer dtype on a default index are not kept beside the table: each is
    its key, and :attr:`keys` rebuilds them (8 to 12 bytes a key in all, where the keys and a
    hash index of them took 16 to 24 beside the vocabulary's own).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends import get_backend
    >>> pandas = get_backend("pandas")
    >>> table = pandas.lookup_table(pd.Series([40, -3, 7]))
    >>> pandas.lookup(table, pd.Series([7, None, 40, 5, -3], dtype="Int64")).tolist()
    [2, -1, 0, -1, 1]
    >>> table.holds_keys, table.keys.tolist()
    (True, [40, -3, 7])
    """

    def __init__(self, keys: pd.Series, integers: tuple[np.ndarray, np.ndarray]) -> None:
        from tabflow.backends._string_table import SortedKeys

        ordered, present = integers
        self._table = SortedKeys.of_rows(ordered, present)
        self._size = len(keys)
        self._dtype, self._name = keys.dtype, keys.name
        self._keep_keys(keys, isinstance(keys.dtype, np.dtype) and len(self._table) == len(keys))

    def _rebuilt_keys(self) -> pd.Series:
        from tabflow.backends._string_table import integer_values

        return pd.Series(integer_values(self._table.keys_by_row(self._size), self._dtype), name=self._name)

    def positions(self, ordered: np.ndarray, present: np.ndarray) -> np.ndarray:
        """int64 position of each integer key (:func:`_integer_keys`), -1 where absent or not
        present (a new array, in Arrow's memory pool: see :func:`_pooled_empty`)."""
        return self._table.positions(ordered, present, out=_pooled_empty(len(present), np.dtype(np.int64)))

    def __len__(self) -> int:
        return self._size


def _integer_keys(series: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """``(keys, present)`` of an integer column (NumPy, masked or Arrow integers): each
    value's :func:`~tabflow.backends._string_table.integer_keys` and whether it is not null;
    None for any other column (and for unsigned values past int64's range)."""
    from tabflow.backends._string_table import integer_keys

    dtype = series.dtype
    if not pd.api.types.is_integer_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype):
        return None
    if isinstance(dtype, np.dtype):
        values, present = series.to_numpy(), None
    else:
        nulls = series.isna().to_numpy()
        values = series.to_numpy(dtype=_numpy_integer_dtype(dtype), na_value=0)
        present = ~nulls if nulls.any() else None
    keys = integer_keys(values)
    if keys is None:
        return None
    return keys, present if present is not None else np.ones(len(keys), dtype=bool)


class PandasBackend:
    """Backend for pandas DataFrames held in host memory."""

    name = "pandas"
    xp = np
    parses_csv = False  # text is parsed by pyarrow, several times faster than pandas.read_csv

    # ------------------------------------------------------------------ types
    @staticmethod
    def is_frame(obj: Any) -> bool:
        return isinstance(obj, pd.DataFrame)

    @staticmethod
    def is_series(obj: Any) -> bool:
        return isinstance(obj, pd.Series)

    def canonical_dtype(self, dtype: Any) -> str:
        """Engine-neutral name of a dtype: numpy names, ``"string"``, ``"list<...>"``.

        :func:`tabflow.schema.dtypes.canonical_dtype`, plus what only pandas has: a
        categorical column (as parquet dictionary columns may read) holds strings here.
        """
        if isinstance(dtype, pd.CategoricalDtype) or (isinstance(dtype, str) and dtype == "category"):
            return dtype_names.STRING
        return dtype_names.canonical_dtype(dtype)

    def engine_dtype(self, canonical: str) -> Any:
        """Concrete pandas dtype for a canonical dtype name."""
        if dtype_names.is_string(canonical):
            return _pandas_string_dtype()
        if dtype_names.is_list(canonical):
            return pd.ArrowDtype(dtype_names.arrow_type(canonical))
        return pd.api.types.pandas_dtype(canonical)

    def is_list_dtype(self, dtype: Any) -> bool:
        return isinstance(dtype, pd.ArrowDtype) and pa.types.is_list(dtype.pyarrow_dtype) or (
            isinstance(dtype, pd.ArrowDtype) and pa.types.is_large_list(dtype.pyarrow_dtype)
        )

    def is_string_dtype(self, dtype: Any) -> bool:
        return self.canonical_dtype(dtype) == "string"

    def is_numeric_dtype(self, dtype: Any) -> bool:
        if self.is_list_dtype(dtype) or self.is_string_dtype(dtype):
            return False
        return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)

    # ----------------------------------------------------------- construction
    def empty_frame(self, dtypes: Mapping[str, str]) -> pd.DataFrame:
        """A zero-row frame with the given canonical dtypes (dask ``meta``)."""
        return pd.DataFrame({name: pd.Series([], dtype=self.engine_dtype(dt)) for name, dt in dtypes.items()})

    def observed_dtype(self, values: Any) -> str:
        """Canonical dtype of what a user function returned (a series or an array).

        An ``object`` result is looked into: lists (``col.str.split("|")``) make a list
        column, as they become when the op's output is used.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> pandas.observed_dtype(pd.Series(["a|b", "c"]).str.split("|")), pandas.observed_dtype([1.5])
        ('list<string>', 'float64')
        """
        if isinstance(values, pd.Series) and values.dtype == object:
            frame = self.with_list_columns(values.to_frame())
            return self.canonical_dtype(frame.dtypes.iloc[0])  # the series may be unnamed
        dtype = getattr(values, "dtype", None)
        return self.canonical_dtype(dtype if dtype is not None else np.asarray(values).dtype)

    def column_dtype(self, series: pd.Series) -> str:
        """The column's canonical dtype: pandas names a column that can hold nulls by its
        masked dtype already (a plain NumPy integer column cannot hold one).

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> get_backend("pandas").column_dtype(pd.Series([1, None], dtype="Int64"))
        'Int64'
        """
        return self.canonical_dtype(series.dtype)

    def frame_from_dict(self, columns: Mapping[str, Any], index: Any = None) -> pd.DataFrame:
        # copy=False: the columns are fresh op results; copying them would double the memory
        # traffic of every transform.
        return pd.DataFrame(dict(columns), index=index, copy=False)

    def series(self, values: Any, name: str | None = None, index: Any = None, dtype: Any = None) -> pd.Series:
        # copy=False: pandas 3 copies a NumPy array given to the constructor, pandas 2 did not;
        # the values given here are op results, and a copy would double the memory traffic of
        # every column built this way (as in frame_from_dict).
        return pd.Series(values, name=name, index=index, dtype=dtype, copy=False)

    def with_index(self, obj: Any, index: pd.Index) -> Any:
        """``obj`` (a series or frame) with ``index`` as its row labels, row for row.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> s = pd.Series([10, 20], index=[1, 0])
        >>> get_backend("pandas").with_index(s, pd.Index([0, 1])).tolist()  # not aligned on labels
        [10, 20]
        """
        return obj.set_axis(index, axis=0)

    def concat_columns(self, frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
        frames = [f for f in frames if f is not None]
        if not frames:
            return pd.DataFrame()
        if len(frames) == 1:
            return frames[0]
        return pd.concat(frames, axis=1, copy=False) if _concat_takes_copy() else pd.concat(frames, axis=1)

    def concat_rows(self, frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
        return pd.concat(list(frames), axis=0, ignore_index=True)

    def astype(self, obj: Any, canonical: str) -> Any:
        return obj.astype(self.engine_dtype(canonical))

    def conform_column(self, series: pd.Series, canonical: str) -> pd.Series:
        """``series`` cast to ``canonical`` when no value changes, else ``series`` unchanged.

        What a workflow does to an input column whose dtype is not the fitted one: int64 data
        for an ``Int64`` column, ``object`` text or pandas' ``string`` dtype for a column of
        the engine's string dtype (``str`` on pandas 3). A cast to a numeric
        or boolean dtype that would change a value (10.5 to the int 10, 2**40 to the int32 0,
        2 to True) is not made, so ops see the values as they are: a non-integral float is out
        of vocabulary for a Categorify fitted on integers and hashes as itself. Floats narrow
        to a fitted float dtype (rounding to its precision). Strings in a numeric column are
        parsed as numbers; one that is not a number is a ValueError naming the column and the
        value.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> pandas.conform_column(pd.Series([30.0, 31.0]), "int64").tolist()
        [30, 31]
        >>> pandas.conform_column(pd.Series([30.0, 30.5]), "int64").tolist()
        [30.0, 30.5]
        >>> pandas.conform_column(pd.Series(["7", "abc"], name="age"), "int64")
        Traceback (most recent call last):
        ...
        ValueError: column 'age' holds 'abc' (row 1), which is not a number, but the workflow reads it as int64: send numbers or nulls (pd.to_numeric(df['age'], errors='coerce') turns such values into nulls)
        """
        target = self.engine_dtype(canonical)
        if series.dtype == target:
            return series
        if dtype_names.is_string(canonical) and dictionary_strings(series) is not None:
            return series  # read dictionary-encoded on purpose (see from_arrow)
        if _numpy_kind(target) in ("i", "u", "f", "b"):
            if _numpy_kind(target) != "b" and self.is_string_dtype(series.dtype):
                series = _parse_numbers(series, canonical)
            return _cast_if_exact(series, target)
        try:
            return series.astype(target)
        except (TypeError, ValueError):
            return series  # e.g. nulls where the fitted data had none: the ops see the column as it is

    def fill_nulls(self, series: pd.Series, value: Any, canonical: str) -> pd.Series:
        """``series`` with missing values replaced by ``value``, cast to ``canonical``.

        A masked integer or NumPy float column becoming a NumPy column of its own number type
        is filled in one copy of its values: ``fillna`` copied the values and the mask, and
        the cast copied the values again.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> get_backend("pandas").fill_nulls(pd.Series([3, None, 5], dtype="Int64"), 0, "int64").tolist()
        [3, 0, 5]
        """
        target = self.engine_dtype(canonical)
        filled = _filled_numbers(series, value, target)
        if filled is not None:
            return pd.Series(filled, index=series.index, name=series.name, copy=False)
        filled = series.fillna(value)
        return filled if self.canonical_dtype(filled.dtype) == canonical else self.astype(filled, canonical)

    def to_float(self, series: pd.Series, dtype: str = "float32") -> pd.Series:
        """Numeric series to a numpy float dtype, nulls becoming NaN."""
        # One copy, made here (the result never shares the input's memory); pandas 3 would
        # copy the array again in the constructor.
        values = series.to_numpy(dtype=dtype, na_value=np.nan, copy=True)
        return pd.Series(values, index=series.index, name=series.name, copy=False)

    def to_numpy(self, series: pd.Series, dtype: Any = None, na_value: Any = None) -> np.ndarray:
        """A series' values as a NumPy array of ``dtype``, nulls as ``na_value``.

        As ``object`` a null is None unless ``na_value`` says otherwise, whatever pandas' own
        missing value for the dtype is (NaN for ``str``, ``pd.NA`` for ``string``).

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> get_backend("pandas").to_numpy(pd.Series(["a", None], dtype="str"), dtype=object).tolist()
        ['a', None]
        """
        if na_value is None and dtype is not None and np.dtype(dtype) == np.dtype(object):
            return series.to_numpy(dtype=object, na_value=None)
        if na_value is None:
            return series.to_numpy(dtype=dtype)
        return series.to_numpy(dtype=dtype, na_value=na_value)

    # -------------------------------------------------------------- host moves
    def to_host(self, obj: Any) -> Any:
        """The object as pandas/numpy (identity here; cuDF copies to host)."""
        return obj

    def from_host(self, obj: Any) -> Any:
        """A pandas/numpy object as this engine's type (identity here)."""
        return obj

    def writable(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with its NumPy columns on writable memory: those viewing read-only
        memory (Arrow buffers that :meth:`from_arrow` keeps without a copy) are copied, the
        others are kept. Copy-on-write pandas still hands out ``frame[c].to_numpy()`` as a
        read-only view, by design; ``frame.loc``/``iloc``/``at`` assignments work.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> frame = pandas.writable(pandas.from_arrow(pa.table({"x": [1.0, 2.0]})))
        >>> frame.loc[0, "x"] = 5.0
        >>> frame["x"].tolist()
        [5.0, 2.0]
        """
        read_only = [
            position for position, (_, column) in enumerate(frame.items())
            if isinstance(column.dtype, np.dtype) and not np.asarray(column.array).flags.writeable
        ]
        if not read_only:
            return frame
        frame = frame.copy(deep=False)
        for position in read_only:
            frame.isetitem(position, frame.iloc[:, position].to_numpy(copy=True))
        return frame

    def with_list_columns(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with object columns that hold lists (or arrays) as Arrow list columns.

        ``pd.read_parquet`` and ``pd.DataFrame({"g": [["a"], ["b", "c"]]})`` hold a list
        column as ``object``; without this it would be taken for a string column.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> frame = pandas.with_list_columns(pd.DataFrame({"g": [["a"], ["b", "c"], None]}))
        >>> pandas.canonical_dtype(frame["g"].dtype), frame["g"].tolist()[1]
        ('list<string>', ['b', 'c'])
        """
        converted = {}
        for name, dtype in frame.dtypes.items():
            if dtype != object:  # noqa: E721 - a dtype equals `object` when it is NumPy's object dtype
                continue
            present = frame[name].dropna()
            if len(present) and isinstance(present.iloc[0], (list, tuple, np.ndarray)):
                converted[name] = pd.Series(
                    pd.arrays.ArrowExtensionArray(_portable_list(_arrow_lists(frame[name]))), index=frame.index, name=name
                )
        if not converted:
            return frame
        out = frame.copy(deep=False)  # column labels need not be strings (assign(**) would need them)
        for name, series in converted.items():
            out[name] = series
        return out

    def lists_as_arrays(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with its list columns as pandas' own parquet reader gives them: an
        ``object`` column holding one NumPy array per row (nested arrays for lists of
        lists), ``None`` for a null list.

        The arrays are read-only views into one buffer per column, as ``pd.read_parquet``
        makes them; an element dtype is the column's, except that integer lists holding a
        null become float arrays with NaN there (pyarrow's rule). Other columns are kept.
        Ops, the writer and the loaders work on the Arrow list columns; frames handed to
        users (``Dataset.to_ddf``, ``compute``, ``head``, ...) go through this.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> frame = pandas.with_list_columns(pd.DataFrame({"g": [[1, 2], None, []], "x": [1, 2, 3]}))
        >>> out = pandas.lists_as_arrays(frame)
        >>> out["g"].dtype, out["g"][0].dtype, out["g"].tolist()
        (dtype('O'), dtype('int64'), [array([1, 2]), None, array([], dtype=int64)])
        """
        lists = [position for position, dtype in enumerate(frame.dtypes) if self.is_list_dtype(dtype)]
        if not lists:
            return frame
        out = frame.copy(deep=False)
        for position in lists:
            column = frame.iloc[:, position]
            arrays = pa.chunked_array(pa.array(column.array)).to_pandas()
            out.isetitem(position, pd.Series(arrays.to_numpy(), index=frame.index, name=column.name, dtype=object))
        return out

    # ------------------------------------------------------------- list columns
    def list_offsets(self, series: pd.Series) -> np.ndarray:
        """int64 offsets (length ``len(series) + 1``) of a list column's items; a null list
        is empty.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> pandas.list_offsets(pandas.with_list_columns(pd.DataFrame({"l": [[1, 2], None, [3]]}))["l"]).tolist()
        [0, 2, 2, 3]
        """
        return _list_offsets(_combined_arrow(series))

    def list_values_series(self, series: pd.Series) -> pd.Series:
        """Flattened values of a list column as a series (nulls inside lists kept)."""
        return _arrow_to_series(_list_items(_combined_arrow(series)), name=series.name)

    def list_lengths(self, series: pd.Series) -> np.ndarray:
        return np.diff(self.list_offsets(series))

    def list_from_values_offsets(
        self, values: Any, offsets: Any, index: Any = None, name: str | None = None
    ) -> pd.Series:
        """Build a list column from flat values and offsets."""
        if isinstance(values, pd.Series):
            value_array = pa.array(values.array) if isinstance(values.dtype, pd.ArrowDtype) else pa.Array.from_pandas(values)
        else:
            value_array = pa.array(np.asarray(values))
        if isinstance(value_array, pa.ChunkedArray):
            value_array = value_array.combine_chunks()
        list_array = pa.ListArray.from_arrays(pa.array(np.asarray(offsets, dtype=np.int32)), value_array)
        return pd.Series(pd.arrays.ArrowExtensionArray(list_array), index=index, name=name)

    # ---------------------------------------------------- rows and loader arrays
    def slice_rows(self, frame: pd.DataFrame, start: int, stop: int) -> pd.DataFrame:
        """Rows ``start:stop`` by position."""
        return frame.iloc[start:stop]

    def sort_rows(
        self, frame: pd.DataFrame, by: Sequence[str], ascending: bool | Sequence[bool] = True, na_position: str = "last"
    ) -> pd.DataFrame:
        """Rows ordered by ``by``, ties in their order (pandas' stable sort; its default sorts
        one key column with quicksort).

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> get_backend("pandas").sort_rows(pd.DataFrame({"k": [2, 1, 2], "v": ["a", "b", "c"]}), ["k"])["v"].tolist()
        ['b', 'a', 'c']
        """
        return frame.sort_values(list(by), ascending=ascending, na_position=na_position, kind="stable")

    def take_rows(self, frame: pd.DataFrame, positions: Any) -> pd.DataFrame:
        """Rows at the given positions, in that order."""
        return frame.take(np.asarray(positions)).reset_index(drop=True)

    def column_values(self, series: pd.Series, dtype: str, na_value: float | None = None) -> np.ndarray:
        """A scalar column as a 1-D NumPy array of ``dtype``.

        Nulls become ``na_value``; with ``na_value=None`` a null is a ``ValueError`` naming
        the column. The array may be a read-only view of the column (copy it before writing).

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> get_backend("pandas").column_values(pd.Series([1.5, None]), "float32", na_value=-1.0).tolist()
        [1.5, -1.0]
        """
        return _column_values(series, dtype, na_value)

    def columns_matrix(
        self, frame: pd.DataFrame, names: Sequence[str], dtype: str, na_value: float | None = None,
        allocate: Allocate | None = None,
    ) -> np.ndarray:
        """Several scalar columns as one new C-contiguous ``[rows, len(names)]`` array.

        ``allocate(shape, dtype)`` provides the result's memory (by default a new NumPy
        array); the data loader passes a pool that recycles memory from chunk to chunk.
        Nulls are handled as in :meth:`column_values`.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> get_backend("pandas").columns_matrix(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), ["b", "a"], "int64").tolist()
        [[3, 1], [4, 2]]
        """
        if not names:  # e.g. no continuous columns: still one (empty) row per frame row
            return np.empty((len(frame), 0), dtype=dtype)
        columns = [_column_values(frame[name], dtype, na_value) for name in names]
        return _stack_columns(columns, (allocate or np.empty)((len(frame), len(names)), dtype))

    def list_column_values(self, series: pd.Series, dtype: str) -> tuple[np.ndarray, np.ndarray]:
        """A list column as flat ``values`` (``dtype``) and int64 ``offsets`` arrays.

        A null list is an empty list; a null inside a list is a ``ValueError`` naming the
        column. Lists of lists give their innermost values, and offsets that count them
        (row ``i`` holds ``values[offsets[i]:offsets[i + 1]]``, as merlin's loader gives a
        nested column). Both arrays are writable.

        Examples
        --------
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> values, offsets = pandas.list_column_values(pandas.list_from_values_offsets([1, 2, 3], [0, 2, 3]), "float32")
        >>> values.tolist(), offsets.tolist()
        ([1.0, 2.0, 3.0], [0, 2, 3])
        """
        values, levels = self.list_column_levels(series, dtype)
        return values, _leaf_offsets(levels)

    def list_column_levels(self, series: pd.Series, dtype: str) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """A list column of any nesting as its innermost ``values`` (``dtype``) and the int64
        offsets of every level, the rows' first: ``levels[0][i]:levels[0][i + 1]`` are the
        items of row ``i`` in the next level (the values for a flat list).

        A null list (at any level) is an empty one; a null value is a ``ValueError`` naming
        the column. All arrays are writable.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> values, levels = pandas.list_column_levels(pd.Series([[[1, 2], [3, 4]], None, [[5, 6]]], name="m"), "int64")
        >>> values.tolist(), [level.tolist() for level in levels]
        ([1, 2, 3, 4, 5, 6], [[0, 2, 2, 3], [0, 2, 4, 6]])
        """
        array = _combined_arrow(series)
        levels = []
        while pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
            levels.append(np.ascontiguousarray(_list_offsets(array), dtype=np.int64))
            array = _list_items(array)
        values = _arrow_values_to_numpy(array)
        if values.dtype == object or (values.dtype.kind == "f" and np.dtype(dtype).kind != "f" and np.isnan(values).any()):
            raise ValueError(f"list column {series.name!r} holds null elements; fill them before loading")
        values = values.astype(dtype, copy=not values.flags.writeable)
        return values, tuple(levels)

    # ---------------------------------------------------------- statistics helpers
    def value_counts(self, series: pd.Series) -> pd.Series:
        """Counts of each non-null value (list columns: of each element).

        Strings come in ascending (byte) order, integers in ascending order: such count
        tables merge as sorted runs (:meth:`sum_counts`), and a vocabulary built from them
        needs no sort of its values.
        """
        if self.is_list_dtype(series.dtype):
            series = self.list_values_series(series)
        integers = _integer_keys(series)
        if integers is not None:
            # Integers are counted as keys (hashed or sorted), ascending as the merges want them.
            from tabflow.backends._string_table import count_keys, integer_values

            keys, present = integers
            distinct, numbers = count_keys(keys if present.all() else keys[present])
            values = integer_values(distinct, _numpy_integer_dtype(series.dtype))
            index = pd.Index(values, name=series.name)
            if index.dtype != series.dtype:
                index = index.astype(series.dtype)
            return pd.Series(numbers, index=index, name="count")
        encoded = dictionary_strings(series)
        if encoded is not None:
            counts = _dictionary_value_counts(encoded, series.name)
            if counts is not None:
                return counts
            series = pd.Series(pd.array(encoded.cast(pa.large_string()), dtype=_pandas_string_dtype()), name=series.name)
        if _is_arrow_string(series.dtype):
            # Short strings (ids) are counted by sorting, not hashing: the table comes out in
            # byte order, as the merges want it. Longer ones sharing prefixes sort slowly:
            # they are counted by hashing, and only the distinct ones sorted.
            from tabflow.backends._string_table import hashed_counts, sorted_counts, take_strings

            data, offsets, valid = _arrow_string_buffers(pa.array(series.array), series.name)
            if len(offsets) < 2 or int(np.diff(offsets).max()) <= 8:
                table = sorted_counts(data, offsets, valid)
                if table is not None:
                    return _count_series(table, series.name)
            table = hashed_counts(data, offsets, valid)
            if table is not None:
                data, offsets, numbers = table
                order = _byte_order(pa.LargeStringArray.from_buffers(len(numbers), pa.py_buffer(offsets), pa.py_buffer(data)))
                return _count_series((*take_strings(data, offsets, order), numbers[order]), series.name)
        counts = series.value_counts(dropna=True, sort=False)
        if pd.api.types.is_integer_dtype(series.dtype):  # unsigned values past int64's range
            counts = counts.sort_index()
        if self.is_string_dtype(counts.index.dtype) and counts.index.dtype != _pandas_string_dtype():
            # Fitted vocabularies hold the engine's string dtype whichever the data had.
            counts.index = counts.index.astype(_pandas_string_dtype())
        if self.is_string_dtype(counts.index.dtype) and len(counts) > 1:
            values = pa.array(counts.index.array) if counts.index.dtype != object else pa.array(counts.index, from_pandas=True)
            counts = counts.iloc[_byte_order(values)]
        return counts

    def sum_counts(self, frames: Sequence[pd.DataFrame], count_column: str) -> pd.DataFrame:
        """One row per distinct key of count tables, ``count_column`` summed (null keys kept).

        Tables of one string key column whose values ascend (as :meth:`value_counts` gives
        them) merge as sorted runs, without hashing a string again, into an ascending table;
        so do tables of one integer key column whose values ascend strictly (their counts
        then uint32 where no sum reaches 2**32), among them uint64 keys of short strings (see
        :func:`~tabflow.backends._string_table.short_string_keys`); any other tables are
        concatenated and grouped.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> parts = [pd.DataFrame({"value": pd.Series(v, dtype="str"), "n": c}) for v, c in [(["a", "c"], [1, 2]), (["b", "c"], [5, 1])]]
        >>> merged = pandas.sum_counts(parts, "n")
        >>> merged["value"].tolist(), merged["n"].tolist()
        (['a', 'b', 'c'], [1, 5, 3])
        """
        from tabflow.backends._string_table import integer_values, merge_key_counts, merge_sorted_counts

        keys = [c for c in frames[0].columns if c != count_column]
        same_columns = all(list(f.columns) == list(frames[0].columns) for f in frames)
        dtype = frames[0][keys[0]].dtype if len(keys) == 1 else None
        if dtype is not None and same_columns and dtype != np.uint64 and all(f[keys[0]].dtype == dtype for f in frames):
            # Integers ascending (as value_counts gives them) merge as their keys.
            integer_runs = []
            for frame in frames:
                integers = _integer_keys(frame[keys[0]])
                if integers is None or not integers[1].all():
                    break
                integer_runs.append((integers[0], frame[count_column].to_numpy(dtype=np.int64)))
            else:
                keyed = merge_key_counts(integer_runs)
                if keyed is not None:  # None: some table's values do not ascend strictly
                    values = pd.Series(integer_values(keyed[0], _numpy_integer_dtype(dtype)), copy=False)
                    return pd.DataFrame({keys[0]: values if values.dtype == dtype else values.astype(dtype),
                                         count_column: keyed[1]}, copy=False)
        if len(keys) == 1 and all(list(f.columns) == list(frames[0].columns) and f[keys[0]].dtype == np.uint64 for f in frames):
            keyed = merge_key_counts([(f[keys[0]].to_numpy(), f[count_column].to_numpy(dtype=np.int64)) for f in frames])
            if keyed is not None:  # None: some table's keys do not ascend strictly
                return pd.DataFrame({keys[0]: keyed[0], count_column: keyed[1]}, copy=False)
        if len(keys) == 1 and all(self.is_string_dtype(f[keys[0]].dtype) and f[keys[0]].dtype == frames[0][keys[0]].dtype for f in frames):
            runs = []
            for frame in frames:
                data, offsets, valid = self._string_buffers(frame[keys[0]])
                if not valid.all():
                    break
                runs.append((data, offsets, frame[count_column].to_numpy(dtype=np.int64)))
            else:
                # None: some table's strings do not ascend (the merge checks every table).
                merged = merge_sorted_counts(runs)
                del runs
                if merged is not None:
                    data, offsets, counts = merged
                    values = pa.LargeStringArray.from_buffers(len(counts), pa.py_buffer(offsets), pa.py_buffer(data))
                    # copy=False: the merge's arrays are the table's own (a copy of the counts
                    # would be one more column of the largest vocabulary, held while merging).
                    return pd.DataFrame({
                        keys[0]: pd.Series(pd.array(values, dtype=frames[0][keys[0]].dtype)),
                        count_column: counts,
                    }, copy=False)
        combined = self.concat_rows(list(frames))
        return combined.groupby(keys, dropna=False, sort=False)[count_column].sum().reset_index()

    def lookup_table(self, keys: pd.Series | pd.DataFrame) -> Any:
        """A reusable hash table over unique keys (a frame: one multi-column key per row).

        Strings get a :class:`StringLookup`, which finds keys in their Arrow buffers,
        integers an :class:`IntegerLookup` of their sorted keys; other keys a
        :class:`pandas.Index` (its engine is a hash table of the values).
        """
        if self.is_series(keys) and self.is_string_dtype(keys.dtype):
            return StringLookup(keys, self._string_buffers(keys))
        integers = _integer_keys(keys) if self.is_series(keys) else None
        if integers is not None:
            return IntegerLookup(keys, integers)
        table = pd.MultiIndex.from_frame(keys) if isinstance(keys, pd.DataFrame) else pd.Index(keys)
        # pandas fills an index's hash table on its first lookup, and that is not thread-safe:
        # partitions transformed in parallel threads saw a unique index as non-unique. Fill it
        # now, before the table is shared.
        table.get_indexer(table[:1])
        return table

    def lookup_table_holds_keys(self, table: Any) -> bool:
        """Whether a :meth:`lookup_table` gives its keys back by itself: a table of short
        strings (at most eight bytes, no NUL), which holds each one whole as an integer key,
        or of integers of a NumPy dtype. A vocabulary with such a table need not keep its
        values beside it.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> ids = pandas.lookup_table(pd.Series(["b", "a"], dtype="str"))
        >>> pandas.lookup_table_holds_keys(ids), pandas.lookup_table_keys(ids).tolist()
        (True, ['b', 'a'])
        >>> pandas.lookup_table_holds_keys(pandas.lookup_table(pd.Series(["a longer string"], dtype="str")))
        False
        """
        return isinstance(table, (StringLookup, IntegerLookup)) and table.holds_keys

    def lookup_table_keys(self, table: Any) -> pd.Series:
        """The keys of a table that holds them (:meth:`lookup_table_holds_keys`), rebuilt: a
        series equal to the one the table was built from."""
        if not self.lookup_table_holds_keys(table):
            raise ValueError("this lookup table does not hold its keys (lookup_table_holds_keys is False)")
        return table.keys

    def lookup(self, table: pd.Index, keys: pd.Series | pd.DataFrame) -> np.ndarray:
        """int64 position of each key in a :meth:`lookup_table`, -1 where absent.

        A scalar null key is never found; in multi-column keys a null part matches a null.
        """
        if isinstance(keys, pd.DataFrame):
            keys = pd.MultiIndex.from_frame(keys)
        elif isinstance(table, StringLookup):
            encoded = dictionary_strings(keys)
            if encoded is not None:
                return table.dictionary_positions(encoded)
            if self.is_string_dtype(keys.dtype) or keys.dtype == object:
                try:
                    return table.positions(*self._string_buffers(keys))
                except TypeError:  # not all strings: equal to none of the vocabulary's
                    pass
            table = table.index
        elif isinstance(table, IntegerLookup):
            integers = _integer_keys(keys)
            if integers is not None:
                return table.positions(*integers)
            table = table.index
        return np.asarray(table.get_indexer(keys), dtype=np.int64)

    def map_distinct(self, series: pd.Series, function: Callable[[pd.Series], Any], dtype: str) -> np.ndarray | None:
        """``function`` of each row of a dictionary-encoded string column, computed once per
        distinct value; None for any other column.

        Parquet stores strings dictionary-encoded, and :meth:`read_parquet_parts` can keep them
        that way. Each chunk's dictionary, with a null appended, is given to ``function`` as a
        series of the engine's string dtype; its answers, cast to ``dtype``, are gathered to
        the rows by the chunk's indices (null rows take the null's answer). A row-wise
        computation then costs one pass over the distinct values and one gather, and none of
        its row-sized temporaries.

        Examples
        --------
        >>> import pandas as pd, pyarrow as pa
        >>> from tabflow.backends import get_backend
        >>> backend = get_backend("pandas")
        >>> encoded = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(["b", None, "a", "b"]).dictionary_encode()))
        >>> backend.map_distinct(encoded, lambda values: values.str.len().fillna(-1).to_numpy(), "int8").tolist()
        [1, -1, 1, 1]
        >>> backend.map_distinct(pd.Series(["b"]), len, "int8") is None
        True
        """
        encoded = dictionary_strings(series)
        if encoded is None:
            return None
        chunks = [chunk for chunk in encoded.chunks if len(chunk)]
        out = _pooled_empty(len(series), np.dtype(dtype))
        start = 0
        for chunk in chunks:
            dictionary = chunk.dictionary
            distinct = pa.concat_arrays([dictionary, pa.nulls(1, dictionary.type)])
            answers = np.asarray(self.to_host(function(self._distinct_series(distinct))), dtype=dtype)
            if answers.shape != (len(distinct),):
                raise ValueError(f"map_distinct: the function gave {answers.shape[0] if answers.ndim else 0} answers for {len(distinct)} distinct values")
            # mode="clip" (every index is in range): "raise" would gather into a temporary first.
            np.take(answers, _dictionary_indices(chunk), out=out[start : start + len(chunk)], mode="clip")
            start += len(chunk)
        return out

    @staticmethod
    def _distinct_series(values: pa.Array) -> pd.Series:
        """Arrow strings as a series of the engine's string dtype (the bytes are not copied)."""
        return pd.Series(pd.arrays.ArrowExtensionArray(values)).astype(_pandas_string_dtype())

    def null_mask(self, obj: pd.Series | pd.DataFrame) -> np.ndarray:
        """Boolean array: null values of a series, rows of a frame whose values are all null."""
        mask = obj.isna()
        if isinstance(obj, pd.DataFrame):
            mask = mask.all(axis=1)
        return mask.to_numpy(dtype=bool)

    def hash_rows(self, frame: pd.DataFrame) -> np.ndarray:
        """One uint64 hash per row from the row's values only (the index is ignored)."""
        if len(frame.columns) == 0:
            return np.zeros(len(frame), dtype=np.uint64)
        return pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64)

    def merge_keep_order(
        self, left: pd.DataFrame, right: pd.DataFrame, left_on: Sequence[str], right_on: Sequence[str], how: str = "left"
    ) -> pd.DataFrame:
        """Join ``right`` onto ``left`` keeping the left rows' order and index labels.

        Null keys match null keys. Rows of ``left`` without a match get nulls (``how="left"``)
        or are dropped (``how="inner"``); a key repeated in ``right`` repeats the left row.
        Where every left row comes back once (a left join on unique keys), the result holds
        ``left``'s index object itself, so that its columns build frames on that index as they
        are (repeated labels included, which a frame built from series of another index would
        have to reindex).
        """
        position = "__tabflow_left_row__"
        keyed = left.assign(**{position: np.arange(len(left), dtype=np.int64)})
        out = keyed.merge(right, how=how, left_on=list(left_on), right_on=list(right_on), sort=False)
        rows = out[position].to_numpy()
        if len(rows) > 1 and (np.diff(rows) < 0).any():
            order = np.argsort(rows, kind="stable")
            out, rows = out.iloc[order], rows[order]
        out = out.drop(columns=[position])
        out.index = left.index if how == "left" and len(rows) == len(left) else left.index[rows]
        return out

    def sparse_rowwise_dot(self, left: Any, left_rows: np.ndarray, right: Any, right_rows: np.ndarray) -> np.ndarray:
        """``left[left_rows[i]] . right[right_rows[i]]`` for every i, for CSR matrices (float64)."""
        import scipy.sparse as sp

        a = sp.csr_matrix(left)[np.asarray(left_rows)]
        b = sp.csr_matrix(right)[np.asarray(right_rows)]
        return np.asarray(a.multiply(b).sum(axis=1), dtype=np.float64).ravel()

    def coo_matrix(self, data: Any, row: Any, col: Any, shape: tuple[int, int] | None = None) -> Any:
        """A ``scipy.sparse.coo_matrix`` with ``data[i]`` at ``(row[i], col[i])``.

        Examples
        --------
        >>> from tabflow.backends import get_backend
        >>> get_backend("pandas").coo_matrix([1.0, 2.0], [0, 1], [1, 0]).toarray().tolist()
        [[0.0, 1.0], [2.0, 0.0]]
        """
        import scipy.sparse as sp

        return sp.coo_matrix((np.asarray(data), (np.asarray(row), np.asarray(col))), shape=shape)

    def global_random_state(self) -> np.random.RandomState:
        """numpy's global ``RandomState``: the one ``numpy.random.seed`` seeds and ``numpy.random`` draws from.

        Examples
        --------
        >>> import numpy as np
        >>> from tabflow.backends import get_backend
        >>> _ = np.random.seed(3); first = get_backend("pandas").global_random_state().randint(100)
        >>> _ = np.random.seed(3); bool(first == np.random.randint(100))
        True
        """
        # numpy names its legacy global generator only here (scikit-learn reads it the same way).
        return np.random.mtrand._rand

    def read_table(self, path: str, kind: str | None = None, **kwargs: Any) -> pd.DataFrame:
        """A whole parquet file/directory or CSV file as one frame (small side tables)."""
        kind = kind or ("csv" if str(path).lower().endswith((".csv", ".tsv", ".csv.gz")) else "parquet")
        if kind == "csv":
            return pd.read_csv(path, **kwargs)
        if kind != "parquet":
            raise ValueError(f"cannot read {path!r} as {kind!r}; use 'parquet' or 'csv'")
        return self.from_arrow(pq.read_table(path, **kwargs))

    # ------------------------------------------------------- stable hashing / parsing
    def hash_values(self, series: pd.Series) -> np.ndarray:
        """Stable uint64 xxHash64 of each value (definition in ``tabflow.backends._hashing``).

        Strings hash their UTF-8 bytes; integers and booleans their int64 value; floats the
        int64 value when integral, else their float64 bytes; nulls get ``NULL_HASH``.
        """
        return _hash_values(series)

    def hex_to_int(self, series: pd.Series) -> pd.Series:
        """Hexadecimal strings to a masked ``Int64`` series (nulls and ``""`` become null).

        Raises ValueError quoting the first value that is not 1-16 hex digits (with an
        optional ``0x`` prefix).
        """
        from tabflow.backends._hex import parse_hex_buffers

        data, offsets, valid = self._string_buffers(series)
        values, present, bad = parse_hex_buffers(data, offsets, valid)
        if bad >= 0:
            raise ValueError(f"{series.iloc[bad]!r} (row {bad}) is not a hexadecimal number")
        return pd.Series(pd.arrays.IntegerArray(values, ~present), index=series.index, name=series.name)

    def _string_buffers(self, series: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return string_buffers(series)

    # --------------------------------------------------------------------- I/O
    def read_parquet_parts(
        self, parts: Sequence[tuple[str, Sequence[int] | None]], columns: Sequence[str] | None, dtypes: Mapping[str, str],
        dictionary_strings: Sequence[str] = (),
    ) -> pd.DataFrame:
        """Some row groups of one or more parquet files, in order, as one frame with the
        planned dtypes: the files' Arrow tables are joined before the one conversion.

        String columns named in ``dictionary_strings`` stay dictionary-encoded, as the file
        stores them (see :meth:`from_arrow`).

        Examples
        --------
        >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
        >>> from tabflow.backends import get_backend
        >>> d = tempfile.mkdtemp()
        >>> pq.write_table(pa.table({"n": pa.array([1, 2], pa.int32())}), os.path.join(d, "a.parquet"), row_group_size=1)
        >>> pq.write_table(pa.table({"n": pa.array([3], pa.int64())}), os.path.join(d, "b.parquet"))
        >>> parts = [(os.path.join(d, "a.parquet"), [1]), (os.path.join(d, "b.parquet"), None)]
        >>> get_backend("pandas").read_parquet_parts(parts, ["n"], {"n": "int64"})["n"].tolist()
        [2, 3]
        """
        tables = []
        for path, row_groups in parts:
            with open_parquet(path, dictionary_strings) as pf:
                tables.append(pf.read_row_groups(row_groups, columns=columns) if row_groups is not None else pf.read(columns=columns))
        return self.from_arrow(tables[0] if len(tables) == 1 else concat_tables(tables), dtypes, dictionary_strings)

    def from_arrow(
        self, table: pa.Table, dtypes: Mapping[str, str] | None = None, dictionary_strings: Sequence[str] = ()
    ) -> pd.DataFrame:
        """Arrow table to pandas, casting each column to its planned canonical dtype.

        A string column named in ``dictionary_strings`` whose Arrow type is a dictionary of
        strings is kept as that dictionary (an ``ArrowDtype`` dictionary column, which
        :meth:`value_counts` and :meth:`lookup` read by dictionary index): ops that declare
        they read such columns (``Operator.dictionary_string_columns``) get them without the
        strings being materialised.
        """
        columns: dict[str, Any] = {}
        for name, column in zip(table.column_names, table.columns):
            wanted = dtypes.get(name) if dtypes else None
            if name in dictionary_strings and _is_dictionary_of_strings(column.type) and (wanted is None or dtype_names.is_string(wanted)):
                columns[name] = pd.Series(pd.arrays.ArrowExtensionArray(column), name=name, copy=False)
                continue
            plain = _plain_numeric(column, wanted)
            columns[name] = plain if plain is not None else self._arrow_column_to_series(column, wanted, name)
        # copy=False keeps plain columns as views of the Arrow buffers (read-only, which
        # copy-on-write pandas expects anyway): the loader reads every partition each epoch.
        return pd.DataFrame(columns, index=pd.RangeIndex(table.num_rows), copy=False)

    def _arrow_column_to_series(self, column: pa.ChunkedArray, wanted: str | None, name: str) -> pd.Series:
        arrow_type = column.type
        if pa.types.is_dictionary(arrow_type):
            column = column.cast(arrow_type.value_type)
            arrow_type = column.type
        if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
            target = self.engine_dtype(wanted) if wanted else pd.ArrowDtype(pa.list_(arrow_type.value_type))
            # ``==`` ignores the items' field name: cuDF names it "" where pyarrow says "item".
            if pa.types.is_large_list(arrow_type) or not target.pyarrow_dtype.equals(arrow_type, check_metadata=True):
                column = column.cast(target.pyarrow_dtype)
            return pd.Series(pd.arrays.ArrowExtensionArray(column), name=name)
        if wanted is None:
            wanted = dtype_names.arrow_canonical_dtype(arrow_type, column.null_count > 0)
        target = self.engine_dtype(wanted)
        if isinstance(target, pd.StringDtype) and (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)):
            # Arrow strings become the Arrow-backed string dtype without a copy (through
            # pandas' default ``str`` dtype and ``astype`` they were copied and re-checked).
            return pd.Series(column.to_pandas(types_mapper={arrow_type: target}.get), name=name, copy=False)
        column = _cast_numbers_exactly(column, wanted, name)
        arrow_type = column.type
        if isinstance(target, pd.api.extensions.ExtensionDtype) and not isinstance(target, pd.StringDtype):
            masked = _masked_integers(column, target)
            if masked is not None:
                return pd.Series(masked, name=name, copy=False)
            return pd.Series(pd.array(column.to_pandas(types_mapper={arrow_type: target}.get)), name=name, dtype=target)
        series = column.to_pandas()
        if series.dtype != target:
            series = series.astype(target)
        series.name = name
        return series

    def to_arrow(self, frame: pd.DataFrame) -> pa.Table:
        return pa.Table.from_pandas(frame, preserve_index=False)

    def parquet_file_writer(self, path: str, row_group_size: int | None = None) -> None:
        """None: pandas frames are written as Arrow tables by pyarrow (``tabflow.io.writer``)."""
        return None

    def read_csv_ddf(self, paths: list[str], blocksize: int | None, **kwargs: Any) -> dd.DataFrame:
        separated = _masked_numbers_with_thousands(kwargs)
        if not separated:
            return _text_as_strings(_own_strings(dd.read_csv, paths, blocksize=blocksize, **kwargs))
        # pandas 2's C parser ignores ``thousands=`` for a masked (``Int64``) or Arrow numeric
        # dtype and fails on "1_000" (it parses such values into plain int64 or float64 only).
        # Those columns are read as text and parsed here, the separator removed, so that
        # every supported pandas reads the same numbers.
        ddf = _own_strings(dd.read_csv, paths, blocksize=blocksize, **{**kwargs, "dtype": {**kwargs["dtype"], **dict.fromkeys(separated, object)}})
        separated = {name: dtype for name, dtype in separated.items() if name in ddf.columns}
        meta = pd.DataFrame({name: pd.Series([], dtype=separated.get(name, dtype)) for name, dtype in ddf.dtypes.items()})
        return _text_as_strings(ddf.map_partitions(_parse_separated_numbers, separated, kwargs["thousands"], meta=meta))

    def read_orc_part(self, path: str, stripes: Sequence[int] | None, columns: Sequence[str] | None, dtypes: Mapping[str, str]) -> pd.DataFrame:
        import pyarrow.orc as orc

        reader = orc.ORCFile(path)
        if not stripes:
            table = reader.read(columns=columns)
        else:
            table = pa.concat_tables([pa.Table.from_batches([reader.read_stripe(i, columns=columns)]) for i in stripes])
        return self.from_arrow(table, dtypes)

    def from_frame_ddf(self, frame: pd.DataFrame, npartitions: int) -> dd.DataFrame:
        """``frame`` split into ``npartitions`` partitions, its string columns in the dtypes the
        user gave them (``str``, ``string``); ``object`` columns become the engine's string
        dtype, as dask has always made them.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> frame = pd.DataFrame({"s": pd.Series(["a", None], dtype="string"), "o": pd.Series(["b", None], dtype=object)})
        >>> parts = get_backend("pandas").from_frame_ddf(frame, 2).compute()
        >>> str(parts["s"].dtype), str(parts["o"].dtype), parts["o"].isna().tolist()
        ('string', 'str', [False, True])
        """
        return _own_strings(dd.from_pandas, _text_as_strings(frame), npartitions=max(1, npartitions), sort=False)

    def from_map_ddf(self, read: Any, pieces: Sequence[Any], meta: pd.DataFrame, label: str) -> dd.DataFrame:
        """A collection of one partition per piece, ``read(piece)`` (``dd.from_map``), its
        string columns as ``read`` gives them (dask's own conversion of strings is off).

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.backends import get_backend
        >>> pandas = get_backend("pandas")
        >>> read = lambda n: pd.DataFrame({"s": pd.Series(["x"] * n, dtype="string"), "n": range(n)})
        >>> ddf = pandas.from_map_ddf(read, [1, 2], read(0), "example-read")
        >>> ddf.npartitions, str(ddf.compute()["s"].dtype), ddf.compute()["n"].tolist()
        (2, 'string', [0, 0, 1])
        """
        return _own_strings(dd.from_map, read, pieces, meta=meta, label=label, enforce_metadata=False)

    @staticmethod
    def total_memory() -> int:
        """Bytes of host memory (what ``part_mem_fraction`` is a fraction of here)."""
        import os

        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

    def memory_usage(self, frame: pd.DataFrame) -> int:
        return int(frame.memory_usage(deep=True, index=False).sum())


def _hash_values(series: pd.Series) -> np.ndarray:
    """:meth:`PandasBackend.hash_values` on the host (also for the categories of a categorical)."""
    from tabflow.backends import _hashing

    dtype = series.dtype
    if BACKEND.is_list_dtype(dtype):
        raise TypeError(f"column {series.name!r} is a list column; hash its flattened values")
    if isinstance(dtype, pd.CategoricalDtype):
        categories = _hash_values(pd.Series(dtype.categories))
        codes = series.cat.codes.to_numpy()
        picked = categories[np.maximum(codes, 0)] if len(categories) else np.zeros(len(codes), np.uint64)
        return np.where(codes >= 0, picked, _hashing.NULL_HASH)
    if BACKEND.is_string_dtype(dtype):
        data, offsets, valid = string_buffers(series)
        return _hashing.hash_string_buffers(data, offsets, valid)
    valid = ~series.isna().to_numpy(dtype=bool)
    kind = _numpy_kind(dtype)
    if kind == "u":
        # uint64 above the int64 range keeps its bit pattern (same 8 bytes).
        values = series.to_numpy(dtype=np.uint64, na_value=0).view(np.int64)
    elif kind in "ib":
        values = series.to_numpy(dtype=np.int64, na_value=0)
    elif kind == "f":
        values, valid = _hashing.float_keys(series.to_numpy(dtype=np.float64, na_value=np.nan))
    else:
        raise TypeError(
            f"cannot hash column {series.name!r} of dtype {dtype}: hashing supports strings, "
            "integers, booleans and floats"
        )
    return _hashing.hash_int64(values, valid)


def short_string_lookup(keys: np.ndarray, rows: np.ndarray) -> StringLookup:
    """A lookup table (as :meth:`PandasBackend.lookup_table` builds one) of short strings
    given as their keys, strictly ascending, and the row of each
    (:meth:`StringLookup.of_short_strings`): a vocabulary of ids held as its table from the
    start, its strings never written out.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends import get_backend
    >>> from tabflow.backends.pandas_backend import short_string_lookup, string_buffers
    >>> from tabflow.backends._string_table import short_string_keys
    >>> import pandas as pd
    >>> keys = short_string_keys(*string_buffers(pd.Series(["a", "b"], dtype="str")))
    >>> table = short_string_lookup(keys, np.array([1, 0], np.int32))
    >>> get_backend("pandas").lookup_table_keys(table).tolist()
    ['b', 'a']
    """
    return StringLookup.of_short_strings(keys, rows)


def short_string_key_rows(table: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The keys (ascending) and rows of a lookup table of short strings, the inverse of
    :func:`short_string_lookup`; None for any other table.

    Examples
    --------
    >>> import numpy as np
    >>> from tabflow.backends.pandas_backend import short_string_key_rows, short_string_lookup
    >>> keys, rows = short_string_key_rows(short_string_lookup(np.array([5, 9], np.uint64), np.array([1, 0], np.int32)))
    >>> keys.tolist(), rows.tolist()
    ([5, 9], [1, 0])
    """
    if not isinstance(table, StringLookup) or not table._table.holds_strings:
        return None
    return table._table.sorted_keys()


def string_buffers(series: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """UTF-8 bytes, int64 offsets (n + 1) and validity of a string column, without copying
    the bytes when the column is already Arrow-backed.

    Raises TypeError naming the column when it holds values that are not strings.

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.backends.pandas_backend import string_buffers
    >>> data, offsets, valid = string_buffers(pd.Series(["ab", None, "c"], dtype="str"))
    >>> bytes(data[: offsets[-1]]), offsets.tolist(), valid.tolist()
    (b'abc', [0, 2, 2, 3], [True, False, True])
    """
    try:
        array = pa.array(series, from_pandas=True) if series.dtype == object else pa.array(series.array)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise TypeError(f"column {series.name!r} holds values that are not strings") from None
    return _arrow_string_buffers(array, series.name)


def _arrow_string_buffers(array: pa.Array | pa.ChunkedArray, name: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`string_buffers` of an Arrow array (dictionary-encoded ones are decoded)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type) or pa.types.is_null(array.type)):
        raise TypeError(f"column {name!r} holds {array.type} values, not strings")
    if not pa.types.is_large_string(array.type):
        # One offset width (int64) for the kernels; the bytes themselves are not copied.
        array = array.cast(pa.large_string())
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    valid = ~np.asarray(array.is_null(), dtype=bool) if array.null_count else np.ones(len(array), dtype=bool)
    if len(offsets) == 0:
        offsets = np.zeros(1, dtype=np.int64)
    return data, offsets, valid


def concat_tables(tables: Sequence[Any]) -> Any:
    """Arrow tables of several files as one, in order. Files of one dataset may store a
    column with different (unifying) types, or dictionary-encoded in one file and plain in
    another: such a column is decoded and widened as the dataset's types were unified.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from tabflow.backends.kernels import concat_tables
    >>> one = pa.table({"s": pa.array(["a"]).dictionary_encode(), "n": pa.array([1], pa.int32())})
    >>> two = pa.table({"s": ["b"], "n": pa.array([2], pa.int64())})
    >>> both = concat_tables([one, two])
    >>> both.column("s").to_pylist(), both.schema.field("n").type
    (['a', 'b'], DataType(int64))
    """
    first = tables[0].schema
    if all(table.schema.equals(first, check_metadata=False) for table in tables[1:]):
        return _one_dictionary_each(pa.concat_tables([table.replace_schema_metadata(None) for table in tables]))
    differing = {
        name for name in first.names
        if any(not table.schema.field(name).type.equals(first.field(name).type) for table in tables[1:])
    }
    decoded = []
    for table in tables:
        for name in differing:
            column = table.column(name)
            if pa.types.is_dictionary(column.type):
                table = table.set_column(table.schema.get_field_index(name), name, column.cast(column.type.value_type))
        decoded.append(table.replace_schema_metadata(None))
    return _one_dictionary_each(pa.concat_tables(decoded, promote_options="permissive"))


def _one_dictionary_each(table: pa.Table) -> pa.Table:
    """``table`` with each dictionary-encoded column as one chunk over one dictionary.

    Small files each bring a dictionary of their own, which share most of their values:
    counting and looking up by dictionary index would sort and search each of them, where
    one unified dictionary (hashed once, in Arrow) holds each value once.
    """
    indices = [i for i, field in enumerate(table.schema) if pa.types.is_dictionary(field.type)]
    if not indices or all(table.column(i).num_chunks <= 1 for i in indices):
        return table
    unified = table.unify_dictionaries()
    for i in indices:
        table = table.set_column(i, table.schema.field(i), pa.chunked_array([unified.column(i).combine_chunks()]))
    return table


def open_parquet(source: Any, dictionary_strings: Sequence[str] = ()) -> pq.ParquetFile:
    """A ``pyarrow.parquet.ParquetFile`` that reads the string columns named in
    ``dictionary_strings`` as dictionaries (names that are not top-level string columns of
    this file, such as list columns or missing ones, are read as usual).

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from tabflow.backends.pandas_backend import open_parquet
    >>> path = os.path.join(tempfile.mkdtemp(), "x.parquet")
    >>> pq.write_table(pa.table({"s": ["a", "b", "a"], "n": [1, 2, 3]}), path)
    >>> with open_parquet(path, ["s", "n", "missing"]) as parquet_file:
    ...     parquet_file.read().schema.types
    [DictionaryType(dictionary<values=string, indices=int32, ordered=0>), DataType(int64)]
    """
    if not dictionary_strings:
        return pq.ParquetFile(source)
    metadata = pq.read_metadata(source)
    schema = metadata.schema.to_arrow_schema()
    names = [
        name for name in dictionary_strings
        if name in schema.names and (pa.types.is_string(schema.field(name).type) or pa.types.is_large_string(schema.field(name).type))
    ]
    names = _dictionary_encoded(metadata, names)
    return pq.ParquetFile(source, metadata=metadata, read_dictionary=names or None)


# A file of fewer rows reads every column asked for as a dictionary: its pages' headers (and
# statistics) would weigh as much as its values, and hashing a few thousand strings is cheap.
_PLAIN_MIN_ROWS = 4096


def _dictionary_encoded(metadata: pq.FileMetaData, names: Sequence[str]) -> list[str]:
    """Of top-level string columns, those whose pages a parquet file mostly stores
    dictionary-encoded.

    Arrow reads a column as a dictionary by hashing the values of every page that is not
    dictionary-encoded into a dictionary of its own: a writer falls back to plain pages once
    a column chunk's dictionary outgrows its limit (1 MB for pyarrow, cuDF and Spark), which
    a column of mostly distinct ids does after a fraction of its rows. Read plainly, such a
    column costs a third of the time, and counting or encoding it row by row costs no more
    than its dictionary's values would. A column is taken as mostly plain when its data pages
    (its chunks' bytes past the dictionary page, uncompressed by the chunk's own compression
    ratio) take at least half the bytes per row that plain pages would: 4 bytes of length and
    the strings' bytes (the mean of the lengths of the chunks' least and greatest values, 8
    without statistics), where dictionary indices take 1 to 3. In files of fewer than
    ``_PLAIN_MIN_ROWS`` rows every column asked for is read as a dictionary.
    """
    leaves = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    chosen = []
    for name in names:
        rows = data_bytes = plain_bytes = 0.0
        for group in range(metadata.num_row_groups if name in leaves else 0):
            chunk = metadata.row_group(group).column(leaves[name])
            rows += chunk.num_values
            # The offsets give the dictionary page's compressed size; the data pages' size is
            # scaled back to uncompressed bytes by the chunk's own compression ratio (a
            # dictionary of repetitive strings compresses far better than the indices).
            dictionary_bytes = chunk.data_page_offset - chunk.dictionary_page_offset if chunk.has_dictionary_page else 0
            compressed = max(1, chunk.total_compressed_size)
            data_bytes += max(0, compressed - dictionary_bytes) * chunk.total_uncompressed_size / compressed
            plain_bytes += chunk.num_values * (4 + _typical_length(chunk))
        if rows < _PLAIN_MIN_ROWS or 2 * data_bytes < plain_bytes:
            chosen.append(name)
    return chosen


def _typical_length(chunk: pq.ColumnChunkMetaData) -> float:
    """Bytes of a typical string of a column chunk: the mean of its least and greatest
    values' lengths, from the chunk's statistics (8 where it has none)."""
    statistics = chunk.statistics
    if statistics is None or not statistics.has_min_max:
        return 8.0
    ends = [value if isinstance(value, bytes) else str(value).encode() for value in (statistics.min, statistics.max)]
    return (len(ends[0]) + len(ends[1])) / 2


def dictionary_strings(series: pd.Series) -> pa.ChunkedArray | None:
    """The Arrow chunks of a dictionary-encoded string column (as parquet files store strings
    and :meth:`PandasBackend.read_parquet_parts` can keep them), None for any other column.

    Examples
    --------
    >>> import pandas as pd, pyarrow as pa
    >>> from tabflow.backends.pandas_backend import dictionary_strings
    >>> encoded = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(["a", "b", "a"]).dictionary_encode()))
    >>> dictionary_strings(encoded).chunk(0).dictionary.to_pylist(), dictionary_strings(pd.Series(["a"])) is None
    (['a', 'b'], True)
    """
    dtype = series.dtype
    if not (isinstance(dtype, pd.ArrowDtype) and _is_dictionary_of_strings(dtype.pyarrow_dtype)):
        return None
    array = pa.array(series.array)
    return array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array])


def _is_dictionary_of_strings(arrow_type: pa.DataType) -> bool:
    return pa.types.is_dictionary(arrow_type) and (
        pa.types.is_string(arrow_type.value_type) or pa.types.is_large_string(arrow_type.value_type)
    )


def _byte_order(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Indices sorting strings in byte order (Arrow's order), nulls last."""
    from tabflow.backends._string_table import byte_order

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if not values.null_count:
        order = byte_order(*_arrow_string_buffers(values)[:2])
        if order is not None:
            return order
    import pyarrow.compute as pc

    return pc.array_sort_indices(values).to_numpy()


def _dictionary_indices(chunk: pa.DictionaryArray) -> np.ndarray:
    """A chunk's dictionary indices, nulls pointing one past the dictionary. NumPy gathers and
    counts with any integer type: indices without nulls are read as they are (no copy), and
    with nulls they keep their type where it holds the extra slot (int64 otherwise)."""
    indices = chunk.indices
    if indices.null_count:
        import pyarrow.compute as pc

        slot = len(chunk.dictionary)
        wide = indices.type if np.iinfo(indices.type.to_pandas_dtype()).max >= slot else pa.int64()
        indices = pc.fill_null(indices.cast(wide), pa.scalar(slot, wide))
    return indices.to_numpy(zero_copy_only=False)


def _dictionary_value_counts(encoded: pa.ChunkedArray, name: Any) -> pd.Series | None:
    """:meth:`PandasBackend.value_counts` of dictionary-encoded strings: each chunk's indices
    counted, its present dictionary values sorted, the chunks merged as sorted runs.
    None when a dictionary repeats a value or holds a null (then the caller decodes)."""
    from tabflow.backends._string_table import merge_sorted_counts

    runs = []
    for chunk in encoded.chunks:
        dictionary = chunk.dictionary
        if dictionary.null_count:
            return None
        counts = np.bincount(_dictionary_indices(chunk), minlength=len(dictionary) + 1)[: len(dictionary)]
        # One sort of the whole dictionary (a row group's values all occur in it), then the
        # values this chunk uses, in that order.
        order = _byte_order(dictionary)
        order = order[counts[order] > 0]
        data, offsets, _ = _arrow_string_buffers(dictionary.take(pa.array(order)))
        runs.append((data, offsets, counts[order].astype(np.int64)))
    # None: a dictionary repeats a value (the merge checks that every run ascends strictly).
    merged = merge_sorted_counts(runs)
    if merged is None:
        return None
    return _count_series(merged, name)


def _count_series(table: tuple[np.ndarray, np.ndarray, np.ndarray], name: Any) -> pd.Series:
    """:meth:`PandasBackend.value_counts`' answer from a count table of strings in byte order
    (``data``, ``offsets``, ``counts``; the buffers become the index's without a copy)."""
    data, offsets, counts = table
    values = pa.LargeStringArray.from_buffers(len(counts), pa.py_buffer(offsets), pa.py_buffer(data))
    index = pd.Index(pd.array(values, dtype=_pandas_string_dtype()), name=name)
    return pd.Series(counts, index=index, name="count")


def _numpy_integer_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype of an integer dtype (masked and Arrow integers: their values')."""
    if isinstance(dtype, np.dtype):
        return dtype
    if isinstance(dtype, pd.ArrowDtype):
        return np.dtype(dtype.pyarrow_dtype.to_pandas_dtype())
    return np.dtype(dtype.numpy_dtype)


def _is_arrow_string(dtype: Any) -> bool:
    """Whether a pandas dtype holds its strings in Arrow buffers (``str``/``string`` backed by
    pyarrow, or an ``ArrowDtype`` of strings)."""
    if isinstance(dtype, pd.StringDtype):
        return dtype.storage == "pyarrow"
    if isinstance(dtype, pd.ArrowDtype):
        return pa.types.is_string(dtype.pyarrow_dtype) or pa.types.is_large_string(dtype.pyarrow_dtype)
    return False


def _numpy_kind(dtype: Any) -> str:
    """numpy kind letter of a numpy, masked or Arrow dtype ("" when it has none)."""
    if isinstance(dtype, pd.ArrowDtype):
        dtype = dtype.numpy_dtype
    numpy_dtype = getattr(dtype, "numpy_dtype", dtype)
    try:
        return np.dtype(numpy_dtype).kind
    except TypeError:
        return ""


# Rows per block when interleaving columns into a row-major matrix: a block stays in cache
# while it is copied in and transposed out, instead of every column sweeping the whole output
# (column-at-a-time was ~1.8x slower on 250k x 26 int64; 4096 rows measured fastest of
# 1024..16384).
_STACK_BLOCK_ROWS = 4096


def _column_values(series: pd.Series, dtype: str, na_value: float | None) -> np.ndarray:
    """A column's values as NumPy ``dtype`` (possibly a read-only view); nulls as ``na_value``."""
    if na_value is not None:
        return series.to_numpy(dtype=dtype, na_value=na_value)
    if not (isinstance(series.dtype, np.dtype) and series.dtype.kind in "iub"):
        # Only NumPy integer and boolean columns cannot hold a null.
        _raise_on_nulls(series)
    return series.to_numpy(dtype=dtype)


def _stack_columns(columns: Sequence[np.ndarray], out: np.ndarray) -> np.ndarray:
    """Equal-length 1-D arrays interleaved into the C-contiguous ``[rows, len(columns)]`` ``out``."""
    rows, width = out.shape
    # Each block of columns is first copied contiguously, then written out with one
    # transposing copy: NumPy's transpose is faster than one strided write per column
    # (19 vs 23 ms for a 250k-row Criteo partition's 26 + 13 columns).
    staging = np.empty((width, min(rows, _STACK_BLOCK_ROWS)), dtype=out.dtype)
    for lo in range(0, rows, _STACK_BLOCK_ROWS):
        count = min(rows, lo + _STACK_BLOCK_ROWS) - lo
        for j, column in enumerate(columns):
            staging[j, :count] = column[lo : lo + count]
        np.copyto(out[lo : lo + count], staging[:, :count].T)
    return out


def _plain_numeric(column: pa.ChunkedArray, wanted: str | None) -> np.ndarray | None:
    """The column as a NumPy array when nothing needs converting, else None.

    That is a null-free integer or float column whose planned dtype is its own: zero-copy
    for a single chunk, else joined once in Arrow's memory pool (:func:`_pooled_values`).
    """
    arrow_type = column.type
    if column.null_count or not (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)):
        return None
    if pa.types.is_float16(arrow_type):
        return None
    numpy_dtype = np.dtype(arrow_type.to_pandas_dtype())
    if wanted is not None and wanted != numpy_dtype.name:
        return None
    if column.num_chunks == 1:
        return column.chunk(0).to_numpy(zero_copy_only=True)
    return _pooled_values(column, numpy_dtype)


def _pooled_values(column: pa.ChunkedArray, numpy_dtype: np.dtype) -> np.ndarray:
    """The values of a fixed-width column, copied once into one writable NumPy array that
    lives in Arrow's memory pool (values under nulls are whatever Arrow holds there).

    The pool reuses the memory of the tables it freed; a large NumPy allocation takes fresh
    pages from the system, each a page fault, which cost more than the copy itself when
    partitions are converted one after the other.
    """
    chunks = [chunk for chunk in column.chunks if len(chunk)]
    if not chunks:
        return np.zeros(0, numpy_dtype)
    joined = pa.concat_arrays(chunks)
    return np.frombuffer(joined.buffers()[1], numpy_dtype, count=len(joined), offset=joined.offset * numpy_dtype.itemsize)


def _filled_numbers(series: pd.Series, value: Any, target: Any) -> np.ndarray | None:
    """A copy of the values of a masked integer or NumPy float series of the NumPy dtype
    ``target`` (``Int64`` for ``int64``), missing ones replaced by ``value``; None for any
    other column, target or value (one ``target`` cannot hold exactly): ``fillna`` then a
    cast decide those."""
    if not isinstance(target, np.dtype) or target.kind not in "iuf" or isinstance(value, (bool, np.bool_)):
        return None
    if not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    try:
        if np.array(value).astype(target) != value:
            return None
    except (OverflowError, ValueError):  # too large for any NumPy integer
        return None
    masked = masked_parts(series.array) if isinstance(series.array, pd.arrays.IntegerArray) else None
    if masked is not None:
        values, missing = masked
    elif series.dtype == target and target.kind == "f":
        values = series.to_numpy()
        missing = np.isnan(values)
    else:
        return None
    if values.dtype != target:
        return None
    out = values.copy()
    out[missing] = value
    return out


def _pooled_empty(length: int, numpy_dtype: np.dtype) -> np.ndarray:
    """A writable NumPy array of ``length`` values, uninitialised, in Arrow's memory pool (see
    :func:`_pooled_values`: memory the pool freed is reused without page faults)."""
    buffer = pa.allocate_buffer(length * numpy_dtype.itemsize)
    return np.frombuffer(buffer, numpy_dtype, count=length)


def _masked_integers(column: pa.ChunkedArray, target: Any) -> pd.api.extensions.ExtensionArray | None:
    """An Arrow integer column as pandas' masked integer array of the same width, copying
    the values once (through ``to_pandas`` and ``pd.array`` they are copied three times), or
    None for any other column or target."""
    if getattr(target, "kind", None) not in ("i", "u") or not (pa.types.is_integer(column.type)):
        return None
    numpy_dtype = np.dtype(target.numpy_dtype)
    if pa.from_numpy_dtype(numpy_dtype) != column.type:
        return None
    values = _pooled_values(column, numpy_dtype)
    mask = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else np.zeros(len(values), dtype=bool)
    return pd.arrays.IntegerArray(values, mask)


def _parse_numbers(series: pd.Series, canonical: str) -> pd.Series:
    """Strings (or Python objects) as numbers; ValueError naming the first that is not one."""
    parsed = pd.to_numeric(series, errors="coerce")
    bad = parsed.isna().to_numpy(dtype=bool) & series.notna().to_numpy(dtype=bool)
    if bad.any():
        position = int(np.argmax(bad))
        label = series.index[position]
        label = label.item() if isinstance(label, np.generic) else label
        raise ValueError(
            f"column {series.name!r} holds {series.iloc[position]!r} (row {label!r}), which is not "
            f"a number, but the workflow reads it as {canonical}: send numbers or nulls "
            f"(pd.to_numeric(df[{series.name!r}], errors='coerce') turns such values into nulls)"
        )
    return parsed


def _masked_numbers_with_thousands(read_options: Mapping[str, Any]) -> dict[Any, Any]:
    """``{column: dtype}`` of the columns ``read_options`` (``pandas.read_csv``'s) ask to read
    as masked or Arrow numbers while removing a ``thousands`` separator."""
    dtypes = read_options.get("dtype")
    if not read_options.get("thousands") or not isinstance(dtypes, Mapping):
        return {}
    wanted = {name: pd.api.types.pandas_dtype(dtype) for name, dtype in dtypes.items()}
    return {
        name: dtype for name, dtype in wanted.items()
        if isinstance(dtype, pd.api.extensions.ExtensionDtype)
        and (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype))
    }


def _parse_separated_numbers(frame: pd.DataFrame, dtypes: Mapping[Any, Any], thousands: str) -> pd.DataFrame:
    """``frame`` with its text columns ``dtypes`` parsed as numbers of those dtypes once the
    ``thousands`` separator is removed, as pandas parses text into such a dtype."""
    out = frame.copy(deep=False)
    for name, dtype in dtypes.items():
        text = frame[name].str.replace(thousands, "", regex=False)
        try:
            numbers = pd.to_numeric(text, errors="raise", dtype_backend="numpy_nullable")
            out[name] = pd.array(numbers.array, dtype=dtype)
        except (ValueError, TypeError, OverflowError) as err:
            raise ValueError(
                f"column {name!r} read as {dtype} with thousands={thousands!r}: {err}; "
                f"read it as text to keep values that are not numbers (dtypes={{{name!r}: 'string'}})"
            ) from None
    return out


def _widens(source: Any, target: Any) -> bool:
    """True when every value of numeric dtype ``source`` is exactly a value of ``target``."""
    source = np.dtype(getattr(source, "numpy_dtype", source))
    target = np.dtype(getattr(target, "numpy_dtype", target))
    if source.kind == "b":
        return True
    if source.kind == target.kind and source.kind in "iuf":
        return target.itemsize >= source.itemsize
    return source.kind == "u" and target.kind == "i" and target.itemsize > source.itemsize


def _in_integer_range(series: Any, source: Any, target: Any) -> bool:
    """False when an integer column holds a value outside an integer ``target``'s range.

    Checked on the minimum and maximum before any cast: comparing a cast with its source
    afterwards is not enough, because an engine may compare int64 with uint64 after
    reinterpreting one of them (-1 and 2**64 - 1 then compare equal).
    """
    if _numpy_kind(source) not in ("i", "u") or _numpy_kind(target) not in ("i", "u") or _widens(source, target):
        return True
    if not len(series) or bool(series.isna().all()):
        return True
    bounds = np.iinfo(np.dtype(getattr(target, "numpy_dtype", target)))
    return int(series.min()) >= int(bounds.min) and int(series.max()) <= int(bounds.max)


def _cast_if_exact(series: Any, target: Any) -> Any:
    """``series.astype(target)`` when that keeps every value and null, else ``series``.

    Written with operations both engines' series share (the cuDF backend uses it too).
    """
    source = series.dtype
    if not _in_integer_range(series, source, target):
        return series
    # A refused cast is an answer here, not a problem: numpy's "invalid value" warnings for
    # NaN or inf cast to integers are silenced.
    with np.errstate(all="ignore"):
        try:
            if _widens(source, target):
                return series.astype(target)
            cast = series.astype(target)
        except (TypeError, ValueError, OverflowError):
            return series  # a null or a non-finite value where the fitted dtype has none
        if _numpy_kind(source) == "f" and _numpy_kind(target) == "f":
            return cast  # float64 data for a float32 column: rounded to the fitted precision
        try:
            back = cast.astype(source)
        except (TypeError, ValueError, OverflowError):
            return series
    nulls = series.isna()
    if bool((nulls != cast.isna()).any()):
        return series
    # The round trip catches lost precision (2**53 + 1 through float64), the direct comparison
    # a reinterpreted sign (-1 as uint64 comes back as -1).
    same = ((back == series) & (cast == series)) | nulls
    return cast if bool(same.all()) else series


def _cast_numbers_exactly(column: pa.ChunkedArray, wanted: str, name: str) -> pa.ChunkedArray:
    """A numeric column as the numeric dtype ``wanted``, through Arrow's safe cast.

    numpy's ``astype`` wraps integers that overflow (2**40 as int32 is 0) and truncates
    fractions (3.5 as int64 is 3); Arrow's safe cast raises instead, so a file whose values
    do not fit the planned dtype is an error, never silently changed data. (Narrowing a float
    to float32 rounds, as asked.)
    """
    source = column.type
    if not (pa.types.is_integer(source) or pa.types.is_floating(source)) or pa.types.is_float16(source):
        return column
    lowered = wanted.lower()
    if not lowered.startswith(("int", "uint", "float")) or lowered == "float16":
        return column
    target = pa.from_numpy_dtype(np.dtype(lowered))
    if target == source:
        return column
    try:
        return column.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise ValueError(
            f"column {name!r} holds a value that dtype {wanted} cannot hold exactly ({err}); pass "
            f"dtypes={{{name!r}: ...}} with a dtype that holds every file's values (such as 'float64' or "
            "'string'), or rewrite the files with one type for the column"
        ) from err


def _concat_takes_copy() -> bool:
    return int(pd.__version__.split(".")[0]) < 3


def _raise_on_nulls(series: pd.Series) -> None:
    nulls = int(series.isna().sum())
    if nulls:
        raise ValueError(
            f"column {series.name!r} has {nulls} null value(s) in this partition; "
            "fill or encode them (e.g. with Categorify or FillMissing) before loading"
        )


def _combined_arrow(series: pd.Series) -> pa.Array:
    array = pa.array(series.array) if isinstance(series.dtype, pd.ArrowDtype) else pa.array(series.tolist())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if pa.types.is_large_list(array.type):
        array = array.cast(pa.list_(array.type.value_type))
    return array


def _list_offsets(array: pa.Array) -> np.ndarray:
    """int64 offsets of a list array's items from 0, a null list counting as empty."""
    offsets = np.asarray(array.offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    if array.null_count:
        # A null list may still own a range of items in the buffer: it counts as empty.
        lengths[np.asarray(array.is_null())] = 0
    out = np.zeros(len(array) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def _leaf_offsets(levels: Sequence[Any]) -> Any:
    """Row offsets into the innermost values, from the offsets of every level (NumPy or CuPy)."""
    offsets = levels[-1]
    for outer in reversed(levels[:-1]):
        offsets = offsets[outer]
    return offsets


def _list_items(array: pa.Array) -> pa.Array:
    """The items of a list array, one level down, without those a null list owns."""
    offsets = np.asarray(array.offsets, dtype=np.int64)
    items = array.values.slice(offsets[0], offsets[-1] - offsets[0])
    if array.null_count:
        items = items.filter(pa.array(np.repeat(~np.asarray(array.is_null()), np.diff(offsets))))
    return items


def _arrow_values_to_numpy(values: pa.Array) -> np.ndarray:
    if values.null_count == 0 and (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        return values.to_numpy(zero_copy_only=False)
    return np.asarray(values.to_pandas())


def _arrow_to_series(values: pa.Array, name: str | None) -> pd.Series:
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return pd.Series(values.to_pandas(), name=name).astype(_pandas_string_dtype())
    if values.null_count and (pa.types.is_integer(values.type) or pa.types.is_boolean(values.type)):
        dtype = pd.api.types.pandas_dtype(dtype_names.arrow_canonical_dtype(values.type, True))
        return pd.Series(pd.array(values.to_pandas(types_mapper={values.type: dtype}.get), dtype=dtype), name=name)
    return pd.Series(values.to_pandas(), name=name)


def _arrow_lists(series: pd.Series) -> pa.Array:
    """An object series of lists, tuples or NumPy arrays (None or NaN for a null) as one
    Arrow list array."""
    rows = series.to_numpy(dtype=object, copy=True)
    rows[series.isna().to_numpy()] = None
    try:
        # pyarrow reads NumPy rows whole: twenty times faster than one Python list per row.
        # (Not from_pandas=True: a NaN inside a float list stays a value, not a null.)
        return pa.array(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        pass  # rows whose items pyarrow cannot convert as they are (ints in one row, floats in another)
    values = [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else list(v) for v in series]
    return pa.array(values)


def _portable_list(array: pa.Array) -> pa.Array:
    # Lists of strings as plain ``string`` values, as the parquet reader gives them.
    if pa.types.is_list(array.type) and pa.types.is_large_string(array.type.value_type):
        return array.cast(pa.list_(pa.string()))
    return array


BACKEND = PandasBackend()
