"""Dataset: a partitioned, lazily read table (files or an in-memory frame) and its schema.

The class lives here, as ``merlin.io.dataset.Dataset`` does, and is re-exported as
``tabflow.io.Dataset``, ``tabflow.dataset.Dataset`` and ``tabflow.Dataset``.

Examples
--------
>>> import pandas as pd
>>> from tabflow.io import Dataset
>>> ds = Dataset(pd.DataFrame({"a": range(10)}), npartitions=2)
>>> ds.num_rows, ds.npartitions, ds.schema["a"].dtype, ds.cpu
(10, 2, 'int64', True)
"""

from __future__ import annotations

import dataclasses
import functools
import os
import random
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from tabflow.backends import get_backend
from tabflow.backends.protocol import Frame
from tabflow.io import readers
from tabflow.io.dataframe_iter import DataFrameIter
from tabflow.io.fs import basename, is_remote
from tabflow.io.partitions import active_client, iter_calls, iter_partitions
from tabflow.io.progress import compute
from tabflow.io.shuffle import Shuffle, normalize_shuffle
from tabflow.schema import ColumnSchema, Schema, Tags
from tabflow.schema.dtypes import nullable_dtype

if TYPE_CHECKING:
    from tabflow.io.writer import Gathered

__all__ = ["Dataset"]


