"""Dataset: a partitioned, lazily read table (files or an in-memory frame) and its schema.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> ds = nvt.Dataset(pd.DataFrame({"a": range(10)}), npartitions=2)
>>> ds.num_rows, ds.npartitions, ds.schema["a"].dtype
(10, 2, 'int64')
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, Iterator, Mapping, Sequence

from tabflow.backends import get_backend
from tabflow.io import readers
from tabflow.io.partitions import active_client, iter_calls, iter_partitions
from tabflow.io.shuffle import normalize_shuffle
from tabflow.schema import ColumnSchema, Schema, Tags

__all__ = ["Dataset"]


class Dataset:
    """A table read in partitions, on the pandas (CPU) or cuDF (GPU) engine.

    Parameters
    ----------
    path_or_source : str, list of str, or DataFrame
        File path, glob, directory or a list of them; or an in-memory pandas/cuDF frame, or a
        dask DataFrame.
    engine : {"parquet", "csv", "orc", "criteo"} or a registered format, optional
        File format; guessed from the file names when omitted. ``"criteo"`` reads the raw
        Criteo click-log text format (tab-separated label, I1-I13, C1-C26; empty = null).
        :func:`tabflow.io.readers.register` adds formats.
    part_size : int or str, optional
        Target in-memory size of one partition: a positive number of bytes, or a string such
        as ``"64MB"``.
    part_mem_fraction : float, optional
        Partition size as a fraction of GPU memory (cuDF) or host memory (pandas), in (0, 1].
    npartitions : int, optional
        For in-memory frames: how many partitions to split them into.
    storage_options : dict, optional
        Accepted as NVTabular accepts it; tabflow reads local paths only.
    dtypes : dict, optional
        Column dtypes to read with: canonical names such as ``"int64"``, ``"string"``, or numpy
        dtypes (``np.int32``). CSV files read integer columns as their nullable dtypes (an
        empty field is a null) and take ``"hex"`` for hexadecimal id strings, parsed to
        nullable int64.
    cpu : bool, optional
        True: pandas; False: cuDF; None: cuDF when a GPU and cuDF are available.
    client : distributed.Client, optional
    schema : Schema, optional
        Column tags and properties; read from ``_schema.json`` (or ``schema.json``) next to the files when present.
    sep, names, header :
        CSV options (any separator, a header line or explicit ``names``).
    **kwargs
        Further CSV parser options (``skiprows``, ``quotechar``, ...).

    Examples
    --------
    >>> import os, tempfile, pandas as pd
    >>> import tabflow as nvt
    >>> d = tempfile.mkdtemp()
    >>> pd.DataFrame({"a": [1, 2, 3]}).to_parquet(os.path.join(d, "x.parquet"))
    >>> nvt.Dataset(d, engine="parquet").to_ddf().compute()["a"].tolist()
    [1, 2, 3]
    """

    def __init__(
        self,
        path_or_source: Any,
        engine: str | None = None,
        npartitions: int | None = None,
        part_size: int | str | None = None,
        part_mem_fraction: float | None = None,
        storage_options: Mapping[str, Any] | None = None,
        dtypes: Mapping[str, str] | None = None,
        client: Any = None,
        cpu: bool | None = None,
        schema: Schema | None = None,
        sep: str | None = None,
        names: Sequence[str] | None = None,
        header: Any = "infer",
        **kwargs: Any,
    ) -> None:
        options = readers.ReadOptions(  # validates part_size and part_mem_fraction
            cpu=cpu, npartitions=npartitions, part_size=part_size, part_mem_fraction=part_mem_fraction,
            dtypes=dtypes, sep=sep, names=names, header=header, storage_options=storage_options, extra=kwargs,
        )
        self._set_source(readers.open_source(path_or_source, engine, options), schema, client)

    @classmethod
    def _from_source(cls, source: readers.Source, schema: Schema | None = None, client: Any = None) -> "Dataset":
        """A dataset over a reader's result (or a derived frame, as ``repartition`` makes)."""
        dataset = cls.__new__(cls)
        dataset._set_source(source, schema, client)
        return dataset

    def _set_source(self, source: readers.Source, schema: Schema | None, client: Any) -> None:
        # The one place a dataset's state is set: __init__ and _from_source both end here.
        self.client = client
        self.engine = source.engine
        self._ddf = source.ddf
        self._num_rows = source.num_rows
        self._partition_lengths = source.partition_lengths
        self._direct = source.direct  # (reader, pieces): partitions read without dask
        # Source file of each partition, computed on demand (``to_parquet(preserve_files=True)``).
        self._partition_sources = source.partition_sources
        self.paths = list(source.paths)
        self.file_engine = source.format
        self.schema = self._build_schema(schema if schema is not None else source.schema)

    # ------------------------------------------------------------------- facts
    @property
    def backend(self) -> Any:
        return get_backend(self.engine)

    @property
    def npartitions(self) -> int:
        return self._ddf.npartitions

    @property
    def num_rows(self) -> int:
        """Number of rows (from file metadata when possible, else counted once)."""
        if self._num_rows is None:
            client = active_client(self.client)
            length = self._ddf.map_partitions(len).sum()
            self._num_rows = int(length.compute(scheduler=client) if client else length.compute())
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
            client = active_client(self.client)
            counts = self._ddf.map_partitions(len)
            lengths = counts.compute(scheduler=client) if client else counts.compute()
            self._partition_lengths = [int(n) for n in lengths]
            self._num_rows = sum(self._partition_lengths)
        return list(self._partition_lengths)

    def _build_schema(self, given: Schema | None) -> Schema:
        backend = self.backend
        columns = []
        for name, dtype in self._ddf.dtypes.items():
            canonical = backend.canonical_dtype(dtype)
            if given is not None and name in given:
                known = given[name]
                columns.append(known if str(known.dtype) == canonical else known.with_dtype(canonical))
            else:
                columns.append(ColumnSchema(str(name), dtype=canonical))
        return Schema(columns)

    # ------------------------------------------------------------------ access
    def to_ddf(self, columns: Sequence[str] | None = None) -> Any:
        """The dask DataFrame (optionally only some columns)."""
        return self._ddf[list(columns)] if columns else self._ddf

    def to_iter(
        self, columns: Sequence[str] | None = None, indices: Sequence[int] | None = None, prefetch: int = 2,
        convert: Callable[[Any], Any] | None = None,
    ) -> Iterator[Any]:
        """Yield the partitions as in-memory frames, in order (or in ``indices`` order).

        ``prefetch`` partitions are read ahead in threads (by the workers when a dask
        distributed client is active). ``convert(frame)``, when given, is yielded instead of
        each frame; locally it runs in the reading threads, so its work overlaps with the
        consumer's.

        Examples
        --------
        >>> import pandas as pd
        >>> import tabflow as nvt
        >>> ds = nvt.Dataset(pd.DataFrame({"x": range(6)}), npartitions=3)
        >>> list(ds.to_iter(indices=[2, 0], convert=lambda part: part["x"].sum()))
        [np.int64(9), np.int64(1)]
        """
        if self._direct is not None and active_client(self.client) is None:
            # Plain parquet files: read each partition directly, skipping dask's per-call
            # graph work (the data loader iterates every epoch).
            reader, pieces = self._direct
            reader = reader.with_columns(list(columns)) if columns else reader
            order = range(len(pieces)) if indices is None else indices
            return iter_calls([functools.partial(reader, pieces[i]) for i in order], prefetch=prefetch, convert=convert)
        return iter_partitions(self.to_ddf(columns), order=indices, prefetch=prefetch, client=self.client, convert=convert)

    def compute(self) -> Any:
        """The whole dataset as one in-memory frame."""
        client = active_client(self.client)
        return self._ddf.compute(scheduler=client) if client else self._ddf.compute()

    def head(self, n: int = 5) -> Any:
        return self._ddf.head(n, npartitions=-1)

    def repartition(self, npartitions: int) -> "Dataset":
        return self._derived(self._ddf.repartition(npartitions=npartitions))

    def shuffle_by_keys(self, keys: str | Sequence[str], npartitions: int | None = None) -> "Dataset":
        """A dataset whose partitions each hold every row of the key values they hold.

        Needed before ops that work on whole groups of rows within a partition, such as
        ``ops.Groupby`` and ``ops.DifferenceLag``. Rows with a null key form one group. The
        order of rows inside a partition is not kept: sort by time inside the op that needs
        it (``Groupby(sort_cols=...)``).

        Parameters
        ----------
        keys : str or list of str
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

    def _derived(self, ddf: Any) -> "Dataset":
        """A dataset over ``ddf`` (rows of this one, repartitioned) with this one's schema and client."""
        return Dataset._from_source(readers.Source(ddf, self.engine), self.schema, self.client)

    # ------------------------------------------------------------------- write
    def to_parquet(
        self,
        output_path: str,
        shuffle: Any = None,
        out_files_per_proc: int | None = None,
        output_files: int | None = None,
        dtypes: Mapping[str, str] | None = None,
        cats: Sequence[str] | None = None,
        conts: Sequence[str] | None = None,
        labels: Sequence[str] | None = None,
        seed: int | None = None,
        preserve_files: bool = False,
        suffix: str = ".parquet",
        overwrite: bool = False,
        **kwargs: Any,
    ) -> list[str]:
        """Write the dataset as parquet plus ``_schema.json``, atomically.

        Parameters
        ----------
        output_path : str
            Directory to create. An existing one is replaced, as a whole and only once the
            write succeeded, when it is empty or a previous tabflow dataset (it holds
            ``_schema.json``); any other existing path (a folder of other files, a file) is
            an error before anything is written, unless ``overwrite=True``.
        shuffle : Shuffle or None
            ``Shuffle.PER_PARTITION``, ``Shuffle.PER_WORKER`` or None (row order kept).
        out_files_per_proc : int, optional
            Files per process (dask worker; 1 process without a cluster).
        output_files : int, optional
            Exact number of files; default one per partition.
        dtypes : dict, optional
            Cast columns before writing.
        cats, conts, labels : list of str, optional
            Tag columns as categorical / continuous / target in the written schema.
        seed : int, optional
            Seed of the shuffle.
        preserve_files : bool, default False
            One output file per input file, named after it (``day_0`` -> ``day_0.parquet``,
            ``train.csv`` -> ``train.parquet``), holding that file's rows (shuffled within
            each partition under ``Shuffle.PER_PARTITION``). Needs a dataset read from
            parquet or CSV files, or a workflow's transform of one.
        suffix : str, default ".parquet"
            Extension of the preserved file names.
        overwrite : bool, default False
            Replace ``output_path`` whatever it holds (never the current directory or one
            containing it).
        **kwargs
            NVTabular's ``num_threads``, ``method`` and ``write_hugectr_keyset`` are accepted
            so its scripts run, and change nothing: the writer's parallelism follows the
            partitions, and HugeCTR's ``_file_list.txt`` / ``_metadata.json`` / keyset files
            are not written (tabflow's loaders read ``_schema.json``). Any other argument is
            a ``TypeError``.

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
        >>> import os
        >>> src = tempfile.mkdtemp()
        >>> pd.DataFrame({"a": [1, 2]}).to_csv(os.path.join(src, "day_0"), index=False)
        >>> files = nvt.Dataset(os.path.join(src, "day_0"), engine="csv").to_parquet(out, preserve_files=True)
        >>> [os.path.basename(f) for f in files]
        ['day_0.parquet']
        """
        from tabflow.io.writer import write_parquet

        unknown = set(kwargs) - {"num_threads", "write_hugectr_keyset", "method"}
        if unknown:
            raise TypeError(f"to_parquet got unexpected argument(s) {sorted(unknown)}")
        mode = normalize_shuffle(shuffle)
        client = active_client(self.client)
        file_names = partition_files = None
        if preserve_files:
            file_names, partition_files = self._preserved_files(mode, output_files, out_files_per_proc, suffix)
            output_files = len(file_names)
        if output_files is None:
            if out_files_per_proc is not None:
                procs = len(client.nthreads()) if client is not None else 1
                output_files = out_files_per_proc * max(1, procs)
            else:
                output_files = self.npartitions
        schema = self.schema
        canonical_cast = {k: self.backend.canonical_dtype(v) for k, v in (dtypes or {}).items()}
        columns = []
        for column in schema:
            if column.name in canonical_cast:
                column = column.with_dtype(canonical_cast[column.name])
            for names, tag in ((cats, Tags.CATEGORICAL), (conts, Tags.CONTINUOUS), (labels, Tags.TARGET)):
                if names and column.name in names:
                    column = column.with_tags(tag)
            columns.append(column)
        missing = [n for group in (cats, conts, labels) for n in (group or []) if n not in schema]
        if missing:
            raise KeyError(f"to_parquet: column(s) {missing} are not in the dataset ({schema.column_names})")
        return write_parquet(
            self._ddf, output_path, Schema(columns), self.backend, output_files,
            shuffle=mode, seed=seed, client=client, cast=canonical_cast,
            file_names=file_names, partition_files=partition_files, overwrite=overwrite,
        )

    def _preserved_files(self, mode: Any, output_files: Any, out_files_per_proc: Any, suffix: str) -> tuple[list[str], list[int]]:
        """Output file names and each partition's file index for ``preserve_files=True``."""
        from tabflow.io.shuffle import Shuffle

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
        files = list(dict.fromkeys(sources))
        names = [_preserved_name(path, suffix) for path in files]
        clashes = sorted({n for n in names if names.count(n) > 1})
        if clashes:
            raise ValueError(f"to_parquet: preserve_files=True would write {clashes} more than once (same file name in several directories)")
        index = {path: k for k, path in enumerate(files)}
        return names, [index[path] for path in sources]

    def __repr__(self) -> str:
        return f"Dataset(engine={self.engine!r}, npartitions={self.npartitions}, columns={self.schema.column_names})"


def _preserved_name(path: str, suffix: str) -> str:
    base = os.path.basename(path)
    stem, ext = os.path.splitext(base)
    return (stem if ext.lower() in (".csv", ".tsv", ".parquet", ".avro", ".orc") else base) + suffix

