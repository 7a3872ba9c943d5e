"""Downloading a dataset archive (merlin's ``download_file``, which NVTabular's notebooks call
to fetch MovieLens, Criteo or Rossmann).

The file is written under a temporary name and renamed once complete, so an interrupted
download never leaves a file that looks whole. Archives are unpacked next to it as merlin
unpacked them (``.zip`` and ``.tgz`` extracted, ``.gz`` decompressed to the name without
``.gz``), refusing members that would land outside that directory.

Examples
--------
>>> from tabflow.io.download import download_file
>>> download_file("ftp://example.com/data.zip", "/tmp/data.zip")
Traceback (most recent call last):
...
ValueError: download_file fetches http(s) URLs only, got 'ftp://example.com/data.zip'
"""

from __future__ import annotations

import gzip
import os
import shutil
import tarfile
import urllib.request
import uuid
import zipfile

__all__ = ["download_file"]

_CHUNK_BYTES = 1 << 20


def download_file(url: str, local_filename: str, unzip_files: bool = True, redownload: bool = True) -> None:
    """Fetch ``url`` to ``local_filename`` (its directory is created) and unpack it.

    Parameters
    ----------
    url : str
        An ``http://`` or ``https://`` URL.
    local_filename : str
        Where the file goes.
    unzip_files : bool, default True
        Extract a ``.zip`` or ``.tgz`` into the file's directory; decompress a ``.gz`` next to it.
    redownload : bool, default True
        Fetch again even when ``local_filename`` exists (False keeps the existing file).
    """
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"download_file fetches http(s) URLs only, got {url!r}")
    local_filename = os.path.abspath(local_filename)
    directory = os.path.dirname(local_filename)
    os.makedirs(directory, exist_ok=True)
    if redownload or not os.path.exists(local_filename):
        _fetch(url, local_filename)
    if not unzip_files:
        return
    if local_filename.endswith(".zip"):
        with zipfile.ZipFile(local_filename) as archive:
            for member in archive.namelist():
                _inside(directory, member, local_filename)
            archive.extractall(directory)
    elif local_filename.endswith(".tgz"):
        with tarfile.open(local_filename, "r") as archive:
            # "data" refuses absolute paths, "..", links out of the directory and devices.
            archive.extractall(directory, filter="data")
    elif local_filename.endswith(".gz"):
        target = local_filename[: -len(".gz")]
        partial = f"{target}.tmp-{uuid.uuid4().hex}"
        try:
            with gzip.open(local_filename, "rb") as source, open(partial, "wb") as sink:
                shutil.copyfileobj(source, sink, _CHUNK_BYTES)
            os.replace(partial, target)
        finally:
            if os.path.exists(partial):
                os.remove(partial)


def _fetch(url: str, local_filename: str) -> None:
    from tqdm.auto import tqdm

    partial = f"{local_filename}.tmp-{uuid.uuid4().hex}"
    request = urllib.request.Request(url, headers={"Accept": "*/*"})
    try:
        with urllib.request.urlopen(request) as response, open(partial, "wb") as sink:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=f"downloading {os.path.basename(local_filename)}") as bar:
                while chunk := response.read(_CHUNK_BYTES):
                    sink.write(chunk)
                    bar.update(len(chunk))
        os.replace(partial, local_filename)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _inside(directory: str, member: str, archive: str) -> None:
    target = os.path.realpath(os.path.join(directory, member))
    if os.path.commonpath([os.path.realpath(directory), target]) != os.path.realpath(directory):
        raise ValueError(f"{archive}: member {member!r} would be extracted outside {directory}; the archive is not safe to unpack")
