"""The cuDF + CuPy engine: the :class:`~tabflow.backends.Backend` protocol on GPU frames.

cudf, cupy and dask_cudf are imported inside the methods, so importing this module (and
tabflow) never loads them; :func:`tabflow.backends.get_backend` checks that cuDF is installed
before handing this backend out. Canonical dtype names are those of
:mod:`tabflow.schema.dtypes`: cuDF columns are all nullable, so the masked names
(``"Int64"``, ``"boolean"``) map to the plain cuDF dtypes (``int64``, ``bool``) and a cuDF
column's canonical name is the plain one. String columns are cuDF's ``object``-typed string
columns; list columns use ``cudf.ListDtype``. Arrays returned are CuPy arrays in device
memory (the loader hands them to torch through DLPack, without a host copy).

Where a result must be bit-identical to the pandas engine (stable hashes, hex parsing, sparse
products) the work is done on the host by the pandas backend and the result moved back, so
a workflow gives the same output on either engine.

Examples
--------
>>> from tabflow.backends.cudf_backend import BACKEND
>>> BACKEND.name
'cudf'
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from tabflow.backends._device_memory import use_async_pool
from tabflow.backends.pandas_backend import BACKEND as _PANDAS
from tabflow.backends.protocol import Allocate
from tabflow.schema import dtypes as dtype_names

__all__ = ["CudfBackend", "BACKEND"]


def _cudf() -> Any:
    module = importlib.import_module("cudf")
    use_async_pool()  # once per process: the engine's GPU memory (see backends._device_memory)
    return module


def _cupy() -> Any:
    module = importlib.import_module("cupy")
    use_async_pool()
    return module


class CudfBackend:
    """Backend for cuDF DataFrames held in GPU memory."""

    name = "cudf"
    parses_csv = True  # cuDF parses text on the GPU (dask_cudf.read_csv)

    @property
    def xp(self) -> Any:
        """The array module of this engine (CuPy)."""
        return _cupy()

    # ------------------------------------------------------------------ types
    @staticmethod
    def is_frame(obj: Any) -> bool:
        return type(obj).__module__.startswith("cudf") and isinstance(obj, _cudf().DataFrame)

    @staticmethod
    def is_series(obj: Any) -> bool:
        return type(obj).__module__.startswith("cudf") and isinstance(obj, _cudf().Series)

    def canonical_dtype(self, dtype: Any) -> str:
        """Engine-neutral name of a dtype (``"int64"``, ``"string"``, ``"list<int64>"``):
        :func:`tabflow.schema.dtypes.canonical_dtype`, where a categorical holds strings and,
        as every cuDF column can hold nulls, a masked name means its plain dtype."""
        if isinstance(dtype, _cudf().CategoricalDtype) or (isinstance(dtype, str) and dtype == "category"):
            return dtype_names.STRING
        return dtype_names.unmasked_dtype(dtype_names.canonical_dtype(dtype))

    def engine_dtype(self, canonical: str) -> Any:
        """Concrete cuDF dtype for a canonical dtype name: NumPy dtypes for numbers and
        booleans, and for strings the dtype cuDF itself gives strings read from Arrow (so a
        column read from a file already has it and is never cast again)."""
        cudf = _cudf()
        canonical = str(canonical)
        if dtype_names.is_string(canonical):
            return _string_dtype()
        if dtype_names.is_list(canonical):
            return cudf.ListDtype(self.engine_dtype(dtype_names.element_dtype(canonical)))
        return np.dtype(dtype_names.unmasked_dtype(canonical))

    def is_list_dtype(self, dtype: Any) -> bool:
        return isinstance(dtype, _cudf().ListDtype)

    def is_string_dtype(self, dtype: Any) -> bool:
        return self.canonical_dtype(dtype) == "string"

    def is_numeric_dtype(self, dtype: Any) -> bool:
        if self.is_list_dtype(dtype) or self.is_string_dtype(dtype):
            return False
        kind = np.dtype(self.engine_dtype(self.canonical_dtype(dtype))).kind
        return kind in "iuf"

    # ----------------------------------------------------------- construction
    def empty_frame(self, dtypes: Mapping[str, str]) -> Any:
        """A zero-row frame with the given canonical dtypes (dask ``meta``)."""
        cudf = _cudf()
        return cudf.DataFrame({name: cudf.Series([], dtype=self.engine_dtype(dt)) for name, dt in dtypes.items()})

    def observed_dtype(self, values: Any) -> str:
        """Canonical dtype of what a user function returned (cuDF lists carry a list dtype)."""
        dtype = getattr(values, "dtype", None)
        return self.canonical_dtype(dtype if dtype is not None else _PANDAS.observed_dtype(values))

    def column_dtype(self, series: Any) -> str:
        """The column's canonical dtype, masked where an integer or boolean column holds a
        null: every cuDF column can hold nulls, so its dtype (``int64``) does not say."""
        canonical = self.canonical_dtype(series.dtype)
        masked = dtype_names.nullable_dtype(canonical)
        if masked != canonical and series.null_count:
            return masked
        return canonical

    def frame_from_dict(self, columns: Mapping[str, Any], index: Any = None) -> Any:
        """A frame of the given columns.

        Series whose labels are ``index`` row for row (the same object, as every column an op
        computes from the frame it transforms holds, or an equal one) are taken as they are,
        as pandas takes them. cuDF's constructor would reindex each one to the index
        (``_mapping_to_column_accessor``): ``equals`` and ``reindex`` per column on the GPU,
        which dominated a profiled transform, and an error on repeated labels (a partition
        after ``Dataset.shuffle_by_keys``), which cuDF's ``reindex`` refuses even where they
        are the index's own. Anything else is aligned as cuDF aligns it.
        """
        cudf = _cudf()
        columns = dict(columns)
        series = [value for value in columns.values() if self.is_series(value)]
        shared = index if index is not None else (series[0].index if series else None)
        if series and shared is not None and _all_labelled_by(series, shared):
            frame = cudf.DataFrame({name: value.reset_index(drop=True) if self.is_series(value) else value
                                    for name, value in columns.items()})
            frame.index = shared
            return frame
        return cudf.DataFrame(columns, index=index)

    def series(self, values: Any, name: str | None = None, index: Any = None, dtype: Any = None) -> Any:
        return _cudf().Series(values, name=name, index=index, dtype=dtype)

    def with_index(self, obj: Any, index: Any) -> Any:
        """``obj`` with ``index`` as its row labels (cuDF has no ``set_axis``): a shallow copy
        whose index is replaced, so no column is copied or realigned."""
        if len(index) != len(obj):
            raise ValueError(f"an index of {len(index)} labels for {len(obj)} rows")
        out = obj.copy(deep=False)
        out.index = index
        return out

    def concat_columns(self, frames: Sequence[Any]) -> Any:
        frames = [f for f in frames if f is not None]
        if not frames:
            return _cudf().DataFrame()
        if len(frames) == 1:
            return frames[0]
        return _cudf().concat(frames, axis=1)

    def concat_rows(self, frames: Sequence[Any]) -> Any:
        return _cudf().concat(list(frames), axis=0, ignore_index=True)

    def astype(self, obj: Any, canonical: str) -> Any:
        """``obj`` cast to ``canonical``; a list column through Arrow (cuDF refuses list
        casts, ``ColumnBase.astype``)."""
        target = self.engine_dtype(canonical)
        if self.is_series(obj) and self.is_list_dtype(obj.dtype) and obj.dtype != target:
            return _cast_list(obj, target)
        return obj.astype(target)

    def conform_column(self, series: Any, canonical: str) -> Any:
        """``series`` cast to ``canonical`` when no value changes (the pandas engine's rules)."""
        from tabflow.backends.pandas_backend import _cast_if_exact

        target = self.engine_dtype(canonical)
        if series.dtype == target or self.canonical_dtype(series.dtype) == dtype_names.unmasked_dtype(str(canonical)):
            # The same canonical dtype in another of cuDF's flavours (a pandas nullable or
            # Arrow dtype, a list of another string flavour): nothing to change, and cuDF
            # cannot cast list columns anyway.
            return series
        kind = target.kind if isinstance(target, np.dtype) else ""
        if kind in ("i", "u", "f", "b"):
            if kind != "b" and self.is_string_dtype(series.dtype):
                # Surrounding spaces are accepted, as pandas' parser does.
                parsed = _cudf().to_numeric(series.str.strip(), errors="coerce")
                bad = parsed.isna() & series.notna()
                if bool(bad.any()):
                    # The error path only: the offending value is looked up on the host.
                    first = self.to_host(series[bad]).head(1)
                    _PANDAS.conform_column(first, canonical)  # raises naming column, value and row
                    raise ValueError(
                        f"column {series.name!r} holds {first.iloc[0]!r} (row {first.index[0]!r}), which cuDF cannot "
                        f"parse as a number, but the workflow reads it as {canonical}: send numbers or nulls"
                    )
                series = parsed
            return _cast_if_exact(series, target)
        try:
            if self.is_list_dtype(series.dtype) and self.is_list_dtype(target):
                return _cast_list(series, target)  # cuDF refuses list casts
            return series.astype(target)
        except (TypeError, ValueError, NotImplementedError, pa.ArrowException):
            return series

    def fill_nulls(self, series: Any, value: Any, canonical: str) -> Any:
        """``series`` with nulls replaced by ``value``, cast to ``canonical``."""
        filled = series.fillna(value)
        return filled if self.canonical_dtype(filled.dtype) == canonical else self.astype(filled, canonical)

    def to_float(self, series: Any, dtype: str = "float32") -> Any:
        """Numeric series as a NumPy float dtype whose missing values are cuDF nulls.

        cuDF counts a NaN as a value (``count`` counts it, ``sum`` and ``mean`` return NaN),
        where pandas skips it as missing: NaN already in the data becomes null too, so that
        group statistics and reductions skip the same values on both engines.
        """
        return series.astype(np.dtype(dtype)).nans_to_nulls()

    def to_numpy(self, series: Any, dtype: Any = None, na_value: Any = None) -> np.ndarray:
        """A series' values copied to host memory (NumPy), nulls as ``na_value``.

        The cast comes first and the nulls are filled after it: cuDF fills in the column's
        own dtype and refuses a NaN in an integer column that pandas would upcast.
        """
        if dtype is not None and np.dtype(dtype).kind in "iufb" and not self.is_string_dtype(series.dtype):
            series = series.astype(np.dtype(dtype))
        if dtype is not None and np.dtype(dtype) == np.dtype(object):
            # Strings (and anything else as Python objects) as the pandas engine gives them:
            # what cuDF's own to_numpy gives a null depends on its build (None, or NaN where
            # its strings are pandas 3's str dtype).
            return _PANDAS.to_numpy(self.to_host(series), dtype=object, na_value=na_value)
        if na_value is None:
            return series.to_numpy(dtype=dtype)
        return series.to_numpy(dtype=dtype, na_value=na_value)

    # -------------------------------------------------------------- host moves
    def to_host(self, obj: Any) -> Any:
        """The object as pandas/numpy, with the pandas engine's dtypes (through Arrow)."""
        cupy = _cupy()
        if isinstance(obj, cupy.ndarray):
            return cupy.asnumpy(obj)
        if self.is_frame(obj):
            host = _PANDAS.from_arrow(obj.to_arrow(preserve_index=False))
            host.index = obj.index.to_pandas()
            return host
        if self.is_series(obj):
            name = obj.name if obj.name is not None else "__values__"
            table = pa.table({name: obj.to_arrow()})
            host = _PANDAS.from_arrow(table)[name]
            host.index = obj.index.to_pandas()
            host.name = obj.name
            return host
        if type(obj).__module__.startswith("cudf"):
            return obj.to_pandas()
        return obj

    def writable(self, frame: Any) -> Any:
        """``frame`` itself: cuDF columns live in device memory that is always writable."""
        return frame

    def from_host(self, obj: Any) -> Any:
        """A pandas/numpy object as cuDF/CuPy (Arrow carries list and string columns)."""
        import pandas as pd

        cudf = _cudf()
        if isinstance(obj, np.ndarray):
            return _cupy().asarray(obj)
        if isinstance(obj, pd.DataFrame):
            frame = cudf.DataFrame.from_arrow(_PANDAS.to_arrow(obj))
            frame.index = cudf.from_pandas(obj.index)
            return frame
        if isinstance(obj, pd.Series):
            name = obj.name if obj.name is not None else "__values__"
            series = self.from_host(obj.to_frame(name=name))[name]
            series.name = obj.name
            return series
        if isinstance(obj, pd.Index):
            return cudf.from_pandas(obj)
        return obj

    def with_list_columns(self, frame: Any) -> Any:
        """``frame`` with its columns in cuDF's own dtypes (``frame`` itself where they are).

        cuDF list columns always have a list dtype, but ``cudf.from_pandas`` (which
        ``to_backend("cudf")`` and ``cudf.DataFrame(pandas_frame)`` use) keeps pandas'
        extension dtypes: an Arrow list column stays ``pd.ArrowDtype``, an ``Int64`` column
        ``Int64Dtype`` (``as_column``), and every result computed from them keeps that kind.
        The engine knows lists by ``cudf.ListDtype`` and numbers by NumPy dtypes, so such
        columns become those: lists rebuilt through Arrow, the others cast.
        """
        out = frame
        for name, dtype in frame.dtypes.items():
            if not _is_pandas_extension(dtype):
                continue
            column = frame[name]
            native = _native_column(self, column)
            if native is not column:
                out = frame.copy(deep=False) if out is frame else out
                out[name] = native
        return out

    def lists_as_arrays(self, frame: Any) -> Any:
        """``frame`` unchanged: cuDF's users know its list columns (``ListDtype``) as they are."""
        return frame

    # ------------------------------------------------------------- list columns
    def list_offsets(self, series: Any) -> Any:
        """int64 CuPy offsets (``len(series) + 1``) of the items; a null list is empty."""
        cupy = _cupy()
        offsets = cupy.zeros(len(series) + 1, dtype=cupy.int64)
        cupy.cumsum(self.list_lengths(series), out=offsets[1:])
        return offsets

    def list_values_series(self, series: Any) -> Any:
        """Flattened values of a list column as a series (nulls inside lists kept)."""
        leaves = _list_items(series).reset_index(drop=True)
        leaves.name = series.name
        return leaves

    def list_lengths(self, series: Any) -> Any:
        """int64 CuPy length of each list (0 for a null list)."""
        return series.list.len().fillna(0).astype(np.dtype("int64")).to_cupy()

    def list_from_values_offsets(self, values: Any, offsets: Any, index: Any = None, name: str | None = None) -> Any:
        """Build a list column from flat values and offsets.

        The column is assembled by Arrow on the host and moved to the GPU once: cuDF has no
        stable public constructor from device offsets.
        """
        cupy = _cupy()
        if self.is_series(values):
            value_array = values.to_arrow()
        else:
            host = cupy.asnumpy(values) if isinstance(values, cupy.ndarray) else np.asarray(values)
            value_array = pa.array(host)
        host_offsets = cupy.asnumpy(offsets) if isinstance(offsets, cupy.ndarray) else np.asarray(offsets)
        list_array = pa.ListArray.from_arrays(pa.array(host_offsets.astype(np.int32)), value_array)
        series = _cudf().Series.from_arrow(list_array)
        if index is not None:
            series.index = index
        series.name = name
        return series

    # ---------------------------------------------------- rows and loader arrays
    def slice_rows(self, frame: Any, start: int, stop: int) -> Any:
        return frame.iloc[start:stop]

    def sort_rows(self, frame: Any, by: Sequence[str], ascending: bool | Sequence[bool] = True, na_position: str = "last") -> Any:
        """Rows ordered by ``by``, ties in their order: cuDF's ``sort_values`` is stable
        whatever it is asked (``Frame._get_sorted_inds`` orders with ``stable=True``), and
        asked for ``kind="stable"`` by name it warns on every call that it is not supported."""
        return frame.sort_values(list(by), ascending=ascending, na_position=na_position)

    def take_rows(self, frame: Any, positions: Any) -> Any:
        return frame.take(_cupy().asarray(positions)).reset_index(drop=True)

    def column_values(self, series: Any, dtype: str, na_value: float | None = None) -> Any:
        """A scalar column as a 1-D contiguous CuPy array of ``dtype`` (nulls as in pandas)."""
        if na_value is None:
            _raise_on_nulls(series)
            values = series.astype(dtype).values
        else:
            values = series.astype(dtype).to_cupy(na_value=na_value)
        return _cupy().ascontiguousarray(values)

    def columns_matrix(
        self, frame: Any, names: Sequence[str], dtype: str, na_value: float | None = None,
        allocate: Allocate | None = None,
    ) -> Any:
        """Several scalar columns as one ``[rows, len(names)]`` CuPy array.

        ``allocate`` provides host memory and is not used here: device memory comes from
        CuPy's memory pool, which already recycles it.
        """
        out = _cupy().empty((len(frame), len(names)), dtype=dtype)
        for j, name in enumerate(names):
            series = frame[name]
            if na_value is None:
                _raise_on_nulls(series)
                out[:, j] = series.astype(dtype).values
            else:
                out[:, j] = series.astype(dtype).to_cupy(na_value=na_value)
        return out

    def list_column_values(self, series: Any, dtype: str) -> tuple[Any, Any]:
        """A list column as flat ``values`` (``dtype``) and int64 ``offsets`` CuPy arrays
        (lists of lists: the innermost values, offsets counting them)."""
        cupy = _cupy()
        if isinstance(series.dtype.element_type, _cudf().ListDtype):
            values, levels = self.list_column_levels(series, dtype)
            offsets = levels[-1]
            for outer in reversed(levels[:-1]):
                offsets = offsets[outer]
            return values, cupy.ascontiguousarray(offsets)
        items = _list_items(series)
        if items.null_count:
            raise ValueError(f"list column {series.name!r} holds null elements; fill them before loading")
        values = cupy.ascontiguousarray(items.astype(np.dtype(dtype)).to_cupy())
        return values, cupy.ascontiguousarray(self.list_offsets(series))

    def list_column_levels(self, series: Any, dtype: str) -> tuple[Any, tuple[Any, ...]]:
        """A list column of any nesting as its innermost values and every level's offsets
        (CuPy arrays). Lists of lists are taken apart by Arrow on the host, as
        :func:`_list_items` takes them; flat lists stay on the GPU."""
        cupy = _cupy()
        if not isinstance(series.dtype.element_type, _cudf().ListDtype):
            values, offsets = self.list_column_values(series, dtype)
            return values, (offsets,)
        array = series.to_arrow()
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        import pandas as pd

        host = pd.Series(pd.arrays.ArrowExtensionArray(array), name=series.name)
        values, levels = _PANDAS.list_column_levels(host, dtype)
        return cupy.asarray(values), tuple(cupy.asarray(level) for level in levels)

    # ---------------------------------------------------------- statistics helpers
    def value_counts(self, series: Any) -> Any:
        """Counts of each non-null value (list columns: of each element)."""
        if self.is_list_dtype(series.dtype):
            series = self.list_values_series(series)
        return series.value_counts(dropna=True, sort=False)

    def sum_counts(self, frames: Sequence[Any], count_column: str) -> Any:
        """One row per distinct key of count tables, ``count_column`` summed (null keys kept)."""
        combined = self.concat_rows(frames)
        keys = [c for c in combined.columns if c != count_column]
        return combined.groupby(keys, dropna=False, sort=False)[count_column].sum().reset_index()

    def lookup_table(self, keys: Any) -> Any:
        """The unique keys as a frame with their positions (joined against in :meth:`lookup`)."""
        cudf = _cudf()
        frame = keys.reset_index(drop=True) if self.is_frame(keys) else cudf.DataFrame({"__key__": keys.reset_index(drop=True)})
        return frame.assign(__tabflow_pos__=_cupy().arange(len(frame), dtype="int64"))

    def lookup_table_holds_keys(self, table: Any) -> bool:
        """False: a table here is a frame of the keys and their positions, on the device; the
        vocabulary on the host stays whole beside it."""
        return False

    def lookup_table_keys(self, table: Any) -> Any:
        raise ValueError("a cuDF lookup table does not give its keys back to the host; keep the vocabulary")

    def lookup(self, table: Any, keys: Any) -> Any:
        """int64 position of each key in a :meth:`lookup_table`, -1 where absent.

        A scalar null key is never found; in multi-column keys a null part matches a null.
        """
        cudf = _cudf()
        scalar = not self.is_frame(keys)
        on = [c for c in table.columns if c != "__tabflow_pos__"]
        if scalar:
            left = cudf.DataFrame({"__key__": keys.reset_index(drop=True)})
        else:
            # Key columns pair up by position, as a pandas MultiIndex lookup pairs them: the
            # table's names (a vocabulary's value columns) need not be the data's.
            left = keys.reset_index(drop=True)
            left.columns = on
        cupy = _cupy()
        left = left.assign(__tabflow_row__=cupy.arange(len(left), dtype="int64"))
        merged = left.merge(table, how="left", on=on, sort=False)
        # The join returns rows in no order: each found position is scattered back to its
        # row (the keys of a lookup table are unique, so every row comes back once), which
        # costs less than sorting the joined rows.
        positions = cupy.empty(len(left), dtype="int64")
        positions[merged["__tabflow_row__"].values] = merged["__tabflow_pos__"].fillna(-1).astype("int64").values
        if scalar:
            positions[left["__key__"].isna().values] = -1
        return positions

    def map_distinct(self, series: Any, function: Callable[[Any], Any], dtype: str) -> Any:
        """None: cuDF holds strings as plain string columns (a GPU lookup of every row is what
        a gather of per-value answers would save on the host)."""
        return None

    def null_mask(self, obj: Any) -> Any:
        """Boolean CuPy array: null values of a series, all-null rows of a frame."""
        mask = obj.isna()
        if self.is_frame(obj):
            mask = mask.all(axis=1)
        return mask.values

    def hash_rows(self, frame: Any) -> Any:
        """One uint64 hash per row, identical to the pandas engine's (computed on the host)."""
        return _cupy().asarray(_PANDAS.hash_rows(self.to_host(frame).reset_index(drop=True)))

    def merge_keep_order(
        self, left: Any, right: Any, left_on: Sequence[str], right_on: Sequence[str], how: str = "left"
    ) -> Any:
        """Join ``right`` onto ``left`` keeping the left rows' order and index labels (the
        index object itself where every left row comes back once, as on pandas: a frame
        built from the result's columns then takes them without reindexing, which cuDF
        refuses on repeated labels)."""
        cupy = _cupy()
        position = "__tabflow_left_row__"
        keyed = left.assign(**{position: cupy.arange(len(left), dtype="int64")})
        # cuDF joins do not keep row order: sort on the left position afterwards.
        out = keyed.merge(right, how=how, left_on=list(left_on), right_on=list(right_on), sort=False)
        out = out.sort_values(position)
        rows = out[position].values
        out = out.drop(columns=[position])
        out.index = left.index if how == "left" and len(out) == len(left) else left.index.take(rows)
        return out

    def sparse_rowwise_dot(self, left: Any, left_rows: Any, right: Any, right_rows: Any) -> Any:
        """Row-wise dot products of CSR matrices (on the host, as the pandas engine)."""
        cupy = _cupy()
        to_np = lambda a: cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else np.asarray(a)  # noqa: E731
        return cupy.asarray(_PANDAS.sparse_rowwise_dot(left, to_np(left_rows), right, to_np(right_rows)))

    def coo_matrix(self, data: Any, row: Any, col: Any, shape: tuple[int, int] | None = None) -> Any:
        """A ``cupyx.scipy.sparse.coo_matrix`` in GPU memory with ``data[i]`` at ``(row[i], col[i])``."""
        cupy = _cupy()
        sparse = importlib.import_module("cupyx.scipy.sparse")
        return sparse.coo_matrix((cupy.asarray(data), (cupy.asarray(row), cupy.asarray(col))), shape=shape)

    def global_random_state(self) -> Any:
        """CuPy's global ``RandomState``: the one ``cupy.random.seed`` seeds."""
        return _cupy().random.get_random_state()

    def read_table(self, path: str, kind: str | None = None, **kwargs: Any) -> Any:
        """A whole parquet file/directory or CSV file as one frame (small side tables)."""
        cudf = _cudf()
        kind = kind or ("csv" if str(path).lower().endswith((".csv", ".tsv", ".csv.gz")) else "parquet")
        if kind == "csv":
            return cudf.read_csv(path, **kwargs)
        if kind != "parquet":
            raise ValueError(f"cannot read {path!r} as {kind!r}; use 'parquet' or 'csv'")
        return cudf.read_parquet(path, **kwargs)

    # ------------------------------------------------------- stable hashing / parsing
    def hash_values(self, series: Any) -> Any:
        """Stable uint64 hash of each value, identical to the pandas engine's."""
        return _cupy().asarray(_PANDAS.hash_values(self.to_host(series)))

    def hex_to_int(self, series: Any) -> Any:
        """Hexadecimal strings to int64 with nulls (same parsing and errors as pandas)."""
        host = _PANDAS.hex_to_int(self.to_host(series))
        return self.from_host(host)

    # --------------------------------------------------------------------- I/O
    def read_parquet_parts(
        self, parts: Sequence[tuple[str, Sequence[int] | None]], columns: Sequence[str] | None, dtypes: Mapping[str, str],
        dictionary_strings: Sequence[str] = (),
    ) -> Any:
        """Some row groups of one or more parquet files, in order, as one frame with the
        planned dtypes.

        Each file is read and conformed on its own before the frames are joined: cuDF reads
        a list of files only when they store every column with one type, which the files of
        a dataset need not (int32 in one, int64 in another). cuDF decodes every string
        column on the GPU: ``dictionary_strings`` changes nothing.
        """
        cudf = _cudf()
        wanted = {c: dtypes[c] for c in (columns or dtypes)}
        frames = [
            self._conform(
                cudf.read_parquet(path, columns=list(columns) if columns else None, row_groups=None if row_groups is None else [list(row_groups)]),
                dtypes,
            )
            for path, row_groups in parts if row_groups is None or len(row_groups)
        ]
        if not frames:
            return self.empty_frame(wanted)
        return frames[0] if len(frames) == 1 else self.concat_rows(frames)

    def from_arrow(self, table: pa.Table, dtypes: Mapping[str, str] | None = None, dictionary_strings: Sequence[str] = ()) -> Any:
        """Arrow table to cuDF, casting each column to its planned canonical dtype (strings
        decoded, whatever ``dictionary_strings`` says)."""
        fields = []
        for field in table.schema:
            arrow_type = field.type
            if pa.types.is_dictionary(arrow_type):
                arrow_type = arrow_type.value_type
            if pa.types.is_large_list(arrow_type):
                arrow_type = pa.list_(arrow_type.value_type)
            if pa.types.is_large_string(arrow_type):
                arrow_type = pa.string()
            fields.append(pa.field(field.name, arrow_type))
        schema = pa.schema(fields)
        if schema != table.schema.remove_metadata():
            table = table.cast(schema)
        return self._conform(_cudf().DataFrame.from_arrow(table), dtypes or {})

    def _conform(self, frame: Any, dtypes: Mapping[str, str]) -> Any:
        from tabflow.backends.pandas_backend import _cast_if_exact

        casts = {}
        for name, canonical in dtypes.items():
            if name in frame.columns:
                wanted = self.engine_dtype(canonical)
                if frame[name].dtype != wanted:
                    casts[name] = wanted
        exact = {}
        for name, wanted in casts.items():
            column = frame[name]
            if _is_number_dtype(column.dtype) and _is_number_dtype(wanted):
                # As on the pandas engine: a value that does not fit the planned dtype is an
                # error, never wrapped (2**63 as int64) or truncated (3.5 as int64).
                cast = _cast_if_exact(column, wanted)
                if cast is column:
                    raise ValueError(
                        f"column {name!r} holds a value that dtype {dtypes[name]} cannot hold exactly; pass "
                        f"dtypes={{{name!r}: ...}} with a dtype that holds every file's values (such as 'float64' "
                        "or 'string'), or rewrite the files with one type for the column"
                    )
                exact[name] = cast
        for name, wanted in casts.items():
            if self.is_list_dtype(frame[name].dtype) and self.is_list_dtype(wanted):
                # cuDF refuses list casts (ColumnBase.astype): Arrow casts them, refusing a
                # value the planned element type cannot hold.
                try:
                    exact[name] = _cast_list(frame[name], wanted)
                except pa.ArrowInvalid as err:
                    raise ValueError(
                        f"column {name!r} holds a value that dtype {dtypes[name]} cannot hold ({err}); pass "
                        f"dtypes={{{name!r}: ...}} with a dtype that holds every file's values"
                    ) from None
        rest = {name: wanted for name, wanted in casts.items() if name not in exact}
        frame = frame.astype(rest) if rest else frame
        for name, cast in exact.items():
            frame[name] = cast
        return frame

    def to_arrow(self, frame: Any) -> pa.Table:
        return frame.to_arrow(preserve_index=False)

    def parquet_file_writer(self, path: str, row_group_size: int | None = None) -> Any:
        """cuDF's chunked parquet writer on ``path``: frames are encoded on the GPU (snappy,
        statistics per row group, no index), so written data never passes through pyarrow."""
        from cudf.io.parquet import ParquetWriter

        options: dict[str, Any] = {"index": False, "compression": "snappy"}
        if row_group_size is not None:
            options["row_group_size_rows"] = int(row_group_size)
        return _ParquetFile(ParquetWriter(path, **options))

    def read_csv_ddf(self, paths: list[str], blocksize: int | None, **kwargs: Any) -> Any:
        import dask_cudf

        return dask_cudf.read_csv(paths, blocksize=blocksize, **kwargs)

    def read_orc_part(self, path: str, stripes: Sequence[int] | None, columns: Sequence[str] | None, dtypes: Mapping[str, str]) -> Any:
        cudf = _cudf()
        frame = cudf.read_orc(path, columns=list(columns) if columns else None, stripes=[list(stripes)] if stripes else None)
        return self._conform(frame, dtypes)

    def from_frame_ddf(self, frame: Any, npartitions: int) -> Any:
        import dask.dataframe as dd
        import dask_cudf  # noqa: F401  (registers cuDF with dask's dispatch)

        return dd.from_pandas(frame, npartitions=max(1, npartitions), sort=False)

    def from_map_ddf(self, read: Any, pieces: Sequence[Any], meta: Any, label: str) -> Any:
        """A collection of one partition per piece, ``read(piece)`` (``dd.from_map``)."""
        import dask.dataframe as dd
        import dask_cudf  # noqa: F401  (registers cuDF with dask's dispatch)

        return dd.from_map(read, pieces, meta=meta, label=label, enforce_metadata=False)

    @staticmethod
    def total_memory() -> int:
        """Bytes of memory of the current GPU (what ``part_mem_fraction`` is a fraction of)."""
        free, total = _cupy().cuda.runtime.memGetInfo()
        return int(total)

    def memory_usage(self, frame: Any) -> int:
        return int(frame.memory_usage(deep=True, index=False).sum())


class _ParquetFile:
    """:class:`~tabflow.backends.protocol.ParquetFileWriter` over cuDF's chunked writer."""

    def __init__(self, writer: Any) -> None:
        self._writer = writer
        self._closed = False

    def write(self, frame: Any) -> None:
        self._writer.write_table(frame)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.close()


@lru_cache(maxsize=None)
def _string_dtype() -> Any:
    """The dtype cuDF gives strings read from Arrow (``object`` before pandas 3 builds of
    cuDF, pandas' ``str`` dtype since)."""
    return _cudf().Series.from_arrow(pa.array([], pa.string())).dtype


def _all_labelled_by(series: Sequence[Any], index: Any) -> bool:
    """Whether every series' labels are ``index``'s, row for row: the same object, or an
    equal one (compared once per distinct index object)."""
    equal: dict[int, bool] = {}
    for value in series:
        if value.index is index:
            continue
        key = id(value.index)
        if key not in equal:
            equal[key] = len(value.index) == len(index) and bool(value.index.equals(index))
        if not equal[key]:
            return False
    return True


def _cast_list(series: Any, target: Any) -> Any:
    """A list column (of any list dtype cuDF holds, pandas' Arrow lists included) cast to
    the cuDF list dtype ``target`` by Arrow on the host: cuDF's ``astype`` refuses list casts
    (``ColumnBase.astype``). The index and name are kept."""
    array = series.to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    arrow_type = dtype_names.arrow_type(BACKEND.canonical_dtype(target))
    cast = _cudf().Series.from_arrow(array.cast(arrow_type))
    cast.index = series.index
    cast.name = series.name
    return cast


def _is_pandas_extension(dtype: Any) -> bool:
    """A pandas extension dtype (Arrow, masked, pandas' strings) rather than cuDF's own
    dtypes (``ListDtype``, ``CategoricalDtype``, ...) or NumPy's."""
    import pandas as pd

    return isinstance(dtype, pd.api.extensions.ExtensionDtype) and type(dtype).__module__.startswith("pandas")


def _native_column(backend: CudfBackend, series: Any) -> Any:
    """``series`` in the cuDF dtype of its canonical dtype (itself when it has it)."""
    target = backend.engine_dtype(backend.canonical_dtype(series.dtype))
    if series.dtype == target:
        return series
    if backend.is_list_dtype(target):
        return _cast_list(series, target)
    return series.astype(target)


def _is_number_dtype(dtype: Any) -> bool:
    return isinstance(dtype, np.dtype) and dtype.kind in "iuf"


def _list_items(series: Any) -> Any:
    """The items of a list column, one level down (a list of lists gives lists), as the
    offsets count them. ``list.leaves`` goes to the innermost values, so nested lists are
    taken apart by Arrow on the host (they are rare; flat lists stay on the GPU)."""
    if not isinstance(series.dtype.element_type, _cudf().ListDtype):
        return series.list.leaves
    array = series.to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    offsets = np.asarray(array.offsets, dtype=np.int64)
    items = array.values.slice(offsets[0], offsets[-1] - offsets[0])
    if array.null_count:  # a null list may still own a range of items: drop it
        items = items.filter(pa.array(np.repeat(~np.asarray(array.is_null()), np.diff(offsets))))
    return _cudf().Series.from_arrow(items)


def _raise_on_nulls(series: Any) -> None:
    nulls = int(series.null_count)
    if nulls:
        raise ValueError(
            f"column {series.name!r} has {nulls} null value(s) in this partition; "
            "fill or encode them (e.g. with Categorify or FillMissing) before loading"
        )


BACKEND = CudfBackend()
