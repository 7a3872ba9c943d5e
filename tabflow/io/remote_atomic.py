"""Writing a directory to an object store (S3, GCS, ... through fsspec) as safely as it allows.

Object stores have no directory rename, so :mod:`tabflow.io.atomic`'s exchange cannot be
had. What is guaranteed here instead:

- **nothing half-written at the target while computing**: every file is written under the
  sibling prefix ``<out>.tmp-<id>/`` (with a marker naming the writer and the write's token);
  a failed write removes it, and ``<out>`` is not touched until every file is complete;
- **the manifest is the commit**: readers take an output's files from its manifest
  (``.tabflow-dataset.json``), which is written last, after every new file is in place.
  Before any file of the previous output is replaced, the ones the new output overwrites are
  copied to ``<out>.old-<id>/`` and a journal (``<out>/.tabflow-publishing-<kind>.json``)
  names the publication. A failure at any step before the manifest is written puts those
  copies back and removes the new files, so the previous output is left whole and readable;
  once the manifest is written, the previous output's other files are removed. A writer
  killed in the middle leaves the journal, and the next write or read of ``<out>`` through
  tabflow rolls the publication back (or, past the manifest, completes it). Replacing is
  still not atomic for a reader listing ``<out>/`` by itself (dask, Spark): it can see the
  new files before the manifest;
- **one publication at a time**: publishing holds the lock object ``<out>/.tabflow-lock``
  (:func:`tabflow.io.locks.remote_output_lock`);
- **nothing foreign replaced**: as locally, each output lists its files in its manifest;
  into a prefix holding other objects the output is added beside them, only a previous
  output's files are removed or replaced, and a file name that would overwrite an object
  tabflow did not write is an error before any work. Every name read from a manifest or a
  journal is checked (:func:`tabflow._paths.check_name`), so nothing outside ``<out>/`` and
  its own ``.tmp-`` / ``.old-`` siblings is touched. ``overwrite=True`` replaces everything
  under ``<out>``; the root of a bucket (or of the filesystem) is never written over;
- **leftovers**: a killed writer can leave ``<out>.tmp-<id>/``; the next write to the same
  ``<out>`` from the same host removes those whose process is gone (others are kept: their
  writer may still run elsewhere).

Object stores know no file owners: whoever can write under ``<out>/`` can delete its objects
anyway, and tabflow trusts a journal found there as far as its names check.

Examples
--------
>>> import fsspec
>>> from tabflow.io.remote_atomic import check_target, discard, publish, temporary_directory
>>> fs = fsspec.filesystem("memory")
>>> check_target(fs, "/doc-example/out", "dataset")
>>> tmp = temporary_directory(fs, "/doc-example/out")
>>> fs.pipe_file(tmp + "/part_0.parquet", b"data"); fs.pipe_file(tmp + "/_schema.json", b"{}")
>>> publish(fs, tmp, "/doc-example/out", "dataset")
>>> sorted(p.rsplit("/", 1)[1] for p in fs.find("/doc-example/out"))
['.tabflow-dataset.json', '_schema.json', 'part_0.parquet']
>>> fs.exists(tmp)
False
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import uuid
from typing import Any, Iterable

from tabflow._paths import check_name
from tabflow.exceptions import SaveError
from tabflow.io.atomic import (
    KIND_MARKERS,
    MANIFESTS,
    TEMPORARY_MARKER,
    check_journal_fields,
    check_output_names,
    clash_error,
    manifest_bytes,
)
from tabflow.io.fs import object_version
from tabflow.io.locks import LOCK_NAME, describe_owner, owner_is_gone, owner_text, remote_output_lock

logger = logging.getLogger(__name__)

__all__ = [
    "check_target", "temporary_directory", "publish", "discard", "recover", "remove_stale", "owned_files",
    "output_state", "root_error", "PUBLISHING_MARKER",
]

#: What an earlier tabflow left in ``<out>/`` while it moved files (now a journal does).
PUBLISHING_MARKER = ".tabflow-publishing"
_JOURNAL = ".tabflow-publishing-{kind}.json"
_SIBLING = re.compile(r"^(?P<name>.+)\.(?P<what>tmp|old)-(?P<id>[0-9a-f]{12})$")
_TOKEN = re.compile(r"^[0-9a-f]{32}$")
_MAX_DOCUMENT_BYTES = 64 * 2**20


def check_target(fs: Any, path: str, kind: str, overwrite: bool = False, names: Iterable[str] = ()) -> None:
    """Raise :class:`SaveError` if writing ``kind`` to ``path`` on ``fs`` would replace
    something that is not a file or directory, or overwrite an object tabflow did not write
    (``names``: the output's files, relative to ``path``, where known before writing)."""
    path = path.rstrip("/")
    names = check_output_names(names, kind)
    # Object stores name a bucket with no slash (their root marker is empty); other
    # filesystems' root is "/".
    if not path.strip("/") or ("/" not in path.strip("/") and not getattr(fs, "root_marker", "")):
        raise root_error(fs.unstrip_protocol(path), kind)
    if fs.isfile(path):
        if overwrite:
            return
        raise SaveError(
            f"{fs.unstrip_protocol(path)} is a file, not a directory; refusing to replace it. Choose another path "
            f"for the {kind}, or pass overwrite=True to replace it"
        )
    if not fs.isdir(path):
        return
    recover(fs, path)
    if overwrite:
        return
    _check_clashes(fs, path, kind, names, _previous_files(fs, path, kind, names))


def root_error(url: str, kind: str) -> SaveError:
    """The error for writing an output over the root of a bucket or filesystem ``url``.

    Examples
    --------
    >>> print(root_error("s3://", "dataset"))  # doctest: +ELLIPSIS
    refusing to write a dataset to s3://: it is the root of a bucket or filesystem. ...
    """
    return SaveError(
        f"refusing to write a {kind} to {url}: it is the root of a bucket or filesystem. Write into a prefix below "
        "it (e.g. s3://bucket/datasets/train)"
    )


def owned_files(fs: Any, path: str, kind: str) -> list[str] | None:
    """The files of the ``kind`` output under ``path`` (relative, ``/``-separated), as its
    manifest lists them (each checked to be a plain relative path); None where there is no
    manifest of that kind. An unfinished publication is rolled back or completed first.

    Examples
    --------
    >>> import fsspec
    >>> fs = fsspec.filesystem("memory")
    >>> fs.pipe_file("/doc-owned/out/.tabflow-dataset.json", b'{"kind": "dataset", "files": ["part_0.parquet"]}')
    >>> owned_files(fs, "/doc-owned/out", "dataset"), owned_files(fs, "/doc-owned/out", "workflow")
    (['part_0.parquet'], None)
    """
    path = path.rstrip("/")
    recover(fs, path)
    document = _read_document(fs, f"{path}/{MANIFESTS[kind]}")
    if document is None:
        return None
    files = document.get("files")
    location = fs.unstrip_protocol(f"{path}/{MANIFESTS[kind]}")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise SaveError(f"{location} is malformed: 'files' must be a list of file names")
    for name in files:
        try:
            check_name(name, "its entry", SaveError)
        except SaveError as err:
            raise SaveError(f"{location} is malformed: {err}; remove it and write the {kind} again") from None
    return files


def output_state(fs: Any, path: str, kind: str) -> tuple:
    """What changes whenever an output is published at ``path`` (see
    :func:`tabflow.io.atomic.output_state`): the manifest's size and version, and whether a
    journal is there.

    Examples
    --------
    >>> import fsspec
    >>> output_state(fsspec.filesystem("memory"), "/doc-state/out", "dataset")
    (None, False)
    """
    path = path.rstrip("/")
    fs.invalidate_cache(path)
    return _version(fs, f"{path}/{MANIFESTS[kind]}"), fs.exists(f"{path}/{_JOURNAL.format(kind=kind)}")


def _version(fs: Any, path: str) -> tuple | None:
    """An object's size and version (:func:`tabflow.io.fs.object_version`), None where it is missing."""
    try:
        return object_version(fs.info(path))
    except FileNotFoundError:
        return None


def _previous_files(fs: Any, path: str, kind: str, names: Iterable[str]) -> set[str]:
    """The files of the previous ``kind`` output under ``path``: its manifest's, else (an
    output from before manifests, or one an earlier tabflow half published) those of
    ``names`` that are there."""
    listed = owned_files(fs, path, kind)
    if listed is not None:
        return set(listed)
    if fs.isfile(f"{path}/{KIND_MARKERS[kind]}") or fs.isfile(f"{path}/{PUBLISHING_MARKER}"):
        return {n for n in names if fs.isfile(f"{path}/{n}")}
    return set()


def _check_clashes(fs: Any, path: str, kind: str, names: Iterable[str], previous: set[str]) -> None:
    for name in names:
        target = f"{path}/{name}"
        if name not in previous and fs.exists(target):
            raise clash_error(fs.unstrip_protocol(target), fs.unstrip_protocol(path), kind, fs.isdir(target))


def temporary_directory(fs: Any, path: str) -> str:
    """``<path>.tmp-<id>`` holding a marker that names this writer and a token, after
    removing the temporaries of writers of this host that are gone."""
    path = path.rstrip("/")
    remove_stale(fs, path)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    fs.makedirs(tmp, exist_ok=True)
    fs.pipe_file(f"{tmp}/{TEMPORARY_MARKER}", owner_text(uuid.uuid4().hex).encode("utf-8"))
    return tmp


def publish(fs: Any, tmp: str, path: str, kind: str, overwrite: bool = False) -> None:
    """Move the complete files of ``tmp`` to ``path``, the manifest last (see the module docstring)."""
    path = path.rstrip("/")
    with remote_output_lock(fs, path):
        _recover_locked(fs, path)
        token = _marker_token(fs, tmp)
        if token is None:
            raise SaveError(f"{fs.unstrip_protocol(tmp)} is not a temporary directory tabflow made (its marker is missing)")
        manifest, journal = MANIFESTS[kind], _JOURNAL.format(kind=kind)
        prefix = f"{tmp}/"
        names = check_output_names(
            sorted(p[len(prefix):] for p in fs.find(tmp) if p.startswith(prefix) and p[len(prefix):] != TEMPORARY_MARKER),
            kind,
        )
        if fs.isfile(path):
            if not overwrite:
                raise SaveError(f"{fs.unstrip_protocol(path)} is a file, not a directory; refusing to replace it")
            fs.rm_file(path)  # overwrite=True of an object by a directory of objects
        if overwrite:
            machinery = {LOCK_NAME, journal}
            old = {p[len(path) + 1:] for p in fs.find(path) if p.startswith(f"{path}/")} - machinery if fs.isdir(path) else set()
        else:
            previous = _previous_files(fs, path, kind, names)
            _check_clashes(fs, path, kind, names, previous)
            old = previous | {n for n in (manifest, PUBLISHING_MARKER) if fs.isfile(f"{path}/{n}")}
        saved = sorted(n for n in [*names, manifest] if n in old and fs.isfile(f"{path}/{n}"))
        backup = f"{path}.old-{uuid.uuid4().hex[:12]}"
        document = {
            "format": 1, "kind": kind, "state": "moving", "owner": owner_text(), "token": token,
            "tmp": tmp.rpartition("/")[2], "backup": backup.rpartition("/")[2], "add": names, "saved": saved,
            "remove": sorted(old - set(names) - {manifest}),
        }
        try:
            # The journal first: whatever is written after it, a roll back finds and removes.
            fs.pipe_file(f"{path}/{journal}", json.dumps(document, indent=1).encode("utf-8"))
            fs.pipe_file(f"{backup}/{TEMPORARY_MARKER}", owner_text(token).encode("utf-8"))
            for name in saved:
                fs.copy(f"{path}/{name}", f"{backup}/{name}")
            for directory in sorted({f"{path}/{n}".rpartition("/")[0] for n in names}):
                fs.makedirs(directory, exist_ok=True)  # filesystems with real directories need them
            for name in names:
                fs.mv(f"{tmp}/{name}", f"{path}/{name}")
            fs.pipe_file(f"{path}/{manifest}", manifest_bytes(kind, names))
            document["state"] = "committed"
            fs.pipe_file(f"{path}/{journal}", json.dumps(document, indent=1).encode("utf-8"))
        except BaseException:
            with contextlib.suppress(Exception):  # the journal stays where rolling back fails too
                _roll_back(fs, path, journal, document)
            raise
        try:
            _complete(fs, path, journal, document)
        except Exception as err:  # noqa: BLE001 - the new output is in place; the journal finishes later
            logger.warning(
                "the %s at %s is published, but removing the previous one's files failed (%s); the next write or read "
                "of it finishes that", kind, fs.unstrip_protocol(path), err,
            )


def _roll_back(fs: Any, path: str, journal: str, document: dict) -> None:
    """Put the previous output back: the saved copies over the new files, the new files
    that replaced nothing removed."""
    base = path.rpartition("/")[0]
    backup = f"{base}/{document['backup']}"
    saved = set(document["saved"])
    for name in saved:
        if fs.isfile(f"{backup}/{name}"):
            fs.copy(f"{backup}/{name}", f"{path}/{name}")
    for name in [*document["add"], MANIFESTS[document["kind"]]]:
        if name not in saved and fs.isfile(f"{path}/{name}"):
            fs.rm_file(f"{path}/{name}")
    # The journal goes last: a roll back cut short is done again (each step repeats safely).
    _remove_prefix(fs, backup)
    _remove_prefix(fs, f"{base}/{document['tmp']}")
    with contextlib.suppress(FileNotFoundError):
        fs.rm_file(f"{path}/{journal}")
    logger.info("rolled back an unfinished publication into %s", fs.unstrip_protocol(path))


def _complete(fs: Any, path: str, journal: str, document: dict) -> None:
    """The manifest is in place: remove the previous output's other files and the copies."""
    base = path.rpartition("/")[0]
    gone = [f"{path}/{n}" for n in document["remove"] if fs.isfile(f"{path}/{n}")]
    if gone:
        logger.info("replacing the %s at %s: removing %d file(s) of the previous one", document["kind"], path, len(gone))
        fs.rm(gone)
    _remove_prefix(fs, f"{base}/{document['backup']}")
    _remove_prefix(fs, f"{base}/{document['tmp']}")
    with contextlib.suppress(FileNotFoundError):
        fs.rm_file(f"{path}/{journal}")  # last: a completion cut short is done again


def recover(fs: Any, path: str) -> None:
    """Roll back (or, past its manifest, complete) a publication into ``path`` that a
    writer began and did not finish, holding the output's lock (a live writer's is waited
    for). A journal whose names do not check is a :class:`SaveError`; nothing is moved."""
    path = path.rstrip("/")
    if not any(fs.isfile(f"{path}/{_JOURNAL.format(kind=kind)}") for kind in MANIFESTS):
        return
    with remote_output_lock(fs, path):
        _recover_locked(fs, path)


def _recover_locked(fs: Any, path: str) -> None:
    for kind in MANIFESTS:
        journal = _JOURNAL.format(kind=kind)
        if not fs.isfile(f"{path}/{journal}"):
            continue
        document = _validated_journal(fs, path, journal, kind)
        if document.get("state") == "committed":
            logger.info("completing the %s publication into %s that a writer began", kind, fs.unstrip_protocol(path))
            _complete(fs, path, journal, document)
        else:
            _roll_back(fs, path, journal, document)
    if fs.isfile(f"{path}/{PUBLISHING_MARKER}") and fs.isfile(f"{path}/{MANIFESTS['dataset']}"):
        fs.rm_file(f"{path}/{PUBLISHING_MARKER}")  # an earlier tabflow's, whose output is complete


def _validated_journal(fs: Any, path: str, journal: str, kind: str) -> dict:
    location = fs.unstrip_protocol(f"{path}/{journal}")

    def refuse(reason: str) -> SaveError:
        return SaveError(
            f"{location} is not a publication tabflow can roll back or complete: {reason}. Nothing was moved. Remove "
            f"it (and the {path.rpartition('/')[2]}.tmp-* / .old-* prefixes it names, if any) and check the output"
        )

    try:
        document = _read_document(fs, f"{path}/{journal}")
    except SaveError as err:
        raise refuse(str(err)) from None
    if not isinstance(document, dict) or document.get("format") != 1 or document.get("kind") != kind:
        raise refuse("it is not a journal of this version of tabflow")
    base = path.rpartition("/")[2]
    for field, what in (("tmp", "tmp"), ("backup", "old")):
        value = document.get(field)
        match = _SIBLING.match(value if isinstance(value, str) else "")
        if not match or match.group("name") != base or match.group("what") != what:
            raise refuse(f"its {field!r} is not a {base}.{what}-<id> prefix beside the output")
    if document.get("state") not in ("moving", "committed"):
        raise refuse("its state is neither 'moving' nor 'committed'")
    reason = check_journal_fields(document, ("add", "saved", "remove"))
    if reason:
        raise refuse(reason)
    parent = path.rpartition("/")[0]
    backup_token = _marker_token(fs, f"{parent}/{document['backup']}")
    if backup_token is not None and backup_token != document["token"]:
        raise refuse(f"{document['backup']} belongs to another publication")
    return document


def _marker_token(fs: Any, prefix: str) -> str | None:
    try:
        text = fs.cat_file(f"{prefix}/{TEMPORARY_MARKER}")[:1024].decode("utf-8", "replace")
    except (FileNotFoundError, OSError):
        return None
    lines = text.split("\n")
    return lines[3] if len(lines) > 3 and _TOKEN.match(lines[3]) else None


def _read_document(fs: Any, path: str, strict: bool = True) -> dict | None:
    location = fs.unstrip_protocol(path)
    try:
        if fs.info(path).get("size", 0) > _MAX_DOCUMENT_BYTES:
            raise SaveError(f"{location} is larger than {_MAX_DOCUMENT_BYTES} bytes; it is not a file tabflow wrote")
        raw = fs.cat_file(path)
    except FileNotFoundError:
        return None
    try:
        document = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        document = None
    if not isinstance(document, dict):
        if not strict:
            return None
        raise SaveError(f"{location} is malformed: expected a JSON object")
    return document


def _remove_prefix(fs: Any, prefix: str) -> None:
    fs.invalidate_cache(prefix)
    if fs.exists(prefix):
        fs.rm(prefix, recursive=True)


def discard(fs: Any, tmp: str) -> None:
    """Remove a temporary prefix after a failed (or published) write."""
    try:
        if fs.exists(tmp):
            fs.rm(tmp, recursive=True)
    except (OSError, ValueError):
        pass  # best effort: a leftover is removed by a later write (remove_stale)


def remove_stale(fs: Any, path: str) -> list[str]:
    """Remove ``<path>.tmp-*`` / ``<path>.old-*`` prefixes whose marker names a process of
    this host that is gone, unless a journal of ``path`` still names them."""
    parent, _, base = path.rstrip("/").rpartition("/")
    removed: list[str] = []
    try:
        entries = fs.ls(parent, detail=False)
    except (OSError, ValueError):
        return removed
    for entry in entries:
        match = _SIBLING.match(entry.rstrip("/").rpartition("/")[2])
        if not match or match.group("name") != base:
            continue
        if any(fs.isfile(f"{path.rstrip('/')}/{_JOURNAL.format(kind=kind)}") for kind in MANIFESTS):
            return removed  # an unfinished publication may need them: recover() decides
        try:
            text = fs.cat_file(f"{entry.rstrip('/')}/{TEMPORARY_MARKER}").decode("utf-8", "replace")[:1024]
        except (OSError, ValueError):
            continue
        if owner_is_gone(text):
            logger.info("removing %s, left by %s, which is gone", entry, describe_owner(text))
            discard(fs, entry.rstrip("/"))
            removed.append(entry)
    return removed
