"""Writing a directory of outputs: into a temporary directory, then published by renaming.

Every output tabflow writes as a directory (a saved workflow, a parquet dataset) goes
through here, which guarantees:

- **nothing half-written**: files go into a private temporary directory (mode 0700, carrying
  a marker file that names the writer and a random token) and are published only once
  complete; a killed writer leaves at most that temporary directory, which the next write
  to (or read of) the same output removes once its process is gone;
- **nothing lost, nothing foreign touched**: tabflow replaces or removes only files it wrote.
  Every output records its files in a manifest (``.tabflow-dataset.json`` or
  ``.tabflow-workflow.json``). Into a directory that also holds other files (the inputs of
  the job, a notebook's folder, another kind of output) the outputs are **added beside**
  them: the directory keeps everything else, the previous output's files are replaced or
  removed, and a write that would overwrite a file tabflow did not write fails before any
  work, naming the file. A file at the path, the root of the file system, and (with
  ``overwrite=True``) the current directory, its parents and the home directory are
  refused; ``overwrite=True`` replaces the directory and everything in it;
- **untrusted names**: a manifest or journal is a file anybody who can write the directory
  can change. Its names are acted on only once valid (:func:`tabflow._paths.check_name`:
  relative, no ``..``, no NUL), and every removal, move and read goes through
  :class:`tabflow._paths.Directory`, which never follows a symbolic link below the output,
  so nothing outside the output is ever read, changed or deleted. A manifest or journal
  owned by another user names no file of this user's: its files count as foreign (and
  another user's journal is never carried out); a malformed one is an error naming it and
  what to do, and nothing is moved;
- **one publication at a time**: publishing holds the output's lock
  (:mod:`tabflow.io.locks`), so two writers never mix their files; the second publishes its
  whole output after the first (the last one wins, whole);
- **atomic replacement**: a missing or empty directory, or one that holds only a previous
  output of the same kind, is replaced as a whole: on Linux the new directory and the old
  one are exchanged in one ``renameat2(RENAME_EXCHANGE)`` call, so ``<out>`` is at every
  instant either the complete old output or the complete new one; elsewhere the old output
  is first renamed aside (``<out>.old-<id>``, removed by the next write if a crash left it
  behind). A file saved into the old directory by someone else in the meantime is seen
  after the exchange: the directories are exchanged back and the output goes beside it.
  Beside other files, the temporary directory is ``<out>/.tabflow-tmp-<id>`` and the files
  are moved into place under a journal (``.tabflow-publishing-<kind>.json``) written in one
  rename before the first move: a writer killed before it leaves the previous output, one
  killed after it leaves the new output, whose remaining moves the next write or read of the
  directory through tabflow (:func:`recover`) completes. Readers take the output's files
  from the manifest, never from what else the directory holds.

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
import stat
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from tabflow._paths import Directory, UnsafePathError, check_name, owned_by_us
from tabflow.exceptions import SaveError
from tabflow.io.locks import LOCK_NAME, describe_owner, output_lock, owner_is_gone, owner_text, remove_stale_lock

__all__ = [
    "check_target", "temporary_directory", "publish", "discard", "recover", "owned_files", "files_under",
    "clash_error", "check_output_names", "check_journal_fields", "output_state", "manifest_bytes", "KIND_MARKERS",
    "MANIFESTS", "TEMPORARY_MARKER",
]

logger = logging.getLogger(__name__)

#: The file that makes a directory recognisably a previous output of each kind.
KIND_MARKERS = {"workflow": "workflow.json", "dataset": "_schema.json"}
#: The manifest listing the files of each kind of output (relative paths, ``/``-separated).
MANIFESTS = {"workflow": ".tabflow-workflow.json", "dataset": ".tabflow-dataset.json"}
#: In a temporary directory while it is written: the writer and the write's token.
TEMPORARY_MARKER = ".tabflow-writing"
_REPLACED_MARKER = ".tabflow-replaced"
_SIBLING = re.compile(r"^(?P<name>.+)\.(?P<what>tmp|old|trash)-(?P<id>[0-9a-f]{12})$")
_INSIDE = re.compile(r"^\.tabflow-tmp-[0-9a-f]{12}$")
# A directory is renamed to a trash name before it is removed: one whose removal was cut
# short is then still recognisably garbage (its marker may be gone already).
_TRASH = re.compile(r"^\.tabflow-trash-[0-9a-f]{12}$")
_JOURNAL = ".tabflow-publishing-{kind}.json"
_JOURNALS = {_JOURNAL.format(kind=kind): kind for kind in MANIFESTS}
_STAGED = re.compile(r"^\.tabflow-publishing-(workflow|dataset)\.json\.[0-9a-f]{12}$")
_TOKEN = re.compile(r"^[0-9a-f]{32}$")
_MAX_MANIFEST_BYTES = 64 * 2**20


def check_target(path: str, kind: str, overwrite: bool = False, names: Iterable[str] = ()) -> None:
    """Raise :class:`SaveError` if writing ``kind`` to ``path`` would replace or overwrite
    something tabflow did not write (``names``: the output's files, relative to ``path``,
    where known before writing; each must be a plain relative path). Touches nothing, except
    that it completes a publication a killed writer left (:func:`recover`)."""
    _check_target(os.path.abspath(path), kind, overwrite, check_output_names(names, kind), complete=True)


def _check_target(path: str, kind: str, overwrite: bool, names: Sequence[str], complete: bool) -> None:
    """:func:`check_target`; ``complete``: finish a killed writer's publication first (not
    while this process holds the output's lock, which :func:`recover` takes)."""
    _refuse_root(path)
    if overwrite:
        _refuse_protected(path)
    if not os.path.lexists(path):
        return
    if stat.S_ISDIR(os.lstat(path).st_mode):
        if complete:
            recover(path)
        _check_directory(path, kind, overwrite, names)
        return
    if overwrite:
        return
    what = "symbolic link" if os.path.islink(path) else "file"
    raise SaveError(
        f"{path} is a {what}, not a directory; refusing to replace it. Choose another path for the {kind}, or "
        "pass overwrite=True to replace it"
    )


