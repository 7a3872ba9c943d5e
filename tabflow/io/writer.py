"""Streaming, atomic parquet writer behind :meth:`tabflow.Dataset.to_parquet`.

Partitions are computed a few at a time and streamed into the open parquet writers, so
memory is bounded by the partitions in flight, not by the dataset. Files are written into a
temporary sibling directory together with ``_schema.json`` (tabflow's schema),
``.merlin/schema.json`` (the same columns as TensorFlow Metadata JSON, which merlin-core
reads) and ``_metadata`` (the parquet summary of every file's row groups, which dask and
pyarrow read instead of each footer); only when every file is closed is that directory
published as the requested path, so an interrupted write never leaves a directory that
looks like a complete dataset; into a directory holding other files, the files are added
beside them and only a previous dataset's files are ever replaced (or, with
``overwrite=True``, anything).

Local paths are published with :mod:`tabflow.io.atomic` (an atomic rename); URLs
(``s3://...``) with :mod:`tabflow.io.remote_atomic` (files moved with ``_schema.json``
last; see there what an object store allows).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import json
import logging
import os
import threading
import urllib.parse
from typing import Any, Mapping, Sequence

import dask.local
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tabflow._paths import check_name
from tabflow.io import atomic, hugectr, remote_atomic
from tabflow.io.cluster import active_client
from tabflow.io.fs import filesystem, is_remote, local_path
from tabflow.io.memory import keep_large_buffers_mapped
from tabflow.io.partitions import iter_calls, iter_partitions
from tabflow.io.progress import partition_bar
from tabflow.io.readers._schema_files import schema_formats
from tabflow.io.shuffle import Shuffle
from tabflow.schema import SCHEMA_FILENAME, Schema

__all__ = ["write_parquet", "write_hugectr", "portable_schema", "METADATA_FILENAME", "HIVE_NULL"]

logger = logging.getLogger(__name__)

#: The parquet summary file (every file's row groups, with their paths), as dask and Spark write it.
METADATA_FILENAME = "_metadata"
#: The directory value of a null key in a hive-partitioned layout (as Spark and pyarrow write it).
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

# Below this many rows a partition is not split further across files (tiny row groups would
# make the output slow to read).
_MIN_SLICE_ROWS = 8192


def write_parquet(
    ddf: Any,
    output_path: str,
    schema: Schema,
    backend: Any,
    output_files: int,
    shuffle: Shuffle | None = None,
    seed: int | None = None,
    client: Any = None,
    cast: Mapping[str, str] | None = None,
    file_names: Sequence[str] | None = None,
    partition_files: Sequence[Any] | None = None,
    overwrite: bool = False,
    row_group_size: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    partition_on: Sequence[str] | None = None,
    progress: bool = False,
    cats: Sequence[str] = (),
    conts: Sequence[str] = (),
    labels: Sequence[str] = (),
    hugectr_keyset: bool = False,
    gathered: Gathered | None = None,
) -> list[str]:
    """Write ``ddf`` as parquet plus ``_schema.json``, ``.merlin/schema.json`` and ``_metadata``;
    return the paths of the data files.

    HugeCTR's ``_file_list.txt`` and ``_metadata.json`` (with the roles ``cats``, ``conts``,
    ``labels``) are written too, as merlin wrote them, and ``_hugectr.keyset`` with
    ``hugectr_keyset`` (:mod:`tabflow.io.hugectr`).

    ``file_names`` names the ``output_files`` files (default ``part_<k>.parquet``).
    ``partition_files`` gives, per partition, the index of its file, a tuple of indices (its
    rows are spread over those files) or None (the partition is not written), instead of
    spreading partitions over the files in order. ``partition_on`` writes a hive layout
    instead: ``<col>=<value>/part_<i>.parquet`` for every key of partition ``i``, without the
    key columns in the files. ``row_group_size`` caps the rows of one row group. An existing
    ``output_path`` is replaced as :mod:`tabflow.io.atomic` says: as a whole when it is empty
    or holds only a previous dataset, else the files are added beside what it holds.
    ``progress`` shows a bar of the partitions written. ``gathered`` computes the same rows
    over fewer partitions where the write keeps the partitions' order (:class:`Gathered`).
    """
    if output_files < 1 and not partition_on:
        raise ValueError(f"output_files must be at least 1, got {output_files}")
    if row_group_size is not None and (isinstance(row_group_size, bool) or not isinstance(row_group_size, (int, np.integer)) or row_group_size < 1):
        raise ValueError(f"row_group_size must be a positive number of rows, got {row_group_size!r}")
    for key in partition_on or ():
        _check_hive_key(key)
    output = _Output(output_path, overwrite, storage_options)
    keep_large_buffers_mapped()
    nparts = ddf.npartitions
    if shuffle is None and output_files > nparts and partition_files is None and not partition_on:
        ddf = ddf.repartition(npartitions=output_files)
        nparts = ddf.npartitions
        gathered = None
    names = list(file_names) if file_names is not None else [f"part_{k}.parquet" for k in range(output_files)]
    output.claim([] if partition_on else names, _metadata_names(hugectr_keyset))
    columns = [c for c in schema.column_names if c not in (partition_on or ())]
    arrow_schema = portable_schema(backend.to_arrow(backend.empty_frame(schema.dtypes)).schema.remove_metadata())
    file_schema = pa.schema([arrow_schema.field(c) for c in columns])
    rng = np.random.default_rng(seed)
    target = output.url if output.remote else output.path
    parts_written = nparts if partition_files is None else sum(files is not None for files in partition_files)
    if partition_on:
        logger.info("writing %d partition(s) to %s, one directory per value of %s", parts_written, target, list(partition_on))
    else:
        logger.info(
            "writing %d partition(s) to %d file(s) in %s%s", parts_written, len(names), target,
            f", shuffled {shuffle.name}" if shuffle is not None else "",
        )
    output.begin()
    written: list[str] = []
    footers: list[Any] = []
    try:
        with partition_bar(parts_written, progress, f"write {target.rstrip('/').rpartition('/')[2] or target}") as partition_done:
            if partition_on:
                written = _write_hive(ddf, output, schema, backend, cast, partition_on, shuffle, rng, client, arrow_schema, file_schema, row_group_size, footers, partition_done)
            else:
                _write_files(ddf, output, schema, backend, cast, names, nparts, partition_files, shuffle, rng, client, arrow_schema, row_group_size, footers, partition_done, gathered)
                written = names
        file_rows = [footer.num_rows for footer in footers]  # before the summary merges them
        rows = sum(file_rows)
        output.write(METADATA_FILENAME, _summary(file_schema, footers))
        _write_hugectr_metadata(output, written, file_rows, columns, cats, conts, labels)
        if hugectr_keyset:
            output.write(hugectr.KEYSET, hugectr.keyset(schema))
        _write_schema_files(output, schema)
        output.publish()
    except BaseException:
        output.discard()
        raise
    logger.info("wrote %d file(s), %d rows, to %s", len(written), rows, target)
    return [output.final(name) for name in written]


def write_hugectr(
    ddf: Any,
    output_path: str,
    schema: Schema,
    backend: Any,
    cats: Sequence[str],
    conts: Sequence[str],
    labels: Sequence[str],
    output_files: int,
    partition_files: Sequence[Any] | None = None,
    file_names: Sequence[str] | None = None,
    shuffle: Shuffle | None = None,
    seed: int | None = None,
    client: Any = None,
    overwrite: bool = False,
) -> list[str]:
    """Write ``ddf`` in HugeCTR's binary format: files ``<k>.data`` (or ``file_names``) plus
    ``_file_list.txt``, ``_metadata.json`` and the schema files; return the data files.

    Partitions spread over the files as in :func:`write_parquet` (``partition_files``: each
    partition's file index, or None to leave it out). Local paths only: a ``.data`` header
    holds its row count, written last.
    """
    if shuffle is Shuffle.PER_WORKER:
        raise ValueError("HugeCTR's binary format cannot be written with Shuffle.PER_WORKER (as in NVTabular); use Shuffle.PER_PARTITION")
    missing = [c for c in [*cats, *conts, *labels] if c not in schema]
    if missing:
        raise KeyError(f"to_hugectr: column(s) {missing} are not in the dataset ({schema.column_names})")
    if is_remote(local_path(output_path)):
        raise ValueError(f"to_hugectr writes to a local directory, not {output_path!r}: write it locally, then copy the directory")
    if output_files < 1:
        raise ValueError(f"output_files must be at least 1, got {output_files}")
    output = _Output(output_path, overwrite, None)
    names = list(file_names) if file_names is not None else [f"{k}{hugectr.DATA_SUFFIX}" for k in range(output_files)]
    output.claim(names, _metadata_names(False))
    nparts = ddf.npartitions
    order = None if partition_files is None else [i for i, f in enumerate(partition_files) if f is not None]
    rng = np.random.default_rng(seed)
    roles = [list(labels), list(conts), list(cats)]
    logger.info("writing %d partition(s) to %d HugeCTR file(s) in %s", nparts if order is None else len(order), len(names), output.path)
    output.begin()
    try:
        with contextlib.ExitStack() as files:
            rows = _write_hugectr_files(ddf, output, files, names, roles, partition_files, nparts, order, shuffle, rng, client, backend)
        _write_hugectr_metadata(output, names, rows, schema.column_names, cats, conts, labels)
        _write_schema_files(output, schema)
        output.publish()
    except BaseException:
        output.discard()
        raise
    logger.info("wrote %d HugeCTR file(s), %d rows, to %s", len(names), sum(rows), output.path)
    return [output.final(name) for name in names]


def _write_hugectr_files(ddf, output, files, names, roles, partition_files, nparts, order, shuffle, rng, client, backend) -> list[int]:
    """Stream the partitions into the ``.data`` files (kept open in ``files``); returns the
    rows of each file, whose headers are written last."""
    handles = [files.enter_context(open(output.sink(name, []), "wb")) for name in names]
    rows = [0] * len(names)
    for handle in handles:
        handle.write(bytes(hugectr.HEADER_BYTES))
    indices = range(nparts) if order is None else order
    for index, frame in zip(indices, iter_partitions(ddf, order=order, prefetch=_prefetch(), client=client)):
        table = backend.to_arrow(frame[[c for role in roles for c in role]]).replace_schema_metadata(None)
        if partition_files is None:
            pieces = _route(_TablePieces(), table, index, nparts, len(names), shuffle, rng)
        else:
            if shuffle is not None:
                table = table.take(pa.array(rng.permutation(table.num_rows)))
            pieces = [(int(partition_files[index]), table)]
        for file_index, piece in pieces:
            if piece.num_rows:
                handles[file_index].write(hugectr.record_bytes(*(_role_array(piece, role, kind) for role, kind in zip(roles, ("float", "float", "key")))))
                rows[file_index] += piece.num_rows
    for handle, count in zip(handles, rows):
        handle.seek(0)
        handle.write(hugectr.header(count, *(len(role) for role in roles)))
    return rows


def _role_array(table: pa.Table, names: Sequence[str], kind: str) -> np.ndarray:
    """Columns ``names`` of ``table`` as a rows x columns array: float32 values, or the
    integer keys of categorical columns (which may not be null)."""
    columns = []
    for name in names:
        column = table.column(name)
        if kind == "key" and (column.null_count or not pa.types.is_integer(column.type)):
            problem = f"{column.null_count} null(s)" if column.null_count else f"type {column.type}"
            raise ValueError(
                f"to_hugectr: categorical column {name!r} has {problem}; HugeCTR keys are non-negative integers "
                "(encode it with ops.Categorify first)"
            )
        if kind == "float" and not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_boolean(column.type)):
            raise ValueError(f"to_hugectr: column {name!r} has type {column.type}; labels and continuous columns must be numeric")
        values = column.to_numpy(zero_copy_only=False)
        columns.append(values.astype(np.float32) if kind == "float" else values.astype(np.int64))
    dtype = np.float32 if kind == "float" else np.int64
    return np.column_stack(columns) if columns else np.empty((table.num_rows, 0), dtype=dtype)


def _metadata_names(keyset: bool) -> list[str]:
    """The files a dataset holds besides its data files."""
    names = [METADATA_FILENAME, hugectr.FILE_LIST, hugectr.METADATA_JSON, *(f.path for f in schema_formats() if f.write), SCHEMA_FILENAME]
    return [*names, hugectr.KEYSET] if keyset else names


def _write_schema_files(output: "_Output", schema: Schema) -> None:
    """The dataset's schema in each registered format that writes (merlin's
    ``.merlin/schema.json``) and as tabflow reads it (``_schema.json``, written last)."""
    for schema_format in schema_formats():
        if schema_format.write is not None:
            output.write(schema_format.path, schema_format.write(schema))
    output.write(SCHEMA_FILENAME, json.dumps(schema.to_dict(), indent=2).encode("utf-8"))


def _write_hugectr_metadata(output: "_Output", names: Sequence[str], rows: Sequence[int], columns: Sequence[str], cats, conts, labels) -> None:
    """HugeCTR's ``_file_list.txt`` (final paths) and ``_metadata.json``."""
    output.write(hugectr.FILE_LIST, hugectr.file_list([output.final(name) for name in names]))
    output.write(hugectr.METADATA_JSON, hugectr.metadata_json(names, rows, columns, cats, conts, labels))


