"""Parquet: partitions planned from the files' footers, read directly or through dask.

Row groups are grouped into partitions of about ``part_size`` bytes, and each column's dtype
is fixed once for the whole dataset (an integer column with a null anywhere becomes a
nullable integer everywhere), so a partition's dtypes never depend on its contents. Column
types are unified across files (see :func:`tabflow.io.readers.unify_types`); a value that
does not fit the unified dtype is an error naming the file and row group.

Examples
--------
>>> import os, tempfile, pandas as pd
>>> from tabflow.io.readers import ReadOptions, read_parquet
>>> path = os.path.join(tempfile.mkdtemp(), "x.parquet")
>>> pd.DataFrame({"a": [1, 2, 3]}).to_parquet(path)
>>> source = read_parquet([path], ReadOptions(cpu=True))
>>> source.num_rows, source.partition_lengths, source.partition_sources() == [path]
(3, [3], True)
"""

from __future__ import annotations

import functools
from typing import Any, Mapping, Sequence

from tabflow.backends import get_backend
from tabflow.backends.kernels import concat_tables, open_parquet
from tabflow.io.fs import file_version, is_remote, open_file
from tabflow.io.memory import release_freed_memory
from tabflow.io.readers._shared import (
    DatasetReadError,
    TypePlan,
    check_unchanged,
    read_error,
    require_unique_names,
)
from tabflow.io.readers._source import ReadOptions, Source
from tabflow.schema.dtypes import arrow_canonical_dtype

__all__ = [
    "read_parquet", "read_parquet_ddf", "plan_parquet", "ParquetPartReader", "filter_columns", "hive_partitions",
    "gather_pieces", "piece_members",
]


def read_parquet(paths: Sequence[str], options: ReadOptions) -> Source:
    """The parquet reader: partitions planned from the footers, each readable directly.

    Besides ``Dataset``'s own arguments it takes ``filters=`` (pyarrow / dask DNF filters,
    such as ``[("a", ">", 50)]`` or ``[[("a", "<", 5)], [("b", "==", "x")]]``: rows that do not
    match are dropped, so the row count is counted on the filtered data), ``columns=`` (read
    only these columns) and ``row_groups_per_part=`` (a fixed number of row groups per
    partition instead of ``part_size``) and ``aggregate_files=`` (merlin's option: ``True``
    lets a partition gather row groups of several files up to ``part_size``; the name of a
    hive key, such as ``"day"`` for ``.../day=3/...``, gathers only files with the same value
    of that key and of the keys above it). Any other option is a ``TypeError``.
    """
    options.require_no_hex("parquet")
    extra = options.take_extra("parquet", ("filters", "columns", "row_groups_per_part", "aggregate_files"))
    filters = extra.get("filters") or None
    part_size = options.partition_bytes()
    ddf, lengths, (reader, pieces), sizes = read_parquet_ddf(
        paths, part_size, options.backend, options.canonical_dtypes,
        storage_options=options.storage_options, filters=filters, columns=extra.get("columns"),
        row_groups_per_part=extra.get("row_groups_per_part"), hive=hive_partitions(paths),
        aggregate_files=extra.get("aggregate_files", False),
    )
    known = {} if filters is not None else {"num_rows": sum(lengths), "partition_lengths": lengths}
    # With filters the footers count the rows before filtering: counted on demand instead.
    return Source(
        ddf, options.backend.name, direct=(reader, pieces), partition_sources=functools.partial(_piece_files, pieces),
        dtypes=reader.dtypes, partition_bytes=sizes, part_size=part_size, **known,
    )


def _piece_files(pieces: Sequence[tuple]) -> list[str | tuple[str, ...]]:
    """Each partition's file, or its files (in order) where it gathers several."""
    files: list[str | tuple[str, ...]] = []
    for piece in pieces:
        paths = tuple(dict.fromkeys(member[0] for member in piece_members(piece)))
        files.append(paths[0] if len(paths) == 1 else paths)
    return files