class Dataset:
    """A table read in partitions, on the pandas (CPU) or cuDF (GPU) engine.

    Parameters
    ----------
    path_or_source : str, list of str, or DataFrame
        File path, glob, directory or a list of them (local, or URLs such as
        ``s3://bucket/data/*.parquet`` read through fsspec); or an in-memory pandas/cuDF
        frame, or a dask DataFrame.
    engine : {"parquet", "csv", "orc", "criteo"} or a registered format, optional
        File format; guessed from the file names when omitted. ``"criteo"`` reads the raw
        Criteo click-log text format (tab-separated label, I1-I13, C1-C26; empty = null).
        :func:`tabflow.io.readers.register` adds formats.
    npartitions : int, optional
        For in-memory frames: how many partitions to split them into.
    part_size : int or str, optional
        Target in-memory size of one partition: a positive number of bytes, or a string such
        as ``"64MB"``.
    part_mem_fraction : float, optional
        Partition size as a fraction of GPU memory (cuDF) or host memory (pandas), in (0, 1].
    storage_options : dict, optional
        fsspec options for URLs (``{"key": ..., "secret": ..., "client_kwargs":
        {"endpoint_url": ...}}`` for s3fs, ``{"token": ...}`` for gcsfs, ...).
    dtypes : dict, optional
        Column dtypes, for files and in-memory frames alike: canonical names such as
        ``"int64"``, ``"string"``, or numpy dtypes (``np.int32``). CSV files read integer
        columns as their nullable dtypes (an empty field is a null). ``"hex"`` parses
        hexadecimal id strings to nullable int64 (CSV files and frames).
    client : distributed.Client, optional
        ``"auto"`` (NVTabular's default) means the active client, as None does.
    cpu : bool, optional
        True: pandas; False: cuDF; None: cuDF when a GPU and cuDF are available.
    base_dataset : Dataset, optional
        The dataset this one derives from (``to_iter(use_file_metadata=True)`` takes its
        row counts); default: itself.
    schema : Schema, optional
        Column tags and properties (the data's dtypes win). Read, when not given, from
        ``_schema.json`` next to the files, else from NVTabular's ``.merlin/schema.json`` or
        ``schema.pbtxt``. Anything but a :class:`~tabflow.schema.Schema` is a TypeError.
    sep, names, header :
        CSV options (any separator, a header line or explicit ``names``).
    **kwargs
        Reader options: CSV parser options (``skiprows``, ``quotechar``, ...); for parquet
        ``filters=`` (rows not matching are dropped), ``columns=``,
        ``row_groups_per_part=`` and ``aggregate_files=`` (``True``: a partition may gather
        several files up to ``part_size``; a hive key such as ``"day"``: only files with the
        same ``day=`` directory). An option the format does not use is a TypeError.

    Examples
    --------
    >>> import os, tempfile, pandas as pd
    >>> import tabflow as nvt
    >>> d = tempfile.mkdtemp()
    >>> pd.DataFrame({"a": [1, 2, 3]}).to_parquet(os.path.join(d, "x.parquet"))
    >>> nvt.Dataset(d, engine="parquet").to_ddf().compute()["a"].tolist()
    [1, 2, 3]
    >>> nvt.Dataset(d, engine="parquet", filters=[("a", ">", 1)]).num_rows
    2
    """

    # Whether computing this dataset shows a progress bar when not told (a workflow's
    # ``transform(..., progress=True)`` sets it on its result).
    _progress = False

    def __init__(
        self,
        path_or_source: Any,
        engine: str | None = None,
        npartitions: int | None = None,
        part_size: int | str | None = None,
        part_mem_fraction: float | None = None,
        storage_options: Mapping[str, Any] | None = None,
        dtypes: Mapping[str, Any] | None = None,
        client: Any = None,
        cpu: bool | None = None,
        base_dataset: "Dataset | None" = None,
        schema: Schema | None = None,
        sep: str | None = None,
        names: Sequence[str] | None = None,
        header: Any = "infer",
        **kwargs: Any,
    ) -> None:
        if schema is not None and not isinstance(schema, Schema):
            raise TypeError(
                f"unsupported schema type for Dataset: {type(schema).__module__}.{type(schema).__name__}; "
                "pass a tabflow.schema.Schema (or None to read or infer one)"
            )
        options = readers.ReadOptions(  # validates part_size and part_mem_fraction
            cpu=cpu, npartitions=npartitions, part_size=part_size, part_mem_fraction=part_mem_fraction,
            dtypes=dtypes, sep=sep, names=names, header=header, storage_options=storage_options, extra=kwargs,
        )
        self.dtypes = dtypes
        self.storage_options = storage_options
        self._set_source(readers.open_source(path_or_source, engine, options), schema, client)
        # Reading again on the other engine (to_cpu / to_gpu) plans the files afresh.
        self._reopen: Callable[[bool], readers.Source] | None = functools.partial(_reopen, path_or_source, engine, options)
        self.base_dataset = base_dataset if base_dataset is not None else self

    @classmethod
    def _from_source(cls, source: readers.Source, schema: Schema | None = None, client: Any = None) -> "Dataset":
        """A dataset over a reader's result (or a derived frame, as ``repartition`` makes)."""
        dataset = cls.__new__(cls)
        dataset.dtypes = dataset.storage_options = None
        dataset._reopen = None
        dataset._set_source(source, schema, client)
        dataset.base_dataset = dataset
        return dataset

    def _set_source(self, source: readers.Source, schema: Schema | None, client: Any) -> None:
        # The one place a dataset's state is set: __init__, _from_source, to_cpu/to_gpu.
        self.client = None if isinstance(client, str) and client == "auto" else client
        self.engine = source.engine
        self._ddf = source.ddf
        self._num_rows = source.num_rows
        self._partition_lengths = source.partition_lengths
        self._direct = source.direct  # (reader, pieces): partitions read without dask
        # Source file of each partition, computed on demand (``to_parquet(preserve_files=True)``).
        self._partition_sources = source.partition_sources
        self._partition_bytes = source.partition_bytes
        self._part_size = source.part_size
        # The same rows computed over gathered partitions (a workflow's transform of many
        # small files sets it): what ``to_parquet`` computes when it keeps the partitions' order.
        self._gathered: Gathered | None = None
        self.paths = list(source.paths)
        self.file_engine = source.format
        self._samples: dict[int, Any] = {}
        self._planned_dtypes = dict(source.dtypes or {})
        self.schema = self._build_schema(schema if schema is not None else source.schema)

    # ------------------------------------------------------------------- facts
    @property
    def backend(self) -> Any:
        return get_backend(self.engine)

    @property
    def cpu(self) -> bool:
        """True when partitions are pandas frames (host memory), False for cuDF."""
        return self.engine == "pandas"

    @property
    def npartitions(self) -> int:
        return self._ddf.npartitions

    @property
    def num_rows(self) -> int:
        """Number of rows (from file metadata when possible, else counted once)."""
        if self._num_rows is None:
            (length,) = compute(self._ddf.map_partitions(len).sum(), client=self.client)
            self._num_rows = int(length)
        return self._num_rows

    def partition_lengths(self) -> list[int]:
        """Number of rows in each partition, in partition order; computed once and cached.

        Parquet datasets know it from the footers read when planning; other sources count
        rows once.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> nvt.Dataset(pd.DataFrame({"a": range(10)}), npartitions=3).partition_lengths()
        [4, 3, 3]
        """
        if self._partition_lengths is None:
            (lengths,) = compute(self._ddf.map_partitions(len), client=self.client)
            self._partition_lengths = [int(n) for n in lengths]
            self._num_rows = sum(self._partition_lengths)
        return list(self._partition_lengths)

    @property
    def partition_lens(self) -> list[int]:
        """NVTabular's name of :meth:`partition_lengths`."""
        return self.partition_lengths()

    @property
    def file_partition_map(self) -> dict[str, list[int]] | None:
        """Each source file and the partitions read from it (None for in-memory frames).

        Examples
        --------
        >>> import os, tempfile, pandas as pd
        >>> import tabflow as nvt
        >>> d = tempfile.mkdtemp()
        >>> for i in range(2):
        ...     pd.DataFrame({"a": range(3)}).to_parquet(os.path.join(d, f"part_{i}.parquet"))
        >>> {os.path.basename(k): v for k, v in nvt.Dataset(d).file_partition_map.items()}
        {'part_0.parquet': [0], 'part_1.parquet': [1]}
        """
        if self._partition_sources is None:
            return None
        mapping: dict[str, list[int]] = {}
        for index, paths in enumerate(self._partition_sources()):
            for path in (paths,) if isinstance(paths, str) else paths:
                mapping.setdefault(path, []).append(index)
        return mapping

    def _build_schema(self, given: Schema | None) -> Schema:
        backend = self.backend
        columns = []
        for name, dtype in self._ddf.dtypes.items():
            canonical = backend.canonical_dtype(dtype)
            known = given[name] if given is not None and name in given else None
            # A given or planned dtype the engine holds as this column's dtype is kept: on
            # cuDF an "Int64" column is an int64 column, and the schema says "Int64" as on
            # pandas. One the engine would hold differently yields to the data's.
            preferred = str(known.dtype) if known is not None else self._planned_dtypes.get(str(name))
            if preferred is not None and _held_as(backend, preferred, canonical):
                canonical = preferred
            if known is not None:
                columns.append(known if str(known.dtype) == canonical else known.with_dtype(canonical))
            else:
                columns.append(ColumnSchema(str(name), dtype=canonical))
        return Schema(columns)

    def infer_schema(self, n: int = 1) -> Schema:
        """Set (and return) a schema of the data's columns and dtypes, without tags.

        As NVTabular's: the tags and properties the dataset had are dropped. ``n`` rows are
        sampled; tabflow's partitions carry their real dtypes (list columns included), so the
        sample only confirms them.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> ds = nvt.Dataset(pd.DataFrame({"a": [1, 2], "g": [[1], [2, 3]]}))
        >>> [(c.name, c.dtype, c.is_list) for c in ds.infer_schema()]
        [('a', 'int64', False), ('g', 'list<int64>', True)]
        """
        annotated = self.sample_dtypes(n=n, annotate_lists=True)
        backend = self.backend
        columns = []
        for name, info in annotated.items():
            element = backend.canonical_dtype(info["dtype"])
            dtype = backend.canonical_dtype(self._ddf.dtypes[name]) if info["is_list"] else element
            columns.append(ColumnSchema(str(name), dtype=dtype, is_list=info["is_list"]))
        self.schema = Schema(columns)
        return self.schema

    def sample_dtypes(self, n: int = 1, annotate_lists: bool = False) -> Any:
        """The dtypes of the first ``n`` rows, as read (cached per ``n``).

        ``annotate_lists=True``: ``{column: {"dtype": element dtype, "is_list": bool}}``.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> nvt.Dataset(pd.DataFrame({"g": [[1.5], [2.0]]})).sample_dtypes(annotate_lists=True)
        {'g': {'dtype': 'float64', 'is_list': True}}
        """
        if n not in self._samples:
            self._samples[n] = self._ddf.head(n, npartitions=-1)
        sample = self._samples[n]
        if not annotate_lists:
            return sample.dtypes
        backend = self.backend
        annotated = {}
        for name, dtype in sample.dtypes.items():
            is_list = backend.is_list_dtype(dtype)
            element = backend.canonical_dtype(dtype)
            if is_list:
                from tabflow.schema import dtypes as dtype_names

                element = dtype_names.element_dtype(element)
            annotated[name] = {"dtype": element, "is_list": bool(is_list)}
        return annotated

    # ------------------------------------------------------------------ access
    def to_ddf(
        self, columns: str | Sequence[str] | None = None, shuffle: bool = False, seed: int | None = None,
        dictionary_strings: Sequence[str] = (), arrow_lists: bool = False, coalesce: bool = False,
    ) -> Any:
        """The dask DataFrame (optionally only some columns, and its partitions in random order).

        ``shuffle=True`` permutes the partitions (not the rows inside them) with
        ``random.Random(seed)``, as NVTabular does.

        On the pandas engine, list columns come as pandas' own parquet reader gives them: an
        ``object`` column holding one NumPy array per row, of the element dtype the schema
        says (:meth:`Backend.lists_as_arrays <tabflow.backends.protocol.Backend.lists_as_arrays>`),
        converted as each partition is computed. ``arrow_lists=True`` hands them as the
        engine holds them, ``pd.ArrowDtype(pa.list_(...))``, which is what ops, the writer and
        the loaders read (tabflow's own; no conversion). cuDF's list columns are the same
        either way.

        ``dictionary_strings`` names string columns to hand over dictionary-encoded, as
        parquet files store them: partitions hold them as an Arrow dictionary of strings
        (``pd.ArrowDtype``) instead of ``str``, with the same values; the dask ``meta`` keeps
        saying ``str``. Only parquet files read by the pandas engine keep dictionaries; other
        data ignores the option. Workflows pass the source columns that only Categorify
        reads: counting and encoding a dictionary touches each distinct string once.

        ``coalesce=True`` reads consecutive partitions smaller than ``part_size`` together,
        up to ``part_size`` (many small parquet files): fewer, larger partitions with the
        same rows in the same order, for a computation whose result does not depend on where
        partitions begin and end (workflows fit so). Other data, and ``shuffle=True``, keep
        their partitions.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> ds = nvt.Dataset(pd.DataFrame({"a": range(6)}), npartitions=3)
        >>> ds.to_ddf(shuffle=True, seed=1).compute()["a"].tolist()
        [2, 3, 4, 5, 0, 1]
        >>> lists = nvt.Dataset(pd.DataFrame({"g": [[1, 2], [3], []]}))
        >>> lists.to_ddf().compute()["g"].tolist()
        [array([1, 2]), array([3]), array([], dtype=int64)]
        >>> lists.to_ddf(arrow_lists=True).dtypes["g"]
        list<item: int64>[pyarrow]
        >>> import os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> for i in range(3):
        ...     pd.DataFrame({"a": [i, i]}).to_parquet(os.path.join(d, f"part_{i}.parquet"))
        >>> small = nvt.Dataset(d)
        >>> small.npartitions, small.to_ddf(coalesce=True).npartitions, small.to_ddf(coalesce=True).compute()["a"].tolist()
        (3, 1, [0, 0, 1, 1, 2, 2])
        """
        ddf = self._ddf
        if columns:
            columns = [columns] if isinstance(columns, str) else list(columns)
        direct = self._direct
        gathering = self._gathered_partitions() if coalesce and not shuffle else None
        pieces = gathering[0] if gathering is not None else None
        dictionaries = bool(dictionary_strings) and direct is not None and hasattr(direct[0], "with_dictionary_strings")
        if direct is not None and (pieces is not None or dictionaries):
            reader = direct[0].with_columns(columns) if columns else direct[0]
            if dictionaries:  # parquet files
                reader = reader.with_dictionary_strings(dictionary_strings)
            backend = get_backend(self.engine)
            ddf = backend.from_map_ddf(reader, pieces or direct[1], backend.empty_frame(reader.dtypes), "tabflow-read-parquet")
        elif columns:
            ddf = ddf[columns]
        if shuffle and ddf.npartitions > 1:
            ddf = ddf.partitions[self._shuffled(seed)]
        return ddf if arrow_lists else self._as_users_see(ddf)

    def _gathered_partitions(self) -> tuple[list, list[list[int]]] | None:
        """The partitions' pieces with consecutive small ones gathered up to ``part_size``,
        and the partitions each gathers (None: nothing to gather, or partitions that are
        not planned from files)."""
        if self._direct is None or self._partition_bytes is None or not self._part_size:
            return None
        gathered, groups = readers.gather_pieces(self._direct[1], self._partition_bytes, self._part_size)
        return (gathered, groups) if len(gathered) < len(self._direct[1]) else None

    def _as_users_see(self, ddf: Any) -> Any:
        """``ddf`` with its list columns as the engine's users know them, one partition at a time."""
        backend = self.backend
        dtypes = dict(ddf.dtypes.items())
        lists = {name: backend.canonical_dtype(dtype) for name, dtype in dtypes.items() if backend.is_list_dtype(dtype)}
        if not lists:
            return ddf
        probe = backend.empty_frame(lists)
        shown = backend.lists_as_arrays(probe)
        if shown is probe:
            return ddf  # cuDF: its users know list columns as cuDF holds them
        meta = {name: shown.dtypes[name] if name in lists else dtype for name, dtype in dtypes.items()}
        return ddf.map_partitions(backend.lists_as_arrays, meta=meta)

    def _shuffled(self, seed: int | None) -> list[int]:
        order = list(range(self.npartitions))
        random.Random(seed).shuffle(order)
        return order

    def to_iter(
        self, columns: str | Sequence[str] | None = None, indices: Sequence[int] | None = None, shuffle: bool = False,
        seed: int | None = None, use_file_metadata: bool | None = None, epochs: int = 1, prefetch: int = 2,
        convert: Callable[[Any], Any] | None = None, arrow_lists: bool = False,
    ) -> DataFrameIter:
        """Iterate over the partitions as in-memory frames, in order (or in ``indices`` order).

        Parameters
        ----------
        columns : str or list of str, optional
        indices : list of int, optional
            Partitions to read, in this order (after the shuffle, when ``shuffle=True``).
        shuffle : bool, default False
            Read the partitions in a random order (``random.Random(seed)``).
        seed : int, optional
        use_file_metadata : bool, optional
            ``len()`` counts rows from ``base_dataset``'s partition lengths (True) or this
            dataset's (None, False): tabflow's are exact in both cases.
        epochs : int, default 1
            Passes over the partitions within one iteration.
        prefetch : int, default 2
            Partitions read ahead in threads (by the workers when a dask distributed client
            is active).
        convert : callable, optional
            ``convert(frame)`` is yielded instead of each frame; locally it runs in the
            reading threads, so its work overlaps with the consumer's.
        arrow_lists : bool, default False
            Hand list columns as the engine holds them (see :meth:`to_ddf`); by default the
            pandas engine gives them as pandas' parquet reader does (one NumPy array per row).

        Returns
        -------
        DataFrameIter
            Iterable (each ``iter`` a new pass) with ``len()`` = rows yielded.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> ds = nvt.Dataset(pd.DataFrame({"x": range(6)}), npartitions=3)
        >>> list(ds.to_iter(indices=[2, 0], convert=lambda part: int(part["x"].sum())))
        [9, 1]
        >>> len(ds.to_iter(indices=[2, 0]))
        4
        """
        if isinstance(columns, str):
            columns = [columns]
        order = self._shuffled(seed) if shuffle else list(range(self.npartitions))
        if indices is not None:
            order = [order[i] for i in indices]

        def count() -> int:
            lengths = None
            if use_file_metadata and self.base_dataset is not None and self.base_dataset.npartitions == self.npartitions:
                lengths = self.base_dataset.partition_lengths()
            lengths = lengths or self.partition_lengths()
            return sum(lengths[i] for i in order)

        if not arrow_lists:
            convert = _after(self.backend.lists_as_arrays, convert)
        return DataFrameIter(functools.partial(self._read_partitions, columns, order, prefetch, convert), count, epochs)

    def _read_partitions(self, columns: Sequence[str] | None, order: Sequence[int], prefetch: int, convert: Callable | None) -> Iterator[Any]:
        if self._direct is not None and active_client(self.client) is None:
            # Plain parquet files: read each partition directly, skipping dask's per-call
            # graph work (the data loader iterates every epoch).
            reader, pieces = self._direct
            reader = reader.with_columns(list(columns)) if columns else reader
            return iter_calls([functools.partial(reader, pieces[i]) for i in order], prefetch=prefetch, convert=convert)
        return iter_partitions(self.to_ddf(columns, arrow_lists=True), order=order, prefetch=prefetch, client=self.client, convert=convert)

    def compute(self, progress: bool | None = None, **dask_options: Any) -> Any:
        """The whole dataset as one in-memory frame, which may be edited in place.

        List columns are given as :meth:`to_ddf` gives them (on pandas, one NumPy array
        per row). Partitions read from files each number their rows from 0; their concatenation gets
        one index ``0..n-1`` instead of repeated labels (so that ``frame.loc[0, "x"] = v``
        edits one row). An index the data came with (an in-memory frame's) is kept.

        ``progress=True`` shows a progress bar of the computation (see
        :mod:`tabflow.io.progress`); None (the default) shows one only for the result of
        ``Workflow.transform(..., progress=True)``.

        Other keywords go to dask's ``compute``, as with merlin's ``Dataset.compute``:
        ``compute(scheduler="synchronous")`` runs in the calling thread, even when a
        ``distributed`` client is active.

        Examples
        --------
        >>> import os, tempfile, pandas as pd
        >>> import tabflow as nvt
        >>> path = os.path.join(tempfile.mkdtemp(), "d")
        >>> _ = nvt.Dataset(pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]}), npartitions=2).to_parquet(path)
        >>> frame = nvt.Dataset(path).compute(scheduler="synchronous")
        >>> frame.loc[2, "x"] = 0.0
        >>> frame.index.tolist(), frame["x"].tolist()
        ([0, 1, 2, 3], [1.0, 2.0, 0.0, 4.0])
        """
        progress = self._progress if progress is None else progress
        (frame,) = compute(self._ddf, client=self.client, progress=progress, desc="compute", **dask_options)
        index = frame.index
        if index.name is None and index.dtype.kind in "iu" and not index.is_unique:
            frame = frame.reset_index(drop=True)
        return self._handed_out(frame)

    def head(self, n: int = 5) -> Frame:
        """The first ``n`` rows (looking through as many partitions as needed); list columns
        as :meth:`to_ddf` gives them."""
        return self._handed_out(self._ddf.head(n, npartitions=-1))

    def tail(self, n: int = 5) -> Frame:
        """The last ``n`` rows of the last partition (dask's ``tail``); list columns as
        :meth:`to_ddf` gives them."""
        return self._handed_out(self._ddf.tail(n))

    def _handed_out(self, frame: Frame) -> Frame:
        backend = self.backend
        return backend.writable(backend.lists_as_arrays(frame))

    def persist(self, **dask_options: Any) -> Any:
        """:meth:`to_ddf` with every partition computed and kept in memory (dask's
        ``persist``, which takes ``dask_options`` such as ``scheduler``)."""
        return self.to_ddf().persist(**dask_options)

    # ---------------------------------------------------------------- engines
    def to_cpu(self) -> None:
        """Move the dataset to the pandas engine, in place (files are read again on it)."""
        self._move(cpu=True)

    def to_gpu(self) -> None:
        """Move the dataset to the cuDF engine, in place (ImportError without cuDF)."""
        self._move(cpu=False)

    def _move(self, cpu: bool) -> None:
        if self.cpu == cpu:
            return
        if self._reopen is not None:
            source = self._reopen(cpu)
        else:
            source = readers.read_frame(self._ddf, readers.ReadOptions(cpu=cpu))
        # Same partitions, same rows, same files behind them (a workflow's output knows its
        # files only through the dataset it transformed).
        source = dataclasses.replace(
            source,
            partition_sources=source.partition_sources or self._partition_sources,
            num_rows=source.num_rows if source.num_rows is not None else self._num_rows,
            partition_lengths=source.partition_lengths if source.partition_lengths is not None else self._partition_lengths,
        )
        self._set_source(source, self.schema, self.client)

    # ------------------------------------------------------------ reshaping
    def repartition(self, npartitions: int | None = None, partition_size: int | str | None = None) -> "Dataset":
        """A dataset over the same rows in ``npartitions`` partitions, or in partitions of at
        most ``partition_size`` bytes (an int or a string such as ``"64MB"``; it wins).

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> ds = nvt.Dataset(pd.DataFrame({"a": range(1000)}))
        >>> ds.repartition(4).npartitions, ds.repartition(partition_size="1KB").npartitions > 4
        (4, True)
        """
        if partition_size is not None:
            return self._derived(self._ddf.clear_divisions().repartition(partition_size=partition_size))
        if npartitions is None:
            raise ValueError("repartition needs npartitions or partition_size")
        return self._derived(self._ddf.repartition(npartitions=npartitions))

    def shuffle_by_keys(self, keys: str | Sequence[str], hive_data: bool | None = None, npartitions: int | None = None) -> "Dataset":
        """A dataset whose partitions each hold every row of the key values they hold.

        Needed before ops that work on whole groups of rows within a partition, such as
        ``ops.Groupby`` and ``ops.DifferenceLag``. Rows with a null key form one group. The
        order of rows inside a partition is not kept: sort by time inside the op that needs
        it (``Groupby(sort_cols=...)``).

        Parameters
        ----------
        keys : str or list of str
        hive_data : bool, optional
            Accepted as NVTabular's; partitions are regrouped by the key values whether or
            not the files sit in ``key=value`` directories.
        npartitions : int, optional
            Number of output partitions (default: as many as now).

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> ds = nvt.Dataset(pd.DataFrame({"s": [1, 2, 1, 2, 3], "x": range(5)}), npartitions=3)
        >>> parts = [set(part["s"]) for part in ds.shuffle_by_keys("s").to_iter()]
        >>> sorted(k for part in parts for k in part)  # each key in exactly one partition
        [1, 2, 3]
        """
        keys = [keys] if isinstance(keys, str) else list(keys)
        missing = [k for k in keys if k not in self.schema]
        if missing:
            raise KeyError(f"shuffle_by_keys: column(s) {missing} are not in the dataset ({self.schema.column_names})")
        return self._derived(self._ddf.shuffle(on=keys, npartitions=npartitions or self.npartitions))

    @classmethod
    def merge(cls, left: "Dataset", right: "Dataset", **kwargs: Any) -> "Dataset":
        """A dataset of ``left`` joined with ``right`` (dask's ``merge``; ``right`` is moved
        to ``left``'s engine first).

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> a = nvt.Dataset(pd.DataFrame({"k": [1, 2, 3], "x": [10, 20, 30]}))
        >>> b = nvt.Dataset(pd.DataFrame({"k": [1, 3], "y": ["p", "q"]}))
        >>> nvt.Dataset.merge(a, b, on="k", how="left").compute().sort_values("k")["y"].tolist()
        ['p', nan, 'q']
        """
        right_ddf = right.to_ddf(arrow_lists=True)
        if right.engine != left.engine:
            right_ddf = readers.read_frame(right_ddf, readers.ReadOptions(cpu=left.cpu)).ddf
        merged = left.to_ddf(arrow_lists=True).clear_divisions().merge(right_ddf.clear_divisions(), **kwargs)
        return cls._from_source(readers.Source(merged, left.engine, dtypes=_merged_dtypes(left, right, kwargs)), None, left.client)

    def _derived(self, ddf: Any) -> "Dataset":
        """A dataset over ``ddf`` (rows of this one, repartitioned) with this one's schema and client."""
        return Dataset._from_source(readers.Source(ddf, self.engine), self.schema, self.client)

    # ------------------------------------------------------------------- write
    def to_parquet(
        self,
        output_path: str,
        shuffle: Any = None,
        preserve_files: bool = False,
        output_files: int | Sequence[str] | Mapping[Any, Sequence[int]] | None = None,
        out_files_per_proc: int | None = None,
        row_group_size: int | None = None,
        num_threads: int = 0,
        dtypes: Mapping[str, str] | None = None,
        cats: Sequence[str] | None = None,
        conts: Sequence[str] | None = None,
        labels: Sequence[str] | None = None,
        suffix: str = ".parquet",
        partition_on: str | Sequence[str] | None = None,
        method: str = "subgraph",
        write_hugectr_keyset: bool = False,
        seed: int | None = None,
        overwrite: bool = False,
        storage_options: Mapping[str, Any] | None = None,
        progress: bool | None = None,
    ) -> list[str]:
        """Write the dataset as parquet plus its schema and a ``_metadata`` summary, atomically.

        The arguments are NVTabular 23.08's, in its order; ``seed``, ``overwrite``,
        ``storage_options`` and ``progress`` are tabflow's.

        Parameters
        ----------
        output_path : str
            Directory to write, local or a URL (``s3://bucket/prefix``). A missing or empty
            directory, or one holding only a previous tabflow dataset, is replaced as a
            whole, atomically, once the write succeeded. Into a directory that holds other
            files too (the inputs, a notebook's folder) the dataset is added beside them:
            only the previous dataset's files are replaced, and a file name of the output
            that would overwrite a file tabflow did not write is an error before anything
            is written (:mod:`tabflow.io.atomic`; on object stores, where nothing is
            atomic, :mod:`tabflow.io.remote_atomic`). ``Dataset(output_path)`` then reads
            the dataset's files only. A file at the path is refused.
        shuffle : Shuffle or None
            ``Shuffle.PER_PARTITION``, ``Shuffle.PER_WORKER`` or None (row order kept).
            ``True`` means ``PER_WORKER`` (DeprecationWarning, as NVTabular).
        preserve_files : bool, default False
            One output file per input file, named after it (``day_0`` -> ``day_0.parquet``,
            ``train.csv`` -> ``train.parquet``), holding that file's rows (shuffled within
            each partition under ``Shuffle.PER_PARTITION``). Needs a dataset read from
            parquet or CSV files, or a workflow's transform of one.
        output_files : int, list of str or dict, optional
            An int: that many files ``part_<k>.parquet``; a list: those file names; both get
            consecutive partitions, in order. A dict ``{name: [partition, ...]}`` writes those
            partitions to that file (a tuple of names as key spreads them over the files);
            partitions no key lists are not written. Default: one file per partition, or
            ``out_files_per_proc`` per process.
        out_files_per_proc : int, optional
            Files per process (dask worker; 1 process without a cluster).
        row_group_size : int, optional
            Most rows in one parquet row group (default: pyarrow's).
        num_threads : int, default 0
            Accepted; the writer's parallelism follows the partitions.
        dtypes : dict, optional
            Cast columns before writing.
        cats, conts, labels : list of str, optional
            Tag columns as categorical / continuous / target in the written schema, and
            list them in HugeCTR's ``_metadata.json``.
        suffix : str, default ".parquet"
            Extension of the preserved file names.
        partition_on : str or list of str, optional
            Hive layout: ``<col>=<value>/part_<i>.parquet`` (the key columns live in the
            directory names, not in the files; nulls as ``__HIVE_DEFAULT_PARTITION__``).
            Not with ``output_files``, ``out_files_per_proc``, ``preserve_files`` or
            ``Shuffle.PER_WORKER``, as in NVTabular.
        method : {"subgraph", "worker"}
            Accepted; "worker" cannot be combined with ``output_files`` or ``preserve_files``.
        write_hugectr_keyset : bool, default False
            Also write HugeCTR's ``_hugectr.keyset`` (the keys of every column whose schema
            has Categorify's ``embedding_sizes``). HugeCTR's ``_file_list.txt`` and
            ``_metadata.json`` (listing ``cats``, ``conts`` and ``labels``) are always
            written, as NVTabular did (:mod:`tabflow.io.hugectr`).
        seed : int, optional
            Seed of the shuffle.
        overwrite : bool, default False
            Replace ``output_path`` and everything in it (never the current directory, one
            containing it or the home directory, nor a bucket's root).
        storage_options : dict, optional
            fsspec options for a URL ``output_path`` (default: the dataset's own).
        progress : bool, optional
            Show a progress bar of the partitions written (``tqdm.auto``; on a distributed
            cluster too). None (the default) shows one only for the result of
            ``Workflow.transform(..., progress=True)``. What is written is logged (logger
            ``tabflow.io.writer``, level INFO).

        Returns
        -------
        list of str
            The written parquet files.

        Examples
        --------
        >>> import tempfile, pandas as pd
        >>> import tabflow as nvt
        >>> out = tempfile.mkdtemp() + "/out"
        >>> files = nvt.Dataset(pd.DataFrame({"a": range(100)})).to_parquet(out, output_files=3)
        >>> len(files), nvt.Dataset(out).num_rows
        (3, 100)
        >>> import os, pyarrow.parquet as pq
        >>> pq.read_metadata(os.path.join(out, "_metadata")).num_rows
        100
        >>> src = tempfile.mkdtemp()
        >>> pd.DataFrame({"a": [1, 2]}).to_csv(os.path.join(src, "day_0"), index=False)
        >>> files = nvt.Dataset(os.path.join(src, "day_0"), engine="csv").to_parquet(out, preserve_files=True)
        >>> [os.path.basename(f) for f in files]
        ['day_0.parquet']
        """
        from tabflow.io.writer import write_parquet

        del num_threads  # accepted for NVTabular's scripts; see the docstring
        if method not in ("subgraph", "worker"):
            raise ValueError(f"{method} not a recognized method for `Dataset.to_parquet`")
        if method == "worker" and (output_files or preserve_files):
            raise ValueError("output_files and preserve_files require `method='subgraph'`")
        mode = normalize_shuffle(shuffle)
        client = active_client(self.client)
        partition_on = [partition_on] if isinstance(partition_on, str) else (list(partition_on) if partition_on else None)
        file_names = partition_files = None
        if partition_on:
            for name, given in (("output_files", output_files), ("out_files_per_proc", out_files_per_proc), ("preserve_files", preserve_files)):
                if given:
                    raise ValueError(f"`{name}` not supported when `partition_on` is used.")
            if mode is Shuffle.PER_WORKER:
                raise ValueError("Shuffle.PER_WORKER is not supported with partition_on (each key's rows go to their own directory); use Shuffle.PER_PARTITION")
            missing = [c for c in partition_on if c not in self.schema]
            if missing:
                raise KeyError(f"to_parquet: partition_on column(s) {missing} are not in the dataset ({self.schema.column_names})")
            if len(partition_on) >= len(self.schema):
                raise ValueError("No data left to save outside partition columns")
            output_files = 0
        elif preserve_files:
            file_names, partition_files = self._preserved_files(mode, output_files, out_files_per_proc, suffix)
            output_files = len(file_names)
        elif isinstance(output_files, Mapping):
            if out_files_per_proc:
                raise ValueError(
                    "Cannot specify out_files_per_proc if output_files is defined as a dictionary mapping; use a tuple "
                    "of file names as a key to spread partitions over several files"
                )
            file_names, partition_files = self._mapped_files(output_files)
            output_files = len(file_names)
        elif isinstance(output_files, (list, tuple)):
            file_names = [str(name) for name in output_files]
            if not file_names or len(set(file_names)) != len(file_names):
                raise ValueError(f"output_files must name distinct files, got {output_files!r}")
            output_files = len(file_names)
        elif output_files is None:
            if out_files_per_proc is not None:
                procs = len(client.nthreads()) if client is not None else 1
                output_files = out_files_per_proc * max(1, procs)
            else:
                output_files = self.npartitions
        elif isinstance(output_files, bool) or not isinstance(output_files, int):
            raise TypeError(f"{type(output_files).__name__} not a supported type for `output_files` (an int, a list of names or a dict)")
        schema, canonical_cast = self._written_schema("to_parquet", dtypes, cats, conts, labels)
        return write_parquet(
            self._ddf, output_path, schema, self.backend, output_files,
            shuffle=mode, seed=seed, client=client, cast=canonical_cast,
            file_names=file_names, partition_files=partition_files, overwrite=overwrite,
            row_group_size=row_group_size, partition_on=partition_on,
            storage_options=storage_options if storage_options is not None else self.storage_options,
            progress=self._progress if progress is None else progress,
            cats=list(cats or []), conts=list(conts or []), labels=list(labels or []),
            hugectr_keyset=write_hugectr_keyset, gathered=self._gathered,
        )

    def _written_schema(
        self, caller: str, dtypes: Mapping[str, Any] | None, cats: Sequence[str] | None,
        conts: Sequence[str] | None, labels: Sequence[str] | None,
    ) -> tuple[Schema, dict[str, str]]:
        """The schema written by ``caller``: ``dtypes`` applied (also returned, canonical, as
        the casts to make) and the ``cats`` / ``conts`` / ``labels`` columns tagged."""
        canonical_cast = {k: self.backend.canonical_dtype(v) for k, v in (dtypes or {}).items()}
        missing = [n for group in (cats, conts, labels) for n in (group or []) if n not in self.schema]
        if missing:
            raise KeyError(f"{caller}: column(s) {missing} are not in the dataset ({self.schema.column_names})")
        columns = []
        for column in self.schema:
            if column.name in canonical_cast:
                column = column.with_dtype(canonical_cast[column.name])
            for names, tag in ((cats, Tags.CATEGORICAL), (conts, Tags.CONTINUOUS), (labels, Tags.TARGET)):
                if names and column.name in names:
                    column = column.with_tags(tag)
            columns.append(column)
        return Schema(columns), canonical_cast

    def to_hugectr(
        self,
        output_path: str,
        cats: Sequence[str],
        conts: Sequence[str],
        labels: Sequence[str],
        shuffle: Any = None,
        file_partition_map: Mapping[str, Sequence[int]] | None = None,
        out_files_per_proc: int | None = None,
        num_threads: int = 0,
        dtypes: Mapping[str, Any] | None = None,
        seed: int | None = None,
        overwrite: bool = False,
    ) -> list[str]:
        """Write the dataset in HugeCTR's binary ``Norm`` format, atomically.

        Files ``<k>.data`` (labels and ``conts`` as float32, each of ``cats`` as a uint32 key;
        see :mod:`tabflow.io.hugectr`), with ``_file_list.txt``, ``_metadata.json`` and the
        schema, as NVTabular's ``to_hugectr`` wrote them (its files were named
        ``<k>.<random id>.data``). The arguments are NVTabular 23.08's, in its order;
        ``seed`` and ``overwrite`` are tabflow's, as in :meth:`to_parquet`.

        Parameters
        ----------
        output_path : str
            A local directory, replaced as :meth:`to_parquet` replaces one.
        cats, conts, labels : list of str
            Categorical columns (non-negative integers, e.g. Categorify's output; no nulls),
            continuous columns and labels (numeric; nulls become NaN).
        shuffle : Shuffle or None
            ``Shuffle.PER_PARTITION`` shuffles rows within each partition; ``PER_WORKER`` is
            refused, as in NVTabular.
        file_partition_map : dict, optional
            ``{file name: [partition, ...]}``: those partitions go to that file; others are
            not written.
        out_files_per_proc : int, optional
            Files per process (default 1; 1 process without a cluster).
        num_threads : int, default 0
            Accepted; the writer's parallelism follows the partitions.
        dtypes : dict, optional
            Dtypes recorded in the written schema.

        Returns
        -------
        list of str
            The written ``.data`` files.

        Examples
        --------
        >>> import os, tempfile, numpy as np, pandas as pd
        >>> import tabflow as nvt
        >>> out = tempfile.mkdtemp() + "/hugectr"
        >>> df = pd.DataFrame({"c": [3, 4, 5], "x": [0.5, 1.5, 2.5], "y": [0.0, 1.0, 0.0]})
        >>> [os.path.basename(f) for f in nvt.Dataset(df).to_hugectr(out, cats=["c"], conts=["x"], labels=["y"])]
        ['0.data']
        >>> np.fromfile(os.path.join(out, "0.data"), dtype="<i8", count=5).tolist()  # 0, rows, labels, conts, cats
        [0, 3, 1, 1, 1]
        >>> open(os.path.join(out, "_file_list.txt")).read().splitlines()[0]
        '1'
        """
        from tabflow.io.writer import write_hugectr

        del num_threads  # accepted for NVTabular's scripts; see the docstring
        mode = normalize_shuffle(shuffle)
        client = active_client(self.client)
        file_names = partition_files = None
        if file_partition_map is not None:
            if out_files_per_proc:
                raise ValueError("to_hugectr: out_files_per_proc cannot be combined with file_partition_map")
            file_names, targets = self._mapped_files(file_partition_map)
            if any(t is not None and len(t) > 1 for t in targets):
                raise ValueError("to_hugectr: file_partition_map keys are single file names")
            partition_files = [None if t is None else t[0] for t in targets]
            output_files = len(file_names)
        else:
            procs = len(client.nthreads()) if client is not None else 1
            output_files = (out_files_per_proc or 1) * max(1, procs)
        schema, _ = self._written_schema("to_hugectr", dtypes, cats, conts, labels)
        return write_hugectr(
            self._ddf, output_path, schema, self.backend, list(cats), list(conts), list(labels), output_files,
            partition_files=partition_files, file_names=file_names, shuffle=mode, seed=seed, client=client,
            overwrite=overwrite,
        )

    def _mapped_files(self, mapping: Mapping[Any, Sequence[int]]) -> tuple[list[str], list[Any]]:
        """File names and each partition's file(s) for ``output_files={name: partitions}``."""
        names: list[str] = []
        targets: list[Any] = [None] * self.npartitions
        for key, partitions in mapping.items():
            group = [str(k) for k in (key if isinstance(key, (tuple, list)) else (key,))]
            indices = tuple(range(len(names), len(names) + len(group)))
            names.extend(group)
            for partition in partitions:
                partition = int(partition)
                if not 0 <= partition < self.npartitions:
                    raise IndexError(f"output_files maps partition {partition} to {key!r}; the dataset has {self.npartitions} partitions")
                if targets[partition] is not None:
                    raise ValueError(f"output_files maps partition {partition} to more than one file")
                targets[partition] = indices
        if len(set(names)) != len(names):
            raise ValueError(f"output_files names a file more than once: {names}")
        return names, targets

    def _preserved_files(self, mode: Any, output_files: Any, out_files_per_proc: Any, suffix: str) -> tuple[list[str], list[int]]:
        """Output file names and each partition's file index for ``preserve_files=True``."""
        if output_files is not None or out_files_per_proc is not None:
            raise ValueError("to_parquet: preserve_files=True cannot be combined with output_files or out_files_per_proc")
        if mode is Shuffle.PER_WORKER:
            raise ValueError("to_parquet: preserve_files=True keeps each file's rows together; use Shuffle.PER_PARTITION or None")
        sources = self._partition_sources() if self._partition_sources is not None else None
        if sources is None or len(sources) != self.npartitions:
            raise ValueError(
                "to_parquet: preserve_files=True needs a dataset read from parquet or CSV files (or a workflow's "
                "transform of one); this one's partitions do not map to files"
            )
        single = [paths for paths in sources if isinstance(paths, str)]
        if len(single) < len(sources):
            gathering = next(paths for paths in sources if not isinstance(paths, str))
            raise ValueError(
                f"to_parquet: preserve_files=True writes each input file's rows to a file of its own, but a partition of "
                f"this dataset gathers several files ({list(gathering)[:3]}...): open the dataset without aggregate_files"
            )
        files = list(dict.fromkeys(single))
        names = [_preserved_name(path, suffix) for path in files]
        clashes = sorted({n for n in names if names.count(n) > 1})
        if clashes:
            raise ValueError(f"to_parquet: preserve_files=True would write {clashes} more than once (same file name in several directories)")
        index = {path: k for k, path in enumerate(files)}
        return names, [index[path] for path in single]

    def to_npy(self, output_file: str, append: bool = False) -> None:
        """Write the dataset as one 2-D ``.npy`` matrix, partition by partition.

        List columns of one length ``k`` become ``k`` columns; nulls, ragged lists and string
        columns are errors. ``append=True`` adds the rows to an existing ``.npy`` file.

        Examples
        --------
        >>> import os, tempfile, numpy as np, pandas as pd
        >>> import tabflow as nvt
        >>> path = os.path.join(tempfile.mkdtemp(), "x.npy")
        >>> nvt.Dataset(pd.DataFrame({"a": [1, 2], "v": [[0.5, 1.0], [1.5, 2.0]]})).to_npy(path)
        >>> np.load(path).tolist()
        [[1.0, 0.5, 1.0], [2.0, 1.5, 2.0]]
        """
        from tabflow.io.npy import write_npy

        if is_remote(output_file):
            raise ValueError(f"to_npy writes local files; {output_file!r} is a URL")
        write_npy(iter(self.to_iter(arrow_lists=True)), output_file, append=append)

    def __repr__(self) -> str:
        return f"Dataset(engine={self.engine!r}, npartitions={self.npartitions}, columns={self.schema.column_names})"