def _write_files(ddf, output, schema, backend, cast, names, nparts, partition_files, shuffle, rng, client, arrow_schema, row_group_size, footers, partition_done, gathered=None) -> None:
    """The dataset's rows streamed into ``names``, each file open for the whole write.

    An engine that encodes parquet itself (cuDF, on the GPU: ``backend.parquet_file_writer``)
    writes its frames as they are, into local files; otherwise frames become Arrow tables
    written by pyarrow. Rows are routed to files the same way either way (the same random
    draws for a shuffle).
    """
    targets = None
    if partition_files is not None:
        targets = [None if t is None else (tuple(t) if isinstance(t, (tuple, list)) else (int(t),)) for t in partition_files]
        # Where several partitions share a group of files, a partition's place in its group
        # picks its file (without a shuffle), as partitions spread over files below.
        groups: dict = {}
        position: list = []
        for index, files in enumerate(targets):
            if files is None:
                position.append(None)
                continue
            members = groups.setdefault(files, [])
            position.append(len(members))
            members.append(index)
    order = None if targets is None else [i for i, t in enumerate(targets) if t is not None]
    sinks: list[Any] = []
    outputs: list[Any] = []
    try:
        paths = [] if output.remote else [output.sink(name, []) for name in names]
        native = [backend.parquet_file_writer(path, row_group_size) for path in paths]
        if native and all(writer is not None for writer in native):
            outputs = [_EngineFile(writer, path, arrow_schema) for writer, path in zip(native, paths)]
            pieces: Any = _FramePieces(backend)
        else:
            outputs = [
                _ArrowFile(pq.ParquetWriter(output.sink(name, sinks), arrow_schema, metadata_collector=footers), row_group_size)
                for name in names
            ]
            pieces = _TablePieces()
        indices = range(nparts) if order is None else order
        if shuffle is None and isinstance(pieces, _TablePieces) and active_client(client) is None:
            # Without a shuffle each partition goes whole to one file, chosen by its place.
            def file_of(index: int) -> int:
                if targets is None:
                    return _unshuffled_file(index, nparts, len(names))
                files = targets[index]
                assert files is not None  # partitions without files are not in ``order``
                return files[_unshuffled_file(position[index], len(groups[files]), len(files))]

            _write_side_by_side(ddf, indices, file_of, outputs, lambda frame: pieces.prepare(frame, schema, backend, cast, arrow_schema), partition_done, gathered)
        else:
            for index, frame in zip(indices, iter_partitions(ddf, order=order, prefetch=_prefetch(), client=client)):
                data = pieces.prepare(frame, schema, backend, cast, arrow_schema)
                if targets is None:
                    routed = _route(pieces, data, index, nparts, len(names), shuffle, rng)
                else:
                    files = targets[index]
                    assert files is not None  # partitions without files are not in ``order``
                    if len(files) == 1:
                        if shuffle is not None:
                            data = pieces.take(data, rng.permutation(pieces.rows(data)))
                        routed = [(files[0], data)]
                    else:
                        group = len(groups[files])
                        routed = [(files[k], piece) for k, piece in _route(pieces, data, position[index], group, len(files), shuffle, rng)]
                for file_index, piece in routed:
                    if pieces.rows(piece):
                        outputs[file_index].write(piece)
                partition_done()
        for out in outputs:
            out.close()
    finally:
        for out in outputs:
            try:
                out.close()
            except Exception:  # noqa: BLE001 - already failing; the temp dir is removed by the caller
                pass
        _close_all(sinks)
    if outputs and isinstance(outputs[0], _EngineFile):
        footers.extend(out.footer() for out in outputs)
    # Footers come in file order (pyarrow's ``close`` appends each); the summary names each file.
    for name, footer in zip(names, footers):
        footer.set_file_path(name)


