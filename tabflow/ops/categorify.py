"""Categorify: encode categorical values as contiguous integer indices for embeddings."""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import tempfile
import threading
import warnings
import weakref
from typing import Any, Callable, Mapping

import dask.utils
import numpy as np

from tabflow.backends import backend_for, get_backend
from tabflow.backends.protocol import Frame
from tabflow.graph.executor import combining_last
from tabflow.graph.kernels import Kernel
from tabflow.graph.operator import keeping_update_state
from tabflow.graph.selector import ColumnSelector
from tabflow.ops import _vocab, _vocab_files, _vocab_kernels
from tabflow.ops._schema_hooks import SchemaFromColumns
from tabflow.ops.embedding_sizes import (
    get_embedding_sizes,  # also importable from here, as in NVTabular
)
from tabflow.ops.operator import NotFittedError, NotUpdatableError, StatOperator
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["Categorify", "get_embedding_sizes"]

_ENCODE_TYPES = ("joint", "combo")


# Key in the op's derived-table cache of the vocabulary files written for `categories`
# when no out_path is given.
_PRIVATE_CATEGORIES = "categories files"
# In the same cache, (vocabulary, _DECODING) keys the vocabularies kept for decode; the other
# entries are (vocabulary, engine name).
_DECODING = "decode (host)"
# In the same cache, the vocabularies its other entries were built from: (Vocabularies, version).
_BUILT_FROM = "built from"
# Guards turning a plain ``vocabs_`` dict into Vocabularies (see Categorify._vocabularies) and
# starting the derived-table cache afresh (see Categorify._derived_from_vocabularies).
_VOCABULARIES_LOCK = threading.Lock()


