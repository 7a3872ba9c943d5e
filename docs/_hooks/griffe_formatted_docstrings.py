"""A griffe extension: docstrings completed when their module is imported.

Some docstrings are templates that the module fills with ``str.format`` at import time (the
loaders share the text of their common options, ``{shared}``). Static analysis sees the
template; this extension replaces such a docstring by the one ``help()`` shows.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import griffe

_PLACEHOLDER = re.compile(r"^\s*\{\w+\}\s*$", re.MULTILINE)


class FormattedDocstrings(griffe.Extension):
    """Read a docstring that holds a ``{name}`` line from the imported object."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is None or not _PLACEHOLDER.search(obj.docstring.value):
            return
        filled = inspect.getdoc(griffe.dynamic_import(obj.path))
        if filled and not _PLACEHOLDER.search(filled):
            obj.docstring.value = filled