def _write_side_by_side(
    ddf: Any, indices: Sequence[int], file_of: Any, outputs: list[Any], prepare: Any, partition_done: Any,
    gathered: Gathered | None = None,
) -> None:
    """Each partition computed, prepared and written by one of ``_prefetch() + 1`` threads.

    Computing a partition takes longer than writing it, so one thread computing ahead of a
    writing thread left the writer idle most of the time, and a core with it. Here every
    thread computes a partition and writes it; partitions of one file still go in in their
    order (a thread waits for the file's turn), so the files are those written one partition
    after another, byte for byte. At most one partition per thread is held, as many as one
    writer and its partitions computed ahead held.

    With ``gathered`` (every partition written, in order), a thread computes one of its
    gathered partitions, prepares it as one table and writes each partition's slice of it
    in that partition's turn: the files are the same, and small partitions pay the per
    partition costs of the computation once per gathered partition.
    """
    parts = ddf.to_delayed()
    turns = _FileTurns([file_of(index) for index in indices], indices)

    def compute_and_write(index: int) -> int:
        file = file_of(index)
        try:
            # dask's own synchronous scheduler, as a function: named by a string, it imports
            # distributed to look for a client first.
            table = prepare(parts[index].compute(scheduler=dask.local.get_sync))
        except BaseException:
            turns.fail(file, index)
            raise
        turns.write(file, index, (lambda: outputs[file].write(table)) if table.num_rows else None)
        return 1

    calls = [functools.partial(compute_and_write, index) for index in indices]
    if gathered is not None and list(indices) == list(range(len(parts))) and sum(map(len, gathered.groups)) == len(parts):
        joined = gathered.ddf.to_delayed()

        def compute_and_write_group(k: int) -> int:
            members = gathered.groups[k]
            done = 0  # members written
            try:
                table = prepare(joined[k].compute(scheduler=dask.local.get_sync))
                if table.num_rows != sum(gathered.lengths[index] for index in members):
                    # Not one row out per row in (an op declared row-wise that is not): each
                    # partition is computed on its own after all.
                    for index in members:
                        done += compute_and_write(index)
                    return done
                start = 0
                for index in members:
                    piece = table.slice(start, gathered.lengths[index])
                    start += gathered.lengths[index]
                    turns.write(file_of(index), index, functools.partial(outputs[file_of(index)].write, piece) if piece.num_rows else None)
                    done += 1
                return done
            except BaseException:
                # Every member not written fails its file from its place on: a partition of
                # a later group waiting for its turn there gives up instead of waiting forever.
                for index in members[done:]:
                    turns.fail(file_of(index), index)
                raise

        calls = [functools.partial(compute_and_write_group, k) for k in range(len(joined))]
    results = iter_calls(calls, prefetch=_prefetch() + 1)
    try:
        for written in results:
            for _ in range(written):
                partition_done()
    finally:
        results.close()