class Categorify(SchemaFromColumns, StatOperator):
    """Map each categorical value to an integer index, most frequent values first.

    Index convention: ``0`` is never produced (padding), ``1`` is null, ``2`` is
    out-of-vocabulary (or ``2 .. 1 + num_buckets`` when ``num_buckets`` is set), and the
    vocabulary follows, sorted by descending count with ties broken by ascending value, so
    the result does not depend on how the data is partitioned. Values seen fewer than
    ``freq_threshold`` times, beyond ``max_size``, or never seen while fitting are OOV.
    Numbers match by value, not dtype: the float ``30.0`` gets the code of the integer
    ``30``, while a non-integral float such as ``30.5`` is OOV for a vocabulary of integers
    (and hashes as itself into the ``num_buckets`` OOV indices), whatever else is in the batch.
    List (multi-hot) columns encode each element and stay lists; a null list is empty.

    Parameters
    ----------
    freq_threshold : int or dict, default 0
        Minimum count for a value to get its own index (per column with a dict).
    out_path : str or path, optional
        Local directory under which fitting writes each vocabulary as parquet, in
        NVTabular 23.08's layout: ``categories/unique.<name>.parquet`` (the values, index =
        encoded index) and ``categories/meta.<name>.parquet`` (the index ranges); see
        Notes. Nothing is written when it is None (NVTabular wrote to ``"./"`` then). The
        files are for reading only: the workflow keeps its vocabularies in ``vocabs_`` and
        saves them itself.
    dtype : str, optional
        Integer dtype of the output (default ``"int64"``).
    encode_type : {"joint", "combo"}, default "joint"
        How a column group such as ``[["a", "b"]]`` is encoded. ``"joint"``: the group's
        columns share one vocabulary and keep their names. ``"combo"``: each distinct
        combination of values is one category, in a column named ``"a_b"``; a row whose
        values are all null is null.
    name_sep : str, default "_"
        Separator of group names (``"a_b"``).
    num_buckets : int or dict, optional
        Number of OOV indices. OOV values are spread over them by tabflow's stable hash
        (xxHash64, see :mod:`tabflow.backends._hashing`): OOV index ``2 + hash % num_buckets``,
        the bucket :class:`~tabflow.ops.HashBucket` gives, on every machine and engine.
    vocabs : dict, optional
        ``{column or group name: values}``: use these values, in this order, instead of
        fitting. ``freq_threshold`` and ``max_size`` do not apply to them.
    max_size : int or dict, default 0
        Total embedding table size, padding, null and OOV rows included: at most
        ``max_size - 2 - num_buckets`` values get their own index. 0 means no limit.
    single_table : bool, default False
        Lay the vocabularies of all the op's columns out one after another in one index
        space, for models with a single embedding table shared by every feature (as
        NVTabular's ``single_table``): the first vocabulary keeps the convention above, and
        each next one's block (its null index, its OOV indices, its values) starts after the
        previous block's last index. Index 0 (padding) is shared; every column's
        ``cardinality`` is then the size of the whole table, and ``domain["name"]`` is
        ``"single_table"``.
    cardinality_memory_limit : int or str, optional
        Bytes (``"2GB"`` style strings accepted) above which the value counts of one
        vocabulary, measured in host memory once merged, raise a ``UserWarning``: they are
        held in a single process, so a larger table risks running out of memory. Default:
        12.5% of the machine's memory, as in NVTabular. Only a warning; nothing is spilled.
    split_out : int or dict, default 1
        Number of files each vocabulary is written in under ``out_path``: above 1,
        ``unique.<name>.parquet`` is a directory of up to that many ``part.N.parquet``
        files of consecutive rows, as in NVTabular. Fitting itself is not split: the tree
        merge of one vocabulary's counts ends in one table, in one process.
    split_every : int or dict, default 8
        Fan-in of the merge of per-partition value counts: at most this many count
        tables are summed in one group-by (2 gives pairwise merges, the least memory per
        step). The workflow folds the partitions' counts into one running total, each step
        handing over at most 8 tables (the total and the next partitions' counts), so values
        above 8 act as 8.
    start_index : int, default 0
        Accepted for compatibility; the convention above is fixed, so only 0 is valid (anything
        else is a ValueError when the workflow is fitted, as NVTabular 23.08 rejected it).
    na_sentinel : optional
        Must be None: nulls always get index 1 (NVTabular 23.08 rejected the argument too).

    Raises
    ------
    ValueError
        When the workflow is fitted (or its schema resolved), for the settings NVTabular
        23.08 refused when the op was built: ``start_index`` other than 0, ``na_sentinel``,
        ``freq_threshold`` together with ``max_size``, ``num_buckets`` of 0 (or not an
        integer >= 1), ``encode_type`` other than "joint" or "combo", ``search_sorted=True``
        with ``freq_threshold``, and ``vocabs`` with ``encode_type="combo"``.

    Attributes
    ----------
    vocabs_ : dict of str to DataFrame
        Per vocabulary (a column, or ``"a_b"`` for a group): the values (``value``, or
        ``value_0, value_1, ...`` for a combo) and their ``count``, in index order; saved as
        parquet with the workflow. A :class:`~tabflow.ops._vocab.Vocabularies` (a dict): on
        the pandas engine a vocabulary of short strings (at most eight bytes, as ids) is held
        as its lookup table alone and its DataFrame rebuilt, equal, when read. A vocabulary
        set (``op.vocabs_["c"] = frame``, ``update``, a whole new dict) is the one the next
        transform, decode and save use; one removed is an error naming it.
    oov_slots_, null_counts_ : dict of str to int
        OOV indices and nulls seen while fitting, per vocabulary.
    offsets_ : dict of str to int
        With ``single_table``, how far each vocabulary's block is shifted from the usual
        layout (0 for the first); empty otherwise.
    encodings_ : dict of str to str
        Vocabulary of each output column.
    oov_counts_ : dict of str to int
        Non-null values sent to OOV while fitting (by ``freq_threshold`` or ``max_size``), per
        counted vocabulary.
    rare_counts_ : dict of str to DataFrame
        Kept by a workflow started with :meth:`~tabflow.Workflow.partial_fit`, per vocabulary
        with a ``freq_threshold``: the values still below it and their counts, which the next
        update adds to.

    Notes
    -----
    **Updates** (:meth:`tabflow.Workflow.partial_fit`): every value already known keeps its
    index, and new values get the indices after the existing ones, in the order a fit gives
    them, so the first rows of an embedding table stay valid. ``freq_threshold`` applies to
    the counts summed over the fit and every update, ``max_size`` caps the total (values past
    it go to the OOV indices), and the ``out_path`` files are written again. With
    ``single_table`` an update is refused (a grown vocabulary would move the later ones).

    Each output column's schema carries ``cardinality`` (embedding rows: vocabulary + OOV
    indices + 2), ``embedding_sizes`` (``{"cardinality", "dimension"}``, read by
    :func:`~tabflow.ops.get_embedding_sizes`), ``domain``, ``num_buckets``,
    ``freq_threshold``, ``max_size`` and ``start_index``, and the CATEGORICAL tag (plus LIST
    for list columns); with ``out_path``, also ``cat_path``, the unique-values file.

    Files under ``out_path`` (written at fit time, all under temporary names first and then
    renamed, so an error never leaves a partial file): per vocabulary ``<name>`` (the
    column, or ``"a_b"`` for a joint or combo group ``["a", "b"]``),

    - ``categories/unique.<name>.parquet``: one row per vocabulary value and no rows for
      padding, null or OOV; read with ``pd.read_parquet``, its index is the encoded index
      (starting at ``2 + num_buckets``, or 3), so ``.loc[code]`` maps a code back to its
      value. Columns: ``<name>`` (a combo group has one column per input column instead)
      and ``<name>_size``, the count seen while fitting (absent for user ``vocabs``).
    - ``categories/meta.<name>.parquet``: rows ``kind`` = pad, null, oov, unique with
      ``offset`` (first index), ``num_indices`` and, for fitted vocabularies,
      ``num_observed`` (rows seen while fitting in each range).

    A column or group with no non-null value while fitting gets an empty unique file
    (NVTabular wrote a single null row there, which no code ever pointed to).

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> df = pd.DataFrame({"c": ["b", "a", "b", None, "z"]})
    >>> cats = ["c"] >> ops.Categorify(freq_threshold=1)
    >>> wf = nvt.Workflow(cats)
    >>> wf.fit_transform(df)["c"].tolist()
    [3, 4, 3, 1, 5]
    >>> wf.transform(pd.DataFrame({"c": ["a", "unseen"]}))["c"].tolist()
    [4, 2]
    >>> cats.op.cardinality("c"), wf.output_schema["c"].properties["embedding_sizes"]
    (6, {'cardinality': 6, 'dimension': 16})
    >>> cats.op.decode(pd.Series([3, 1, 2]), "c").tolist()
    ['b', nan, nan]

    With ``out_path`` the vocabulary is also written as NVTabular wrote it:

    >>> import os, tempfile
    >>> out = tempfile.mkdtemp()
    >>> wf = nvt.Workflow(["c"] >> ops.Categorify(out_path=out))
    >>> wf.fit_transform(df)["c"].tolist()
    [3, 4, 3, 1, 5]
    >>> sorted(os.listdir(os.path.join(out, "categories")))
    ['meta.c.parquet', 'unique.c.parquet']
    >>> pd.read_parquet(os.path.join(out, "categories", "unique.c.parquet"))
       c  c_size
    3  b       2
    4  a       1
    5  z       1
    >>> pd.read_parquet(os.path.join(out, "categories", "meta.c.parquet"))
         kind  offset  num_indices  num_observed
    0     pad       0            1             0
    1    null       1            1             1
    2     oov       2            1             0
    3  unique       3            3             4
    """

    row_wise = True

    _derived_attributes = ("_tables",)
    vocabs_: Mapping[str, Any]  # set by fitting (a Vocabularies; see _vocabularies)

    def __init__(
        self,
        freq_threshold: int | Mapping[str, int] = 0,
        out_path: str | os.PathLike | None = None,
        cat_cache: Any = "host",
        dtype: Any = None,
        on_host: bool = True,
        encode_type: str = "joint",
        name_sep: str = "_",
        search_sorted: bool = False,
        num_buckets: int | Mapping[str, int] | None = None,
        vocabs: Mapping[str, Any] | None = None,
        max_size: int | Mapping[str, int] = 0,
        single_table: bool = False,
        cardinality_memory_limit: int | str | None = None,
        tree_width: Any = None,
        split_out: int | Mapping[str, int] = 1,
        split_every: int | Mapping[str, int] = 8,
        start_index: int = 0,
        na_sentinel: Any = None,
    ) -> None:
        # The positional order is NVTabular 23.08's; start_index and na_sentinel, which it
        # took through **kwargs only to reject them, come last.
        self.freq_threshold = freq_threshold
        self.out_path = out_path
        self.cat_cache = cat_cache
        self.dtype = dtype
        self.on_host = on_host
        self.encode_type = encode_type
        self.name_sep = name_sep
        self.search_sorted = search_sorted
        self.num_buckets = num_buckets
        self.vocabs = vocabs
        self.max_size = max_size
        self.single_table = single_table
        self.cardinality_memory_limit = cardinality_memory_limit
        self.tree_width = tree_width
        self.split_out = split_out
        self.split_every = split_every
        self.start_index = start_index
        self.na_sentinel = na_sentinel

    def _vocabularies(self) -> _vocab.Vocabularies:
        # Fitting sets a Vocabularies; a load or a user may set a plain dict, made one on first
        # use (once: threads encoding side by side must share it).
        vocabs = self.vocabs_
        if not isinstance(vocabs, _vocab.Vocabularies):
            with _VOCABULARIES_LOCK:
                vocabs = self.vocabs_
                if not isinstance(vocabs, _vocab.Vocabularies):
                    vocabs = _vocab.Vocabularies(vocabs)
                    # The same vocabularies in another form: set without forgetting what
                    # was derived from them, as setting fitted state would.
                    object.__setattr__(self, "vocabs_", vocabs)
        return vocabs

    def state_version(self) -> Any:
        # The vocabularies change in place too (``op.vocabs_["c"] = frame``).
        vocabs = self.__dict__.get("vocabs_")
        return super().state_version(), vocabs.version if isinstance(vocabs, _vocab.Vocabularies) else None

    def _vocabularies_with(self, key: str) -> _vocab.Vocabularies:
        """The vocabularies, which hold ``key``, or an error saying it is missing and what to do."""
        vocabs = self._vocabularies()
        if key not in vocabs:
            raise NotFittedError(
                f"Categorify has no vocabulary for {key!r} (vocabs_ holds {sorted(vocabs)}): fit the workflow "
                f"again, or set op.vocabs_[{key!r}] to a DataFrame with a 'value' column"
            )
        return vocabs

    def _derived_from_vocabularies(self, key: Any, build: Callable[[], Any]) -> Any:
        """Entry ``key`` of the op's derived tables (lookup tables, vocabularies kept for
        decode, the files of ``categories``), made by ``build()`` on first use from the
        vocabularies as they are now. Entries built before a vocabulary was set or removed
        (``op.vocabs_["c"] = frame``, ``del op.vocabs_["c"]``) are dropped first."""
        vocabs = self._vocabularies()
        if not _built_from(self.__dict__.get("_tables"), vocabs):
            with _VOCABULARIES_LOCK:
                if not _built_from(self.__dict__.get("_tables"), vocabs):
                    self._tables: dict[Any, Any] = {_BUILT_FROM: (vocabs, vocabs.version)}
        return self._derived("_tables", key, build)

    # ----------------------------------------------------------------- helpers
    def _units(self, col_selector: ColumnSelector) -> list[_vocab.Unit]:
        return _vocab.encoding_units(col_selector.grouped_names, self.encode_type, self.name_sep)

    def dictionary_string_columns(self, col_selector: ColumnSelector) -> list[str]:
        # Each column encoded on its own is counted and looked up through the backend, which
        # reads dictionary indices; joint groups and combos build frames of their columns. A
        # subclass that reads the values itself gets them as strings.
        if type(self).transform is not Categorify.transform or type(self).fit_partition is not Categorify.fit_partition:
            return []
        return [unit.inputs[0] for unit in self._units(col_selector) if not unit.combo and len(unit.inputs) == 1]

    def _n_oov(self, unit: _vocab.Unit) -> int:
        return int(_vocab.per_column(self.num_buckets, unit) or 1)

    def _user_vocab(self, unit: _vocab.Unit) -> Any:
        return _vocab.per_column(self.vocabs, unit) if self.vocabs else None

    def _unit_of(self, column: str) -> _vocab.Unit:
        self.check_is_fitted()
        if column not in self.encodings_:
            raise KeyError(f"Categorify did not encode a column {column!r}; it encoded {sorted(self.encodings_)}")
        key = self.encodings_[column]
        combo = key in self.combo_inputs_
        return _vocab.Unit(key, tuple(self.combo_inputs_[key]) if combo else (column,), (column,), combo=combo)

    def cardinality(self, column: str) -> int:
        """Embedding rows an output column needs: vocabulary + OOV indices + 2 (pad, null);
        with ``single_table``, the rows of the whole shared table."""
        unit = self._unit_of(column)
        if self.single_table:
            return _table_size(self._vocabularies(), self.oov_slots_)
        return self._vocabularies().size(unit.key) + self.oov_slots_[unit.key] + 2

    def get_embedding_sizes(self, columns: Any) -> dict[str, tuple[int, int]]:
        """``{column: (cardinality, embedding dimension)}`` of fitted columns, as NVTabular's
        ``Categorify.get_embedding_sizes``; a name may be an output column or a vocabulary
        (``"a_b"`` for a group).

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> op = ops.Categorify()
        >>> _ = nvt.Workflow(["c"] >> op).fit(pd.DataFrame({"c": ["a", "b", "c", None]}))
        >>> op.get_embedding_sizes(["c"])
        {'c': (6, 16)}
        """
        self.check_is_fitted()
        names = [columns] if isinstance(columns, str) else list(columns)
        sizes = {}
        for name in names:
            column = name if name in self.encodings_ else next((c for c, k in self.encodings_.items() if k == name), None)
            if column is None:
                raise KeyError(f"Categorify did not encode {name!r}; it encoded {sorted(self.encodings_)}")
            cardinality = self.cardinality(column)
            sizes[name] = (cardinality, _vocab.embedding_dimension(cardinality))
        return sizes

    @property
    def categories(self) -> dict[str, str]:
        """NVTabular's fitted ``categories``: per vocabulary (a column, or ``"a_b"`` for a
        group), the path of its ``unique.<name>.parquet`` file, which NVTabular scripts read
        with ``pd.read_parquet``. Empty before fitting, as NVTabular's was.

        With ``out_path`` the files are the ones written there while fitting. Without it
        nothing is written where NVTabular wrote (``./categories``): the files are written on
        first use under a private temporary directory, once per fit, and removed with the op
        (or when Python exits).

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> op = ops.Categorify()
        >>> _ = nvt.Workflow(["c"] >> op).fit(pd.DataFrame({"c": ["b", "a", "b"]}))
        >>> unique = pd.read_parquet(op.categories["c"])
        >>> unique["c"].tolist(), unique.index.tolist()
        (['b', 'a'], [3, 4])
        """
        if not self.fitted:
            return {}
        if self.out_path is not None:
            return {key: _vocab_files.unique_path(self.out_path, key) for key in self.vocabs_}

        def write() -> dict[str, str]:
            directory = tempfile.mkdtemp(prefix="tabflow-categories-")
            weakref.finalize(self, shutil.rmtree, directory, True)
            tables = {}
            for key, vocab in self.vocabs_.items():
                combo = key in self.combo_inputs_
                unit = _vocab.Unit(key, tuple(self.combo_inputs_[key]) if combo else (key,), (), combo=combo)
                host = backend_for(vocab).to_host(vocab)
                # User-given vocabularies have no counts (NA, or no column when set by hand).
                counted = _vocab.COUNT in host.columns and bool(host[_vocab.COUNT].notna().all())
                n_oov, shift = self.oov_slots_[key], self._shift(key)
                unique = _vocab_files.unique_table(unit, host, n_oov, counted, shift)
                # How many rows fell in each range was not kept after fitting.
                tables[key] = (unique, _vocab_files.meta_table(n_oov, len(unique), None, shift=shift))
            return _vocab_files.write_vocabularies(directory, tables, {})

        return dict(self._derived_from_vocabularies(_PRIVATE_CATEGORIES, write))

    def _shift(self, key: str) -> int:
        # Workflows saved before single_table existed have no offsets_.
        return int(getattr(self, "offsets_", {}).get(key, 0))

    def decode(self, data: Any, column: str, oov_value: Any = None) -> Any:
        """Map indices of output ``column`` back to values (``data``: a series or a frame).

        Null and padding decode to null, OOV indices to ``oov_value``; a combo column decodes
        to a frame with one column per input column; a list column to a list column, in the
        form it was given (on pandas, an Arrow list column or one NumPy array per row, as
        ``Dataset.to_ddf`` gives it).
        """
        unit = self._unit_of(column)
        series = data[column] if backend_for(data).is_frame(data) else data
        backend = backend_for(series)
        # A vocabulary held as its table is rebuilt to decode (a tenth of a second for 4M
        # values): the op keeps the rebuilt one for the decodes that follow.
        vocab = self._derived_from_vocabularies((unit.key, _DECODING), lambda: self._vocabularies_with(unit.key)[unit.key])
        offset = 2 + self.oov_slots_[unit.key]
        shift = self._shift(unit.key)
        given = series
        series = backend.with_list_columns(backend.frame_from_dict({column: series}))[column]
        if backend.is_list_dtype(series.dtype):
            # Decoding happens on the host, where the vocabulary is: the column goes there whole.
            host, on_host = get_backend("pandas"), backend.to_host(series)
            codes = host.to_numpy(host.list_values_series(on_host), dtype="int64")
            values = _vocab.decode_codes(_unshift(codes, shift), vocab, offset, oov_value)["value"]
            out = backend.from_host(host.list_from_values_offsets(values, host.list_offsets(on_host), index=on_host.index, name=column))
            if backend.is_list_dtype(given.dtype):
                return out
            return backend.lists_as_arrays(backend.frame_from_dict({column: out}))[column]
        codes = _unshift(backend.to_numpy(series, dtype="int64"), shift)
        decoded = _vocab.decode_codes(codes, vocab, offset, oov_value, index=backend.to_host(series.index))
        if unit.combo:
            decoded.columns = list(unit.inputs)
            return backend.from_host(decoded)
        return backend.from_host(decoded["value"].rename(column))

    # ------------------------------------------------------------------ checks
    def validate_input(self, input_schema: Schema, col_selector: ColumnSelector) -> None:
        if self.encode_type not in _ENCODE_TYPES:
            raise ValueError(f"encode_type must be one of {_ENCODE_TYPES}, got {self.encode_type!r}")
        if self.start_index not in (0, None):
            raise ValueError(
                "start_index is not supported (NVTabular 23.08 rejected it too): index 0 is always padding, "
                "1 null and 2 the first OOV index"
            )
        if self.na_sentinel is not None:
            raise ValueError(
                "na_sentinel is not supported (NVTabular 23.08 rejected it too): nulls always get index 1, "
                "and OOV values index 2 (or the num_buckets indices after it)"
            )
        if self.freq_threshold and self.max_size:
            raise ValueError("freq_threshold and max_size cannot be used together: choose one way to limit the vocabulary")
        if self.search_sorted and self.freq_threshold:
            raise ValueError("search_sorted=True cannot be used with freq_threshold (as in NVTabular 23.08)")
        for name, value in (("num_buckets", self.num_buckets), ("max_size", self.max_size)):
            if not (value is None or isinstance(value, (Mapping, int, np.integer))) or isinstance(value, bool):
                raise ValueError(f"{name} must be an int or a dict of them, got {type(value).__name__}: {value!r:.60}")
        if self.dtype is not None and np.dtype(self.dtype).kind not in "iu":
            raise TypeError(f"dtype must be an integer dtype, got {self.dtype!r}")
        if self.vocabs is not None and self.encode_type == "combo":
            raise ValueError("vocabs cannot be combined with encode_type='combo'")
        for unit in self._units(col_selector):
            _vocab.check_dtypes(unit, input_schema)
            n_oov = _vocab.per_column(self.num_buckets, unit)
            if n_oov is not None and (not isinstance(n_oov, (int, np.integer)) or n_oov < 1):
                raise ValueError(
                    f"num_buckets for {unit.key!r} must be an integer >= 1 or None, got {n_oov!r} "
                    "(None gives a single OOV index)"
                )
            max_size = _vocab.per_column(self.max_size, unit, 0)
            if max_size and max_size < self._n_oov(unit) + 2:
                raise ValueError(f"max_size {max_size} for {unit.key!r} leaves no room for padding, null and OOV rows")
            vocab = self._user_vocab(unit)
            if vocab is not None and (isinstance(vocab, (str, bytes)) or not hasattr(vocab, "__len__")):
                raise TypeError(f"vocabs[{unit.key!r}] must be a list, array or series of values, got {vocab!r:.60}")
            for name, minimum in (("split_out", 1), ("split_every", 2)):
                value = _vocab.per_column(getattr(self, name), unit, minimum)
                if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
                    raise ValueError(f"{name} for {unit.key!r} must be an integer >= {minimum}, got {value!r}")
        if self.out_path is not None and not isinstance(self.out_path, (str, os.PathLike)):
            raise TypeError(f"out_path must be a directory path or None, got {self.out_path!r:.60}")
        self._memory_limit()  # a malformed limit fails before any data is read

    def _memory_limit(self) -> int:
        """``cardinality_memory_limit`` in bytes (default: 12.5% of the machine's memory)."""
        limit = self.cardinality_memory_limit
        if limit is None:
            import psutil  # a dependency of distributed, itself a dependency of tabflow

            return int(psutil.virtual_memory().total * 0.125)
        try:
            value = dask.utils.parse_bytes(limit) if isinstance(limit, str) else limit
        except ValueError:
            value = None
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
            raise ValueError(f"cardinality_memory_limit must be a number of bytes (int or '2GB'), got {limit!r}")
        return int(value)

    # --------------------------------------------------------------------- fit
    def fit_partition(self, col_selector: ColumnSelector, df: Any) -> dict[str, Any]:
        partial = {}
        for unit in self._units(col_selector):
            counts = None if self._user_vocab(unit) is not None else _vocab.count_values(df, unit)
            partial[unit.key] = {"unit": unit, "counts": counts}
        return partial

    #: Value counts add up exactly: the workflow folds the partials into a running total.
    exact_combine = True

    def combine_partials(self, partials: list[dict[str, Any]]) -> dict[str, Any]:
        # Each vocabulary's counts leave the partials (which only this merge reads) as they
        # are merged: the running total's counts and the new total's are then held at once
        # for one vocabulary, not for all of them. The last merge of a fit, which no
        # partition is read beside, merges the vocabularies side by side, one per core. (The
        # earlier merges run while the other partitions are read: in threads they held two
        # vocabularies' merges at once, and the fit's peak rose by 0.1 GiB at 10M rows, for no
        # gain in its time.)
        def merge(key: str) -> dict[str, Any]:
            unit = partials[0][key]["unit"]
            entries = [p.pop(key) for p in partials]
            parts = [entry["counts"] for entry in entries]
            merged: dict[str, Any] = {"unit": unit, "counts": None}
            if parts[0] is not None:  # None: a user vocabulary, nothing counted
                merged["counts"] = _vocab.merge_counts(parts, _vocab.per_column(self.split_every, unit, 8))
            # An update's fitted partial (see fitted_partial) brings the known values in index
            # order, and the rows counted earlier that no table holds.
            for entry in entries:
                if entry.get("known") is not None:
                    merged["known"] = entry["known"]
                if entry.get("uncounted"):
                    merged["uncounted"] = merged.get("uncounted", 0) + entry["uncounted"]
            return merged

        keys = list(partials[0])
        if combining_last():
            return dict(zip(keys, _in_threads(merge, [(key,) for key in keys])))
        return {key: merge(key) for key in keys}

    def fit_finalize(self, partial: dict[str, Any]) -> None:
        slots, nulls, encodings, combos, observed = {}, {}, {}, {}, {}
        tables: dict[Any, Any] = {}
        # The vocabularies sort independently, mostly in Arrow and NumPy kernels that release
        # the GIL: building them side by side uses every core for the longest serial step.
        # Each unit's merged counts leave ``partial`` as its vocabulary is built (the caller
        # drops ``partial`` after this call): the counts of every column and their
        # vocabularies, as large again, are never all held at once. A vocabulary fitted on the
        # pandas engine gets its lookup table there too: one of short strings is held as its
        # table (see Vocabularies), built straight from the keys they were counted as.
        pending = {key: entry.pop("counts") for key, entry in partial.items()}
        known = {key: entry.pop("known", None) for key, entry in partial.items()}
        uncounted = {key: entry.pop("uncounted", 0) for key, entry in partial.items()}
        vocabs = _vocab.Vocabularies(dict.fromkeys(partial))  # the units' order, filled in the threads
        rare: dict[str, Any] = {}
        keep_rare = keeping_update_state()  # read here: the threads below do not see this one's context

        def build(key: str, unit: _vocab.Unit) -> tuple[int, tuple[int, int, int] | None, Any]:
            vocab, null_count, unit_observed, table, left = self._finalize_unit(
                unit, pending.pop(key), known.pop(key), uncounted[key], keep_rare
            )
            vocabs[key] = vocab
            if table is not None and not isinstance(vocab, _vocab.HeldVocabulary):
                vocabs.hold_as_table(key, vocab, table, get_backend("pandas"))
            if left is not None:
                rare[key] = left
            return null_count, unit_observed, table

        built = _in_threads(build, [(key, entry["unit"]) for key, entry in partial.items()])
        oov_counts = {}
        for (key, entry), (null_count, unit_observed, table) in zip(partial.items(), built):
            unit = entry["unit"]
            nulls[key] = null_count
            if unit_observed is not None:
                observed[key] = unit_observed
                oov_counts[key] = unit_observed[1]
            if table is not None:
                tables[(key, "pandas")] = table
            slots[key] = self._n_oov(unit)
            encodings.update({name: key for name in unit.outputs})
            if unit.combo:
                combos[key] = list(unit.inputs)
        del built
        if self.out_path is not None:
            # Written before any fitted state is set: a failed write leaves the op unfitted.
            shifts = _single_table_offsets(vocabs, slots) if self.single_table else {}
            self._write_vocabularies(partial, vocabs, slots, observed, shifts)
        self.vocabs_, self.oov_slots_, self.null_counts_ = vocabs, slots, nulls
        self.encodings_, self.combo_inputs_ = encodings, combos
        self.oov_counts_ = oov_counts
        if keep_rare:
            self.rare_counts_ = dict(rare)
        self.offsets_ = _single_table_offsets(vocabs, slots) if self.single_table else {}
        tables[_BUILT_FROM] = (vocabs, vocabs.version)
        self._tables = tables

    def _finalize_unit(
        self, unit: _vocab.Unit, unit_counts: Any, known: Any = None, uncounted: int = 0, keep_rare: bool = False,
    ) -> tuple[Any, int, tuple[int, int, int] | None, Any, Any]:
        """``(vocabulary, null count, (nulls, dropped, kept) or None, lookup table or None,
        counts below freq_threshold or None)`` of one unit. The vocabulary is a DataFrame, or
        a HeldVocabulary where the pandas engine counted short strings as their keys; the
        table is built where the counts are on the pandas engine (the host), which the
        vocabulary is on too. With ``known`` (an update: the fitted values in index order)
        those values keep their indices and new ones follow (:func:`_vocab.extend_vocabulary`);
        ``uncounted`` rows were counted by earlier fits for values no table holds (past
        ``max_size``); with ``keep_rare`` (a fit to be updated) the counts of the values below
        ``freq_threshold`` are returned."""
        if unit_counts is None:
            return _vocab.user_vocabulary(self._user_vocab(unit)), 0, None, None, None
        counts, null_count = unit_counts
        engine = backend_for(counts)
        counts = engine.to_host(counts)
        self._warn_if_large(unit.key, counts)
        max_size = _vocab.per_column(self.max_size, unit, 0)
        limit = max_size - 2 - self._n_oov(unit) if max_size else None
        threshold = _vocab.per_column(self.freq_threshold, unit, 0)
        seen = int(counts[_vocab.COUNT].sum()) + uncounted
        # What a later update needs of the values left without an index: their counts, while
        # they may still cross freq_threshold (past max_size they never get one).
        keep_rare = bool(threshold) and keep_rare
        if known is not None:
            extended = _vocab.extend_held_vocabulary(known, counts, threshold, limit) if isinstance(known, _vocab.HeldVocabulary) else None
            if extended is not None:  # ids as keys: extended on the keys, held as the table
                held, rare = extended
                del counts
                return held, null_count, (null_count, seen - held.total_count(), held.total_count()), held.table, rare if keep_rare else None
            if isinstance(known, _vocab.HeldVocabulary):
                known = known.frame()
            vocab, rare = _vocab.extend_vocabulary(known, counts, threshold, limit)
        elif _vocab.KEY in counts.columns:  # short strings counted as keys: held as the table from the start
            held = _vocab.held_vocabulary(counts, threshold, limit)
            rare = _vocab._unkeyed(counts[counts[_vocab.COUNT] < threshold]).reset_index(drop=True) if keep_rare else None
            del counts
            return held, null_count, (null_count, seen - held.total_count(), held.total_count()), held.table, rare
        else:
            vocab = _vocab.build_vocabulary(counts, threshold, limit)
            rare = counts[counts[_vocab.COUNT] < threshold].reset_index(drop=True) if keep_rare else None
        del counts
        kept = int(vocab[_vocab.COUNT].sum())
        table = engine.lookup_table(vocab["value"]) if engine.name == "pandas" and not unit.combo else None
        return vocab, null_count, (null_count, seen - kept, kept), table, rare if keep_rare else None

    # ----------------------------------------------------------------- updates
    def check_updatable(self) -> None:
        super().check_updatable()
        if self.single_table:
            raise NotUpdatableError(
                "Categorify(single_table=True) cannot be updated with new data: its vocabularies lie one after "
                "another in one index space, so a vocabulary that grew would move every later one's indices"
            )
        entries = self._vocabularies()._entries()
        for key, entry in entries.items():
            unit = self._fitted_unit(key)
            if self._user_vocab(unit) is not None:
                continue  # the values given stay as they are
            counted = isinstance(entry, _vocab.HeldVocabulary) or (
                _vocab.COUNT in entry.columns and not bool(backend_for(entry).to_host(entry[_vocab.COUNT].isna()).any())
            )
            if not counted:
                raise NotUpdatableError(
                    f"Categorify cannot update the vocabulary {key!r}: it has no counts (a vocabulary set by hand), and "
                    "a count is what orders and thresholds the values an update adds; fit the workflow again"
                )
            if _vocab.per_column(self.freq_threshold, unit, 0) and key not in getattr(self, "rare_counts_", {}):
                raise NotUpdatableError(
                    f"Categorify cannot update the vocabulary {key!r}: freq_threshold applies to the counts summed over "
                    "every update, and the counts of the values still below it were not kept (Workflow.fit keeps "
                    "none); fit the workflow with Workflow.partial_fit, which keeps them, to update it later"
                )

    def fitted_partial(self) -> dict[str, Any]:
        """Per vocabulary: the counts of every value counted so far (the vocabulary's and, with
        ``freq_threshold``, those still below it) and of nulls, the values in index order
        (``known``), and the rows counted for values no table holds (past ``max_size``)."""
        self.check_updatable()
        vocabs = self._vocabularies()
        rare = getattr(self, "rare_counts_", {})
        partial: dict[str, dict[str, Any]] = {}
        for key in vocabs:
            unit = self._fitted_unit(key)
            if self._user_vocab(unit) is not None:
                partial[key] = {"unit": unit, "counts": None}
                continue
            below = rare.get(key)
            below = backend_for(below).to_host(below) if below is not None else None
            entry = vocabs._entries()[key]
            keyed = _vocab.held_counts(entry) if isinstance(entry, _vocab.HeldVocabulary) else None
            if keyed is not None:  # ids held as keys: the counts stay keys, the strings unwritten
                known = entry
                counts = keyed if below is None else _vocab.merge_counts([(keyed, 0), (_vocab.counts_of([below]), 0)])[0]
            else:
                known = backend_for(vocabs[key]).to_host(vocabs[key])
                counts = _vocab.counts_of([known] if below is None else [known, below])
            # Rows sent to OOV are those of the values below the threshold (counted here) and
            # those past max_size, which no table holds.
            rare_rows = int(below[_vocab.COUNT].sum()) if below is not None else 0
            partial[key] = {
                "unit": unit,
                "counts": (counts, int(self.null_counts_[key])),
                "known": known,
                "uncounted": max(int(getattr(self, "oov_counts_", {}).get(key, 0)) - rare_rows, 0),
            }
        return partial

    def _fitted_unit(self, key: str) -> _vocab.Unit:
        """The unit vocabulary ``key`` was fitted for, from the fitted encodings."""
        if key in self.combo_inputs_:
            return _vocab.Unit(key, tuple(self.combo_inputs_[key]), (key,), combo=True)
        outputs = tuple(column for column, vocabulary in self.encodings_.items() if vocabulary == key)
        return _vocab.Unit(key, outputs, outputs)

    def _warn_if_large(self, key: str, counts: Any) -> None:
        size = int(counts.memory_usage(deep=True, index=True).sum())
        limit = self._memory_limit()
        if size > limit:
            warnings.warn(
                f"Categorify: the value counts of {key!r} ({len(counts)} distinct values) take {size} bytes, "
                f"more than cardinality_memory_limit ({limit} bytes). They are merged and sorted in one "
                "process; freq_threshold or max_size shrink the vocabulary, HashBucket needs none.",
                UserWarning,
                stacklevel=2,
            )

    def _write_vocabularies(
        self, partial: dict[str, Any], vocabs: dict[str, Any], slots: dict[str, int], observed: dict[str, tuple],
        shifts: dict[str, int],
    ) -> None:
        tables, split_out = {}, {}
        for key, entry in partial.items():
            unit, n_oov, shift = entry["unit"], slots[key], shifts.get(key, 0)
            unique = _vocab_files.unique_table(unit, vocabs[key], n_oov, with_counts=key in observed, shift=shift)
            tables[key] = (unique, _vocab_files.meta_table(n_oov, len(unique), observed.get(key), shift=shift))
            split_out[key] = _vocab.per_column(self.split_out, unit, 1)
        assert self.out_path is not None  # fit_finalize writes only with an out_path
        _vocab_files.write_vocabularies(self.out_path, tables, split_out)

    def set_storage_path(self, new_path: str | os.PathLike, copy: bool = False) -> None:
        """Point ``out_path`` at ``new_path``, first copying the vocabulary files there when
        ``copy`` (as NVTabular's did; :meth:`tabflow.Workflow.save` bundles them so, and
        :meth:`~tabflow.Workflow.load` points the op at the loaded directory).

        Without ``out_path`` the op writes no files (its vocabularies are saved with the
        workflow), so nothing moves; without ``copy``, ``out_path`` moves only to a
        directory that holds the files.

        Examples
        --------
        >>> import os, tempfile, pandas as pd
        >>> import tabflow as nvt
        >>> from tabflow import ops
        >>> op = ops.Categorify(out_path=tempfile.mkdtemp())
        >>> _ = nvt.Workflow(["c"] >> op).fit(pd.DataFrame({"c": ["a", "b", "a"]}))
        >>> bundle = tempfile.mkdtemp()
        >>> op.set_storage_path(bundle, copy=True)
        >>> op.out_path == bundle, pd.read_parquet(op.categories["c"])["c"].tolist()
        (True, ['a', 'b'])
        """
        if self.out_path is None or os.path.abspath(new_path) == os.path.abspath(self.out_path):
            return
        keys = list(getattr(self, "vocabs_", {}))
        if copy and keys:
            _vocab_files.copy_vocabularies(self.out_path, new_path, keys)
        elif keys and not all(os.path.exists(_vocab_files.unique_path(new_path, key)) for key in keys):
            return
        self.out_path = new_path

    # --------------------------------------------------------------- transform
    def transform(self, col_selector: ColumnSelector, df: Frame) -> Frame:
        self.check_is_fitted()
        backend = backend_for(df)
        dtype = self.output_dtype
        out = {}
        for unit in self._units(col_selector):
            table = self._table(unit.key, backend)
            offset = 2 + self.oov_slots_[unit.key]
            out.update(_vocab.encode_unit(df, unit, table, offset, self.oov_slots_[unit.key], dtype, self._shift(unit.key)))
        return backend.frame_from_dict(out, index=df.index)

    def array_kernels(self, col_selector: ColumnSelector, input_schema: Schema) -> list[Kernel] | None:
        self.check_is_fitted()
        units = self._units(col_selector)
        shifts = {unit.key: self._shift(unit.key) for unit in units}
        return _vocab_kernels.categorify_kernels(units, input_schema, self._vocabularies(), self.oov_slots_, shifts, self.output_dtype)

    def _table(self, key: str, backend: Any) -> Any:
        # One hash table per vocabulary and engine, built on first use and shared by the
        # partitions that follow: rebuilding it per partition would dominate the transform.
        # A table that holds the strings themselves becomes the vocabulary's only copy.
        def build() -> Any:
            vocabs = self._vocabularies_with(key)
            held = vocabs.held_table(key, backend.name)
            if held is not None:
                return held
            vocab = vocabs[key]
            keys = vocab[[c for c in vocab.columns if c != _vocab.COUNT]]
            keys = keys["value"] if list(keys.columns) == ["value"] else keys
            table = backend.lookup_table(backend.from_host(keys))
            vocabs.hold_as_table(key, vocab, table, backend)
            return table

        return self._derived_from_vocabularies((key, backend.name), build)

    # ------------------------------------------------------------------ schema
    @property
    def output_dtype(self) -> str:
        return str(np.dtype(self.dtype)) if self.dtype is not None else "int64"

    def column_mapping(self, col_selector: ColumnSelector) -> dict[str, list[str]]:
        return {out: list(unit.inputs) for unit in self._units(col_selector) for out in unit.outputs}

    def compute_output_schema(self, input_schema: Schema, col_selector: ColumnSelector, prev_output_schema: Any = None) -> Schema:
        return Schema([
            self._column_schema(out, unit, input_schema.select_by_name(unit.inputs))
            for unit in self._units(col_selector)
            for out in unit.outputs
        ])

    def _full_column_schema(self, col_name: str, input_schema: Schema) -> ColumnSchema:
        # ``input_schema`` holds the columns encoded together into ``col_name``.
        names = input_schema.column_names
        group = ColumnSelector(names if len(names) == 1 else [names])
        unit = next(unit for unit in self._units(group) if col_name in unit.outputs)
        return self._column_schema(col_name, unit, input_schema)

    def _column_schema(self, col_name: str, unit: _vocab.Unit, input_schema: Schema) -> ColumnSchema:
        column = self._source_column_schema(col_name, input_schema)
        is_list = not unit.combo and input_schema[col_name].is_list
        column = column.with_dtype(f"list<{self.output_dtype}>" if is_list else self.output_dtype)
        column = column.with_tags(Tags.CATEGORICAL, *([Tags.LIST] if is_list else []))
        properties = {
            "num_buckets": _vocab.per_column(self.num_buckets, unit),
            "freq_threshold": _vocab.per_column(self.freq_threshold, unit, 0),
            "max_size": _vocab.per_column(self.max_size, unit, 0),
            "start_index": 0,
        }
        if self.fitted and unit.key in getattr(self, "vocabs_", {}):
            cardinality = self.cardinality(unit.outputs[0])
            dimension = _vocab.embedding_dimension(cardinality)
            properties["cardinality"] = cardinality
            properties["domain"] = {"min": 0, "max": cardinality - 1, "name": "single_table" if self.single_table else unit.key}
            properties["embedding_sizes"] = {"cardinality": cardinality, "dimension": dimension}
            if self.out_path is not None:
                properties["cat_path"] = _vocab_files.unique_path(self.out_path, unit.key)
        return column.with_properties(**properties)


