"""Writing a directory as a whole: into a temporary sibling, then published by renaming.

Every output tabflow writes as a directory (a saved workflow, a parquet dataset) goes
through here, which guarantees:

- **nothing half-written**: files go into ``<out>.tmp-<id>`` (carrying a marker file with
  the writer's host and process id) and only a complete directory is renamed to ``<out>``;
  a killed writer leaves at most that temporary directory, which the next write to the same
  output removes once its process is gone;
- **nothing lost**: ``<out>`` is replaced only when it is missing, an empty directory, or a
  previous output of the same kind (recognised by the file tabflow writes into it:
  ``workflow.json`` for a workflow, ``_schema.json`` for a dataset). Anything else, such as a
  project folder, ``.``, or a file, is refused before any work, with an error naming the path,
  unless the caller passes ``overwrite=True``; the current directory and its parents are
  never replaced;
- **atomic replacement**: on Linux the new directory and the old one are exchanged in one
  ``renameat2(RENAME_EXCHANGE)`` call, so ``<out>`` is at every instant either the complete
  old output or the complete new one; elsewhere the old output is first renamed aside
  (``<out>.old-<id>``, removed by the next write if a crash left it behind).

Examples
--------
>>> import os, tempfile
>>> from tabflow.io.atomic import check_target, publish, temporary_directory
>>> out = os.path.join(tempfile.mkdtemp(), "out")
>>> check_target(out, "dataset")
>>> tmp = temporary_directory(out)
>>> _ = open(os.path.join(tmp, "_schema.json"), "w").write("{}")
>>> publish(tmp, out, "dataset")
>>> sorted(os.listdir(out))
['_schema.json']
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import re
import shutil
import socket
import stat
import uuid

from tabflow.exceptions import SaveError

__all__ = ["check_target", "temporary_directory", "publish", "discard", "KIND_MARKERS"]

logger = logging.getLogger(__name__)

#: The file that makes a directory recognisably a previous output of each kind.
KIND_MARKERS = {"workflow": "workflow.json", "dataset": "_schema.json"}
_TEMPORARY_MARKER = ".tabflow-writing"
TEMPORARY_MARKER = _TEMPORARY_MARKER
_REPLACED_MARKER = ".tabflow-replaced"
_SIBLING = re.compile(r"^(?P<name>.+)\.(?P<what>tmp|old)-(?P<id>[0-9a-f]{12})$")


def check_target(path: str, kind: str, overwrite: bool = False) -> None:
    """Raise :class:`SaveError` if writing ``kind`` to ``path`` would replace something that
    is not a previous ``kind`` output (and ``overwrite`` is not set). Touches nothing."""
    path = os.path.abspath(path)
    _refuse_protected(path)
    if not os.path.lexists(path):
        return
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        if _is_empty(path) or _is_kind(path, kind) or overwrite:
            return
        raise SaveError(
            f"{path} is a non-empty directory that does not hold a tabflow {kind} (no {KIND_MARKERS[kind]}); "
            f"refusing to replace it. Write the {kind} to a new or empty directory, or pass overwrite=True to "
            "replace this directory and everything in it"
        )
    if overwrite:
        return
    what = "symbolic link" if stat.S_ISLNK(info.st_mode) else "file"
    raise SaveError(
        f"{path} is a {what}, not a directory; refusing to replace it. Choose another path for the {kind}, or "
        "pass overwrite=True to replace it"
    )


def temporary_directory(path: str) -> str:
    """Create and return ``<path>.tmp-<id>`` (parents created), after removing temporary
    directories that killed writers left for the same ``path``."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    remove_stale(path)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    os.mkdir(tmp)
    _write_owner(os.path.join(tmp, _TEMPORARY_MARKER))
    return tmp


def publish(tmp: str, path: str, kind: str, overwrite: bool = False) -> None:
    """Make the complete directory ``tmp`` the output ``path`` (see the module docstring)."""
    path = os.path.abspath(path)
    check_target(path, kind, overwrite)  # again: the target may have changed while writing
    os.remove(os.path.join(tmp, _TEMPORARY_MARKER))
    if not os.path.lexists(path):
        os.rename(tmp, path)
        return
    if os.path.isdir(path) and not os.path.islink(path) and _is_empty(path):
        os.rename(tmp, path)  # rename() replaces an empty directory atomically
        return
    logger.info("replacing the %s at %s (%s)", kind, path, "a previous output" if _is_kind(path, kind) else "overwrite=True")
    if _exchange(tmp, path):
        _remove(tmp)  # now holds the previous output
        return
    old = f"{path}.old-{uuid.uuid4().hex[:12]}"
    if os.path.isdir(path) and not os.path.islink(path):
        _write_owner(os.path.join(path, _REPLACED_MARKER))
    os.rename(path, old)
    os.rename(tmp, path)
    _remove(old)


