"""Names that come from disk or from a caller, and file operations confined to one directory.

A name is untrusted until it is validated where it resolves, not by how it reads: ``a/b``
may lead anywhere when ``a`` is a symbolic link that another writer of the directory put
there, and the text of a path checked before it is used may resolve elsewhere by the time it
is used. So every name that tabflow reads from a manifest, a journal or a saved workflow, or
takes from a caller as the name of an output file, goes through two steps:

- :func:`check_name` checks its text: a relative ``/``-separated path, none of whose
  components is empty, ``.`` or ``..``, with no NUL or backslash;
- :class:`Directory` then acts on it relative to an open directory, one component at a
  time, never following a symbolic link below that directory (``O_NOFOLLOW`` on each
  component, and the ``*at`` system calls on the directory found): what is removed,
  replaced, created or read is the entry the name names inside the directory, whatever
  another process renames meanwhile.

Examples
--------
>>> import os, tempfile
>>> from tabflow._paths import Directory, check_name
>>> check_name("k=1/part_0.parquet", "an output file name")
('k=1', 'part_0.parquet')
>>> check_name("../x.parquet", "an output file name")
Traceback (most recent call last):
...
ValueError: an output file name '../x.parquet' is not a plain relative path: its components may not be '', '.' or '..'
>>> root = tempfile.mkdtemp()
>>> os.symlink("/etc", os.path.join(root, "link"))
>>> with Directory(root) as directory:
...     directory.write_bytes("a/b.txt", b"hi")
...     directory.entry("a/b.txt").st_size, directory.entry("missing")
(2, None)
>>> with Directory(root) as directory:
...     directory.entry("link/passwd")
Traceback (most recent call last):
...
tabflow._paths.UnsafePathError: link/passwd: 'link' is a symbolic link or not a directory; tabflow never follows one below ...
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from typing import Any

__all__ = ["check_name", "UnsafePathError", "Directory", "owned_by_us", "MAX_NAME_BYTES"]

#: The longest name accepted (bytes of UTF-8), a whole relative path.
MAX_NAME_BYTES = 4096
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafePathError(OSError):
    """A name leads through a symbolic link, or to an entry of an unexpected type, inside a
    directory tabflow confines its work to."""


def check_name(name: Any, what: str, error: type[Exception] = ValueError, max_parts: int | None = None) -> tuple[str, ...]:
    """The components of ``name``, a relative ``/``-separated path; ``error`` otherwise.

    ``what`` says what the name is (it begins the message, e.g. "an output file name" or
    "manifest entry"); ``max_parts=1`` asks for a plain file name.

    Examples
    --------
    >>> check_name("part_0.parquet", "an output file name", max_parts=1)
    ('part_0.parquet',)
    >>> check_name("/etc/passwd", "manifest entry")
    Traceback (most recent call last):
    ...
    ValueError: manifest entry '/etc/passwd' is not a plain relative path: it is absolute
    """
    plain = "a plain file name" if max_parts == 1 else "a plain relative path"
    if not isinstance(name, str):
        raise error(f"{what} {name!r:.100} is not {plain}: it is a {type(name).__name__}, not a string")
    if not name or "\x00" in name or "\\" in name or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise error(f"{what} {name!r:.100} is not {plain}: it is empty, too long, or holds a NUL byte or a backslash")
    if name.startswith("/"):
        raise error(f"{what} {name!r:.100} is not {plain}: it is absolute")
    parts = tuple(name.split("/"))
    if any(part in ("", ".", "..") for part in parts):
        raise error(f"{what} {name!r:.100} is not {plain}: its components may not be '', '.' or '..'")
    if max_parts is not None and len(parts) > max_parts:
        raise error(f"{what} {name!r:.100} is not {plain}: it may not hold more than {max_parts} component(s)")
    return parts


def owned_by_us(info: os.stat_result) -> bool:
    """Whether a file's owner is this process's user (always true where there are no uids)."""
    geteuid = getattr(os, "geteuid", None)
    return geteuid is None or info.st_uid == geteuid()


class Directory:
    """An open directory whose entries are named relative to it, never through a symbolic
    link below it.

    The directory itself is opened by ``path`` as the caller gives it (a link in that path
    is the caller's choice); ``create=True`` makes it first, with its parents. Use it as a
    context manager, or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike, create: bool = False) -> None:
        self.path = os.path.abspath(os.fspath(path))
        if create:
            os.makedirs(self.path, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDONLY | _DIRECTORY | _CLOEXEC)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "Directory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except (OSError, AttributeError):
            pass

    # ------------------------------------------------------------------ walking

    def _parent(self, name: str, create: bool = False, mode: int = 0o777) -> tuple[int, str]:
        """The directory holding the last component of ``name`` (a new descriptor, or
        ``self.fd`` itself when the name has one component) and that component."""
        parts = check_name(name, "path", UnsafePathError)
        fd = self.fd
        for depth, part in enumerate(parts[:-1]):
            try:
                child = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    self._release(fd)
                    raise
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                except FileExistsError:
                    pass
                child = self._open_child(fd, part, name, parts[: depth + 1])
            except OSError as err:
                self._release(fd)
                if err.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise self._unsafe(name, parts[: depth + 1]) from None
                raise
            self._release(fd)
            fd = child
        return fd, parts[-1]

    def _open_child(self, fd: int, part: str, name: str, prefix: tuple[str, ...]) -> int:
        try:
            return os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
        except OSError as err:
            self._release(fd)
            if err.errno in (errno.ELOOP, errno.ENOTDIR):
                raise self._unsafe(name, prefix) from None
            raise

    def _unsafe(self, name: str, prefix: tuple[str, ...]) -> UnsafePathError:
        return UnsafePathError(
            f"{name}: {'/'.join(prefix)!r} is a symbolic link or not a directory; tabflow never follows one below "
            f"{self.path}"
        )

    def _release(self, fd: int) -> None:
        if fd != self.fd:
            os.close(fd)

    # ------------------------------------------------------------------ queries

    def entry(self, name: str) -> os.stat_result | None:
        """``lstat`` of the entry ``name`` (a link is reported as a link), None where absent.

        Raises :class:`UnsafePathError` where a directory on the way is a link or a file.
        """
        try:
            fd, leaf = self._parent(name)
        except FileNotFoundError:
            return None
        try:
            return os.stat(leaf, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        finally:
            self._release(fd)

    def is_file(self, name: str) -> bool:
        """Whether ``name`` is a regular file (not a link), reached through no link."""
        try:
            info = self.entry(name)
        except UnsafePathError:
            return False
        return info is not None and stat.S_ISREG(info.st_mode)

    def list(self, name: str | None = None) -> list[str]:
        """The entries of the directory (or of its subdirectory ``name``)."""
        if name is None:
            return os.listdir(self.fd)
        with self.subdirectory(name) as sub:
            return os.listdir(sub.fd)

    def walk_files(self) -> Iterator[str]:
        """Every regular file below the directory, relative and ``/``-separated, without
        entering links (a link is yielded as one entry, as a file is)."""
        for top, directories, files, _ in os.fwalk(".", dir_fd=self.fd):
            prefix = "" if top == "." else top[2:] + "/"
            yield from (prefix + f for f in files)
            yield from (prefix + d for d in directories if self._is_link(prefix + d))

    def _is_link(self, name: str) -> bool:
        info = self.entry(name)
        return info is not None and stat.S_ISLNK(info.st_mode)

    def subdirectory(self, name: str, create: bool = False) -> "Directory":
        """The subdirectory ``name`` as a :class:`Directory` of its own (made with
        ``create``); :class:`UnsafePathError` where it is a link or not a directory."""
        fd, leaf = self._parent(name, create)
        try:
            if create:
                try:
                    os.mkdir(leaf, dir_fd=fd)
                except FileExistsError:
                    pass
            child = self._open_child(fd, leaf, name, check_name(name, "path", UnsafePathError))
        finally:
            self._release(fd)
        sub = Directory.__new__(Directory)
        sub.path = os.path.join(self.path, *name.split("/"))
        sub.fd = child
        return sub

    # ------------------------------------------------------------------ reading and writing

    def open(self, name: str, flags: int = os.O_RDONLY, mode: int = 0o666, create_parents: bool = False) -> int:
        """A descriptor of ``name`` opened with ``flags`` and never through a link."""
        fd, leaf = self._parent(name, create_parents)
        try:
            return os.open(leaf, flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=fd)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise UnsafePathError(f"{os.path.join(self.path, name)} is a symbolic link; tabflow never follows one") from None
            raise
        finally:
            self._release(fd)

    def read_bytes(self, name: str, limit: int) -> bytes | None:
        """The bytes of the regular file ``name`` (at most ``limit`` + 1), None where absent."""
        try:
            fd = self.open(name)
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise UnsafePathError(f"{os.path.join(self.path, name)} is not a regular file")
            return handle.read(limit + 1)

    def write_bytes(self, name: str, data: bytes, exclusive: bool = False) -> None:
        """Create (or truncate) the regular file ``name`` with ``data``, parents made as needed."""
        flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
        with os.fdopen(self.open(name, flags, create_parents=True), "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    # ------------------------------------------------------------------ changing entries

    def move_in(self, source: "Directory", name: str, target: str | None = None) -> None:
        """Rename ``source``'s entry ``name`` to this directory's ``target`` (default the same
        name), parents made as needed; an existing regular file there is replaced."""
        source_fd, source_leaf = source._parent(name)
        try:
            target_fd, target_leaf = self._parent(target or name, create=True)
            try:
                os.rename(source_leaf, target_leaf, src_dir_fd=source_fd, dst_dir_fd=target_fd)
            finally:
                self._release(target_fd)
        finally:
            source._release(source_fd)

    def remove_file(self, name: str, only_ours: bool = False) -> bool:
        """Remove the entry ``name`` if it is a regular file (never a link's target, never a
        directory; with ``only_ours``, only a file of this user's); whether it was removed."""
        try:
            fd, leaf = self._parent(name)
        except (FileNotFoundError, UnsafePathError):
            return False
        try:
            info = os.stat(leaf, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode) or (only_ours and not owned_by_us(info)):
                return False
            os.unlink(leaf, dir_fd=fd)
            return True
        except FileNotFoundError:
            return False
        finally:
            self._release(fd)

    def remove_tree(self, name: str) -> None:
        """Remove the directory ``name`` and everything in it, entering no link (a link is
        removed as an entry)."""
        fd, leaf = self._parent(name)
        try:
            shutil.rmtree(leaf, dir_fd=fd)
        except FileNotFoundError:
            pass
        finally:
            self._release(fd)

    def prune_empty(self, name: str) -> None:
        """Remove the directories holding ``name`` while they are empty, up to this one."""
        parts = check_name(name, "path", UnsafePathError)[:-1]
        while parts:
            try:
                fd, leaf = self._parent("/".join(parts))
            except (FileNotFoundError, UnsafePathError):
                return
            try:
                os.rmdir(leaf, dir_fd=fd)
            except OSError:
                return
            finally:
                self._release(fd)
            parts = parts[:-1]