def check_output_names(names: Iterable[Any], kind: str) -> list[str]:
    """``names`` (files of a ``kind`` output, given by a caller), each a plain relative path
    that is none of this module's own; ``SaveError`` naming the first that is not.

    Examples
    --------
    >>> check_output_names(["part_0.parquet", "k=1/part_1.parquet"], "dataset")
    ['part_0.parquet', 'k=1/part_1.parquet']
    >>> check_output_names([".tabflow-dataset.json"], "dataset")
    Traceback (most recent call last):
    ...
    tabflow.exceptions.SaveError: '.tabflow-dataset.json' is a name tabflow keeps for itself in an output; name the dataset's files otherwise
    """
    checked = []
    for name in names:
        parts = check_name(name, f"the {kind}'s file name", SaveError)
        if _is_machinery(parts[0]) or name in (TEMPORARY_MARKER, _REPLACED_MARKER):
            raise SaveError(f"{name!r} is a name tabflow keeps for itself in an output; name the {kind}'s files otherwise")
        checked.append(name)
    return checked


def _check_directory(path: str, kind: str, overwrite: bool, names: Sequence[str]) -> None:
    with Directory(path) as directory:
        if overwrite or not _beside(directory, kind, overwrite):
            return
        _check_collisions(directory, kind, names, _previous_files(directory, kind, names))


