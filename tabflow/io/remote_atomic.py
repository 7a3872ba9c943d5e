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
- **nothing foreign replaced**: ``<out>`` is replaced only when it holds nothing, is a
  previous output of the same kind (it has the marker), or ``overwrite=True``; the root of
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
['_schema.json', 'part_0.parquet']
>>> fs.exists(tmp)
False
"""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any

from tabflow.exceptions import SaveError
from tabflow.io.atomic import KIND_MARKERS, TEMPORARY_MARKER, owner_is_gone, owner_text

logger = logging.getLogger(__name__)

__all__ = ["check_target", "temporary_directory", "publish", "discard", "remove_stale", "PUBLISHING_MARKER"]

#: In ``<out>/`` while a publish moves files into it.
PUBLISHING_MARKER = ".tabflow-publishing"

_SIBLING = re.compile(r"^(?P<name>.+)\.tmp-(?P<id>[0-9a-f]{12})$")


def check_target(fs: Any, path: str, kind: str, overwrite: bool = False) -> None:
    """Raise :class:`SaveError` if writing ``kind`` to ``path`` on ``fs`` would replace
    something that is not a previous ``kind`` output (and ``overwrite`` is not set)."""
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
    if not fs.ls(path, detail=False) or fs.isfile(f"{path}/{KIND_MARKERS[kind]}") or fs.isfile(f"{path}/{PUBLISHING_MARKER}"):
        return
    raise SaveError(
        f"{fs.unstrip_protocol(path)} is a non-empty directory that does not hold a tabflow {kind} (no "
        f"{KIND_MARKERS[kind]}); refusing to replace it. Write the {kind} to a new or empty prefix, or pass "
        "overwrite=True to replace everything under it"
    )


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
    marker = KIND_MARKERS[kind]
    publishing = f"{path}/{PUBLISHING_MARKER}"
    if fs.isfile(path):
        fs.rm_file(path)
    fs.pipe_file(publishing, owner_text().encode("utf-8"))
    # The old output stops claiming to be complete before any of its files go.
    if fs.isfile(f"{path}/{marker}"):
        fs.rm_file(f"{path}/{marker}")
    old = [p for p in fs.find(path) if not p.endswith("/" + PUBLISHING_MARKER)]
    if old:
        logger.info("replacing the %s at %s: removing its %d file(s)", kind, path, len(old))
        fs.rm(old)
    files = sorted(p for p in fs.find(tmp) if not p.endswith("/" + TEMPORARY_MARKER))
    last = f"{tmp}/{marker}"
    for directory in sorted({(path + p[len(tmp):]).rpartition("/")[0] for p in files}):
        fs.makedirs(directory, exist_ok=True)  # filesystems with real directories need them
    for source in sorted(files, key=lambda p: p == last):  # the marker after everything else
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
    removed = []
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
