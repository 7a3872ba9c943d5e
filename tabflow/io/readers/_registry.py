"""The one place that maps an engine name or a file name to the reader of its format.

A reader is a function ``read(paths, options) -> Source``. :func:`register` files it under
an engine name (``Dataset(path, engine=name)``) and the file suffixes that name it when no
engine is given. :func:`open_source` turns anything ``Dataset`` accepts into a
:class:`Source`: files through their format's reader, frames through :func:`read_frame`.

Examples
--------
>>> from tabflow.io.readers import format_for, guess_format
>>> format_for("criteo").name, guess_format("data/part_0.parq").name
('criteo', 'parquet')
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
import re
from typing import Any, Callable, Mapping, Sequence

from tabflow.exceptions import SaveError
from tabflow.io.atomic import output_state, owned_files
from tabflow.io.fs import basename, filesystem, is_remote, local_path, remote_url
from tabflow.io.readers._schema_files import is_schema_file, schema_next_to
from tabflow.io.readers._shared import DatasetChangedError, DatasetReadError
from tabflow.io.readers._source import ReadOptions, Source
from tabflow.io.readers.frame import read_frame
from tabflow.io.remote_atomic import output_state as remote_output_state
from tabflow.io.remote_atomic import owned_files as remote_owned_files

__all__ = ["Format", "register", "format_for", "guess_format", "expand_paths", "open_source", "read_files"]

Reader = Callable[[Sequence[str], ReadOptions], Source]

#: The format a directory is listed for, and its files read with, when no engine is given.
DEFAULT_FORMAT = "parquet"


@dataclasses.dataclass(frozen=True)
class Format:
    """A registered file format: its engine name, its reader and the file names it claims."""

    name: str
    read: Reader
    suffixes: tuple[str, ...] = ()
    any_name: bool = False

    def lists(self, file_name: str) -> bool:
        """Whether a directory listing for this format takes ``file_name``."""
        return self.any_name or not self.suffixes or file_name.endswith(self.suffixes)


_FORMATS: dict[str, Format] = {}


def register(name: str, read: Reader, suffixes: Sequence[str] = (), any_name: bool = False) -> None:
    """Make ``read`` the reader of ``engine=name`` and of files ending in ``suffixes``.

    Parameters
    ----------
    name : str
        The engine name ``Dataset`` takes. Registering a name again replaces its reader.
    read : callable
        ``read(paths, options)`` -> :class:`Source`, with ``paths`` the expanded file list
        (never empty) and ``options`` a :class:`ReadOptions`.
    suffixes : sequence of str
        File name endings that select this format when no engine is given (the first
        file decides); a directory read with ``engine=name`` lists only such files.
    any_name : bool, default False
        List every file of a directory, whatever its suffix (text logs such as Criteo's
        ``day_0`` have none). A format without suffixes always does.

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> from tabflow.io.readers import Source, format_for, register
    >>> def read_json_lines(paths, options):
    ...     ddf = dd.read_json(list(paths), lines=True, blocksize=options.partition_bytes())
    ...     return Source(ddf, "pandas")
    >>> register("jsonl", read_json_lines, suffixes=(".jsonl",))
    >>> format_for("jsonl").suffixes
    ('.jsonl',)
    """
    _FORMATS[name] = Format(name, read, tuple(suffixes), any_name)


def format_for(engine: str) -> Format:
    """The format registered as ``engine``; ValueError naming the registered ones."""
    try:
        return _FORMATS[engine]
    except KeyError:
        raise ValueError(f"unknown engine {engine!r}; use one of {tuple(_FORMATS)}") from None


def guess_format(path: str) -> Format:
    """The format whose suffix ends ``path``; ValueError asking for ``engine=`` otherwise."""
    name = path.lower()
    for candidate in _FORMATS.values():
        if candidate.suffixes and name.endswith(candidate.suffixes):
            return candidate
    names = [repr(n) for n in _FORMATS]
    spelled = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    raise ValueError(f"cannot tell the format of {path!r}; pass engine={spelled}")


def open_source(path_or_source: Any, engine: str | None, options: ReadOptions) -> Source:
    """The :class:`Source` of anything ``Dataset`` accepts: paths, or a pandas, cuDF or dask frame.

    Paths may be URLs (``s3://bucket/data/*.parquet``), read through fsspec with
    ``options.storage_options``.
    """
    if isinstance(path_or_source, (str, os.PathLike, list, tuple)):
        return read_files(path_or_source, engine, options)
    return read_frame(path_or_source, options)


def read_files(source: str | os.PathLike | Sequence[str], engine: str | None, options: ReadOptions) -> Source:
    """Files read by the reader of ``engine`` (else of the first file's suffix).

    The result names the files and the format, and carries the schema stored next to the
    files when the reader found none of its own.
    """
    chosen = format_for(engine) if engine else None
    directories = _output_directories(source, options.storage_options)
    for _ in range(_READ_ATTEMPTS):
        before = [state() for state in directories]
        paths = expand_paths(source, engine or DEFAULT_FORMAT, options.storage_options)
        chosen = chosen or guess_format(paths[0])
        found = chosen.read(paths, options)
        schema = found.schema if found.schema is not None else schema_next_to(paths, options.storage_options)
        if [state() for state in directories] == before:
            return dataclasses.replace(found, paths=tuple(paths), format=chosen.name, schema=schema)
    raise DatasetChangedError(
        f"{source!r} was written again each of the {_READ_ATTEMPTS} times it was opened (a tabflow writer published "
        "into it while its files were listed and planned); open it again once that writer has finished"
    )


# A dataset published into while it is planned is planned again, this many times in all.
_READ_ATTEMPTS = 3


def _output_directories(source: Any, storage_options: Mapping[str, Any] | None) -> list[Callable[[], Any]]:
    """For each directory among ``source``, a function giving what changes when a dataset is
    published into it (:func:`tabflow.io.atomic.output_state`): the same before and after
    listing and planning means that one output was read."""
    states: list[Callable[[], Any]] = []
    for item in [source] if isinstance(source, (str, os.PathLike)) else list(source):
        item = local_path(os.fspath(item))
        if is_remote(item):
            if not any(ch in item for ch in "*?["):
                fs, root = filesystem(item, storage_options)
                states.append(functools.partial(remote_output_state, fs, root, "dataset"))
        elif os.path.isdir(item):
            states.append(functools.partial(output_state, item, "dataset"))
    return states


def _natural_key(path: str) -> list:
    return [int(tok) if tok.isdigit() else tok for tok in re.split(r"(\d+)", path)]


def expand_paths(source: str | os.PathLike | Sequence[str], engine: str, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """Files named by a path, a glob, a directory, or a list of those, in natural order.

    A directory lists the files of ``engine``'s format (by suffix), skipping hidden and
    ``_``-prefixed files and schema files (``schema.json``, ``schema.pbtxt``); a directory
    tabflow wrote a dataset into lists that dataset's files (its manifest,
    :func:`tabflow.io.atomic.owned_files`), not the other files beside them. URLs
    (``s3://bucket/dir``, ``memory://...``) are listed through fsspec with
    ``storage_options`` and stay URLs; ``file://`` URLs become local paths.
    """
    registered = _FORMATS.get(engine)
    sources = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files: list[str] = []
    for item in sources:
        item = local_path(os.fspath(item))
        if is_remote(item):
            files.extend(_expand_remote(item, engine, registered, storage_options))
        elif os.path.isdir(item):
            written = _owned(owned_files, item) or []
            found = [os.path.join(item, *name.split("/")) for name in _dataset_files(written, registered)]
            if not found:
                own = {os.path.join(item, *name.split("/")) for name in written}
                found = [
                    os.path.join(item, name)
                    for name in os.listdir(item)
                    if _listed(name, registered) and os.path.isfile(os.path.join(item, name))
                ]
                found = [f for f in found or _hive_files_local(item, registered) if f not in own]
            if not found:
                raise DatasetReadError(f"directory {item!r} holds no {engine} files")
            files.extend(sorted(found, key=_natural_key))
        elif any(ch in item for ch in "*?["):
            found = sorted(glob.glob(item), key=_natural_key)
            if not found:
                raise DatasetReadError(f"no file matches {item!r}")
            files.extend(found)
        elif os.path.exists(item):
            files.append(item)
        else:
            raise DatasetReadError(f"file {item!r} does not exist")
    return files


def _owned(owned: Callable[..., Any], *where: Any) -> list[str] | None:
    """The files of the dataset tabflow wrote in a directory; a manifest or an unfinished
    publication tabflow cannot act on is a :class:`DatasetReadError` saying what to do."""
    try:
        return owned(*where, "dataset")
    except SaveError as err:
        raise DatasetReadError(str(err)) from None


def _dataset_files(written: Sequence[str], registered: Format | None) -> list[str]:
    """Of the files of a dataset tabflow wrote into a directory (its manifest), the ones a
    listing for ``registered`` reads: its files, not whatever else the directory holds; a
    format that claims no suffix of them (CSV beside a parquet output) lists the directory
    as ever, without them."""
    return [
        name
        for name in written
        if _listed(name.rpartition("/")[2], registered)
        and (registered is None or (bool(registered.suffixes) and name.endswith(registered.suffixes)))
    ]


def _is_hive_segment(name: str) -> bool:
    return "=" in name and not name.startswith((".", "_", "="))


def _hive_files_local(root: str, registered: Format | None) -> list[str]:
    """Files of a hive layout (``key=value/...`` directories) under ``root``."""
    found: list[str] = []
    for directory, subdirectories, names in os.walk(root):
        relative = os.path.relpath(directory, root)
        if relative != "." and not all(_is_hive_segment(part) for part in relative.split(os.sep)):
            subdirectories[:] = []
            continue
        subdirectories[:] = [d for d in subdirectories if _is_hive_segment(d)]
        if relative != ".":
            found.extend(os.path.join(directory, n) for n in names if _listed(n, registered))
    return found


def _listed(name: str, registered: Format | None) -> bool:
    """Whether a directory listing takes the file ``name`` as data."""
    return not name.startswith((".", "_")) and not is_schema_file(name) and (registered is None or registered.lists(name))


def _expand_remote(url: str, engine: str, registered: Format | None, storage_options: Any) -> list[str]:
    fs, root = filesystem(url, storage_options)
    try:
        if any(ch in root for ch in "*?["):
            found = sorted(fs.glob(root), key=_natural_key)
            if not found:
                raise DatasetReadError(f"no file matches {url!r}")
            return [remote_url(fs, p) for p in found]
        if fs.isdir(root):
            written = _owned(remote_owned_files, fs, root) or []
            own = [f"{root.rstrip('/')}/{name}" for name in _dataset_files(written, registered)]
            if own:
                return [remote_url(fs, p) for p in own]
            entries = fs.ls(root, detail=True)
            others = {f"{root.rstrip('/')}/{name}" for name in written}
            found = sorted(
                (
                    e["name"] for e in entries
                    if e.get("type") == "file" and _listed(basename(e["name"]), registered) and e["name"] not in others
                ),
                key=_natural_key,
            )
            if not found and any(e.get("type") == "directory" and _is_hive_segment(basename(e["name"])) for e in entries):
                prefix = root.rstrip("/") + "/"
                found = sorted(
                    (
                        p for p in fs.find(root)
                        if p.startswith(prefix) and "/" in p[len(prefix):]
                        and all(_is_hive_segment(part) for part in p[len(prefix):].split("/")[:-1])
                        and _listed(basename(p), registered)
                    ),
                    key=_natural_key,
                )
            if not found:
                raise DatasetReadError(f"directory {url!r} holds no {engine} files")
            return [remote_url(fs, p) for p in found]
        if fs.exists(root):
            return [url]
    except DatasetReadError:
        raise
    except (OSError, ValueError) as err:  # permission, unknown bucket, bad endpoint, ...
        raise DatasetReadError(f"cannot list {url!r}: {type(err).__name__}: {err}") from err
    raise DatasetReadError(f"file {url!r} does not exist")
