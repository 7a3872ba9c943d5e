"""How a list column is spelled as a pair of flat arrays in a dict of arrays: ``name__values``
(the items) and ``name__offsets`` (``rows + 1`` int64 offsets).

The loaders deliver list columns this way (:mod:`tabflow.loader.keys`), and
:func:`tabflow.dispatch.df_from_dict` / ``dict_from_df`` read and write it; the spelling is
written down once, here.

Examples
--------
>>> from tabflow.backends.list_keys import list_column, offsets_key, values_key
>>> values_key("tags"), offsets_key("tags")
('tags__values', 'tags__offsets')
>>> list_column("tags__offsets"), list_column("tags")
('tags', None)
"""

from __future__ import annotations

__all__ = ["VALUES_SUFFIX", "OFFSETS_SUFFIX", "values_key", "offsets_key", "list_column"]

VALUES_SUFFIX = "__values"
OFFSETS_SUFFIX = "__offsets"


def values_key(name: str) -> str:
    """Key of the flat values of list column ``name``."""
    return f"{name}{VALUES_SUFFIX}"


def offsets_key(name: str) -> str:
    """Key of the ``rows + 1`` offsets of list column ``name``."""
    return f"{name}{OFFSETS_SUFFIX}"


def list_column(key: str) -> str | None:
    """The list column a ``__values`` / ``__offsets`` key belongs to, else None."""
    for suffix in (VALUES_SUFFIX, OFFSETS_SUFFIX):
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)]
    return None