@dataclasses.dataclass(frozen=True)
class Gathered:
    """The partitions of a dataset computed over fewer, larger ones: partition ``k`` of
    ``ddf`` holds the rows of partitions ``groups[k]`` (consecutive, in order), and partition
    ``i`` has ``lengths[i]`` rows. A workflow's transform of many small files carries it
    (see :meth:`tabflow.Workflow.transform`)."""

    ddf: Any
    groups: Sequence[Sequence[int]]
    lengths: Sequence[int]


class _Abandoned(Exception):
    """A partition not written because an earlier partition of its file failed."""


class _FileTurns:
    """Writes into files in a given order of partitions, from any thread: a partition's write
    waits until the file's earlier partitions are written.

    A partition that fails fails its file from its place on: the file's later partitions
    stop waiting and are abandoned. Partitions of other files go on, and those before it in
    its file are written (a failure can be known before an earlier partition's turn comes,
    when a gathered partition fails), so the first error in partition order is the failed
    partition's own.
    """

    def __init__(self, files: Sequence[int], indices: Sequence[int]) -> None:
        self._queues: dict[int, collections.deque] = {}
        self._place: dict[int, int] = {}  # partition -> its place in its file's order
        for file, index in zip(files, indices):
            queue = self._queues.setdefault(file, collections.deque())
            self._place[index] = len(queue)
            queue.append(index)
        self._failed_from: dict[int, int] = {}  # file -> the place of its first failed partition
        self._changed = threading.Condition()

    def _abandoned(self, file: int, index: int) -> bool:
        return self._failed_from.get(file, len(self._place) + 1) <= self._place[index]

    def write(self, file: int, index: int, action: Any) -> None:
        """Run ``action`` (None: nothing to write) when it is partition ``index``'s turn in ``file``."""
        queue = self._queues[file]
        with self._changed:
            self._changed.wait_for(lambda: self._abandoned(file, index) or queue[0] == index)
            if self._abandoned(file, index):
                raise _Abandoned(f"partition {index} was not written: an earlier partition of its file failed")
        try:
            if action is not None:
                action()  # alone in the file: its next partition waits for the popleft below
        except BaseException:
            self.fail(file, index)
            raise
        with self._changed:
            queue.popleft()
            self._changed.notify_all()

    def fail(self, file: int, index: int) -> None:
        """Partition ``index`` of ``file`` will not be written: nor will the file's later ones."""
        with self._changed:
            place = self._place[index]
            self._failed_from[file] = min(place, self._failed_from.get(file, place))
            self._changed.notify_all()


