"""Writing a directory of outputs: into a temporary directory, then published by renaming.

Every output tabflow writes as a directory (a saved workflow, a parquet dataset) goes
through here, which guarantees:

- **nothing half-written**: files go into a temporary directory (carrying a marker file with
  the writer's host and process id) and are published only once complete; a killed writer
  leaves at most that temporary directory, which the next write to the same output removes
  once its process is gone;
- **nothing lost**: tabflow replaces only files it wrote. Every output records its files in
  a manifest (``.tabflow-dataset.json`` or ``.tabflow-workflow.json``). Into a directory that
  also holds other files (the inputs of the job, a notebook's folder, another kind of
  output) the outputs are **added beside** them: the directory keeps everything else, the
  previous output's files are replaced or removed, and a write that would overwrite a file
  tabflow did not write fails before any work, naming the file. A file at the path, the
  root of the file system, and (with ``overwrite=True``) the current directory, its parents
  and the home directory are refused; ``overwrite=True`` replaces the directory and
  everything in it;
- **atomic replacement**: a missing or empty directory, or one that holds only a previous
  output of the same kind, is replaced as a whole: on Linux the new directory and the old
  one are exchanged in one ``renameat2(RENAME_EXCHANGE)`` call, so ``<out>`` is at every
  instant either the complete old output or the complete new one; elsewhere the old output
  is first renamed aside (``<out>.old-<id>``, removed by the next write if a crash left it
  behind). Beside other files, the temporary directory is ``<out>/.tabflow-tmp-<id>`` and
  the files are moved into place under a journal (``.tabflow-publishing-<kind>.json``)
  written in one rename before the first move: a writer killed before it leaves the previous
  output, one killed after it leaves the new output, whose remaining moves the next write or
  read of the directory through tabflow (:func:`recover`) completes. Readers take the
  output's files from the manifest, never from what else the directory holds.

Examples
--------
>>> import os, tempfile
>>> from tabflow.io.atomic import check_target, publish, temporary_directory
>>> out = tempfile.mkdtemp()
>>> _ = open(os.path.join(out, "input.csv"), "w").write("x\\n1\\n")
>>> check_target(out, "dataset")
>>> tmp = temporary_directory(out, "dataset")
>>> _ = open(os.path.join(tmp, "_schema.json"), "w").write("{}")
>>> publish(tmp, out, "dataset")
>>> sorted(os.listdir(out))
['.tabflow-dataset.json', '_schema.json', 'input.csv']
>>> owned_files(out, "dataset")
['_schema.json']
"""

from __future__ import annotations

import ctypes
import errno
import json
import logging
import os
import re
import shutil
import socket
import stat
import time
import uuid
from collections.abc import Iterable
from typing import Any

from tabflow.exceptions import SaveError

__all__ = ["check_target", "temporary_directory", "publish", "discard", "recover", "owned_files", "files_under", "clash_error", "KIND_MARKERS", "MANIFESTS"]

logger = logging.getLogger(__name__)

#: The file that makes a directory recognisably a previous output of each kind.
KIND_MARKERS = {"workflow": "workflow.json", "dataset": "_schema.json"}
#: The manifest listing the files of each kind of output (relative paths, ``/``-separated).
MANIFESTS = {"workflow": ".tabflow-workflow.json", "dataset": ".tabflow-dataset.json"}
_TEMPORARY_MARKER = ".tabflow-writing"
TEMPORARY_MARKER = _TEMPORARY_MARKER
_REPLACED_MARKER = ".tabflow-replaced"
_SIBLING = re.compile(r"^(?P<name>.+)\.(?P<what>tmp|old)-(?P<id>[0-9a-f]{12})$")
_INSIDE = re.compile(r"^\.tabflow-tmp-[0-9a-f]{12}$")
_JOURNAL = ".tabflow-publishing-{kind}.json"
_MAX_MANIFEST_BYTES = 64 * 2**20
# How long a reader waits for a live writer to finish moving files into place (renames only).
_PUBLISHING_WAIT_S = 60.0
# Journals this process is carrying out now; one of its own that is not here was left by a
# publication that failed (a full disk, say) and is completed like a killed writer's.
_in_progress: set[str] = set()


def check_target(path: str, kind: str, overwrite: bool = False, names: Iterable[str] = ()) -> None:
    """Raise :class:`SaveError` if writing ``kind`` to ``path`` would replace or overwrite
    something tabflow did not write (``names``: the output's files, relative to ``path``,
    where known before writing). Touches nothing, except that it completes a publication a
    killed writer left (:func:`recover`)."""
    path = os.path.abspath(path)
    _refuse_root(path)
    if overwrite:
        _refuse_protected(path)
    if not os.path.lexists(path):
        return
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        recover(path)
        if overwrite or not _beside(path, kind, overwrite):
            return
        _check_collisions(path, kind, names)
        return
    if overwrite:
        return
    what = "symbolic link" if stat.S_ISLNK(info.st_mode) else "file"
    raise SaveError(
        f"{path} is a {what}, not a directory; refusing to replace it. Choose another path for the {kind}, or "
        "pass overwrite=True to replace it"
    )