def piece_members(piece: tuple) -> tuple[tuple, ...]:
    """The ``(file, row groups, version)`` pieces a partition reads: itself, or those it
    gathers (:func:`gather_pieces`).

    Examples
    --------
    >>> from tabflow.io.readers.parquet import piece_members
    >>> piece_members(("a.parquet", (0, 1), None))
    (('a.parquet', (0, 1), None),)
    >>> piece_members((("a.parquet", (0,), None), ("b.parquet", (0,), None)))[1][0]
    'b.parquet'
    """
    return piece if piece and isinstance(piece[0], tuple) else (piece,)


def gather_pieces(
    pieces: Sequence[tuple], sizes: Sequence[float], limit: float, boundaries: Sequence[Any] | None = None,
) -> tuple[list[tuple], list[list[int]]]:
    """Consecutive pieces gathered into partitions of at most ``limit`` (in the units of
    ``sizes``), in order; a piece that is over ``limit`` alone stays alone, and pieces
    whose ``boundaries`` differ are never gathered. Returns the gathered pieces (a piece
    alone is returned as it is, several as a tuple of their members) and, for each, the
    indices of the pieces it gathers.

    Many small files make many small partitions, and every op pays a cost per partition on
    top of its cost per row: gathered into partitions of ``part_size``, they pay it once
    per ``part_size`` of rows.

    Examples
    --------
    >>> from tabflow.io.readers.parquet import gather_pieces
    >>> pieces = [("a", (0,), None), ("b", (0,), None), ("c", (0, 1), None), ("d", (0,), None)]
    >>> gathered, groups = gather_pieces(pieces, [10, 20, 90, 5], limit=64)
    >>> groups
    [[0, 1], [2], [3]]
    >>> gathered[1] == pieces[2], [m[0] for m in gathered[0]]
    (True, ['a', 'b'])
    """
    groups: list[list[int]] = []
    total = 0.0
    for index, size in enumerate(sizes):
        same_side = boundaries is None or (groups and boundaries[groups[-1][-1]] == boundaries[index])
        if groups and same_side and total + size <= limit:
            groups[-1].append(index)
            total += size
        else:
            groups.append([index])
            total = size
    gathered = [
        pieces[group[0]] if len(group) == 1 else tuple(m for i in group for m in piece_members(pieces[i]))
        for group in groups
    ]
    return gathered, groups


