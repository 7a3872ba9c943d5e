"""The schema stored next to data files: tabflow's ``_schema.json``, or a registered format.

Looked for in the directory of the files (all files of one directory), in this order:

1. ``_schema.json``, then ``schema.json``: tabflow's schema (a ``schema.json`` that is not
   tabflow's is offered to the registered formats' ``read_document``);
2. each format registered with :func:`register_schema_format`, in the order of
   registration, in the directory and then in its parent.

The formats of other tools (NVTabular's ``schema.pbtxt`` and merlin's ``.merlin/schema.json``)
are registered by the layer that knows them (:mod:`tabflow.compat.tf_metadata`), so that
reading and writing here know only that a dataset may carry other schema files, read as text
into a :class:`~tabflow.schema.Schema` and written from one. The dtypes always come from the
data itself.

Examples
--------
>>> import os, tempfile
>>> from tabflow.io.readers._schema_files import schema_next_to
>>> from tabflow.schema import ColumnSchema, Schema
>>> d = tempfile.mkdtemp()
>>> Schema([ColumnSchema("y", tags=["target"])]).to_json(os.path.join(d, "_schema.json"))
>>> sorted(str(t) for t in schema_next_to([os.path.join(d, "part_0.parquet")])["y"].tags)
['target']
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Mapping, Sequence

from tabflow.io.atomic import owned_files
from tabflow.io.fs import filesystem, is_remote, join, parent
from tabflow.schema import SCHEMA_FILENAMES, Schema

__all__ = ["SchemaFormat", "register_schema_format", "schema_formats", "schema_next_to", "is_schema_file", "read_schema_file"]

_MAX_SCHEMA_BYTES = 64 * 2**20


@dataclasses.dataclass(frozen=True)
class SchemaFormat:
    """A schema file format besides tabflow's own.

    ``path`` is where a file of the format lies, relative to a data directory (``/``
    separated); ``read(text, path)`` gives its schema; ``read_document(document, path)`` gives
    the schema of a JSON document in the format found under tabflow's names, or None for a
    document of another format; ``write(schema)``, when given, makes the file's bytes, written
    beside every dataset tabflow writes.
    """

    path: str
    read: Callable[[str, str], Schema]
    read_document: Callable[[Any, str], Schema | None] | None = None
    write: Callable[[Schema], bytes] | None = None


_FORMATS: list[SchemaFormat] = []


def register_schema_format(schema_format: SchemaFormat) -> None:
    """Read (and write, with ``write``) schema files of ``schema_format`` beside datasets.

    A format registered again under the same path replaces the earlier one.
    """
    _FORMATS[:] = [f for f in _FORMATS if f.path != schema_format.path]
    _FORMATS.append(schema_format)


def schema_formats() -> tuple[SchemaFormat, ...]:
    """The registered formats, in the order they are looked for."""
    return tuple(_FORMATS)


def is_schema_file(name: str) -> bool:
    """Whether ``name``, a file name in a data directory, holds a schema (never data)."""
    return name in SCHEMA_FILENAMES or any(name == f.path for f in _FORMATS)


def schema_next_to(paths: Sequence[str], storage_options: Mapping[str, Any] | None = None) -> Schema | None:
    """The schema stored with the files (see the module docstring), or None."""
    directories = {parent(p) for p in paths}
    if len(directories) != 1:
        return None
    directory = directories.pop()
    candidates: list[tuple[str, SchemaFormat | None]] = [(join(directory, name), None) for name in SCHEMA_FILENAMES]
    upper = parent(directory)
    bases = (directory, upper) if upper and upper != directory else (directory,)
    for schema_format in _FORMATS:
        candidates.extend((join(base, *schema_format.path.split("/")), schema_format) for base in bases)
    if not is_remote(directory):
        written = owned_files(directory, "dataset")
        if written is not None and not {os.path.relpath(p, directory).replace(os.sep, "/") for p in paths} <= set(written):
            # Files beside a dataset tabflow wrote (e.g. chosen by a glob): its schema describes
            # its own files, not these.
            own = {os.path.join(directory, *name.split("/")) for name in written}
            candidates = [c for c in candidates if c[0] not in own]
    for candidate, found_format in candidates:
        text = _read_if_present(candidate, storage_options)
        if text is not None:
            return read_schema_file(candidate, text) if found_format is None else found_format.read(text, candidate)
    return None


def read_schema_file(path: str, text: str) -> Schema:
    """A schema from the JSON text of ``path``: tabflow's, or a registered format's document."""
    from tabflow._json import parse_json
    from tabflow.exceptions import LoadError

    document = parse_json(text, f"schema file {path}")
    if not (isinstance(document, Mapping) and "columns" in document):
        for schema_format in _FORMATS:
            found = schema_format.read_document(document, path) if schema_format.read_document is not None else None
            if found is not None:
                return found
    try:
        return Schema.from_dict(document)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise LoadError(f"schema file {path} is malformed ({type(err).__name__}: {err})") from None


def _read_if_present(path: str, storage_options: Mapping[str, Any] | None) -> str | None:
    from tabflow.exceptions import LoadError

    if is_remote(path):
        fs, fs_path = filesystem(path, storage_options)
        if not fs.isfile(fs_path):
            return None
        size = fs.size(fs_path)
        if size is not None and size > _MAX_SCHEMA_BYTES:
            raise LoadError(f"schema file {path} is {size} bytes, more than the {_MAX_SCHEMA_BYTES} bytes allowed")
        raw = fs.cat_file(fs_path)
    else:
        if not os.path.isfile(path):
            return None
        if os.path.getsize(path) > _MAX_SCHEMA_BYTES:
            raise LoadError(f"schema file {path} is {os.path.getsize(path)} bytes, more than the {_MAX_SCHEMA_BYTES} bytes allowed")
        with open(path, "rb") as handle:
            raw = handle.read(_MAX_SCHEMA_BYTES + 1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LoadError(f"schema file {path} is not UTF-8 text ({err.reason} at byte {err.start})") from None
