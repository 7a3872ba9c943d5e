"""A griffe extension: tabflow's docstrings as the API reference shows them.

- Some docstrings are templates that the module fills with ``str.format`` at import time (the
  loaders share the text of their common options, ``{shared}``). Static analysis sees the
  template; such a docstring is replaced by the one ``help()`` shows.
- The docstrings name other objects with Sphinx roles (``:class:`~tabflow.Dataset```), which
  Markdown would print as they are; each becomes inline code of the name it shows
  (``Dataset`` for ``~tabflow.Dataset``, the whole path otherwise).
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from typing import Any

import griffe

# The checkout being documented, imported ahead of any installed copy.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PLACEHOLDER = re.compile(r"^\s*\{\w+\}\s*$", re.MULTILINE)
_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|const):`(~?)([^`]+)`")


def _shown(match: re.Match) -> str:
    short, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class TabflowDocstrings(griffe.Extension):
    """Fill docstring templates from the imported object and turn Sphinx roles into code."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is None:
            return
        if _PLACEHOLDER.search(obj.docstring.value):
            filled = inspect.getdoc(griffe.dynamic_import(obj.path, import_paths=[_ROOT, *sys.path]))
            if filled and not _PLACEHOLDER.search(filled):
                obj.docstring.value = filled
        obj.docstring.value = _ROLE.sub(_shown, obj.docstring.value)
