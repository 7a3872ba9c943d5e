"""Files that :class:`tabflow.ops.Categorify` and :class:`tabflow.ops.TargetEncoding` write
under ``out_path``.

The layout is NVTabular 23.08's, so scripts that read these files keep working. For each
vocabulary ``NAME`` (a column, or ``"a_b"`` for a joint or combo group):

``<out_path>/categories/unique.NAME.parquet``
    One row per vocabulary value, in index order, and nothing else: the padding, null and
    OOV indices have no rows. The frame's index is the encoded index (a ``RangeIndex``
    starting at ``2 + n_oov``, stored in the file's pandas metadata), so
    ``pd.read_parquet(path).loc[code]`` is the value of ``code``. Columns: the values
    (``NAME``; for a combo group one column per input column) and ``NAME_size``, the count
    seen while fitting (absent for user-given ``vocabs``). With ``split_out > 1`` it is a
    directory of ``part.0.parquet``, ``part.1.parquet``, ... holding consecutive rows; each
    part keeps its own index, which ``pd.read_parquet`` on a single part or
    ``dask.dataframe.read_parquet`` on the directory preserve.
``<out_path>/categories/meta.NAME.parquet``
    Four rows, ``kind`` = ``pad``, ``null``, ``oov``, ``unique``, with the first index of
    each range (``offset``: 0, 1, 2, ``2 + n_oov``), its size (``num_indices``: 1, 1,
    ``n_oov``, vocabulary size) and, when counts are known, the rows seen while fitting
    that fall in it (``num_observed``: 0, nulls, values sent to OOV by ``freq_threshold``
    or ``max_size``, values in the vocabulary).

For each statistics table ``NAME`` of a TargetEncoding (a key column or group, and with
folds ``__fold___NAME``, the same statistics per fold):

``<out_path>/categories/cat_stats.NAME.parquet``
    One row per key (per fold and key), the key columns first, then ``NAME_count`` (the
    rows of the key) and ``NAME_<target>_sum`` for each target.

Every file of one fit is written under a temporary name in the same directory and renamed
into place only once all of them are complete, so an error leaves the previous files (or
none), never a truncated one.

Examples
--------
>>> import pandas as pd
>>> from tabflow.ops._vocab import Unit
>>> from tabflow.ops._vocab_files import unique_table
>>> vocab = pd.DataFrame({"value": ["b", "a"], "count": [5, 2]})
>>> unique_table(Unit("c", ("c",), ("c",)), vocab, n_oov=1, with_counts=True)
   c  c_size
3  b       5
4  a       2
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import uuid
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from tabflow._paths import Directory, check_name
from tabflow.ops._vocab import COUNT, NULL_INDEX, OOV_INDEX, PAD_INDEX, Unit

__all__ = [
    "STAT_DIR", "unique_table", "meta_table", "unique_path", "write_vocabularies", "copy_vocabularies", "stats_path",
    "write_statistics",
]

#: Sub-directory of ``out_path`` holding the files (NVTabular's name).
STAT_DIR = "categories"


def unique_path(out_path: str | os.PathLike, key: str) -> str:
    """Path of the unique-values file (or directory) of vocabulary ``key``."""
    return os.path.join(os.fspath(out_path), STAT_DIR, f"unique.{key}.parquet")


def stats_path(out_path: str | os.PathLike, name: str) -> str:
    """Path of the statistics file of table ``name`` (a TargetEncoding key group)."""
    return os.path.join(os.fspath(out_path), STAT_DIR, f"cat_stats.{name}.parquet")


def write_statistics(out_path: str | os.PathLike, tables: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """Write ``{name: statistics table}`` under ``out_path``, all or none; return the paths."""
    writers = [(stats_path(out_path, name), functools.partial(table.to_parquet, index=False)) for name, table in tables.items()]
    _publish(out_path, writers)
    return {name: stats_path(out_path, name) for name in tables}


def _meta_path(out_path: str | os.PathLike, key: str) -> str:
    return os.path.join(os.fspath(out_path), STAT_DIR, f"meta.{key}.parquet")


def unique_table(unit: Unit, vocab: pd.DataFrame, n_oov: int, with_counts: bool, shift: int = 0) -> pd.DataFrame:
    """A vocabulary table as NVTabular lays it out: value column(s), ``<key>_size``, index = code
    (moved up by ``shift`` for a block of a single shared table)."""
    names = list(unit.inputs) if unit.combo else [unit.key]
    table = pd.DataFrame({name: vocab[value].array for name, value in zip(names, unit.value_columns)})
    if with_counts:
        table[f"{unit.key}_size"] = vocab[COUNT].to_numpy(dtype=np.int64)
    table.index = pd.RangeIndex(OOV_INDEX + n_oov + shift, OOV_INDEX + n_oov + shift + len(table))
    return table


def meta_table(n_oov: int, n_unique: int, observed: tuple[int, int, int] | None, shift: int = 0) -> pd.DataFrame:
    """The index ranges of one vocabulary; ``observed`` = (nulls, OOV rows, vocabulary rows)."""
    meta = {
        "kind": ["pad", "null", "oov", "unique"],
        "offset": np.array([PAD_INDEX, NULL_INDEX + shift, OOV_INDEX + shift, OOV_INDEX + n_oov + shift], dtype=np.int64),
        "num_indices": np.array([1, 1, n_oov, n_unique], dtype=np.int64),
    }
    if observed is not None:
        meta["num_observed"] = np.array([0, *observed], dtype=np.int64)
    return pd.DataFrame(meta)


def write_vocabularies(
    out_path: str | os.PathLike,
    tables: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]],
    split_out: Mapping[str, int],
) -> dict[str, str]:
    """Write ``{key: (unique table, meta table)}`` under ``out_path``; return the unique paths.

    A key whose ``split_out`` is above 1 gets a directory of at most that many part files
    (never more parts than rows, and at least one so that the columns can be read).
    """
    writers: list[tuple[str, Callable[[str], object]]] = []
    for key, (unique, meta) in tables.items():
        writers.append((unique_path(out_path, key), functools.partial(_write_unique, unique, split_out=int(split_out.get(key, 1)))))
        writers.append((_meta_path(out_path, key), functools.partial(meta.to_parquet, index=False)))
    _publish(out_path, writers)
    return {key: unique_path(out_path, key) for key in tables}


def copy_vocabularies(source: str | os.PathLike, target: str | os.PathLike, keys: Sequence[str]) -> None:
    """Copy the files of vocabularies ``keys`` from under ``source`` to under ``target``
    (both ``out_path`` directories), all complete before any is renamed into place."""
    writers = []
    for key in keys:
        for path_of in (unique_path, _meta_path):
            origin = path_of(source, key)
            copy = shutil.copytree if os.path.isdir(origin) else shutil.copyfile
            writers.append((path_of(target, key), lambda staged, o=origin, c=copy: c(o, staged)))
    _publish(target, writers)


def _publish(out_path: str | os.PathLike, writers: Sequence[tuple[str, Callable[[str], object]]]) -> None:
    """Run each ``(target, write)``: ``write(staged path)``, then rename every staged file
    into place once all are written.

    The ``categories`` directory is entered without following a link (a link put there by
    another writer of ``out_path`` would send the files elsewhere), each file is staged in
    a private directory inside it (a rename on one file system is atomic), and each name is
    a plain file name: a column whose name holds ``/`` cannot name a file.
    """
    names = []
    for target, _ in writers:
        name = os.path.basename(target)
        check_name(name, f"the vocabulary file of {target!r}", ValueError, max_parts=1)
        if os.path.join(os.fspath(out_path), STAT_DIR, name) != target:
            raise ValueError(
                f"cannot write {target!r} under {os.fspath(out_path)!r}/{STAT_DIR}: a column whose name holds '/' "
                "cannot name a vocabulary file; rename the column"
            )
        names.append(name)
    with Directory(out_path, create=True) as root, root.subdirectory(STAT_DIR, create=True) as directory:
        staging_name = f".tmp-{uuid.uuid4().hex}"
        os.mkdir(staging_name, 0o700, dir_fd=directory.fd)
        try:
            with directory.subdirectory(staging_name) as staging:
                for name, (_, write) in zip(names, writers):
                    write(os.path.join(staging.path, name))
                for name in names:
                    _move_into_place(directory, staging, name)
        finally:
            directory.remove_tree(staging_name)


def _write_unique(table: pd.DataFrame, path: str, split_out: int) -> None:
    # index=None stores a RangeIndex as metadata only: readers get the codes back as the
    # index, with no extra column, as from NVTabular's files.
    if split_out <= 1:
        table.to_parquet(path, index=None)
        return
    os.mkdir(path)
    n_parts = max(1, min(split_out, len(table)))
    bounds = np.linspace(0, len(table), n_parts + 1).astype(np.int64)
    for part, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
        table.iloc[start:stop].to_parquet(os.path.join(path, f"part.{part}.parquet"), index=None)


def _move_into_place(directory: Directory, staging: Directory, name: str) -> None:
    target, staged = directory.entry(name), staging.entry(name)
    if target is not None and staged is not None and (stat.S_ISDIR(target.st_mode) or stat.S_ISDIR(staged.st_mode)):
        # A directory cannot replace a path in one rename: move the old one aside first;
        # the staging directory is deleted afterwards, and the old copy with it.
        staging.move_in(directory, name, f"old-{uuid.uuid4().hex}")
    directory.move_in(staging, name)
