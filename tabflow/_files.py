"""Writing one local file so that a reader sees either the previous file or the complete new
one: write it in a private directory beside it, then rename it over it.

Directories (a saved workflow, a parquet dataset) are published by :mod:`tabflow.io.atomic`;
this is the single-file case (``_schema.json``, a statistics JSON, one generated part).

Examples
--------
>>> import os, pathlib, tempfile
>>> from tabflow._files import write_atomically
>>> path = os.path.join(tempfile.mkdtemp(), "stats.json")
>>> write_atomically(path, lambda tmp: pathlib.Path(tmp).write_text("{}"))
>>> open(path).read(), os.listdir(os.path.dirname(path))
('{}', ['stats.json'])
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable

from tabflow.exceptions import SaveError

__all__ = ["check_file_target", "write_atomically"]


def check_file_target(path: str) -> None:
    """Raise :class:`~tabflow.exceptions.SaveError` when ``path`` is a directory, which a file
    never replaces. Touches nothing."""
    if os.path.isdir(path):
        raise SaveError(f"{os.path.abspath(path)} is a directory; refusing to replace it with a file. Give a file name")


def write_atomically(path: str | os.PathLike, write: Callable[[str], object]) -> None:
    """Call ``write(temporary_path)``, then rename the result to ``path``.

    The temporary file lies in a private directory (mode 0700) made beside ``path``, so
    nobody else can put a link where it is written, and the rename stays on one file system;
    the directory is removed whatever happens, and ``path`` is left as it was if ``write``
    fails.

    Raises
    ------
    SaveError
        When ``path`` is a directory: it is never replaced by a file.
    """
    path = os.path.abspath(os.fspath(path))
    check_file_target(path)
    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    private = tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=parent)
    try:
        staged = os.path.join(private, name)
        write(staged)
        os.replace(staged, path)
    finally:
        shutil.rmtree(private, ignore_errors=True)