def _after(first: Callable[[Any], Any], then: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    return first if then is None else lambda frame: then(first(frame))


def _reopen(path_or_source: Any, engine: str | None, options: Any, cpu: bool) -> readers.Source:
    return readers.open_source(path_or_source, engine, dataclasses.replace(options, cpu=cpu))


def _preserved_name(path: str, suffix: str) -> str:
    base = basename(path)
    stem, ext = os.path.splitext(base)
    return (stem if ext.lower() in (".csv", ".tsv", ".parquet", ".avro", ".orc") else base) + suffix


def _merged_dtypes(left: Dataset, right: Dataset, options: Mapping[str, Any]) -> dict[str, str]:
    """The planned dtypes of a merge's columns: each side's, the nullable-integer rule applied
    to a side whose rows may be missing (``how="left"``: the right side's columns). Where the
    engine holds a plan as the merged column (an ``Int64`` column is ``int64`` on cuDF, which
    does not say that unmatched rows made nulls) the schema says it, as on pandas."""
    how = options.get("how", "inner")
    planned: dict[str, str] = {}
    for side, may_miss in ((left, how in ("right", "outer")), (right, how in ("left", "outer"))):
        for column in side.schema:
            dtype = str(column.dtype)
            planned.setdefault(column.name, nullable_dtype(dtype) if may_miss else dtype)
    return planned


def _held_as(backend: Any, name: str, canonical: str) -> bool:
    """True when ``backend`` holds a column of dtype ``name`` as one of dtype ``canonical``."""
    if name == canonical:
        return True
    try:
        return backend.canonical_dtype(backend.engine_dtype(name)) == canonical
    except (TypeError, ValueError, KeyError):  # a name the engine has no dtype for (unknown)
        return False