class _ArrowFile:
    """A file written by pyarrow (its footer is collected by the writer's metadata_collector)."""

    def __init__(self, writer: pq.ParquetWriter, row_group_size: int | None) -> None:
        self.writer, self.row_group_size, self.closed = writer, row_group_size, False

    def write(self, table: pa.Table) -> None:
        self.writer.write_table(table, row_group_size=self.row_group_size)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.writer.close()


class _EngineFile:
    """A file written by the engine's own writer; its footer is read back once it is closed."""

    def __init__(self, writer: Any, path: str, arrow_schema: pa.Schema) -> None:
        self.writer, self.path, self.arrow_schema = writer, path, arrow_schema

    def write(self, frame: Any) -> None:
        self.writer.write(frame)

    def close(self) -> None:
        self.writer.close()

    def footer(self) -> Any:
        if not os.path.exists(self.path):
            # An engine writer that received no rows leaves no file: an empty one has the schema.
            pq.write_table(self.arrow_schema.empty_table(), self.path)
        return pq.read_metadata(self.path)


class _TablePieces:
    """Routing on Arrow tables (the pyarrow path)."""

    @staticmethod
    def prepare(frame: Any, schema: Schema, backend: Any, cast: Mapping[str, str] | None, arrow_schema: pa.Schema) -> pa.Table:
        return _table(frame, schema, backend, cast, arrow_schema)

    @staticmethod
    def rows(table: pa.Table) -> int:
        return table.num_rows

    @staticmethod
    def take(table: pa.Table, order: np.ndarray) -> pa.Table:
        return table.take(pa.array(order))

    @staticmethod
    def slice(table: pa.Table, start: int, length: int) -> pa.Table:
        return table.slice(start, length)