class ParquetPartReader:
    """Reads one planned partition (a file and some of its row groups).

    Local files without filters go to the backend's parquet reader (cuDF reads them
    natively); URLs (through fsspec with ``storage_options``) and filtered reads go through
    pyarrow, and the backend converts the table.
    """

    def __init__(
        self, engine: str, dtypes: Mapping[str, str], columns: Sequence[str] | None = None,
        storage_options: Mapping[str, Any] | None = None, filters: Any = None,
        hive: Mapping[str, Mapping[str, Any]] | None = None, dictionary_strings: Sequence[str] = (),
    ) -> None:
        self.engine = engine
        self.dtypes = dict(dtypes)
        self.columns = list(columns) if columns else None
        self.storage_options = dict(storage_options) if storage_options else None
        self.filters = filters
        self.hive = dict(hive) if hive else None  # file -> {key column: value} of a hive layout
        # String columns kept dictionary-encoded (see Dataset.to_ddf_for_graph).
        self.dictionary_strings = tuple(dictionary_strings)

    def with_columns(self, columns: Sequence[str]) -> "ParquetPartReader":
        """The same reader restricted to ``columns`` (in that order)."""
        return ParquetPartReader(
            self.engine, {c: self.dtypes[c] for c in columns}, columns=columns,
            storage_options=self.storage_options, filters=self.filters, hive=self.hive,
            dictionary_strings=[c for c in self.dictionary_strings if c in columns],
        )

    def with_dictionary_strings(self, columns: Sequence[str]) -> "ParquetPartReader":
        """The same reader keeping the string columns ``columns`` dictionary-encoded, as the
        files store them; the rows and values read are the same."""
        return ParquetPartReader(
            self.engine, self.dtypes, columns=self.columns, storage_options=self.storage_options,
            filters=self.filters, hive=self.hive, dictionary_strings=columns,
        )

    def __call__(self, piece: tuple) -> Any:
        """Partition ``piece``: ``(file, row groups, version)``, the version being the file's
        :func:`~tabflow.io.fs.file_version` when the dataset was planned (or None), or a
        tuple of such pieces read one after another into one frame (:func:`gather_pieces`).
        Each file must still be that one before and after it is read, so a dataset replaced
        while it is read fails with :class:`DatasetChangedError` instead of mixing two
        versions."""
        members = piece_members(piece)
        backend = get_backend(self.engine)
        release_freed_memory()  # what the previous partition freed, before this one is read
        for member in members:
            check_unchanged(member[0], _pinned(member), self.storage_options)
        try:
            frame = self._read(backend, members)
        except (DatasetReadError, MemoryError, ImportError):  # an engine that cannot load is not a bad file
            raise
        except Exception as err:  # noqa: BLE001 - pyarrow and cuDF raise many types for bad files
            for member in members:  # a file replaced meanwhile is not a bad file
                check_unchanged(member[0], _pinned(member), self.storage_options)
            failing = self._failing_part(backend, members)
            if failing is None:  # each file reads alone: joining them failed, not a file
                raise
            raise read_error("parquet", failing[0], err, failing[1]) from err
        for member in members:
            check_unchanged(member[0], _pinned(member), self.storage_options)
        return frame

    def _read(self, backend: Any, members: Sequence[tuple]) -> Any:
        parts = [(member[0], list(member[1])) for member in members]
        if self.filters is None and self.hive is None and not any(is_remote(path) for path, _ in parts):
            return backend.read_parquet_parts(parts, self.columns, self.dtypes, self.dictionary_strings)
        names = self.columns or list(self.dtypes)
        tables = [self._read_table(path, row_groups, names) for path, row_groups in parts]
        table = tables[0] if len(tables) == 1 else concat_tables(tables)
        return backend.from_arrow(table, {n: self.dtypes[n] for n in names}, self.dictionary_strings)

    def _read_table(self, path: str, row_groups: list[int], names: list[str]) -> Any:
        """Some row groups of one file through pyarrow: hive keys added, filters applied."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        keys = (self.hive or {}).get(path, {})
        wanted = names + [c for c in filter_columns(self.filters) if c not in names]
        with open_file(path, self.storage_options) as handle, open_parquet(handle, self.dictionary_strings) as parquet_file:
            stored = set(parquet_file.schema_arrow.names)
            table = parquet_file.read_row_groups(row_groups, columns=[c for c in wanted if c in stored or c not in keys])
        for key, value in keys.items():
            if key in wanted and key not in table.column_names:
                arrow_type = pa.int64() if isinstance(value, int) else pa.string()
                table = table.append_column(key, pa.array([value] * table.num_rows, arrow_type))
        if self.filters is not None:
            table = table.filter(pq.filters_to_expression(self.filters))
        return table.select(names)

    def _failing_part(self, backend: Any, members: Sequence[tuple]) -> tuple[str, int | None] | None:
        """The file and row group that fail on their own (read again only after a failure):
        the first of ``members`` that fails alone, and the first of its row groups that does
        (None: several files that each read alone)."""
        failing = members[0]
        if len(members) > 1:
            for member in members:
                try:
                    self._read(backend, [member])
                except Exception:  # noqa: BLE001
                    failing = member
                    break
            else:
                return None
        path, row_groups = failing[0], list(failing[1])
        if len(row_groups) <= 1:
            return path, row_groups[0] if row_groups else None
        for row_group in row_groups:
            try:
                self._read(backend, [(path, (row_group,))])
            except Exception:  # noqa: BLE001
                return path, row_group
        return path, None


def _pinned(member: tuple) -> Any:
    return member[2] if len(member) > 2 else None


def hive_partitions(paths: Sequence[str]) -> dict[str, dict[str, Any]] | None:
    """Each file's ``key=value`` directories below the files' common directory, when every
    file has the same keys (a hive layout, as ``to_parquet(partition_on=...)`` writes).

    Values are decoded as pyarrow does (percent-encoding; ``__HIVE_DEFAULT_PARTITION__`` is
    null) and are ints when every value of the key is an integer.

    Examples
    --------
    >>> from tabflow.io.readers.parquet import hive_partitions
    >>> hive_partitions(["/d/day=1/c=x%2Fy/p.parquet", "/d/day=2/c=z/p.parquet"])
    {'/d/day=1/c=x%2Fy/p.parquet': {'day': 1, 'c': 'x/y'}, '/d/day=2/c=z/p.parquet': {'day': 2, 'c': 'z'}}
    >>> hive_partitions(["/d/a.parquet", "/d/b.parquet"]) is None
    True
    """
    import urllib.parse

    if len(paths) < 2:
        return None
    split = [p.replace("\\", "/").split("/")[:-1] for p in paths]
    common = 0
    while all(len(parts) > common for parts in split) and len({parts[common] for parts in split}) == 1:
        common += 1
    found: dict[str, dict[str, Any]] = {}
    for path, parts in zip(paths, split):
        segments = parts[common:]
        if not segments or not all("=" in s and not s.startswith("=") for s in segments):
            return None
        found[path] = {}
        for segment in segments:
            key, _, value = segment.partition("=")
            found[path][key] = None if value == "__HIVE_DEFAULT_PARTITION__" else urllib.parse.unquote(value)
    keys = [list(v) for v in found.values()]
    if any(k != keys[0] for k in keys):
        return None
    for key in keys[0]:
        values = [v[key] for v in found.values() if v[key] is not None]
        if values and all(_is_int(v) for v in values):
            for v in found.values():
                v[key] = None if v[key] is None else int(v[key])
    return found


def _is_int(text: str) -> bool:
    try:
        int(text)
        return True
    except ValueError:
        return False


def filter_columns(filters: Any) -> list[str]:
    """The column names a DNF filter list refers to, in order of first use.

    Examples
    --------
    >>> from tabflow.io.readers.parquet import filter_columns
    >>> filter_columns([[("a", ">", 1), ("b", "==", 2)], [("a", "<", 0)]])
    ['a', 'b']
    """
    if not filters:
        return []
    groups = filters if isinstance(filters[0], (list, tuple)) and filters[0] and isinstance(filters[0][0], (list, tuple)) else [filters]
    names: list[str] = []
    for group in groups:
        for term in group:
            if term[0] not in names:
                names.append(term[0])
    return names


def _check_filters(filters: Any, columns: Sequence[str]) -> None:
    """ValueError for filters pyarrow cannot use, KeyError for unknown columns."""
    import pyarrow.parquet as pq

    try:
        pq.filters_to_expression(filters)
        names = filter_columns(filters)
    except (TypeError, ValueError, IndexError, NotImplementedError) as err:
        raise ValueError(
            f"filters={filters!r} is not a pyarrow/dask filter list (such as [('a', '>', 5)] or "
            f"[[('a', '<', 5)], [('b', '==', 'x')]]): {err}"
        ) from None
    unknown = [n for n in names if n not in columns]
    if unknown:
        raise KeyError(f"filters name column(s) {unknown} that the parquet files lack; columns are {list(columns)}")


def plan_parquet(
    files: Sequence[str], part_size: int, backend: Any, fixed: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None, row_groups_per_part: int | None = None,
) -> tuple[list, dict[str, str], list[int], list[float]]:
    """Partitions (file, row groups, file version), the dataset-wide dtypes, and each
    partition's row count and estimated in-memory bytes.

    Only footers are read (plus a small sample of one row group when string columns make
    the in-memory size unknown). ``fixed`` names columns whose dtype the caller sets: files
    whose types for them do not unify are not an error. URLs are read through fsspec with
    ``storage_options`` (their footers fetched a few at a time); ``row_groups_per_part``
    puts that many row groups in each partition instead of filling ``part_size``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    pieces: list[tuple[str, tuple[int, ...], tuple | None]] = []
    piece_rows: list[int] = []
    piece_bytes: list[float] = []
    reference = None
    null_counts: dict[str, int] = {}
    plan = TypePlan("parquet", fixed)
    expansion: float | None = None
    footers = _prefetch_footers(files, storage_options)
    for index, path in enumerate(files):
        try:
            if footers is None:
                version = file_version(path)
                metadata = pq.read_metadata(path)
            elif isinstance(footers[index], BaseException):
                raise footers[index]
            else:
                version, metadata = footers[index]
        except Exception as err:  # noqa: BLE001 - pyarrow raises several types for bad files
            raise DatasetReadError(
                f"cannot read parquet file {path!r} ({err}); check that it is a complete parquet file "
                "or pass engine='csv' for text files"
            ) from err
        schema = metadata.schema.to_arrow_schema()
        names = [n for n in schema.names if not n.startswith("__index_level_")]
        require_unique_names(
            names, f"parquet file {path!r}", "rewrite the file with the repeated column renamed or dropped",
            DatasetReadError,
        )
        if reference is None:
            reference = names
            null_counts = {n: 0 for n in names}
        elif set(names) != set(reference):
            raise DatasetReadError(
                f"parquet file {path!r} has columns {sorted(names)}, unlike {files[0]!r} ({sorted(reference)}); "
                "all files of a dataset must share their columns"
            )
        plan.add(path, schema, names)
        # A column of Arrow's null type holds nothing but nulls, whatever its statistics say.
        all_null = {n for n in names if pa.types.is_null(schema.field(n).type)}
        column_index = {metadata.schema.column(i).path.split(".")[0]: i for i in range(metadata.num_columns)}
        group: list[int] = []
        group_bytes, group_rows = 0.0, 0
        for rg in range(metadata.num_row_groups):
            row_group = metadata.row_group(rg)
            for name in reference:
                idx = column_index.get(name)
                stats = row_group.column(idx).statistics if idx is not None else None
                if name in all_null or stats is None or not stats.has_null_count:
                    null_counts[name] += 1 if row_group.num_rows else 0
                else:
                    null_counts[name] += stats.null_count
            if expansion is None:
                try:
                    expansion = _memory_expansion(path, row_group, backend, schema, storage_options)
                except Exception as err:  # noqa: BLE001 - the sample read meets a corrupt page first
                    raise read_error("parquet", path, err, rg) from err
            row_group_bytes = row_group.total_byte_size * expansion
            # Close the partition before it would outgrow part_size (a lone oversized row
            # group still makes one partition: row groups are never split).
            full = len(group) >= row_groups_per_part if row_groups_per_part else group_bytes + row_group_bytes > part_size
            if group and full:
                pieces.append((path, tuple(group), version))
                piece_rows.append(group_rows)
                piece_bytes.append(group_bytes)
                group, group_bytes, group_rows = [], 0.0, 0
            group.append(rg)
            group_bytes += row_group_bytes
            group_rows += row_group.num_rows
        if group or metadata.num_row_groups == 0:
            pieces.append((path, tuple(group), version))
            piece_rows.append(group_rows)
            piece_bytes.append(group_bytes)
    dtypes = {name: arrow_canonical_dtype(plan.types[name], null_counts[name] > 0) for name in reference or []}
    return pieces, dtypes, piece_rows, piece_bytes


