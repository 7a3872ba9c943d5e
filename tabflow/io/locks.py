"""One publication at a time into an output: a lock file with its owner, on local disks and
object stores.

A writer holds the lock of its output while it publishes (moves its complete files into
place, removes the previous output's); a reader that finds a publication unfinished holds it
while it completes the dead writer's. Two writers of one output therefore never publish at
once: the second waits for the first (at most :data:`LOCK_WAIT_S` seconds) and then publishes
its own output whole, or fails with an error naming the holder.

- **Local disks**: the lock is ``<out>/.tabflow-lock`` when ``<out>`` is a directory, else
  ``<out>.tabflow-lock`` beside it (the location is checked again once held, since a
  publication turns the one into the other). It is held with ``flock``, so the kernel
  releases it when its holder dies, even by ``kill -9``, and on NFS the server does; the file
  names its holder (host, process, start) for the messages, and is removed on release. Where
  the file system has no ``flock``, creating the file exclusively is the lock, and a file
  whose holder is a process of this host that no longer runs is taken over.
- **Object stores** (through fsspec): the lock is the object ``<out>/.tabflow-lock``, created
  with an exclusive write where the store offers one (fsspec's ``"xb"`` mode: S3's and GCS's
  conditional writes, the memory filesystem). Elsewhere it is written and read back, which
  two writers starting at the same instant can both pass: run one writer per output there.
  A lock left by a process of this host that is gone is taken over; one of another host is
  reported, with how to remove it.

Examples
--------
>>> import os, tempfile
>>> from tabflow.io.locks import output_lock
>>> out = os.path.join(tempfile.mkdtemp(), "out")
>>> with output_lock(out):
...     os.path.exists(out + ".tabflow-lock")
True
>>> os.path.exists(out + ".tabflow-lock")
False
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
import stat
import time
import uuid
from collections.abc import Iterator
from typing import Any

from tabflow._paths import Directory, owned_by_us
from tabflow.exceptions import SaveError

__all__ = [
    "output_lock", "remote_output_lock", "remove_stale_lock", "owner_text", "owner_is_gone", "describe_owner", "LOCK_NAME",
    "LOCK_WAIT_S",
]

logger = logging.getLogger(__name__)

#: The lock file's name inside (or, with a ``.`` before it, beside) an output.
LOCK_NAME = ".tabflow-lock"
#: How long a writer or reader waits for another's publication before giving up.
LOCK_WAIT_S = 600.0
_POLL_S = 0.05
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


def owner_text(token: str = "") -> str:
    """What a marker or lock says of the process writing: host, process id, its start (so a
    reused process id is not taken for the writer) and an optional token.

    Examples
    --------
    >>> import os
    >>> owner_text("abc").split("\\n")[1] == str(os.getpid())
    True
    """
    return f"{socket.gethostname()}\n{os.getpid()}\n{_start_time(os.getpid())}\n{token}\n"


def _start_time(pid: int) -> str:
    """The start of process ``pid`` in clock ticks since boot (Linux), else ""."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return fields[19].decode()
    except (OSError, IndexError):
        return ""


def owner_is_gone(text: str) -> bool:
    """Whether the writer that ``text`` (:func:`owner_text`) names has surely stopped: a
    process of this host that no longer runs, or whose id now belongs to a later process.
    Another host's writer cannot be checked from here: never gone.

    Examples
    --------
    >>> owner_is_gone(owner_text()), owner_is_gone("elsewhere\\n1\\n")
    (False, False)
    """
    lines = text.split("\n")
    try:
        host, pid = lines[0], int(lines[1])
    except (IndexError, ValueError):
        return False
    if host != socket.gethostname() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    started, now = (lines[2] if len(lines) > 2 else ""), _start_time(pid)
    return bool(started and now) and started != now  # the id now names a later process


def describe_owner(text: str) -> str:
    """``text`` (:func:`owner_text`) for a message.

    Examples
    --------
    >>> describe_owner("build-7\\n4242\\n")
    "process 4242 on host 'build-7'"
    """
    lines = text.split("\n")
    if len(lines) < 2 or not lines[1].strip().isdigit():
        return "an unknown process"
    return f"process {lines[1].strip()} on host {lines[0][:100]!r}"


# ------------------------------------------------------------------------------ local