class _FramePieces:
    """Routing on the engine's frames (an engine that writes parquet itself)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    @staticmethod
    def prepare(frame: Any, schema: Schema, backend: Any, cast: Mapping[str, str] | None, arrow_schema: pa.Schema) -> Any:
        if cast:
            frame = frame.astype({k: backend.engine_dtype(v) for k, v in cast.items() if k in frame.columns})
        return frame[schema.column_names]

    @staticmethod
    def rows(frame: Any) -> int:
        return len(frame)

    def take(self, frame: Any, order: np.ndarray) -> Any:
        return self.backend.take_rows(frame, order)

    def slice(self, frame: Any, start: int, length: int) -> Any:
        return self.backend.slice_rows(frame, start, start + length)


def _write_hive(ddf, output, schema, backend, cast, keys, shuffle, rng, client, arrow_schema, file_schema, row_group_size, footers, partition_done) -> list[str]:
    """One complete file per partition and key: ``k1=v1/k2=v2/part_<i>.parquet``."""
    import pyarrow.compute as pc

    written = []
    for index, frame in enumerate(iter_partitions(ddf, prefetch=_prefetch(), client=client)):
        table = _table(frame, schema, backend, cast, arrow_schema)
        if shuffle is not None:
            table = table.take(pa.array(rng.permutation(table.num_rows)))
        if not table.num_rows:
            partition_done()
            continue
        codes, values = [], []
        for key in keys:
            encoded = pc.dictionary_encode(table[key]).combine_chunks()
            dictionary = encoded.dictionary.to_pylist() + [None]  # nulls get the last code
            indices = pc.fill_null(encoded.indices, len(dictionary) - 1).to_numpy(zero_copy_only=False)
            codes.append(indices.astype(np.int64, copy=False))
            values.append(dictionary)
        groups, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        for group_index, group in enumerate(groups):
            rows = np.flatnonzero(inverse == group_index)
            directory = "/".join(f"{key}={_hive_value(values[k][code])}" for k, (key, code) in enumerate(zip(keys, group)))
            name = f"{directory}/part_{index}.parquet"
            piece = table.take(pa.array(rows)).select(file_schema.names)
            sinks: list[Any] = []
            try:
                with pq.ParquetWriter(output.sink(name, sinks), file_schema, metadata_collector=footers) as writer:
                    writer.write_table(piece, row_group_size=row_group_size)
            finally:
                _close_all(sinks)
            footers[-1].set_file_path(name)
            written.append(name)
        partition_done()
    return written


def _check_hive_key(key: Any) -> None:
    """A ``partition_on`` column names a directory level (``<key>=<value>``): a plain name
    that hive readers do not skip (no leading ``.`` or ``_``) and that holds no ``=``."""
    check_name(key, "a partition_on column's name", max_parts=1)
    if key.startswith((".", "_")) or "=" in key:
        raise ValueError(
            f"partition_on column {key!r} cannot name a directory level: hive readers skip names starting with '.' "
            "or '_', and '=' separates the column from the value. Rename the column first"
        )


def _hive_value(value: Any) -> str:
    # Percent-encoded as pyarrow's hive partitioning decodes it ("uri" segment encoding).
    return HIVE_NULL if value is None else urllib.parse.quote(str(value), safe="")


def _prefetch() -> int:
    """Partitions computed ahead of the one being written: one per core besides the writing
    thread, at most two (so at most three partitions in memory). Where partitions are written
    side by side (:func:`_write_side_by_side`), one more than this computes and writes."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(2, cores - 1))


