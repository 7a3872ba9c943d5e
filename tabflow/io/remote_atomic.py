"""Writing a directory to an object store (S3, GCS, ... through fsspec) as safely as it allows.

Object stores have no directory rename, so :mod:`tabflow.io.atomic`'s exchange cannot be
had. What is guaranteed here instead:

- **nothing half-written at the target while computing**: every file is written under the
  sibling prefix ``<out>.tmp-<id>/`` (with a marker naming the writer's host and process);
  a failed write removes it, and ``<out>`` is not touched until every file is complete;
- **a completion marker**: files are then moved into ``<out>/`` (a server-side copy and a
  delete on S3 and GCS, a rename on filesystems that have one) with the kind's marker file
  (``_schema.json`` for a dataset) moved **last**, so an ``<out>/`` that holds the marker
  holds every file of the write that put it there;
- **replacing is not atomic**: a previous output at ``<out>`` loses its marker first, then
  its files, before the new files arrive; a reader listing ``<out>/`` during those moments
  can see it incomplete (without the marker). While files move, ``<out>/.tabflow-publishing``
  names the writer, so a half-published output left by a killed writer is still recognised
  as tabflow's and replaced by the next write (not refused as foreign);
- **nothing foreign replaced**: as locally, each output lists its files in a manifest
  (``.tabflow-dataset.json``, :data:`tabflow.io.atomic.MANIFESTS`); into a prefix holding
  other objects the output is added beside them, only a previous output's files are removed
  or replaced, and a file name that would overwrite an object tabflow did not write is an
  error before any work. ``overwrite=True`` replaces everything under ``<out>``; the root of
  a bucket (or of the filesystem) is never written over;
- **leftovers**: a killed writer can leave ``<out>.tmp-<id>/``; the next write to the same
  ``<out>`` from the same host removes those whose process is gone (others are kept: their
  writer may still run elsewhere).

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

import json
import logging
import re
import uuid
from typing import Any, Iterable

from tabflow.exceptions import SaveError
from tabflow.io.atomic import KIND_MARKERS, MANIFESTS, TEMPORARY_MARKER, clash_error, owner_is_gone, owner_text

logger = logging.getLogger(__name__)

__all__ = ["check_target", "temporary_directory", "publish", "discard", "remove_stale", "owned_files", "PUBLISHING_MARKER"]

#: In ``<out>/`` while a publish moves files into it.
PUBLISHING_MARKER = ".tabflow-publishing"

_SIBLING = re.compile(r"^(?P<name>.+)\.tmp-(?P<id>[0-9a-f]{12})$")


def check_target(fs: Any, path: str, kind: str, overwrite: bool = False, names: Iterable[str] = ()) -> None:
    """Raise :class:`SaveError` if writing ``kind`` to ``path`` on ``fs`` would replace
    something that is not a file or directory, or overwrite an object tabflow did not write
    (``names``: the output's files, relative to ``path``, where known before writing)."""
    path = path.rstrip("/")
    # Object stores name a bucket with no slash (their root marker is empty); other
    # filesystems' root is "/".
    if not path.strip("/") or ("/" not in path.strip("/") and not getattr(fs, "root_marker", "")):
        raise SaveError(
            f"refusing to write a {kind} to {fs.unstrip_protocol(path)}: it is the root of a bucket or filesystem. "
            "Write into a prefix below it (e.g. s3://bucket/datasets/train)"
        )
    if fs.isfile(path):
        if overwrite:
            return
        raise SaveError(
            f"{fs.unstrip_protocol(path)} is a file, not a directory; refusing to replace it. Choose another path "
            f"for the {kind}, or pass overwrite=True to replace it"
        )
    if not fs.isdir(path) or overwrite:
        return
    names = list(names)
    _check_clashes(fs, path, kind, names, _previous_files(fs, path, kind, names))


def owned_files(fs: Any, path: str, kind: str) -> list[str] | None:
    """The files of the ``kind`` output under ``path`` (relative, ``/``-separated), as its
    manifest lists them; None where there is no manifest of that kind.

    Examples
    --------
    >>> import fsspec
    >>> fs = fsspec.filesystem("memory")
    >>> fs.pipe_file("/doc-owned/out/.tabflow-dataset.json", b'{"kind": "dataset", "files": ["part_0.parquet"]}')
    >>> owned_files(fs, "/doc-owned/out", "dataset"), owned_files(fs, "/doc-owned/out", "workflow")
    (['part_0.parquet'], None)
    """
    manifest = f"{path.rstrip('/')}/{MANIFESTS[kind]}"
    if not fs.isfile(manifest):
        return None
    try:
        files = json.loads(fs.cat_file(manifest).decode("utf-8")).get("files")
    except (ValueError, AttributeError, UnicodeDecodeError):
        files = None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise SaveError(f"{fs.unstrip_protocol(manifest)} is malformed: 'files' must be a list of file names")
    return files


def _previous_files(fs: Any, path: str, kind: str, names: list[str]) -> set[str]:
    """The files of the previous ``kind`` output under ``path``: its manifest's, else (an
    output from before manifests, or one a killed writer half published) those of ``names``
    that are there."""
    listed = owned_files(fs, path, kind)
    if listed is not None:
        return set(listed)
    if fs.isfile(f"{path}/{KIND_MARKERS[kind]}") or fs.isfile(f"{path}/{PUBLISHING_MARKER}"):
        return {n for n in names if fs.isfile(f"{path}/{n}")}
    return set()


def _check_clashes(fs: Any, path: str, kind: str, names: list[str], previous: set[str]) -> None:
    for name in names:
        target = f"{path}/{name}"
        if name not in previous and fs.exists(target):
            raise clash_error(fs.unstrip_protocol(target), fs.unstrip_protocol(path), kind, fs.isdir(target))


def temporary_directory(fs: Any, path: str) -> str:
    """``<path>.tmp-<id>`` holding a marker that names this writer, after removing the
    temporaries of writers of this host that are gone."""
    path = path.rstrip("/")
    remove_stale(fs, path)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    fs.makedirs(tmp, exist_ok=True)
    fs.pipe_file(f"{tmp}/{TEMPORARY_MARKER}", owner_text().encode("utf-8"))
    return tmp


def publish(fs: Any, tmp: str, path: str, kind: str, overwrite: bool = False) -> None:
    """Move the complete files of ``tmp`` to ``path``, the kind's marker last (see the module docstring)."""
    path = path.rstrip("/")
    check_target(fs, path, kind, overwrite)  # again: the target may have changed while writing
    marker, manifest = KIND_MARKERS[kind], MANIFESTS[kind]
    publishing = f"{path}/{PUBLISHING_MARKER}"
    files = sorted(p for p in fs.find(tmp) if not p.endswith("/" + TEMPORARY_MARKER))
    names = [p[len(tmp) + 1:] for p in files]
    if fs.isfile(path):
        fs.rm_file(path)
        old: list[str] = []
    elif overwrite:
        claims = {f"/{PUBLISHING_MARKER}", f"/{marker}", f"/{manifest}"}
        old = [p for p in fs.find(path) if p[len(path):] not in claims] if fs.isdir(path) else []
    elif fs.isdir(path):
        previous = _previous_files(fs, path, kind, names)
        _check_clashes(fs, path, kind, names, previous)
        old = [f"{path}/{n}" for n in sorted(previous - set(names) - {manifest}) if fs.isfile(f"{path}/{n}")]
    else:
        old = []
    fs.pipe_file(f"{tmp}/{manifest}", json.dumps({"kind": kind, "files": names}, indent=1).encode("utf-8"))
    fs.pipe_file(publishing, owner_text().encode("utf-8"))
    # The old output stops claiming to be complete before any of its files go.
    for claim in (f"{path}/{marker}", f"{path}/{manifest}"):
        if fs.isfile(claim):
            fs.rm_file(claim)
    if old:
        logger.info("replacing the %s at %s: removing %d file(s) of the previous one", kind, path, len(old))
        fs.rm(old)
    files.append(f"{tmp}/{manifest}")
    order = {f"{tmp}/{manifest}": 1, f"{tmp}/{marker}": 2}  # the manifest, then the marker, after everything else
    for directory in sorted({(path + p[len(tmp):]).rpartition("/")[0] for p in files}):
        fs.makedirs(directory, exist_ok=True)  # filesystems with real directories need them
    for source in sorted(files, key=lambda p: order.get(p, 0)):
        fs.mv(source, path + source[len(tmp):])
    fs.rm_file(publishing)
    discard(fs, tmp)


def discard(fs: Any, tmp: str) -> None:
    """Remove a temporary prefix after a failed (or published) write."""
    try:
        if fs.exists(tmp):
            fs.rm(tmp, recursive=True)
    except (OSError, ValueError):
        pass  # best effort: a leftover is removed by a later write (remove_stale)


def remove_stale(fs: Any, path: str) -> list[str]:
    """Remove ``<path>.tmp-*`` prefixes whose marker names a process of this host that is gone."""
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
        try:
            text = fs.cat_file(f"{entry.rstrip('/')}/{TEMPORARY_MARKER}").decode("utf-8", "replace")[:200]
        except (OSError, ValueError):
            continue
        if owner_is_gone(text):
            logger.info("removing %s, left by a writer that is gone", entry)
            discard(fs, entry.rstrip("/"))
            removed.append(entry)
    return removed
