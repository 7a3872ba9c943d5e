"""Paths with a protocol (``s3://``, ``gs://``, ``memory://``, ...) resolved through fsspec.

Local paths (and ``file://`` URLs, which become plain local paths) never reach fsspec: the
readers and the writer keep their direct local code for them. Every other path is opened
through the fsspec filesystem its protocol names, built from the caller's
``storage_options`` (credentials, endpoint, ...). fsspec caches filesystem instances per
protocol and options, so resolving a path again (in each reading thread or dask worker) is
cheap, and only the plain ``storage_options`` dict travels with the tasks.

Examples
--------
>>> from tabflow.io.fs import is_remote, join, local_path, parent
>>> is_remote("s3://bucket/data/*.parquet"), is_remote("/tmp/data"), is_remote("file:///tmp/data")
(True, False, False)
>>> local_path("file:///tmp/data/x.parquet")
'/tmp/data/x.parquet'
>>> join("s3://bucket/out", "_schema.json"), parent("s3://bucket/out/part_0.parquet")
('s3://bucket/out/_schema.json', 's3://bucket/out')
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import IO, Any, Iterator, Mapping

__all__ = ["is_remote", "local_path", "filesystem", "open_file", "join", "parent", "basename", "remote_url", "file_version", "object_version"]

# "scheme://" or an fsspec chain such as "simplecache::s3://...". One-letter schemes are
# Windows drive letters (C://), not protocols.
_PROTOCOL = re.compile(r"^(?P<protocol>[A-Za-z][A-Za-z0-9+.\-]+)://|::")
_LOCAL_PROTOCOLS = ("file", "local")


def is_remote(path: Any) -> bool:
    """Whether ``path`` names a file through an fsspec protocol other than the local one."""
    if not isinstance(path, str):
        return False
    match = _PROTOCOL.search(path)
    if match is None:
        return False
    return "::" in path or match.group("protocol").lower() not in _LOCAL_PROTOCOLS


def local_path(path: Any) -> Any:
    """``path`` with a ``file://`` / ``local://`` prefix removed (anything else unchanged)."""
    if isinstance(path, os.PathLike):
        return os.fspath(path)
    if isinstance(path, str):
        for protocol in _LOCAL_PROTOCOLS:
            prefix = f"{protocol}://"
            if path.lower().startswith(prefix):
                return path[len(prefix):]
    return path


def filesystem(path: str, storage_options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    """The fsspec filesystem of ``path`` and the path as that filesystem names it."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:  # pragma: no cover - fsspec comes with dask
        raise ImportError(f"reading {path!r} needs fsspec: pip install fsspec") from None
    try:
        return url_to_fs(path, **dict(storage_options or {}))
    except ImportError as err:
        # fsspec names the package of a protocol it cannot load (s3fs, gcsfs, adlfs, ...).
        raise ImportError(f"cannot open {path!r}: {err}") from None


def remote_url(fs: Any, path: str) -> str:
    """The URL of ``path`` on ``fs`` (its protocol put back), as the readers take it."""
    return fs.unstrip_protocol(path)


@contextlib.contextmanager
def open_file(path: str, storage_options: Mapping[str, Any] | None = None, mode: str = "rb") -> Iterator[IO]:
    """Open a local path or a URL (binary modes), closing it on exit."""
    if is_remote(path):
        fs, fs_path = filesystem(path, storage_options)
        with fs.open(fs_path, mode) as handle:
            yield handle
    else:
        with open(local_path(path), mode) as handle:
            yield handle


def join(base: str, *names: str) -> str:
    """``base/name``: ``os.path.join`` for local paths, ``/`` for URLs."""
    if is_remote(base):
        return "/".join([base.rstrip("/"), *names])
    return os.path.join(base, *names)


def parent(path: str) -> str:
    """The directory (or prefix) that holds ``path``."""
    if is_remote(path):
        head, _, _ = path.rstrip("/").rpartition("/")
        # "s3://bucket" has no parent: nothing above a bucket (or a filesystem root).
        return "" if "://" not in head or head.endswith("://") else head
    return os.path.dirname(os.path.abspath(path))


def basename(path: str) -> str:
    """The last component of a path or URL."""
    return path.rstrip("/").rpartition("/")[2] if is_remote(path) else os.path.basename(path)


# What an object store's info says of an object's version, in the order looked for: one of
# them (the first present) and the size identify the bytes of an object.
_VERSION_KEYS = ("ETag", "etag", "generation", "md5Hash", "mtime", "LastModified", "last_modified", "created")


def object_version(info: Mapping[str, Any]) -> tuple:
    """An object's size and version from fsspec's ``info`` of it.

    Examples
    --------
    >>> object_version({"size": 3, "ETag": '"abc"', "LastModified": "2026-01-01"})
    (3, '"abc"')
    """
    version = next((str(info[key]) for key in _VERSION_KEYS if key in info), "")
    return info.get("size"), version


def file_version(path: str, storage_options: Mapping[str, Any] | None = None) -> tuple:
    """What identifies the bytes at ``path`` now: a local file's inode, size and modification
    time (a file written anew or renamed over it differs); an object's size and version.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> _ = open(path, "wb").write(b"1")
    >>> before = file_version(path)
    >>> _ = open(path + ".new", "wb").write(b"2")
    >>> os.replace(path + ".new", path)
    >>> file_version(path) == before
    False
    """
    if is_remote(path):
        fs, fs_path = filesystem(path, storage_options)
        fs.invalidate_cache(fs_path)
        return object_version(fs.info(fs_path))
    info = os.stat(local_path(path))
    return info.st_ino, info.st_size, info.st_mtime_ns