def _lock_location(path: str) -> tuple[str, str]:
    """(directory, file name) of the lock of output ``path``."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        return path, LOCK_NAME
    parent, base = os.path.split(path)
    return parent, f"{base}{LOCK_NAME}"


@contextlib.contextmanager
def output_lock(path: str, wait_s: float | None = None) -> Iterator[None]:
    """Hold the lock of the local output ``path`` (see the module docstring) for the block.

    Raises :class:`~tabflow.exceptions.SaveError` naming the holder when it is not released
    within ``wait_s`` seconds (default :data:`LOCK_WAIT_S`), and ``PermissionError`` /
    ``OSError`` where the lock file cannot be created (a read-only directory).
    """
    path = os.path.abspath(path)
    deadline = time.monotonic() + (LOCK_WAIT_S if wait_s is None else wait_s)
    waited = False
    while True:
        directory, name = _lock_location(path)
        held = _try_lock(directory, name)
        if held is None:
            if not waited:
                logger.info("waiting for another tabflow writer's publication into %s", path)
                waited = True
            if time.monotonic() > deadline:
                raise _held_error(path, directory, name)
            time.sleep(_POLL_S)
            continue
        if _lock_location(path) == (directory, name):
            break
        _release(*held)  # the output became (or stopped being) a directory meanwhile
    try:
        yield
    finally:
        _release(*held)


def _try_lock(directory: str, name: str) -> tuple[Directory, str, int, bool] | None:
    """The held lock (parent, name, descriptor, whether flock holds it), or None while another holds it."""
    parent = Directory(directory, create=True)
    try:
        fd, created = _open_lock_file(parent, name)
    except BaseException:
        parent.close()
        raise
    if fd is None:
        parent.close()
        return None  # created by another process this instant
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        parent.close()
        return None
    except (ImportError, OSError) as err:
        if isinstance(err, OSError) and err.errno not in _NO_FLOCK:
            os.close(fd)
            parent.close()
            raise
        # No flock on this file system: the file created exclusively is the lock.
        if created:
            os.write(fd, owner_text().encode("utf-8"))
            return parent, name, fd, False
        os.close(fd)
        _take_over_if_gone(parent, name)
        parent.close()
        return None
    info = parent.entry(name)
    if info is None or info.st_ino != os.fstat(fd).st_ino:
        os.close(fd)  # released and removed by its holder after we opened it: try again
        parent.close()
        return _try_lock(directory, name)
    os.ftruncate(fd, 0)
    os.write(fd, owner_text().encode("utf-8"))
    return parent, name, fd, True


def _open_lock_file(parent: Directory, name: str) -> tuple[int | None, bool]:
    """The lock file opened for writing, and whether this call created it (exclusively)."""
    try:
        return parent.open(name, os.O_RDWR), False
    except FileNotFoundError:
        pass
    except PermissionError:
        info = parent.entry(name)
        if info is None or owned_by_us(info):
            raise  # a directory this user cannot write into
        raise SaveError(
            f"{os.path.join(parent.path, name)} belongs to another user (uid {info.st_uid}), whose tabflow writer holds "
            "it or left it behind: write the output elsewhere, or ask that user to remove it once their write has ended"
        ) from None
    try:
        return parent.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644), True
    except FileExistsError:
        return None, False


def _take_over_if_gone(parent: Directory, name: str) -> None:
    """Remove a lock file (on a file system without flock) whose holder is surely gone."""
    text = (parent.read_bytes(name, 512) or b"").decode("utf-8", "replace")
    info = parent.entry(name)
    if text and owner_is_gone(text) and info is not None and owned_by_us(info):
        logger.info("taking over the lock %s of %s, which is gone", os.path.join(parent.path, name), describe_owner(text))
        parent.remove_file(name)


def _release(parent: Directory, name: str, fd: int, uses_flock: bool) -> None:
    try:
        info = parent.entry(name)
        if info is not None and info.st_ino == os.fstat(fd).st_ino:
            parent.remove_file(name)  # before unlocking: a waiter that gets it sees it gone
    finally:
        os.close(fd)
        parent.close()


def remove_stale_lock(path: str) -> bool:
    """Remove the lock file beside the output ``path`` (``<path>.tabflow-lock``) when nobody
    holds it: a writer killed before its output existed leaves it there, and the output's
    later writers lock inside the output instead. Whether it was removed.

    Examples
    --------
    >>> import os, tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "out")
    >>> os.mkdir(out)
    >>> _ = open(out + ".tabflow-lock", "w").write("a writer that was killed\\n")
    >>> remove_stale_lock(out), os.path.exists(out + ".tabflow-lock")
    (True, False)
    """
    parent, base = os.path.split(os.path.abspath(path))
    name = f"{base}{LOCK_NAME}"
    try:
        directory = Directory(parent)
    except OSError:
        return False
    with directory:
        info = directory.entry(name)
        if info is None or not stat.S_ISREG(info.st_mode) or not owned_by_us(info):
            return False
    if _lock_location(path) == (parent, name):
        return False  # the output's own lock while it does not exist
    try:
        held = _try_lock(parent, name)
    except OSError:
        return False
    if held is None:
        return False
    _release(*held)
    return True


def _held_error(path: str, directory: str, name: str) -> SaveError:
    lock = os.path.join(directory, name)
    try:
        with Directory(directory) as parent:
            text = (parent.read_bytes(name, 512) or b"").decode("utf-8", "replace")
    except OSError:
        text = ""
    return SaveError(
        f"{path}: another tabflow writer ({describe_owner(text)}) has been publishing there for more than "
        f"{LOCK_WAIT_S:.0f} s (lock {lock}). Try again once it has finished; if that process no longer runs, "
        f"remove {lock}"
    )


# ------------------------------------------------------------------------------ object stores


@contextlib.contextmanager
def remote_output_lock(fs: Any, path: str, wait_s: float | None = None) -> Iterator[None]:
    """Hold the lock object ``<path>/.tabflow-lock`` on ``fs`` for the block (see the module
    docstring).

    Examples
    --------
    >>> import fsspec
    >>> fs = fsspec.filesystem("memory")
    >>> with remote_output_lock(fs, "/doc-lock/out"):
    ...     fs.exists("/doc-lock/out/.tabflow-lock")
    True
    >>> fs.exists("/doc-lock/out/.tabflow-lock")
    False
    """
    lock = f"{path.rstrip('/')}/{LOCK_NAME}"
    token = uuid.uuid4().hex
    mine = owner_text(token).encode("utf-8")
    _held_remote.add(token)
    deadline = time.monotonic() + (LOCK_WAIT_S if wait_s is None else wait_s)
    while not _remote_try_lock(fs, lock, mine):
        if time.monotonic() > deadline:
            text = _remote_text(fs, lock)
            raise SaveError(
                f"{fs.unstrip_protocol(path)}: another tabflow writer ({describe_owner(text)}) has been publishing "
                f"there for more than {LOCK_WAIT_S:.0f} s (lock {fs.unstrip_protocol(lock)}). Try again once it has "
                f"finished; if that process no longer runs, remove {fs.unstrip_protocol(lock)}"
            )
        time.sleep(_POLL_S * 4)
    try:
        yield
    finally:
        _held_remote.discard(token)  # a lock of this token that stays behind is known to be stale
        try:
            if _remote_text(fs, lock) == mine.decode("utf-8"):
                fs.rm_file(lock)
        except FileNotFoundError:
            pass
        except OSError as err:  # the publication is done: a lock left behind is taken over later
            logger.warning("could not remove the lock %s (%s); remove it if no tabflow writer runs", fs.unstrip_protocol(lock), err)


def _remote_try_lock(fs: Any, lock: str, mine: bytes) -> bool:
    try:
        with fs.open(lock, "xb") as handle:
            handle.write(mine)
        return True
    except FileExistsError:
        pass
    except (ValueError, NotImplementedError, TypeError):
        # No exclusive create on this store: write, then read back (see the module docstring).
        if not fs.exists(lock):
            fs.pipe_file(lock, mine)
            return _remote_text(fs, lock) == mine.decode("utf-8")
    text = _remote_text(fs, lock)
    if text and (owner_is_gone(text) or _left_by_this_process(text)):
        logger.info("taking over the lock %s of %s, which is gone", fs.unstrip_protocol(lock), describe_owner(text))
        with contextlib.suppress(FileNotFoundError):
            fs.rm_file(lock)
    return False


# The tokens of the remote locks this process holds now.
_held_remote: set[str] = set()


def _left_by_this_process(text: str) -> bool:
    """Whether a lock names this process but none of the locks it holds (its removal failed)."""
    lines = text.split("\n")
    return len(lines) > 3 and lines[:3] == owner_text().split("\n")[:3] and lines[3] not in _held_remote


def _remote_text(fs: Any, lock: str) -> str:
    try:
        return fs.cat_file(lock)[:512].decode("utf-8", "replace")
    except (FileNotFoundError, OSError):
        return ""
