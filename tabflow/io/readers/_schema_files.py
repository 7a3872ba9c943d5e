"""The schema stored next to data files: tabflow's ``_schema.json`` or NVTabular/Merlin's files.

Looked for in the directory of the files (all files of one directory), in this order:

1. ``_schema.json``, then ``schema.json``: tabflow's schema (a ``schema.json`` holding
   TensorFlow Metadata JSON, as Merlin writes it, is read as that);
2. ``.merlin/schema.json``: Merlin 23.x's TensorFlow Metadata JSON, in the directory or its
   parent (as ``merlin.io.Dataset`` looks);
3. ``schema.pbtxt``: NVTabular's TensorFlow Metadata text protobuf, in the directory or its
   parent.

Tags and properties (cardinalities, embedding sizes, domains) of NVTabular-written data
survive this way; the dtypes always come from the data itself.

Examples
--------
>>> import os, tempfile
>>> from tabflow.io.readers._schema_files import schema_next_to
>>> d = tempfile.mkdtemp()
>>> _ = open(os.path.join(d, "schema.pbtxt"), "w").write(
...     'feature { name: "y" type: FLOAT annotation { tag: "target" } }')
>>> sorted(str(t) for t in schema_next_to([os.path.join(d, "part_0.parquet")])["y"].tags)
['target']
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from tabflow.io.atomic import owned_files
from tabflow.io.fs import filesystem, is_remote, join, parent
from tabflow.io.tf_metadata import (
    MERLIN_METADATA_DIR_NAME,
    schema_from_proto_text,
    schema_from_tfmd_json,
)
from tabflow.schema import SCHEMA_FILENAMES, Schema

__all__ = ["schema_next_to", "NOT_DATA", "read_schema_file"]

#: File names in a data directory that are never data (directory listings skip them).
NOT_DATA = ("schema.json", "schema.pbtxt")

_MAX_SCHEMA_BYTES = 64 * 2**20


def schema_next_to(paths: Sequence[str], storage_options: Mapping[str, Any] | None = None) -> Schema | None:
    """The schema stored with the files (see the module docstring), or None."""
    directories = {parent(p) for p in paths}
    if len(directories) != 1:
        return None
    directory = directories.pop()
    candidates = [join(directory, name) for name in SCHEMA_FILENAMES]
    upper = parent(directory)
    for base in (directory, upper) if upper and upper != directory else (directory,):
        candidates.append(join(base, MERLIN_METADATA_DIR_NAME, "schema.json"))
    for base in (directory, upper) if upper and upper != directory else (directory,):
        candidates.append(join(base, "schema.pbtxt"))
    if not is_remote(directory):
        written = owned_files(directory, "dataset")
        if written is not None and not {os.path.relpath(p, directory).replace(os.sep, "/") for p in paths} <= set(written):
            # Files beside a dataset tabflow wrote (e.g. chosen by a glob): its schema describes
            # its own files, not these.
            own = {os.path.join(directory, *name.split("/")) for name in written}
            candidates = [c for c in candidates if c not in own]
    for candidate in candidates:
        text = _read_if_present(candidate, storage_options)
        if text is not None:
            return read_schema_file(candidate, text)
    return None


def read_schema_file(path: str, text: str) -> Schema:
    """A schema from the text of ``path``: tabflow JSON, TensorFlow Metadata JSON or text protobuf."""
    from tabflow._json import parse_json
    from tabflow.exceptions import LoadError

    if path.endswith(".pbtxt"):
        return schema_from_proto_text(text, path)
    document = parse_json(text, f"schema file {path}")
    if isinstance(document, Mapping) and "feature" in document and "columns" not in document:
        return schema_from_tfmd_json(document, path)
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