_EXPANSION_SAMPLE_ROWS = 8192
_FOOTER_THREADS = 8


def _prefetch_footers(files: Sequence[str], storage_options: Mapping[str, Any] | None) -> list | None:
    """Each URL's version and footer (or the error reading them), fetched concurrently: one
    round trip per file to an object store adds up, a local read does not (None: read them
    in the loop)."""
    if not any(is_remote(path) for path in files):
        return None
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.parquet as pq

    def footer(path: str) -> Any:
        try:
            version = file_version(path, storage_options)
            with open_file(path, storage_options) as handle:
                return version, pq.read_metadata(handle)
        except Exception as err:  # noqa: BLE001 - reported by the planning loop, naming the file
            return err

    with ThreadPoolExecutor(max_workers=min(_FOOTER_THREADS, len(files)), thread_name_prefix="tabflow-footer") as pool:
        return list(pool.map(footer, files))


def _memory_expansion(path: str, row_group: Any, backend: Any, schema: Any, storage_options: Mapping[str, Any] | None = None) -> float:
    """In-memory bytes per uncompressed parquet byte.

    Parquet's uncompressed sizes understate what a frame holds (string columns become
    Python-visible string arrays with offsets and masks), so partitions planned from the
    metadata alone came out several times larger than ``part_size``. Null-free numeric
    columns hold exactly their item size per row; anything else is measured on a small sample.
    """
    if not row_group.num_rows or not row_group.total_byte_size:
        return 1.0
    per_row_parquet = row_group.total_byte_size / row_group.num_rows
    fixed = _fixed_width_row_bytes(row_group, schema)
    if fixed is not None:
        return max(1.0, fixed / per_row_parquet)
    import pyarrow.parquet as pq

    if is_remote(path):
        with open_file(path, storage_options) as raw, pq.ParquetFile(raw) as handle:
            batch = next(handle.iter_batches(batch_size=_EXPANSION_SAMPLE_ROWS, row_groups=[0]), None)
    else:
        with pq.ParquetFile(path) as handle:
            batch = next(handle.iter_batches(batch_size=_EXPANSION_SAMPLE_ROWS, row_groups=[0]), None)
    if batch is None or not batch.num_rows:
        return 1.0
    import pyarrow as pa

    frame = backend.from_arrow(pa.Table.from_batches([batch]))
    return max(1.0, backend.memory_usage(frame) / batch.num_rows / per_row_parquet)