def _table(frame: Any, schema: Schema, backend: Any, cast: Mapping[str, str] | None, arrow_schema: pa.Schema) -> pa.Table:
    if cast:
        frame = frame.astype({k: backend.engine_dtype(v) for k, v in cast.items() if k in frame.columns})
    table = backend.to_arrow(frame[schema.column_names]).replace_schema_metadata(None)
    return table if table.schema == arrow_schema else table.cast(arrow_schema)


def _summary(file_schema: pa.Schema, footers: Sequence[Any]) -> bytes:
    """The ``_metadata`` file: the schema and every file's row groups (paths relative)."""
    sink = pa.BufferOutputStream()
    # A file without rows adds no row group (and an engine's writer and pyarrow may spell
    # an empty file's schema differently).
    footers = [footer for footer in footers if footer.num_row_groups] or list(footers[:1])
    if not footers:
        pq.write_metadata(file_schema, sink)
        return sink.getvalue().to_pybytes()
    merged = footers[0]
    for footer in footers[1:]:
        merged.append_row_groups(footer)
    merged.write_metadata_file(sink)
    return sink.getvalue().to_pybytes()


def _close_all(handles: list) -> None:
    while handles:
        handle = handles.pop()
        try:
            handle.close()
        except Exception:  # noqa: BLE001 - a failed upload is reported by the write that follows
            pass