def _in_threads(function: Any, arguments: list[tuple]) -> list[Any]:
    """``[function(*a) for a in arguments]``, run by up to one thread per core."""
    workers = min(len(arguments), os.cpu_count() or 1)
    if workers <= 1:
        return [function(*a) for a in arguments]
    # Warning filters are process-wide state, so warnings raised in the threads (a vocabulary
    # over cardinality_memory_limit) reach the caller's filters as in a plain loop.
    with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="tabflow-vocabulary") as pool:
        return list(pool.map(lambda a: function(*a), arguments))


def _built_from(tables: dict[Any, Any] | None, vocabs: _vocab.Vocabularies) -> bool:
    """Whether derived ``tables`` were built from ``vocabs`` as they are now."""
    stamp = (tables or {}).get(_BUILT_FROM)
    return stamp is not None and stamp[0] is vocabs and stamp[1] == vocabs.version


def _single_table_offsets(vocabs: _vocab.Vocabularies, slots: dict[str, int]) -> dict[str, int]:
    """Shift of each vocabulary's block when they follow one another in one table."""
    offsets, shift = {}, 0
    for key in vocabs:
        offsets[key] = shift
        shift += 1 + slots[key] + vocabs.size(key)  # its null index, OOV indices and values
    return offsets


def _table_size(vocabs: _vocab.Vocabularies, slots: dict[str, int]) -> int:
    """Rows of the single table: padding plus every vocabulary's block."""
    return 1 + sum(1 + slots[key] + vocabs.size(key) for key in vocabs)


def _unshift(codes: Any, shift: int) -> Any:
    """Codes of a single-table block in the usual layout (padding stays 0)."""
    if not shift:
        return codes
    codes = np.asarray(codes, dtype=np.int64)
    return np.where(codes > 0, codes - shift, 0)