def temporary_directory(path: str, kind: str | None = None, overwrite: bool = False) -> str:
    """Create and return the temporary directory of a write to ``path`` (parents created),
    after removing temporary directories that killed writers left for the same ``path``:
    ``<path>/.tabflow-tmp-<id>`` where the output goes beside other files (``kind`` given),
    else the sibling ``<path>.tmp-<id>``."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    remove_stale(path)
    if kind is not None and os.path.isdir(path) and not os.path.islink(path) and _beside(path, kind, overwrite):
        tmp = os.path.join(path, f".tabflow-tmp-{uuid.uuid4().hex[:12]}")
    else:
        tmp = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    os.mkdir(tmp)
    _write_owner(os.path.join(tmp, _TEMPORARY_MARKER))
    return tmp


def publish(tmp: str, path: str, kind: str, overwrite: bool = False, replaceable: Iterable[str] = ()) -> None:
    """Make the complete directory ``tmp`` the output ``path`` (see the module docstring).

    ``replaceable`` names files (relative to ``path``) that the output may overwrite though
    no manifest lists them: files tabflow wrote there for this output by other means (the
    vocabulary files of ``Categorify(out_path=path)``, which a saved workflow bundles)."""
    path = os.path.abspath(path)
    tmp = os.path.abspath(tmp)
    check_target(path, kind, overwrite)  # again: the target may have changed while writing
    os.remove(os.path.join(tmp, _TEMPORARY_MARKER))
    files = files_under(tmp)
    _write_json(os.path.join(tmp, MANIFESTS[kind]), {"kind": kind, "files": files})
    if os.path.dirname(tmp) == path or (not overwrite and os.path.isdir(path) and _beside(path, kind, overwrite)):
        _publish_beside(tmp, path, kind, files, set(replaceable))
        return
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
    """Remove a temporary directory after a failed write, unless a journal names it: then
    its files are the new output, which :func:`recover` moves into place."""
    tmp = os.path.abspath(tmp)
    match = _SIBLING.match(os.path.basename(tmp))
    target = os.path.join(os.path.dirname(tmp), match.group("name")) if match else os.path.dirname(tmp)
    for kind in MANIFESTS:
        journal = os.path.join(target, _JOURNAL.format(kind=kind))
        try:
            document = _read_json(journal)
        except SaveError:
            document = None
        if document is not None and os.path.normpath(os.path.join(target, str(document.get("tmp", "")))) == tmp:
            return
    shutil.rmtree(tmp, ignore_errors=True)


def owned_files(path: str, kind: str) -> list[str] | None:
    """The files of the ``kind`` output in directory ``path`` (relative, ``/``-separated), as
    its manifest lists them; None where ``path`` holds no manifest of that kind.

    A publication a killed writer left unfinished is completed first (:func:`recover`).
    """
    path = os.path.abspath(path)
    recover(path)
    return _manifest(path, kind)


def recover(path: str) -> None:
    """Complete the publications into directory ``path`` that writers began and did not
    finish (killed after their journal was written), and remove the temporary directories of
    writers that are gone. A live writer's publication is waited for (it only renames)."""
    path = os.path.abspath(path)
    for kind in MANIFESTS:
        journal = os.path.join(path, _JOURNAL.format(kind=kind))
        deadline = time.monotonic() + _PUBLISHING_WAIT_S
        while os.path.isfile(journal):
            document = _read_json(journal)
            if document is None:
                break  # removed meanwhile: that publication is complete
            owner = str(document.get("owner", ""))
            if owner_is_gone(owner) or (owner == owner_text() and journal not in _in_progress):
                logger.info("completing the %s publication into %s that a killed writer began", kind, path)
                _roll_forward(path, journal, document)
                break
            if time.monotonic() > deadline:
                raise SaveError(
                    f"{path}: a tabflow {kind} is still being published there ({journal}); try again when that "
                    "write has finished"
                )
            time.sleep(0.05)
    try:
        entries = os.listdir(path)
    except OSError:
        return
    for entry in entries:
        candidate = os.path.join(path, entry)
        if (
            _INSIDE.match(entry)
            and not os.path.islink(candidate)
            and os.path.isdir(candidate)
            and _writer_is_gone(os.path.join(candidate, _TEMPORARY_MARKER))
        ):
            logger.info("removing %s, left by a writer that is gone", candidate)
            shutil.rmtree(candidate, ignore_errors=True)


