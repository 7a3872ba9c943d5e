"""The layout of loader batches: how list columns are keyed, and what pads them.

:class:`~tabflow.loader.torch.Loader` delivers a list (multi-hot) column ``name`` as two
tensors keyed ``name__values`` and ``name__offsets``; padded dense and sparse layouts fill
the missing positions with :data:`PAD_INDEX`, the index ``Categorify`` reserves for padding
and never produces. Everything that reads batches (the torch modules of
:mod:`tabflow.framework_utils.torch`) spells the keys through these helpers; the spelling
itself lives in :mod:`tabflow.backends.list_keys`.

Examples
--------
>>> from tabflow.loader.keys import list_column, offsets_key, values_key
>>> values_key("tags"), offsets_key("tags")
('tags__values', 'tags__offsets')
>>> list_column("tags__offsets"), list_column("tags")
('tags', None)
"""

from __future__ import annotations

from typing import Any, Mapping

# The key spelling is the backends' (dicts of arrays use it too); the padding index is
# Categorify's (0 is never produced).
from tabflow.backends.list_keys import (
    OFFSETS_SUFFIX,
    VALUES_SUFFIX,
    list_column,
    offsets_key,
    values_key,
)
from tabflow.ops._vocab import PAD_INDEX

__all__ = ["PAD_INDEX", "VALUES_SUFFIX", "OFFSETS_SUFFIX", "values_key", "offsets_key", "list_column", "ragged_pair"]

def ragged_pair(batch: Mapping[str, Any], name: str) -> tuple[Any, Any] | None:
    """``(values, offsets)`` of list column ``name`` in ``batch``, or None when it is not
    there in that layout; a values tensor without its offsets is an error.

    Examples
    --------
    >>> from tabflow.loader.keys import ragged_pair
    >>> ragged_pair({"t__values": [1, 2], "t__offsets": [0, 2]}, "t"), ragged_pair({"t": [1]}, "t")
    (([1, 2], [0, 2]), None)
    """
    if values_key(name) not in batch:
        return None
    if offsets_key(name) not in batch:
        raise KeyError(f"batch has {values_key(name)} but no {offsets_key(name)}")
    return batch[values_key(name)], batch[offsets_key(name)]