def temporary_directory(path: str, kind: str | None = None, overwrite: bool = False) -> str:
    """Create and return the private temporary directory of a write to ``path`` (parents
    created), after removing temporary directories that killed writers left for the same
    ``path``: ``<path>/.tabflow-tmp-<id>`` where the output goes beside other files (``kind``
    given), else the sibling ``<path>.tmp-<id>``."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    remove_stale(path)
    inside = False
    if kind is not None and os.path.isdir(path) and not os.path.islink(path):
        with Directory(path) as directory:
            inside = _beside(directory, kind, overwrite)
    tmp = os.path.join(path, f".tabflow-tmp-{uuid.uuid4().hex[:12]}") if inside else f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    os.mkdir(tmp, 0o700)  # nobody else can plant a link inside while it is written
    _write_marker(tmp, TEMPORARY_MARKER, uuid.uuid4().hex)
    return tmp


def publish(tmp: str, path: str, kind: str, overwrite: bool = False, replaceable: Iterable[str] = ()) -> None:
    """Make the complete directory ``tmp`` the output ``path`` (see the module docstring).

    ``replaceable`` names files (relative to ``path``) that the output may overwrite though
    no manifest lists them: files tabflow wrote there for this output by other means (the
    vocabulary files of ``Categorify(out_path=path)``, which a saved workflow bundles)."""
    path = os.path.abspath(path)
    tmp = os.path.abspath(tmp)
    old: str | None = None
    with output_lock(path):
        _recover_locked(path)
        _check_target(path, kind, overwrite, (), complete=False)  # again: the target may have changed meanwhile
        with Directory(tmp) as staging:
            token = _marker_token(staging, TEMPORARY_MARKER)
            if not token:
                raise SaveError(f"{tmp} is not a temporary directory tabflow made: its marker names no write")
            files = check_output_names([f for f in staging.walk_files() if f != TEMPORARY_MARKER], kind)
            for name in files:
                if not staging.is_file(name):
                    raise SaveError(f"{os.path.join(tmp, name)} is not a regular file: a {kind} holds regular files only")
            staging.write_bytes(MANIFESTS[kind], manifest_bytes(kind, files))
        inside = os.path.dirname(tmp) == path
        if inside or (not overwrite and os.path.isdir(path) and not os.path.islink(path) and _beside_path(path, kind)):
            _publish_beside(_moved_inside(tmp, path), path, kind, files, token, set(replaceable))
            return
        os.chmod(tmp, _default_directory_mode())
        if not os.path.lexists(path):
            os.rename(tmp, path)
            _remove_marker(path, TEMPORARY_MARKER)
            return
        logger.info("replacing the %s at %s (%s)", kind, path, "overwrite=True" if overwrite else "a previous output")
        old = _replace_whole(tmp, path, kind, files, token, overwrite, set(replaceable))
    if old is not None:
        _remove(old, trash=True)


def _replace_whole(tmp: str, path: str, kind: str, files: list[str], token: str, overwrite: bool, replaceable: set[str]) -> str | None:
    """Put ``tmp`` in the place of the directory (or file, or link) ``path``; the path now
    holding the previous output, or None where the output went beside after all."""
    is_directory = os.path.isdir(path) and not os.path.islink(path)
    expected = _entries(path) if is_directory else set()
    if is_directory:
        _write_marker(path, _REPLACED_MARKER, token)
    if _exchange(tmp, path):
        old = tmp
        swap_back = lambda: _exchange(old, path)  # noqa: E731
    else:
        old = f"{path}.old-{uuid.uuid4().hex[:12]}"
        os.rename(path, old)
        os.rename(tmp, path)

        def swap_back() -> bool:
            os.rename(path, tmp)
            os.rename(old, path)
            return True

    if is_directory and not overwrite and _entries(old) - expected - {_REPLACED_MARKER}:
        # Somebody saved a file into the old directory after it was judged to hold only a
        # previous output: put it back and add the output beside that file instead.
        swap_back()
        logger.info("%s changed while the %s was published; adding it beside the files there", path, kind)
        _remove_marker(path, _REPLACED_MARKER)
        _publish_beside(_moved_inside(tmp, path), path, kind, files, token, replaceable)
        return None
    _remove_marker(path, TEMPORARY_MARKER)
    return old


def _entries(path: str) -> set[str]:
    """Everything under ``path`` (files, links and directories), relative."""
    found: set[str] = set()
    for top, directories, names, _ in os.fwalk(path):
        prefix = os.path.relpath(top, path)
        prefix = "" if prefix == "." else prefix.replace(os.sep, "/") + "/"
        found.update(prefix + n for n in (*directories, *names))
    return found


def discard(tmp: str) -> None:
    """Remove a temporary directory after a failed write, unless a journal names it: then
    its files are the new output, which :func:`recover` moves into place."""
    tmp = os.path.abspath(tmp)
    parent, name = os.path.split(tmp)
    if _INSIDE.match(name) and any(os.path.lexists(os.path.join(parent, journal)) for journal in _JOURNALS):
        for journal in _JOURNALS:
            try:
                with Directory(parent) as directory:
                    document = _read_json(directory, journal)
            except (SaveError, OSError):
                continue
            if isinstance(document, dict) and document.get("tmp") == name:
                return
    if os.path.isdir(tmp) and not os.path.islink(tmp):
        _remove(tmp, trash=True)


def owned_files(path: str, kind: str) -> list[str] | None:
    """The files of the ``kind`` output in directory ``path`` (relative, ``/``-separated), as
    its manifest lists them; None where ``path`` holds no manifest of that kind.

    A publication a killed writer left unfinished is completed first (:func:`recover`).
    Every name is checked: a plain relative path to a regular file reached through no
    symbolic link; a manifest naming anything else is a :class:`SaveError`.
    """
    path = os.path.abspath(path)
    recover(path)
    with Directory(path) as directory:
        listed = _manifest(directory, kind)
        if listed is None:
            return None
        for name in listed:
            try:
                info = directory.entry(name)
            except UnsafePathError as err:
                raise _bad_manifest(directory, kind, f"it names {name!r}, which leads through a symbolic link ({err})") from None
            if info is not None and not stat.S_ISREG(info.st_mode):
                raise _bad_manifest(directory, kind, f"it names {name!r}, which is not a regular file")
        return listed


def output_state(path: str, kind: str) -> tuple | None:
    """What changes whenever an output is published at ``path``: its manifest's identity
    and whether a publication is under way (None where ``path`` is no directory). A reader
    that sees the same state before and after listing and planning read one output.

    Examples
    --------
    >>> import tempfile
    >>> output_state(tempfile.mkdtemp(), "dataset")
    (None, False)
    """
    try:
        with Directory(path) as directory:
            info = directory.entry(MANIFESTS[kind])
            journal = directory.entry(_JOURNAL.format(kind=kind)) is not None
    except (FileNotFoundError, NotADirectoryError):
        return None
    identity = None if info is None else (info.st_ino, info.st_size, info.st_mtime_ns)
    return identity, journal


def recover(path: str) -> None:
    """Complete the publications into directory ``path`` that writers began and did not
    finish (killed after their journal was written), and remove what killed writers left
    (their temporary directories and staged journals). Holds the output's lock while it
    does, so a live writer's publication is waited for. A journal tabflow cannot validate is
    a :class:`SaveError` naming it and what to do; nothing is moved."""
    path = os.path.abspath(path)
    try:
        entries = os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    journals = [e for e in entries if e in _JOURNALS]
    if not journals and not any(_is_leftover(e) for e in entries):
        return
    try:
        with output_lock(path):
            _recover_locked(path)
    except SaveError:
        raise
    except OSError as err:
        if journals:
            raise SaveError(
                f"{path}: a tabflow publication there is unfinished ({', '.join(journals)}) and cannot be completed "
                f"from here ({err}); read the directory once as a user who can write it"
            ) from err
        logger.debug("could not clean %s: %s", path, err)  # leftovers in a directory this process cannot change


def _recover_locked(path: str) -> None:
    try:
        directory = Directory(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    with directory:
        for journal, kind in _JOURNALS.items():
            if directory.entry(journal) is None:
                continue
            document = _validated_journal(directory, journal, kind)
            logger.info("completing the %s publication into %s that a killed writer began", kind, path)
            _roll_forward(directory, journal, document)
        for entry in directory.list():
            if _is_leftover(entry):
                try:
                    _remove_leftover(directory, entry)
                except OSError as err:  # a leftover stays until a later write can remove it
                    logger.warning("could not remove %s: %s", os.path.join(path, entry), err)
    remove_stale(path)


def _remove_leftover(directory: Directory, entry: str) -> None:
    """Remove the top-level ``entry`` of an output if a writer that is gone left it."""
    info = directory.entry(entry)
    if info is None or not owned_by_us(info):
        return
    if stat.S_ISDIR(info.st_mode) and _TRASH.match(entry):
        directory.remove_tree(entry)  # a removal a killed process began
    elif stat.S_ISDIR(info.st_mode) and _INSIDE.match(entry):
        if _writer_is_gone(directory, f"{entry}/{TEMPORARY_MARKER}"):
            logger.info("removing %s, left by a writer that is gone", os.path.join(directory.path, entry))
            _discard_entry(directory, entry, ".tabflow-trash-")
    elif stat.S_ISREG(info.st_mode):
        directory.remove_file(entry)  # a staged journal or a marker a killed publication left


def remove_stale(path: str) -> list[str]:
    """Remove ``<path>.tmp-*`` / ``<path>.old-*`` siblings left by writers that are gone.

    Only directories tabflow made are touched: the name pattern must match, the directory
    must belong to this user, and the marker inside must name a process of this host that
    no longer runs (another host's writer is never judged gone).
    """
    path = os.path.abspath(path)
    parent, base = os.path.split(path)
    removed: list[str] = []
    try:
        directory = Directory(parent)
    except OSError:
        return removed
    with directory:
        for entry in directory.list():
            match = _SIBLING.match(entry)
            if not match or match.group("name") != base:
                continue
            info = directory.entry(entry)
            if info is None or not stat.S_ISDIR(info.st_mode) or not owned_by_us(info):
                continue
            if match.group("what") == "trash":
                directory.remove_tree(entry)  # a removal a killed process began
                removed.append(os.path.join(parent, entry))
            elif any(_writer_is_gone(directory, f"{entry}/{marker}") for marker in (TEMPORARY_MARKER, _REPLACED_MARKER)):
                logger.info("removing %s, left by a writer that is gone", os.path.join(parent, entry))
                _discard_entry(directory, entry, f"{base}.trash-")
                removed.append(os.path.join(parent, entry))
    if remove_stale_lock(path):
        removed.append(f"{path}{LOCK_NAME}")
    return removed


# ------------------------------------------------------------------- beside other files


def _beside_path(path: str, kind: str) -> bool:
    with Directory(path) as directory:
        return _beside(directory, kind, False)


def _beside(directory: Directory, kind: str, overwrite: bool) -> bool:
    """Whether an output into the existing directory goes beside what it holds (rather than
    replacing the directory as a whole)."""
    if overwrite:
        return False
    if _is_protected(directory.path):
        return True  # never renamed away, whatever it holds
    entries = [e for e in directory.list() if not _is_machinery(e)]
    if not entries:
        return False
    if not directory.is_file(KIND_MARKERS[kind]):
        return True
    listed = _owned_manifest(directory, kind)
    if listed is None:
        # Written before manifests existed, or by another user: which files are this user's
        # own output is unknown, so nothing but the files of the same names is replaced.
        return True
    own = {*listed, MANIFESTS[kind]}
    for name in directory.walk_files():
        first = name.split("/", 1)[0]
        if name not in own and not _is_machinery(first):
            return True
    # A directory of someone else's, even empty, is a neighbour too.
    parents = {"/".join(name.split("/")[:depth]) for name in own for depth in range(1, name.count("/") + 1)}
    for top, subdirectories, _, _ in os.fwalk(".", dir_fd=directory.fd):
        prefix = "" if top == "." else top[2:] + "/"
        if not prefix:
            subdirectories[:] = [d for d in subdirectories if not _is_machinery(d)]
        if any(prefix + d not in parents for d in subdirectories):
            return True
    return False


def _check_collisions(directory: Directory, kind: str, names: Iterable[str], previous: set[str]) -> None:
    """Raise :class:`SaveError` naming the first of ``names`` that would overwrite (or need
    to replace) something in the directory that the previous ``kind`` output did not write."""
    for name in names:
        parts = name.split("/")
        for depth in range(1, len(parts) + 1):
            relative = "/".join(parts[:depth])
            try:
                info = directory.entry(relative)
            except UnsafePathError:
                info = None  # reported for the component before, which is a link
            if info is None:
                break
            last = depth == len(parts)
            is_dir = stat.S_ISDIR(info.st_mode)
            if last and stat.S_ISREG(info.st_mode) and relative in previous:
                break
            if not last and is_dir:
                continue
            raise clash_error(os.path.join(directory.path, *parts[:depth]), directory.path, kind, is_dir)


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


def _previous_files(directory: Directory, kind: str, names: Iterable[str]) -> set[str]:
    """The files of the previous ``kind`` output of this user: its manifest's regular files
    of this user (an output from before manifests: those of ``names`` it has)."""
    listed = _owned_manifest(directory, kind)
    if listed is None:
        if directory.entry(MANIFESTS[kind]) is not None or not directory.is_file(KIND_MARKERS[kind]):
            return set()  # another user's output, or none
        listed = list(names)  # before manifests: the files a new output writes under the same names
    previous = set()
    for name in listed:
        try:
            info = directory.entry(name)
        except UnsafePathError:
            continue
        if info is not None and stat.S_ISREG(info.st_mode) and owned_by_us(info):
            previous.add(name)
    return previous


def _moved_inside(tmp: str, path: str) -> str:
    """``tmp`` as a temporary directory inside ``path`` (moved there if it is a sibling)."""
    if os.path.dirname(tmp) == path:
        return tmp
    inside = os.path.join(path, f".tabflow-tmp-{uuid.uuid4().hex[:12]}")
    os.rename(tmp, inside)
    return inside


def _publish_beside(tmp: str, path: str, kind: str, files: list[str], token: str, replaceable: set[str]) -> None:
    """Move the files of ``tmp`` (inside ``path``) into ``path`` beside what it holds, under a journal."""
    manifest = MANIFESTS[kind]
    with Directory(path) as directory:
        previous = _previous_files(directory, kind, files)
        for name in replaceable & set(files):
            info = directory.entry(name)
            if info is not None and stat.S_ISREG(info.st_mode) and owned_by_us(info):
                previous.add(name)
        _check_collisions(directory, kind, files, previous)
        logger.info("adding the %s's %d file(s) to %s beside the files there", kind, len(files), path)
        journal = _JOURNAL.format(kind=kind)
        document = {
            "format": 1,
            "kind": kind,
            "owner": owner_text(),
            "tmp": os.path.basename(tmp),
            "token": token,
            "add": [*files, manifest],  # the manifest last: it names the complete output
            "remove": sorted(previous - set(files) - {manifest}),
        }
        staged = f"{journal}.{uuid.uuid4().hex[:12]}"
        directory.write_bytes(staged, json.dumps(document, indent=1).encode("utf-8"), exclusive=True)
        os.rename(staged, journal, src_dir_fd=directory.fd, dst_dir_fd=directory.fd)
        _roll_forward(directory, journal, document)


def _validated_journal(directory: Directory, journal: str, kind: str) -> dict:
    """The journal ``journal`` of the directory, once every field is shown to name a
    publication tabflow began there for this user; else a :class:`SaveError` saying what
    is wrong and what to do."""

    def refuse(reason: str) -> SaveError:
        location = os.path.join(directory.path, journal)
        return SaveError(
            f"{location} is not a publication tabflow can complete: {reason}. Nothing was moved. If a tabflow "
            f"write into {directory.path} was interrupted, the previous output is still there but for the files "
            f"already moved: remove {location} (and the .tabflow-tmp-* directory it names, if any) and write the "
            "output again"
        )

    info = directory.entry(journal)
    if info is None or not stat.S_ISREG(info.st_mode):
        raise refuse("it is not a regular file")
    try:
        document = _read_json(directory, journal)
    except SaveError as err:
        raise refuse(str(err)) from None
    owner = document.get("owner") if isinstance(document, dict) else None
    if not owned_by_us(info):
        raise refuse(
            f"it belongs to another user (uid {info.st_uid}; written by {describe_owner(str(owner))}), whose next "
            "tabflow read or write of the directory completes it"
        )
    if not isinstance(document, dict) or document.get("format") != 1 or document.get("kind") != kind:
        raise refuse("it is not a journal of this version of tabflow")
    tmp, token = document.get("tmp"), document.get("token")
    if not isinstance(tmp, str) or not _INSIDE.match(tmp):
        raise refuse(f"its temporary directory {tmp!r:.100} is not a .tabflow-tmp-<id> directory of the output")
    reason = check_journal_fields(document, ("add", "remove"))
    if reason:
        raise refuse(reason)
    add, remove = document["add"], document["remove"]
    if not add or add[-1] != MANIFESTS[kind] or set(add) & set(remove):
        raise refuse("its files do not end with the output's manifest, or it both adds and removes a file")
    tmp_info = directory.entry(tmp)
    if tmp_info is not None:
        if not stat.S_ISDIR(tmp_info.st_mode) or not owned_by_us(tmp_info):
            raise refuse(f"{tmp} is not a directory of this user")
        with directory.subdirectory(tmp) as staging:
            if _marker_token(staging, TEMPORARY_MARKER, missing_ok=True) != token:
                raise refuse(f"{tmp} is not the temporary directory of that publication (its marker differs)")
    current = _manifest(directory, kind, strict=False)
    # While the new manifest is still staged, what is removed must be the previous output's
    # (listed by the manifest in place); once moved, the manifest in place is the new one.
    staged = tmp_info is not None and _staged(directory, tmp, MANIFESTS[kind])
    for name in add:
        try:
            target = directory.entry(name)
        except UnsafePathError as err:
            raise refuse(f"{name!r} leads through a symbolic link ({err})") from None
        if target is not None and not (stat.S_ISREG(target.st_mode) and owned_by_us(target)):
            raise refuse(f"{name!r} is already taken by something that is not a file of this user")
    for name in remove:
        if staged and (current is None or name not in current):
            raise refuse(f"it removes {name!r}, which the output's manifest does not list")
    return document


def check_journal_fields(document: dict, fields: Sequence[str]) -> str | None:
    """What is wrong with a journal's token and its lists of file names ``fields`` (each a
    list of plain relative paths), or None when nothing is.

    Examples
    --------
    >>> check_journal_fields({"token": "0" * 32, "add": ["part_0.parquet"]}, ["add"]) is None
    True
    >>> check_journal_fields({"token": "0" * 32, "add": "part_0.parquet"}, ["add"])
    "its 'add' is not a list of file names"
    >>> check_journal_fields({"token": "0" * 32, "add": ["../x"]}, ["add"])
    "its 'add' entry '../x' is not a plain relative path: its components may not be '', '.' or '..'"
    """
    token = document.get("token")
    if not isinstance(token, str) or not _TOKEN.match(token):
        return "its token is missing"
    for field in fields:
        names = document.get(field)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return f"its {field!r} is not a list of file names"
        for name in names:
            try:
                check_name(name, f"its {field!r} entry", SaveError)
            except SaveError as err:
                return str(err)
    return None


def _roll_forward(directory: Directory, journal: str, document: dict) -> None:
    """Carry out a validated journal's moves and removals; each step may already be done."""
    tmp = document["tmp"]
    if directory.entry(tmp) is not None:
        with directory.subdirectory(tmp) as staging:
            for name in document["add"]:
                if staging.is_file(name):
                    directory.move_in(staging, name)
    for name in document["remove"]:
        if directory.remove_file(name, only_ours=True):
            directory.prune_empty(name)
    # The journal goes before the temporary directory: a journal whose directory is half
    # removed could not be validated; a directory without its journal is a leftover of a
    # writer that is gone, removed as such.
    directory.remove_file(journal)
    _discard_entry(directory, tmp, ".tabflow-trash-")