def remove_stale(path: str) -> list[str]:
    """Remove ``<path>.tmp-*`` / ``<path>.old-*`` siblings left by writers that are gone.

    Only directories tabflow made are touched: the name pattern must match and the marker
    inside must name a process of this host that no longer runs (or another host's, never).
    """
    path = os.path.abspath(path)
    parent, base = os.path.split(path)
    removed: list[str] = []
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


# ------------------------------------------------------------------- beside other files


def _beside(path: str, kind: str, overwrite: bool) -> bool:
    """Whether an output into the existing directory ``path`` goes beside what it holds
    (rather than replacing the directory as a whole)."""
    if overwrite:
        return False
    if _is_protected(path):
        return True  # never renamed away, whatever it holds
    if _is_empty(path):
        return False
    if not _is_kind(path, kind):
        return True
    listed = _manifest(path, kind)
    if listed is None:
        # Written before manifests existed: which files are its own is unknown, so nothing
        # but the files of the same names is replaced.
        return True
    own = {*listed, MANIFESTS[kind]}
    if any(name not in own and not _is_machinery(name) for name in files_under(path, skip_machinery=True)):
        return True
    # A directory of someone else's, even empty, is a neighbour too.
    parents = {"/".join(name.split("/")[:depth]) for name in own for depth in range(1, name.count("/") + 1)}
    return any(name not in parents for name in _directories_under(path))


def _check_collisions(path: str, kind: str, names: Iterable[str], previous: set[str] | None = None) -> None:
    """Raise :class:`SaveError` naming the first of ``names`` that would overwrite (or need
    to replace) something in ``path`` that the previous ``kind`` output did not write."""
    if previous is None:
        previous = _previous_files(path, kind, names)
    for name in names:
        parts = name.split("/")
        for depth in range(1, len(parts) + 1):
            relative = "/".join(parts[:depth])
            target = os.path.join(path, *parts[:depth])
            if not os.path.lexists(target):
                break
            last = depth == len(parts)
            is_dir = os.path.isdir(target) and not os.path.islink(target)
            if last and not is_dir and relative in previous:
                break
            if not last and is_dir:
                continue
            raise clash_error(target, path, kind, is_dir)


def clash_error(target: str, path: str, kind: str, is_dir: bool = False) -> SaveError:
    """The error for an output file ``target`` that would overwrite something in ``path``
    that tabflow did not write, with the ways out.

    Examples
    --------
    >>> print(clash_error("/data/part_0.parquet", "/data", "dataset"))  # doctest: +ELLIPSIS
    /data/part_0.parquet exists and was not written by tabflow as a dataset: ... Move that file away, ...
    """
    return SaveError(
        f"{target} exists and was not written by tabflow as a {kind}: writing the {kind} into {path} "
        f"would overwrite it. Move that {'directory' if is_dir else 'file'} away, write the {kind} to "
        "another directory, or give the output files other names (to_parquet's output_files="
        "{name: partitions})"
    )


def _previous_files(path: str, kind: str, names: Iterable[str]) -> set[str]:
    listed = _manifest(path, kind)
    if listed is not None:
        return set(listed)
    if _is_kind(path, kind):
        # An output from before manifests: the files it wrote are the ones a new output of
        # the same kind writes under the same names.
        return {n for n in names if os.path.isfile(os.path.join(path, *n.split("/")))}
    return set()


def _publish_beside(tmp: str, path: str, kind: str, files: list[str], replaceable: set[str]) -> None:
    """Move the files of ``tmp`` into ``path`` beside what it holds, under a journal."""
    previous = _previous_files(path, kind, files) | {n for n in replaceable & set(files) if os.path.isfile(_inside(path, n))}
    _check_collisions(path, kind, files, previous)
    manifest = MANIFESTS[kind]
    logger.info("adding the %s's %d file(s) to %s beside the files there", kind, len(files), path)
    journal = os.path.join(path, _JOURNAL.format(kind=kind))
    document = {
        "owner": owner_text(),
        "tmp": os.path.relpath(tmp, path),
        "add": [*files, manifest],  # the manifest last: it names the complete output
        "remove": sorted(previous - set(files) - {manifest}),
    }
    _in_progress.add(journal)
    try:
        _write_json(journal, document)
        _roll_forward(path, journal, document)
    finally:
        _in_progress.discard(journal)


def _roll_forward(path: str, journal: str, document: dict) -> None:
    """Carry out a journal's moves and removals; each step may already have been done."""
    tmp = os.path.normpath(os.path.join(path, str(document.get("tmp", ""))))
    if os.path.dirname(tmp) != path and not _SIBLING.match(os.path.basename(tmp)):
        raise SaveError(f"{journal} names {tmp}, not a temporary directory of {path}; remove the journal by hand")
    for name in document.get("add", []):
        source, target = _inside(tmp, name), _inside(path, name)
        if os.path.lexists(source):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(source, target)
    for name in document.get("remove", []):
        target = _inside(path, name)
        if os.path.isfile(target) or os.path.islink(target):
            os.remove(target)
        _prune_empty(path, os.path.dirname(target))
    shutil.rmtree(tmp, ignore_errors=True)
    os.remove(journal)