def _fixed_width_row_bytes(row_group: Any, schema: Any) -> int | None:
    """Bytes per row in memory when every column is a null-free integer, float or boolean
    (one byte per boolean), else None: reading a sample would measure the same."""
    import pyarrow as pa

    if row_group.num_columns != len(schema):
        return None  # nested columns: leaves and fields differ
    total = 0
    for index, field in enumerate(schema):
        kind = field.type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
            return None
        stats = row_group.column(index).statistics
        if stats is None or not stats.has_null_count or stats.null_count:
            return None  # a null may turn the column into a masked (wider) one
        total += max(1, kind.bit_width // 8)
    return total


def read_parquet_ddf(
    files: Sequence[str], part_size: int, backend: Any, dtypes: Mapping[str, str] | None = None,
    storage_options: Mapping[str, Any] | None = None, filters: Any = None, columns: Sequence[str] | None = None,
    row_groups_per_part: int | None = None, hive: Mapping[str, Mapping[str, Any]] | None = None,
    aggregate_files: bool | str = False,
):
    """A dask DataFrame over the files, the rows of each partition, ``(reader, pieces)`` and
    each partition's estimated in-memory bytes: calling ``reader(pieces[i])`` reads partition
    ``i`` without going through dask. ``aggregate_files`` lets a partition gather several
    files (see :func:`read_parquet`)."""
    if row_groups_per_part is not None and (
        isinstance(row_groups_per_part, bool) or not isinstance(row_groups_per_part, int) or row_groups_per_part < 1
    ):
        raise ValueError(f"row_groups_per_part must be a positive int, got {row_groups_per_part!r}")
    hive = hive or {}
    if filters is not None and hive:
        # Files whose directories' keys no filter admits are not read at all.
        kept = [path for path in files if _keys_may_match(hive[path], filters)]
        files = kept or list(files[:1])  # one file keeps the columns (its rows are filtered out)
    boundaries = _aggregation_boundaries(files, aggregate_files, hive)
    pieces, planned, piece_rows, piece_bytes = plan_parquet(
        files, part_size, backend, fixed=list(dtypes or {}), storage_options=storage_options,
        row_groups_per_part=row_groups_per_part,
    )
    if boundaries is not None:
        if row_groups_per_part:  # gathered by their number of row groups, as planned
            sizes, limit = [float(len(p[1])) for p in pieces], float(row_groups_per_part)
        else:
            sizes, limit = piece_bytes, float(part_size)
        file_keys = dict(zip(files, boundaries))
        pieces, groups = gather_pieces(pieces, sizes, limit, [file_keys[p[0]] for p in pieces])
        piece_rows = [sum(piece_rows[i] for i in group) for group in groups]
        piece_bytes = [sum(piece_bytes[i] for i in group) for group in groups]
    for key in next(iter(hive.values())) if hive else ():
        if key not in planned:
            # Key columns of a hive layout come after the stored ones (as dask adds them).
            values = [v[key] for v in hive.values()]
            integral = any(isinstance(v, int) for v in values)
            planned[key] = ("Int64" if None in values else "int64") if integral else "string"
    unknown = sorted(set(dtypes or {}) - set(planned))
    if unknown:
        raise KeyError(f"dtypes names column(s) {unknown} that the parquet files lack; columns are {list(planned)}")
    planned.update(dtypes or {})
    if filters is not None:
        _check_filters(filters, list(planned))
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
        missing = [c for c in columns if c not in planned]
        if missing:
            raise KeyError(f"columns= names column(s) {missing} that the parquet files lack; columns are {list(planned)}")
        planned = {c: planned[c] for c in columns}
    # Naming the columns drops pandas' stored index columns and fixes the column order, so
    # every partition matches the planned ``meta`` whatever order each file stores.
    reader = ParquetPartReader(
        backend.name, planned, columns=list(planned), storage_options=storage_options, filters=filters, hive=hive
    )
    ddf = backend.from_map_ddf(reader, pieces, backend.empty_frame(planned), "tabflow-read-parquet")
    return ddf, piece_rows, (reader, pieces), piece_bytes


_KEY_TESTS = {
    "=": lambda v, x: v == x, "==": lambda v, x: v == x, "!=": lambda v, x: v != x,
    "<": lambda v, x: v < x, "<=": lambda v, x: v <= x, ">": lambda v, x: v > x, ">=": lambda v, x: v >= x,
    "in": lambda v, x: v in x, "not in": lambda v, x: v not in x,
}


def _keys_may_match(keys: Mapping[str, Any], filters: Any) -> bool:
    """Whether a file whose hive keys are ``keys`` may hold rows that ``filters`` (DNF)
    admit: False only when every conjunction has a term on a key that the key's value fails
    (a null key fails every comparison, as in pyarrow). Terms on other columns, or that do
    not compare, may match.

    Examples
    --------
    >>> from tabflow.io.readers.parquet import _keys_may_match
    >>> _keys_may_match({"day": 3}, [("day", "==", 2)]), _keys_may_match({"day": 3}, [[("day", "<", 2)], [("x", ">", 0)]])
    (False, True)
    """
    groups = filters if isinstance(filters[0], (list, tuple)) and filters[0] and isinstance(filters[0][0], (list, tuple)) else [filters]
    for group in groups:
        admitted = True
        for term in group:
            if not (isinstance(term, (list, tuple)) and len(term) == 3 and term[0] in keys and term[1] in _KEY_TESTS):
                continue
            value, operand = keys[term[0]], term[2]
            operands = list(operand) if term[1] in ("in", "not in") and isinstance(operand, (list, tuple, set, frozenset)) else [operand]
            if value is not None and not all(_same_kind(value, o) for o in operands):
                continue  # a key compared with a value of another type: left to the reader
            admitted = value is not None and bool(_KEY_TESTS[term[1]](value, operand))
            if not admitted:
                break
        if admitted:
            return True
    return False


def _same_kind(value: Any, other: Any) -> bool:
    number = (int, float)
    if isinstance(value, bool) or isinstance(other, bool):
        return False
    return (isinstance(value, number) and isinstance(other, number)) or (isinstance(value, str) and isinstance(other, str))


def _aggregation_boundaries(
    files: Sequence[str], aggregate_files: Any, hive: Mapping[str, Mapping[str, Any]],
) -> list[Any] | None:
    """What a partition's files must share under ``aggregate_files``: None (no gathering),
    one value for every file (``True``), or each file's hive keys down to the named one."""
    if aggregate_files is None or aggregate_files is False:
        return None
    if aggregate_files is True:
        return [None] * len(files)
    keys = list(next(iter(hive.values()))) if hive else []
    if not isinstance(aggregate_files, str):
        raise TypeError(
            f"aggregate_files must be True, False or the name of a hive partitioning key, got {aggregate_files!r}"
        )
    if aggregate_files not in keys:
        found = f"the files' hive keys are {keys}" if keys else "the files are not laid out as key=value directories"
        raise ValueError(
            f"aggregate_files={aggregate_files!r} names no hive partitioning key ({found}); pass one of the keys, "
            "or True to gather any files"
        )
    depth = keys.index(aggregate_files) + 1
    return [tuple(hive[path][key] for key in keys[:depth]) for path in files]
