"""``Padding``: every list of a list column made exactly ``padding_size`` long."""

from __future__ import annotations

from typing import Any

from tabflow.ops.list_slice import ListSlice

__all__ = ["Padding"]


class Padding(ListSlice):
    """Right-pad (or truncate) every list to ``padding_size`` items, as merlin-dataloader's
    ``Padding`` loader op does.

    Lists shorter than ``padding_size`` (empty and null lists included) are filled on the
    right with ``padding_value``; longer ones keep their first ``padding_size`` items. The
    schema records the fixed length as the column's ``value_count`` min and max. It is
    :class:`~tabflow.ops.ListSlice` ``(0, padding_size, pad=True, pad_value=padding_value)``
    under merlin's name and argument order, so it works in a ``Workflow`` as well as in
    ``Loader(transforms=["a"] >> Padding(n, value))``.

    Parameters
    ----------
    padding_size : int
        The length of every output list; must be a positive integer.
    padding_value : scalar, default 0
        Must fit the list's element type.

    Examples
    --------
    >>> import pandas as pd, pyarrow as pa
    >>> import tabflow as nvt
    >>> from tabflow.loader.ops import Padding
    >>> items = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([[1, 2, 3, 4], [5], []])))
    >>> out = nvt.Workflow(["items"] >> Padding(3, -1)).fit_transform(pd.DataFrame({"items": items}))
    >>> [row.tolist() for row in out["items"]]
    [[1, 2, 3], [5, -1, -1], [-1, -1, -1]]
    """

    def __init__(self, padding_size: int, padding_value: Any = 0) -> None:
        self.padding_size = padding_size
        self.padding_value = padding_value
        super().__init__(0, padding_size, pad=True, pad_value=padding_value)

    def _padded_length(self) -> int | None:
        size = self.padding_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"Padding: padding_size must be a positive integer, got {size!r}")
        return super()._padded_length()