def _is_machinery(name: str) -> bool:
    """Whether a top-level entry of an output directory is this module's own."""
    return name in MANIFESTS.values() or name == LOCK_NAME or name.startswith((".tabflow-tmp-", ".tabflow-publishing-", ".tabflow-trash-"))


def _is_leftover(name: str) -> bool:
    """Whether a top-level entry is something a killed writer can leave behind."""
    return bool(_INSIDE.match(name) or _TRASH.match(name) or _STAGED.match(name)) or name in (TEMPORARY_MARKER, _REPLACED_MARKER)


def _discard_entry(directory: Directory, name: str, trash_prefix: str) -> None:
    """Remove the directory ``name`` of ``directory``: renamed to a trash name first, then removed."""
    trash = f"{trash_prefix}{uuid.uuid4().hex[:12]}"
    try:
        os.rename(name, trash, src_dir_fd=directory.fd, dst_dir_fd=directory.fd)
    except FileNotFoundError:
        return
    directory.remove_tree(trash)


def files_under(root: str, skip_machinery: bool = False) -> list[str]:
    """Every file under ``root``, relative and ``/``-separated, sorted (``skip_machinery``:
    without the manifests, journals, locks and temporary directories of this module). A link
    is one entry, never walked into.

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
    with Directory(root) as directory:
        found = directory.walk_files()
        if skip_machinery:
            found = (f for f in found if not _is_machinery(f.split("/", 1)[0]))
        return sorted(found)


def _manifest(directory: Directory, kind: str, strict: bool = True) -> list[str] | None:
    """The names the ``kind`` manifest lists (each a plain relative path), None without one;
    a malformed manifest is a :class:`SaveError` (``strict``) or None."""
    name = MANIFESTS[kind]
    try:
        document = _read_json(directory, name)
    except SaveError:
        if strict:
            raise
        return None
    if document is None:
        return None
    files = document.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        if not strict:
            return None
        raise _bad_manifest(directory, kind, "'files' must be a list of file names")
    for entry in files:
        try:
            check_name(entry, "its entry", SaveError)
        except SaveError as err:
            if not strict:
                return None
            raise _bad_manifest(directory, kind, str(err)) from None
    return files


def _owned_manifest(directory: Directory, kind: str) -> list[str] | None:
    """The manifest's names where the manifest is this user's, else None."""
    info = directory.entry(MANIFESTS[kind])
    if info is None or not stat.S_ISREG(info.st_mode) or not owned_by_us(info):
        return None
    return _manifest(directory, kind)


def _staged(directory: Directory, tmp: str, name: str) -> bool:
    with directory.subdirectory(tmp) as staging:
        return staging.is_file(name)


def manifest_bytes(kind: str, files: Sequence[str]) -> bytes:
    """The manifest of a ``kind`` output of ``files``: the same files, the same bytes.

    Examples
    --------
    >>> print(manifest_bytes("dataset", ["part_0.parquet"]).decode())
    {
     "kind": "dataset",
     "files": [
      "part_0.parquet"
     ]
    }
    """
    return json.dumps({"kind": kind, "files": list(files)}, indent=1).encode("utf-8")


def _bad_manifest(directory: Directory, kind: str, reason: str) -> SaveError:
    location = os.path.join(directory.path, MANIFESTS[kind])
    return SaveError(
        f"{location} is malformed: {reason}. tabflow did not write it so; remove it (the files it lists stay) and "
        f"write the {kind} again, or read the files you mean by a glob"
    )


def _read_json(directory: Directory, name: str) -> dict | None:
    from tabflow._json import parse_json

    try:
        raw = directory.read_bytes(name, _MAX_MANIFEST_BYTES)
    except UnsafePathError as err:
        raise SaveError(f"{os.path.join(directory.path, name)} is not a file tabflow wrote: {err}") from None
    if raw is None:
        return None
    location = os.path.join(directory.path, name)
    if len(raw) > _MAX_MANIFEST_BYTES:
        raise SaveError(f"{location} is larger than {_MAX_MANIFEST_BYTES} bytes; it is not a file tabflow wrote")
    document = parse_json(raw.decode("utf-8", errors="replace"), location)
    if not isinstance(document, dict):
        raise SaveError(f"{location} is malformed: expected a JSON object")
    return document


# ------------------------------------------------------------------------------ markers


def _write_marker(directory_path: str, name: str, token: str) -> None:
    with Directory(directory_path) as directory:
        directory.write_bytes(name, owner_text(token).encode("utf-8"))


def _marker_token(directory: Directory, name: str, missing_ok: bool = False) -> str | None:
    info = directory.entry(name)
    if info is None or not stat.S_ISREG(info.st_mode) or not owned_by_us(info):
        if missing_ok:
            return None
        raise SaveError(f"{os.path.join(directory.path, name)} is missing: {directory.path} is not a temporary directory tabflow made")
    lines = (directory.read_bytes(name, 1024) or b"").decode("utf-8", "replace").split("\n")
    return lines[3] if len(lines) > 3 else None


def _remove_marker(directory_path: str, name: str) -> None:
    with Directory(directory_path) as directory:
        directory.remove_file(name)


def _writer_is_gone(directory: Directory, marker: str) -> bool:
    try:
        info = directory.entry(marker)
        if info is None or not stat.S_ISREG(info.st_mode) or not owned_by_us(info):
            return False  # no marker: not ours, or still being created
        text = (directory.read_bytes(marker, 1024) or b"").decode("utf-8", "replace")
    except OSError:
        return False
    return owner_is_gone(text)


# ------------------------------------------------------------------------------ helpers


def _default_directory_mode() -> int:
    """The mode ``mkdir`` gives a new directory under this process's umask."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return 0o777 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o755


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


def _remove(path: str, trash: bool = False) -> None:
    """Remove ``path`` (a directory whole; with ``trash``, a sibling ``<out>.tmp-*`` /
    ``.old-*`` renamed to its trash name first)."""
    if os.path.isdir(path) and not os.path.islink(path):
        parent, name = os.path.split(path)
        match = _SIBLING.match(name)
        prefix = f"{match.group('name')}.trash-" if match else ".tabflow-trash-"
        if trash:
            try:
                with Directory(parent) as directory:
                    _discard_entry(directory, name, prefix)
                return
            except OSError:
                pass
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
