"""Writing the tools' single files (a statistics JSON, one generated parquet part) locally or
to a URL.

Local files go through :func:`tabflow._files.write_atomically` (temporary name, then rename);
URLs (``s3://...``) are written in place: an object store publishes an object only once its
upload completes.

Examples
--------
>>> import os, pathlib, tempfile
>>> from tabflow.tools._files import write_file
>>> path = os.path.join(tempfile.mkdtemp(), "stats.json")
>>> write_file(path, lambda target: pathlib.Path(target).write_text("{}"))
>>> open(path).read()
'{}'
"""

from __future__ import annotations

import os
from collections.abc import Callable

from tabflow._files import check_file_target, write_atomically
from tabflow.io.fs import is_remote, local_path

__all__ = ["check_output_file", "write_file"]


def check_output_file(path: str) -> None:
    """Refuse a local ``path`` that is a directory (a SaveError naming it); URLs pass."""
    if not is_remote(path):
        check_file_target(local_path(os.fspath(path)))


def write_file(path: str, write: Callable[[str], object]) -> None:
    """Call ``write(target)`` so that ``path`` ends up holding the complete file."""
    if is_remote(path):
        write(path)
    else:
        write_atomically(local_path(os.fspath(path)), write)