class _Output:
    """The temporary directory a write goes to and its publication at ``path``: local
    (atomic rename) or through fsspec (files moved, the schema last)."""

    def __init__(self, path: str, overwrite: bool, storage_options: Mapping[str, Any] | None) -> None:
        path = local_path(path)
        self.overwrite = overwrite
        self.remote = is_remote(path)
        self.tmp: str | None = None
        if self.remote:
            if not path.rpartition("://")[2].strip("/"):
                raise remote_atomic.root_error(path, "dataset")  # before asking for a filesystem (gs:// without gcsfs)
            # The URL as given: stripped of its slashes first, "memory://" would read as the
            # local path "memory:".
            self.fs, self.path = filesystem(path, storage_options)
            self.path = self.path.rstrip("/")
            self.url = self.fs.unstrip_protocol(self.path) if self.path else path
            remote_atomic.check_target(self.fs, self.path, "dataset", overwrite)
        else:
            self.path = os.path.abspath(path)
            atomic.check_target(self.path, "dataset", overwrite)

    def begin(self) -> None:
        self.tmp = remote_atomic.temporary_directory(self.fs, self.path) if self.remote else atomic.temporary_directory(self.path, "dataset", self.overwrite)

    def _begun(self) -> str:
        if self.tmp is None:
            raise RuntimeError("the output's temporary directory is made by begin(), before anything is written")
        return self.tmp

    def claim(self, names: Sequence[str], metadata: Sequence[str] = ()) -> None:
        """Fail before any work where a file name of the output (``names``, the data files,
        and ``metadata``, the files written beside them) is not a plain relative path, where
        a data file would take a metadata file's name, or where a file would overwrite one
        tabflow did not write (where the output goes beside other files)."""
        taken = sorted(set(names) & set(metadata))
        if taken:
            raise ValueError(f"output file name(s) {taken} are the names of the dataset's own metadata files; choose others")
        names = [*names, *metadata]
        if self.remote:
            remote_atomic.check_target(self.fs, self.path, "dataset", self.overwrite, names)
        else:
            atomic.check_target(self.path, "dataset", self.overwrite, names)

    def sink(self, name: str, handles: list) -> Any:
        """Where pyarrow writes ``name``: a local path, or an open fsspec file (kept in ``handles``)."""
        if not self.remote:
            full = os.path.join(self._begun(), *name.split("/"))
            os.makedirs(os.path.dirname(full), exist_ok=True)
            return full
        handle = self.fs.open(f"{self._begun()}/{name}", "wb")
        handles.append(handle)
        return handle

    def write(self, name: str, data: bytes) -> None:
        if self.remote:
            self.fs.pipe_file(f"{self._begun()}/{name}", data)
            return
        full = os.path.join(self._begun(), *name.split("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as handle:
            handle.write(data)

    def publish(self) -> None:
        if self.remote:
            remote_atomic.publish(self.fs, self._begun(), self.path, "dataset", self.overwrite)
        else:
            atomic.publish(self._begun(), self.path, "dataset", self.overwrite)

    def discard(self) -> None:
        if self.tmp is None:
            return
        if self.remote:
            remote_atomic.discard(self.fs, self.tmp)
        else:
            atomic.discard(self.tmp)

    def final(self, name: str) -> str:
        return f"{self.url}/{name}" if self.remote else os.path.join(self.path, *name.split("/"))


def _portable(arrow_type: pa.DataType) -> pa.DataType:
    # 64-bit offsets only matter past 2 GB per column chunk; plain string/list types are the
    # ones every reader (cuDF, Spark, older pyarrow) handles.
    if pa.types.is_large_string(arrow_type):
        return pa.string()
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return pa.list_(_portable(arrow_type.value_type))
    return arrow_type


def portable_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the types every parquet reader takes (see ``_portable``): the one
    schema tabflow writes parquet with, in datasets and generated files alike."""
    return pa.schema([pa.field(f.name, _portable(f.type), nullable=f.nullable) for f in schema])


def _unshuffled_file(index: int, nparts: int, nfiles: int) -> int:
    """The file that partition ``index`` of ``nparts`` goes to whole, without a shuffle: the
    partitions spread over the ``nfiles`` files in order."""
    return index * nfiles // nparts


def _route(pieces: Any, data: Any, index: int, nparts: int, nfiles: int, shuffle: Shuffle | None, rng: np.random.Generator):
    """Yield (file index, rows) pieces of partition ``index`` (a table or a frame, taken
    apart by ``pieces``: :class:`_TablePieces` or :class:`_FramePieces`)."""
    if shuffle is None:
        yield _unshuffled_file(index, nparts, nfiles), data
        return
    rows = pieces.rows(data)
    permutation = rng.permutation(rows)
    if shuffle is Shuffle.PER_WORKER:
        # Random file per row; a stable sort by file keeps each file's rows in random order.
        targets = rng.integers(0, nfiles, size=rows)
        order = permutation[np.argsort(targets[permutation], kind="stable")]
        grouped = pieces.take(data, order)
        bounds = np.searchsorted(targets[order], np.arange(nfiles + 1))
        for k in range(nfiles):
            yield k, pieces.slice(grouped, bounds[k], bounds[k + 1] - bounds[k])
        return
    shuffled = pieces.take(data, permutation)
    slices = int(min(nfiles, max(1, rows // _MIN_SLICE_ROWS)))
    start_file = index % nfiles
    edges = np.linspace(0, rows, slices + 1).astype(np.int64)
    for j in range(slices):
        yield (start_file + j) % nfiles, pieces.slice(shuffled, edges[j], edges[j + 1] - edges[j])