def discard(tmp: str) -> None:
    """Remove a temporary directory after a failed write."""
    shutil.rmtree(tmp, ignore_errors=True)


def remove_stale(path: str) -> list[str]:
    """Remove ``<path>.tmp-*`` / ``<path>.old-*`` siblings left by writers that are gone.

    Only directories tabflow made are touched: the name pattern must match and the marker
    inside must name a process of this host that no longer runs (or another host's, never).
    """
    path = os.path.abspath(path)
    parent, base = os.path.split(path)
    removed = []
    try:
        entries = os.listdir(parent)
    except OSError:
        return removed
    for entry in entries:
        match = _SIBLING.match(entry)
        if not match or match.group("name") != base:
            continue
        candidate = os.path.join(parent, entry)
        if os.path.islink(candidate) or not os.path.isdir(candidate):
            continue
        marker = _TEMPORARY_MARKER if match.group("what") == "tmp" else _REPLACED_MARKER
        if _writer_is_gone(os.path.join(candidate, marker)):
            logger.info("removing %s, left by a writer that is gone", candidate)
            shutil.rmtree(candidate, ignore_errors=True)
            removed.append(candidate)
    return removed


# ------------------------------------------------------------------------------ helpers


def _refuse_protected(path: str) -> None:
    real = os.path.realpath(path)
    cwd = os.path.realpath(os.getcwd())
    if real == os.path.dirname(real):
        raise SaveError(f"refusing to write over {path}: it is the root of the file system")
    if cwd == real or cwd.startswith(real.rstrip(os.sep) + os.sep):
        raise SaveError(
            f"refusing to write over {path}: it is the current directory or contains it. Write into a "
            "subdirectory instead (e.g. ./workflow or ./output)"
        )
    home = os.path.realpath(os.path.expanduser("~"))
    if real == home:
        raise SaveError(f"refusing to write over {path}: it is the home directory. Write into a subdirectory instead")


def _is_empty(path: str) -> bool:
    with os.scandir(path) as entries:
        return next(entries, None) is None


def _is_kind(path: str, kind: str) -> bool:
    marker = os.path.join(path, KIND_MARKERS[kind])
    return os.path.isfile(marker) and not os.path.islink(marker)


def _write_owner(marker: str) -> None:
    with open(marker, "w", encoding="utf-8") as handle:
        handle.write(owner_text())


def _writer_is_gone(marker: str) -> bool:
    try:
        with open(marker, encoding="utf-8") as handle:
            text = handle.read(200)
    except OSError:
        return False  # no marker: not ours, or still being created
    return owner_is_gone(text)


def owner_text() -> str:
    """What a marker file says about the process writing: host and process id."""
    return f"{socket.gethostname()}\n{os.getpid()}\n"


def owner_is_gone(text: str) -> bool:
    """Whether the writer a marker's ``text`` names (:func:`owner_text`) has surely stopped:
    a process of this host that no longer runs (another host's writer cannot be checked)."""
    try:
        host, pid = text.split("\n")[:2]
        pid_number = int(pid)
    except ValueError:
        return False
    if host != socket.gethostname():
        return False  # a writer on another machine (shared file system): cannot tell
    if pid_number == os.getpid():
        return False
    try:
        os.kill(pid_number, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.remove(path)
        except OSError:
            pass


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2 = None


def _exchange(a: str, b: str) -> bool:
    """Swap two paths atomically (Linux renameat2); False where that is not available."""
    global _renameat2
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return False
    if _renameat2 is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            function = libc.renameat2
            function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            function.restype = ctypes.c_int
            _renameat2 = function
        except (OSError, AttributeError):
            _renameat2 = False
    if not _renameat2:
        return False
    result = _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EPERM):
        return False  # file system or kernel without the exchange: fall back to two renames
    raise OSError(code, os.strerror(code), b)
