"""Synthetic datasets shaped like a description: NVTabular 23.08's ``nvtabular.tools.data_gen``.

A description names continuous, categorical and label columns with their ranges,
cardinalities, string sizes, list lengths and null percentages: as Python objects
(:class:`ContCol`, :class:`CatCol`, :class:`LabelCol`) or as the JSON document that
:class:`~tabflow.tools.dataset_inspector.DatasetInspector` writes (read with
:func:`_get_cols_from_schema`). :class:`DatasetGen` draws frames from it in memory
(:meth:`DatasetGen.create_df`) or writes parquet files of any size
(:meth:`DatasetGen.full_df_create`).

Generation is reproducible: give ``seed=`` (an int or a ``numpy.random.Generator``) to
:class:`DatasetGen`, and every value, string, list length and null comes from it.
Random numbers are drawn with NumPy on the host whichever engine is used, so one seed gives
the same data on pandas and on cuDF; the frames are moved to the GPU (through
:mod:`tabflow.backends`) when the cuDF engine is chosen.

Examples
--------
>>> from tabflow.tools import data_gen
>>> cols = data_gen._get_cols_from_schema({
...     "conts": {"price": {"dtype": "float32", "min_val": 1, "max_val": 10}},
...     "cats": {"item": {"dtype": None, "cardinality": 20, "min_entry_size": 2, "max_entry_size": 4}},
...     "labels": {"click": {"dtype": "int64", "cardinality": 2}},
... })
>>> gen = data_gen.DatasetGen(data_gen.UniformDistro(), seed=0, cpu=True)
>>> df = gen.create_df(1000, cols, entries=True)
>>> df.dtypes.astype(str).tolist()
['float32', 'str', 'int64']
>>> df["item"].nunique(), sorted(df["click"].unique().tolist())
(20, [0, 1])
>>> bool(df["price"].between(1, 10).all())
True
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from tabflow.backends import backend_for, default_engine, get_backend
from tabflow.io.writer import portable_schema
from tabflow.schema import dtypes as dtype_names
from tabflow.tools._columns import CatCol, Col, ColumnReps, ContCol, LabelCol, _get_cols_from_schema
from tabflow.tools._distributions import (
    DISTRO_TYPES,
    PowerLawDistro,
    UniformDistro,
    _InverseCdfDistro,
)
from tabflow.tools._files import write_file
from tabflow.tools._sampling import (
    adjust_to_mean,
    bounded_integers,
    ensure_extremes,
    fit_lengths_to_capacity,
    random_entries,
)

__all__ = [
    "DEFAULT_MAX_ENTRY_SIZE",
    "DEFAULT_MIN_ENTRY_SIZE",
    "DISTRO_TYPES",
    "CatCol",
    "Col",
    "ContCol",
    "DatasetGen",
    "LabelCol",
    "PowerLawDistro",
    "UniformDistro",
    # Private in name, public in use: NVTabular scripts read their JSON descriptions with it.
    "_get_cols_from_schema",
]

#: String lengths of categorical entries when a column gives none (NVTabular's defaults).
DEFAULT_MIN_ENTRY_SIZE = 1
DEFAULT_MAX_ENTRY_SIZE = 5

# Values are drawn and frames assembled on the host; only finished frames move to an engine.
_HOST = get_backend("pandas")
_Rep = TypeVar("_Rep", bound=Col)


def _dtype_name(dtype: Any, default: str) -> str:
    name = dtype_names.canonical_dtype(dtype)
    return default if dtype_names.is_unknown(name) else name


def _takes_entries(rep: CatCol) -> bool:
    """Whether ``entries=True`` turns this column's codes into strings: its dtype is not
    given, or is a string (or list of string) dtype."""
    name = dtype_names.canonical_dtype(rep.dtype)
    element = dtype_names.element_dtype(name) if dtype_names.is_list(name) else name
    return dtype_names.is_unknown(element) or dtype_names.is_string(element)


def _code_dtype(rep: CatCol) -> str:
    """The dtype of a categorical column's codes: its own integer dtype (a nullable one
    stays nullable), else int32."""
    name = _dtype_name(rep.dtype, "int32")
    element = dtype_names.element_dtype(name) if dtype_names.is_list(name) else name
    return element if dtype_names.is_integer(element) else "int32"


def _is_multi_hot(rep: Col) -> bool:
    return getattr(rep, "multi_min", None) is not None or getattr(rep, "multi_max", None) is not None


# -------------------------------------------------------------------------- generator
class DatasetGen:
    """Generate frames and parquet files that follow column descriptions.

    Parameters
    ----------
    distribution : UniformDistro, PowerLawDistro or an object with ``create_col``
        Where values come from, for columns that do not name their own ``distro``.
    gpu_frac : float
        Fraction of the engine's memory (GPU memory for cuDF, host memory for pandas) one
        generated file may take in :meth:`full_df_create`.
    seed : int or numpy.random.Generator, optional
        Fixes every value, string, list length and null drawn (including through the columns'
        own distributions). None: fresh randomness.
    cpu : bool, optional
        True: pandas frames; False: cuDF frames (an ImportError naming the packages to install
        when cuDF is missing); None: cuDF when a GPU and cuDF are available, as NVTabular did.

    Examples
    --------
    >>> from tabflow.tools.data_gen import CatCol, ContCol, DatasetGen, PowerLawDistro
    >>> gen = DatasetGen(PowerLawDistro(0.1), seed=7, cpu=True)
    >>> cols = {"conts": [ContCol("x", "float32", width=2)],
    ...         "cats": [CatCol("tags", None, 30, multi_min=1, multi_max=4, per_nan=10)]}
    >>> df = gen.create_df(500, cols)
    >>> list(df.columns), str(df["tags"].dtype)
    (['x', 'x_1', 'tags'], 'list<item: int32>[pyarrow]')
    >>> lengths = df["tags"].dropna().map(len)
    >>> int(lengths.min()), int(lengths.max())
    (1, 4)
    """

    def __init__(
        self, distribution: Any, gpu_frac: float = 0.8, seed: int | np.random.Generator | None = None, cpu: bool | None = None
    ) -> None:
        if distribution is None:
            raise ValueError("DatasetGen needs a distribution, e.g. UniformDistro() or PowerLawDistro(0.1)")
        if not 0 < gpu_frac <= 1:
            raise ValueError(f"gpu_frac is a fraction of memory in (0, 1], got {gpu_frac}")
        self.dist = distribution
        self.gpu_frac = gpu_frac
        self.seed = seed
        self.cpu = cpu
        #: "pandas" or "cudf": the engine of the frames made.
        self.engine = default_engine(cpu)
        #: The generator every random draw comes from.
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    # ------------------------------------------------------------------ sections
    def create_conts(self, size: int, conts_rep: Sequence[ContCol]) -> Any:
        """A frame of ``size`` rows with the continuous columns ``conts_rep``."""
        return self._to_engine(self._cont_columns(size, conts_rep))

    def create_cats(self, size: int, cats_rep: Sequence[CatCol], entries: bool = False) -> Any:
        """A frame of ``size`` rows with the categorical columns ``cats_rep``; ``entries=True``
        gives string values (a fresh vocabulary per call, see :meth:`full_df_create`)."""
        return self._to_engine(self._cat_columns(size, cats_rep, self._entry_vocabularies(cats_rep, entries)))

    def create_labels(self, size: int, labs_rep: Sequence[LabelCol]) -> Any:
        """A frame of ``size`` rows with the label columns ``labs_rep``."""
        return self._to_engine(self._label_columns(size, labs_rep))

    def create_df(self, size: int, cols: ColumnReps, entries: bool = False) -> Any:
        """A frame of ``size`` rows: the ``"conts"``, ``"cats"`` and ``"labels"`` of ``cols``
        (what :func:`_get_cols_from_schema` returns), in that order."""
        return self._frame(size, cols, self._entry_vocabularies(cols.get("cats") or [], entries))

    def full_df_create(self, size: int, cols: ColumnReps, entries: bool = False, output: str = ".") -> list[str]:
        """Write ``size`` generated rows as ``dataset_<i>.parquet`` files in ``output``.

        Each file holds as many rows as fit in ``gpu_frac`` of the engine's memory
        (:meth:`get_batch` of :meth:`get_row_size`), so datasets larger than memory can be
        made. With ``entries=True`` the string columns share one vocabulary across all files,
        written alongside as ``<column>_vocab_<j>.parquet`` (:meth:`create_vocab`'s layout).
        Each file is written under a temporary name and renamed when complete.

        Returns
        -------
        list of str
            The data files, in order.
        """
        output = os.fspath(output)
        os.makedirs(output, exist_ok=True)
        cats = list(cols.get("cats") or [])
        vocabularies = self._entry_vocabularies(cats, entries)
        batch = self.get_batch(self.get_row_size(self._frame(1, cols, vocabularies), cats))
        files = []
        for index, start in enumerate(range(0, size, batch)):
            path = os.path.join(output, f"dataset_{index}.parquet")
            _write_parquet(self._frame(min(batch, size - start), cols, vocabularies), path)
            files.append(path)
        if vocabularies:
            self._write_vocabularies(vocabularies, output)
        return files

    # --------------------------------------------------------------- vocabularies
    def create_cat_entries(
        self, cardinality: int, min_size: int = DEFAULT_MIN_ENTRY_SIZE, max_size: int = DEFAULT_MAX_ENTRY_SIZE, avg_size: float | None = None
    ) -> list[str]:
        """``cardinality + 1`` distinct random strings (entry ``i`` names code ``i``) of
        ``min_size`` to ``max_size`` letters and digits, averaging ``avg_size`` when given.
        Both sizes occur whenever there are two codes to hold them.

        Examples
        --------
        >>> from tabflow.tools.data_gen import DatasetGen, UniformDistro
        >>> entries = DatasetGen(UniformDistro(), seed=0, cpu=True).create_cat_entries(100, 2, 6)
        >>> len(entries), len(set(entries)), min(map(len, entries[1:])), max(map(len, entries[1:]))
        (101, 101, 2, 6)
        """
        return self._entries(cardinality, min_size, max_size, avg_size, first_code=1).tolist()

    def create_vocab(self, cats_rep: Sequence[CatCol], output: str) -> list[list[str]]:
        """Write a vocabulary per column of ``cats_rep`` as ``<name>_vocab_<j>.parquet`` files
        (columns ``<name>``, the strings, and ``idx``, the code each names), each file within
        the memory budget of :meth:`get_batch`. Returns the files of each column."""
        return self._write_vocabularies(self._vocabularies(cats_rep), os.fspath(output))

    def merge_vocab(
        self, dataset_file_paths: Sequence[str], vocab_file_paths: Sequence[Sequence[str]], cats_rep: Sequence[CatCol], output: str
    ) -> list[str]:
        """Replace the codes of ``cats_rep`` in each data file by their strings from the
        vocabulary files (as :meth:`create_vocab` wrote them, one list per column), writing
        ``FINAL_<i>.parquet`` files in ``output``. Returns those files."""
        backend = get_backend(self.engine)
        vocabularies = {rep.name: _read_vocabulary(paths, rep.name) for rep, paths in zip(cats_rep, vocab_file_paths)}
        written = []
        for index, path in enumerate(dataset_file_paths):
            frame = backend.read_table(os.fspath(path), kind="parquet")
            for name, entries in vocabularies.items():
                frame[name] = self._encoded(frame[name], entries)
            target = os.path.join(os.fspath(output), f"FINAL_{index}.parquet")
            _write_parquet(frame, target)
            written.append(target)
        return written

    def merge_cats_encoding(self, ser: Any, cats: Any) -> tuple[Any, Any]:
        """The strings ``cats[code]`` for the codes in ``ser``, and the list offsets when
        ``ser`` is a list column (None otherwise): ``(names, offsets)``. A null or a code
        without an entry gives a null.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.tools.data_gen import DatasetGen, UniformDistro
        >>> gen = DatasetGen(UniformDistro(), cpu=True)
        >>> names, offsets = gen.merge_cats_encoding(pd.Series([2, 0, None, 7]), ["a", "b", "c"])
        >>> names.tolist(), offsets
        (['c', 'a', nan, nan], None)
        """
        backend = backend_for(ser)
        offsets = None
        values = ser
        if backend.is_list_dtype(ser.dtype):
            offsets = backend.list_offsets(ser)
            values = backend.list_values_series(ser)
        codes = backend.to_host(backend.to_numpy(values, "float64", na_value=np.nan))
        names = _names_of_codes(codes, _host_entries(cats))
        return backend.from_host(_HOST.series(names, name=ser.name, dtype=_HOST.engine_dtype("string"))), offsets

    # ------------------------------------------------------------------ checking
    def verify_df(self, df_to_verify: Any, **value_range: float) -> tuple[list[float], list[float]]:
        """Kolmogorov-Smirnov test of each column against the generator's distribution:
        ``(statistics, pvalues)``. ``min_val``/``max_val`` give the range tested (default
        ``[0, 1]``, as NVTabular tested)."""
        statistics, pvalues = [], []
        for name in df_to_verify.columns:
            statistic, pvalue = self.dist.verify(df_to_verify[name], **value_range)
            statistics.append(statistic)
            pvalues.append(pvalue)
        return statistics, pvalues

    # ------------------------------------------------------------------- sizing
    def get_batch(self, row_size: int) -> int:
        """How many rows of ``row_size`` bytes fit in ``gpu_frac`` of the engine's memory
        (at least 1)."""
        memory = get_backend(self.engine).total_memory() * self.gpu_frac
        return max(1, int(memory // max(row_size, 1)))

    def get_row_size(self, row: Any, cats_rep: Sequence[CatCol] | None) -> int:
        """Bytes a row of ``row``'s columns takes at most: list columns counted at their
        ``multi_max`` length and strings at their ``max_entry_size`` (from ``cats_rep``)."""
        backend = backend_for(row)
        size = 0
        for name in row.columns:
            dtype = backend.canonical_dtype(row[name].dtype)
            rep = self.find_target_rep(name, cats_rep or [])
            count = 1
            if dtype_names.is_list(dtype):
                dtype = dtype_names.element_dtype(dtype)
                count = rep.multi_max if rep is not None and rep.multi_max else 1
            if dtype_names.is_string(dtype):
                item = (rep.max_entry_size if rep is not None and rep.max_entry_size else DEFAULT_MAX_ENTRY_SIZE) + 4  # + offset
            else:
                item = np.dtype(dtype_names.unmasked_dtype(dtype)).itemsize
            size += count * item
        return size

    def find_target_rep(self, name: str, cats_rep: Sequence[_Rep]) -> _Rep | None:
        """The description named ``name`` in ``cats_rep``, or None."""
        return next((rep for rep in cats_rep if rep.name == name), None)

    def permutate_index(self, ser: Any) -> Any:
        """``ser`` with its distinct values exchanged among themselves at random (a random
        one-to-one map of the values present onto themselves); nulls stay.

        Examples
        --------
        >>> import pandas as pd
        >>> from tabflow.tools.data_gen import DatasetGen, UniformDistro
        >>> out = DatasetGen(UniformDistro(), seed=1, cpu=True).permutate_index(pd.Series([5, 5, 9, 2], name="c"))
        >>> out.name, sorted(out.unique().tolist()), bool(out.iloc[0] == out.iloc[1])
        ('c', [2, 5, 9], True)
        """
        backend = backend_for(ser)
        host = backend.to_host(ser)
        present = host.notna().to_numpy()
        values = host.to_numpy()[present]
        shuffled = host.copy()
        shuffled[present] = self._permuted(values)
        return backend.from_host(shuffled)

    # --------------------------------------------------------------- internals
    def _permuted(self, values: np.ndarray) -> np.ndarray:
        distinct = np.unique(values)
        return self.rng.permutation(distinct)[np.searchsorted(distinct, values)]

    def _draw(self, rep: Col, size: int, min_val: float, max_val: float) -> np.ndarray:
        """float64 draws of the column's distribution (else the generator's)."""
        distribution = rep.distro or self.dist
        if isinstance(distribution, _InverseCdfDistro):
            return distribution.sample(size, min_val, max_val, rng=self.rng)
        # A distribution written for NVTabular draws with its own randomness.
        series = distribution.create_col(size, dtype=np.float64, min_val=min_val, max_val=max_val)
        return np.asarray(backend_for(series).to_host(series), dtype=np.float64)

    def _with_nulls(self, series: Any, per_nan: float | None, keep: np.ndarray | None = None) -> Any:
        """``series`` with each row null with probability ``per_nan`` percent (never rows in
        ``keep``); integers become nullable whenever nulls are asked for, so the dtype does not
        depend on the draw."""
        if not per_nan:
            return series
        if not 0 <= per_nan <= 100:
            raise ValueError(f"column {series.name!r}: per_nan is a percentage in [0, 100], got {per_nan}")
        dtype = _HOST.canonical_dtype(series.dtype)
        if dtype_names.nullable_dtype(dtype) != dtype:
            series = _HOST.astype(series, dtype_names.nullable_dtype(dtype))
        nulls = self.rng.random(len(series)) < per_nan / 100.0
        if keep is not None:
            nulls[keep] = False
        return series.mask(nulls)

    def _cont_columns(self, size: int, reps: Sequence[ContCol]) -> dict[str, Any]:
        columns = {}
        for rep in reps:
            dtype = _dtype_name(rep.dtype, "float64")
            if rep.min_val is None or rep.max_val is None:
                raise ValueError(f"column {rep.name!r} needs min_val and max_val, got {rep.min_val} and {rep.max_val}")
            for index in range(rep.width):
                if rep.max_val == rep.min_val:
                    values = np.full(size, float(rep.min_val))  # a constant column, as described
                else:
                    values = self._draw(rep, size, rep.min_val, rep.max_val)
                if not dtype_names.is_float(dtype):
                    values = np.rint(values)  # integers nearest to the draws stay within the range
                name = rep.name if index == 0 else f"{rep.name}_{index}"
                series = _HOST.astype(_HOST.series(values, name=name), dtype)
                columns[name] = self._with_nulls(series, rep.per_nan)
        return columns

    def _cat_columns(self, size: int, reps: Sequence[CatCol], vocabularies: Mapping[str, np.ndarray]) -> dict[str, Any]:
        return {rep.name: self._cat_series(size, rep, vocabularies.get(rep.name)) for rep in reps}

    def _cat_series(self, size: int, rep: CatCol, vocabulary: np.ndarray | None) -> Any:
        if rep.min_val < 0:
            raise ValueError(f"column {rep.name!r}: codes are ids of at least 0; min_val is {rep.min_val}")
        first_code = math.floor(rep.min_val) + 1
        if not rep.cardinality or rep.cardinality < first_code:
            raise ValueError(f"column {rep.name!r}: cardinality {rep.cardinality} leaves no code above min_val {rep.min_val}")
        lengths = kept = None
        count = size
        if _is_multi_hot(rep):
            low = rep.multi_min if rep.multi_min is not None else 1
            if rep.multi_max is None or not 0 <= low <= rep.multi_max:
                raise ValueError(f"column {rep.name!r}: list lengths need 0 <= multi_min <= multi_max, got {low} and {rep.multi_max}")
            draw = functools.partial(self._draw, rep)
            lengths = bounded_integers(self.rng, size, low, rep.multi_max, rep.multi_avg, draw)
            kept = ensure_extremes(self.rng, lengths, low, rep.multi_max)
            count = int(lengths.sum())
        codes = np.clip(np.ceil(self._draw(rep, count, rep.min_val, rep.cardinality)), first_code, rep.cardinality).astype(np.int64)
        if rep.permutate_index:
            codes = self._permuted(codes)
        if vocabulary is not None:
            values = _HOST.series(vocabulary[codes], dtype=_HOST.engine_dtype("string"))
        else:
            values = _HOST.astype(_HOST.series(codes), _code_dtype(rep))
        if lengths is not None:
            values = _HOST.list_from_values_offsets(values, np.concatenate([[0], np.cumsum(lengths)]))
        values.name = rep.name
        return self._with_nulls(values, rep.per_nan, kept)

    def _label_columns(self, size: int, reps: Sequence[LabelCol]) -> dict[str, Any]:
        columns = {}
        for rep in reps:
            if not rep.cardinality or rep.cardinality < 1:
                raise ValueError(f"label {rep.name!r} needs a cardinality of at least 1 (the number of classes), got {rep.cardinality}")
            classes = np.clip(np.floor(self._draw(rep, size, 0, rep.cardinality)), 0, rep.cardinality - 1)
            series = _HOST.astype(_HOST.series(classes, name=rep.name), _dtype_name(rep.dtype, "int64"))
            columns[rep.name] = self._with_nulls(series, rep.per_nan)
        return columns

    def _frame(self, size: int, cols: ColumnReps, vocabularies: Mapping[str, np.ndarray]) -> Any:
        parts = [
            self._cont_columns(size, cols.get("conts") or []),
            self._cat_columns(size, cols.get("cats") or [], vocabularies),
            self._label_columns(size, cols.get("labels") or []),
        ]
        columns: dict[str, Any] = {}
        for part in parts:
            repeated = sorted(set(columns) & set(part))
            if repeated:
                raise ValueError(f"columns described twice: {repeated}")
            columns.update(part)
        return self._to_engine(columns)

    def _to_engine(self, columns: Mapping[str, Any]) -> Any:
        # Copies only columns on read-only memory (Arrow buffers): users edit these frames.
        return get_backend(self.engine).from_host(_HOST.writable(_HOST.frame_from_dict(columns)))

    def _entries(self, cardinality: int, min_size: int | None, max_size: int | None, avg_size: float | None, first_code: int) -> np.ndarray:
        low = DEFAULT_MIN_ENTRY_SIZE if min_size is None else int(min_size)
        high = DEFAULT_MAX_ENTRY_SIZE if max_size is None else int(max_size)
        if not 0 <= low <= high:
            raise ValueError(f"entry sizes need 0 <= min_entry_size <= max_entry_size, got {low} and {high}")
        lengths = bounded_integers(self.rng, cardinality + 1, low, high, avg_size)
        # Codes drawn start at first_code: the sizes described must occur among their entries.
        start = min(first_code, cardinality)
        held = ensure_extremes(self.rng, lengths, low, high, start=start)
        if avg_size is not None and low <= avg_size <= high:
            adjust_to_mean(self.rng, lengths[start:], low, high, avg_size, keep=held - start)
        return random_entries(self.rng, fit_lengths_to_capacity(lengths, low, high))

    def _vocabularies(self, reps: Sequence[CatCol]) -> dict[str, np.ndarray]:
        return {
            rep.name: self._entries(rep.cardinality, rep.min_entry_size, rep.max_entry_size, rep.avg_entry_size, math.floor(rep.min_val) + 1)
            for rep in reps
        }

    def _entry_vocabularies(self, reps: Sequence[CatCol], entries: bool) -> dict[str, np.ndarray]:
        """The vocabularies ``entries=True`` asks for: one per column that takes strings."""
        return self._vocabularies([rep for rep in reps if _takes_entries(rep)]) if entries else {}

    def _write_vocabularies(self, vocabularies: Mapping[str, np.ndarray], output: str) -> list[list[str]]:
        written = []
        for name, entries in vocabularies.items():
            longest = max((len(entry) for entry in entries), default=1)
            batch = self.get_batch(longest + 4 + 8)  # string bytes, its offset, the idx
            paths = []
            for part, start in enumerate(range(0, len(entries), batch)):
                chunk = entries[start : start + batch]
                frame = _HOST.frame_from_dict({
                    name: _HOST.series(chunk, dtype=_HOST.engine_dtype("string")),
                    "idx": np.arange(start, start + len(chunk), dtype=np.int64),
                })
                paths.append(os.path.join(output, f"{name}_vocab_{part}.parquet"))
                _write_parquet(frame, paths[-1])
            written.append(paths)
        return written

    def _encoded(self, series: Any, entries: np.ndarray) -> Any:
        """A code column (or list column of codes) as its strings, null lists kept."""
        names, offsets = self.merge_cats_encoding(series, entries)
        if offsets is None:
            names.index = series.index
            return names
        backend = backend_for(series)
        lists = backend.list_from_values_offsets(names, offsets, index=series.index, name=series.name)
        return lists.mask(backend.null_mask(series))


def _host_entries(cats: Any) -> np.ndarray:
    if hasattr(cats, "dtype") and not isinstance(cats, np.ndarray):
        cats = backend_for(cats).to_host(cats).to_numpy(dtype=object, na_value=None)
    return np.asarray(list(cats), dtype=object)


def _names_of_codes(codes: np.ndarray, entries: np.ndarray) -> np.ndarray:
    """``entries[code]`` per code (float64, NaN for null); None where there is no entry."""
    valid = ~np.isnan(codes) & (codes >= 0) & (codes < len(entries))
    names = np.full(len(codes), None, dtype=object)
    names[valid] = entries[codes[valid].astype(np.int64)]
    return names


def _read_vocabulary(paths: Sequence[str], name: str) -> np.ndarray:
    """The strings of :meth:`DatasetGen.create_vocab`'s files, placed at their ``idx``."""
    table = _HOST.concat_rows([_HOST.read_table(os.fspath(path), kind="parquet") for path in paths])
    positions = table["idx"].to_numpy(dtype=np.int64)
    entries = np.full(int(positions.max()) + 1 if len(positions) else 0, None, dtype=object)
    entries[positions] = table[name].to_numpy(dtype=object, na_value=None)
    return entries


def _write_parquet(frame: Any, path: str) -> None:
    import pyarrow.parquet as pq

    # As Dataset.to_parquet writes: plain Arrow types every reader takes, and no pandas
    # metadata (pandas cannot read back its own note on Arrow list dtypes).
    table = backend_for(frame).to_arrow(frame).replace_schema_metadata(None)
    table = table.cast(portable_schema(table.schema))
    write_file(path, lambda target: pq.write_table(table, target))