def _inside(root: str, name: str) -> str:
    target = os.path.normpath(os.path.join(root, *str(name).split("/")))
    if not target.startswith(root.rstrip(os.sep) + os.sep):
        raise SaveError(f"{name!r} is not a path inside {root}")
    return target


def _prune_empty(root: str, directory: str) -> None:
    """Remove ``directory`` and its parents below ``root`` while they are empty."""
    while directory != root and directory.startswith(root + os.sep):
        try:
            os.rmdir(directory)
        except OSError:
            return
        directory = os.path.dirname(directory)


def _is_machinery(name: str) -> bool:
    return name in MANIFESTS.values() or name.startswith((".tabflow-tmp-", ".tabflow-publishing-"))


def files_under(root: str, skip_machinery: bool = False) -> list[str]:
    """Every file under ``root``, relative and ``/``-separated, sorted (``skip_machinery``:
    without the manifests, journals and temporary directories of this module).

    Examples
    --------
    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(root, "categories"))
    >>> for name in ("categories/unique.c.parquet", "workflow.json"):
    ...     _ = open(os.path.join(root, name), "w").write("")
    >>> files_under(root)
    ['categories/unique.c.parquet', 'workflow.json']
    """
    found: list[str] = []
    for directory, subdirectories, names in os.walk(root):
        relative = os.path.relpath(directory, root)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        if skip_machinery and not prefix:
            subdirectories[:] = [d for d in subdirectories if not _is_machinery(d)]
        found.extend(prefix + name for name in names)
        # A link to a directory is not walked into: it is one entry, as a file is.
        found.extend(prefix + name for name in subdirectories if os.path.islink(os.path.join(directory, name)))
    return sorted(found)


def _directories_under(root: str) -> list[str]:
    """Every directory under ``root`` but this module's own, relative and ``/``-separated."""
    found: list[str] = []
    for directory, subdirectories, _ in os.walk(root):
        relative = os.path.relpath(directory, root)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        if not prefix:
            subdirectories[:] = [d for d in subdirectories if not _is_machinery(d)]
        found.extend(prefix + name for name in subdirectories)
    return found


def _manifest(path: str, kind: str) -> list[str] | None:
    document = _read_json(os.path.join(path, MANIFESTS[kind]))
    if document is None:
        return None
    files = document.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise SaveError(f"{os.path.join(path, MANIFESTS[kind])} is malformed: 'files' must be a list of file names")
    return files


def _read_json(file: str) -> dict | None:
    from tabflow._json import parse_json

    try:
        with open(file, "rb") as handle:
            raw = handle.read(_MAX_MANIFEST_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if len(raw) > _MAX_MANIFEST_BYTES:
        raise SaveError(f"{file} is larger than {_MAX_MANIFEST_BYTES} bytes; it is not a file tabflow wrote")
    document = parse_json(raw.decode("utf-8", errors="replace"), file)
    if not isinstance(document, dict):
        raise SaveError(f"{file} is malformed: expected a JSON object")
    return document


def _write_json(file: str, document: dict) -> None:
    """Write ``document`` to ``file`` in one rename (a reader sees all of it or none)."""
    staged = f"{file}.{uuid.uuid4().hex[:12]}"
    with open(staged, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staged, file)


# ------------------------------------------------------------------------------ helpers


def _refuse_root(path: str) -> None:
    real = os.path.realpath(path)
    if real == os.path.dirname(real):
        raise SaveError(f"refusing to write over {path}: it is the root of the file system")


def _is_protected(path: str) -> bool:
    """The current directory, its parents and the home directory: never renamed away."""
    real = os.path.realpath(path)
    cwd = os.path.realpath(os.getcwd())
    home = os.path.realpath(os.path.expanduser("~"))
    return real == home or cwd == real or cwd.startswith(real.rstrip(os.sep) + os.sep)


def _refuse_protected(path: str) -> None:
    real = os.path.realpath(path)
    cwd = os.path.realpath(os.getcwd())
    if cwd == real or cwd.startswith(real.rstrip(os.sep) + os.sep):
        raise SaveError(
            f"refusing to replace {path} (overwrite=True): it is the current directory or contains it. Write "
            "into it without overwrite=True (the output is added beside its files), or into a subdirectory"
        )
    home = os.path.realpath(os.path.expanduser("~"))
    if real == home:
        raise SaveError(
            f"refusing to replace {path} (overwrite=True): it is the home directory. Write into it without "
            "overwrite=True (the output is added beside its files), or into a subdirectory"
        )


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
# renameat2 once looked up: None before, False where the C library has none.
_renameat2: Any = None


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
