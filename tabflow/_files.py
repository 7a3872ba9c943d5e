"""Writing one local file so that a reader sees either the previous file or the complete new
one: write ``<path>.tmp-<pid>`` beside it, then rename over it.

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
from collections.abc import Callable

from tabflow.exceptions import SaveError

__all__ = ["check_file_target", "write_atomically"]


def check_file_target(path: str) -> None:
    """Raise :class:`~tabflow.exceptions.SaveError` when ``path`` is a directory, which a file
    never replaces. Touches nothing."""
    if os.path.isdir(path):
        raise SaveError(f"{os.path.abspath(path)} is a directory; refusing to replace it with a file. Give a file name")


def write_atomically(path: str, write: Callable[[str], object]) -> None:
    """Call ``write(temporary_path)``, then rename the result to ``path``.

    The temporary file is ``<path>.tmp-<pid>`` in the same directory (a rename across file
    systems would copy); it is removed if ``write`` fails, and ``path`` is left as it was.

    Raises
    ------
    SaveError
        When ``path`` is a directory: it is never replaced by a file.
    """
    path = os.path.abspath(os.fspath(path))
    check_file_target(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
