"""Reading JSON documents that may come from anyone: bounded size, nesting and numbers.

Python's ``json`` module recurses once per nesting level and converts numbers of any length,
so a crafted file can exhaust the stack or spend seconds on one number. Documents are read
here with hard limits checked before (size, nesting) and during (numbers) parsing, and every
failure is a :class:`~tabflow.serialize.LoadError` naming the file.

Examples
--------
>>> import tempfile, os
>>> from tabflow._json import read_json
>>> path = os.path.join(tempfile.mkdtemp(), "doc.json")
>>> _ = open(path, "w").write('{"a": [1, 2.5, "x"]}')
>>> read_json(path)
{'a': [1, 2.5, 'x']}
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

from tabflow.exceptions import LoadError

__all__ = ["read_json", "parse_json", "MAX_DOCUMENT_BYTES", "MAX_DEPTH", "MAX_NUMBER_CHARS"]

MAX_DOCUMENT_BYTES = 64 * 2**20
MAX_DEPTH = 100
MAX_NUMBER_CHARS = 64

# A JSON string (escapes included) or one bracket; strings are skipped when counting depth.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def read_json(path: str, what: str = "document") -> Any:
    """Parse the JSON file ``path`` within the limits; LoadError naming it otherwise."""
    try:
        info = os.stat(path)
    except OSError as err:
        raise LoadError(f"cannot read {what} {path}: {err.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise LoadError(f"{what} {path} is not a regular file")
    if info.st_size > MAX_DOCUMENT_BYTES:
        raise LoadError(f"{what} {path} is {info.st_size} bytes, more than the {MAX_DOCUMENT_BYTES} bytes allowed")
    with open(path, "rb") as handle:
        raw = handle.read(MAX_DOCUMENT_BYTES + 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LoadError(f"{what} {path} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    return parse_json(text, f"{what} {path}")


def parse_json(text: str, what: str = "document") -> Any:
    """Parse JSON text within the limits (see the module docstring)."""
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        depth += 1 if token in "[{" else -1
        if depth > MAX_DEPTH:
            raise LoadError(f"{what} nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, parse_int=_parse_int(what), parse_float=_parse_float(what))
    except LoadError:
        raise
    except (ValueError, RecursionError) as err:
        raise LoadError(f"{what} is not valid JSON: {err}") from None


def _parse_int(what: str):
    def parse(text: str) -> int:
        if len(text) > MAX_NUMBER_CHARS:
            raise LoadError(f"{what} holds a number of {len(text)} digits (at most {MAX_NUMBER_CHARS} are read)")
        return int(text)

    return parse


def _parse_float(what: str):
    def parse(text: str) -> float:
        if len(text) > MAX_NUMBER_CHARS:
            raise LoadError(f"{what} holds a number of {len(text)} characters (at most {MAX_NUMBER_CHARS} are read)")
        return float(text)

    return parse
