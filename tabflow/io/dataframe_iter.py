"""The iterator :meth:`Dataset.to_iter` returns: partitions as frames, with a row count.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> parts = nvt.Dataset(pd.DataFrame({"a": range(10)}), npartitions=3).to_iter(epochs=2)
>>> len(parts), [len(p) for p in parts]
(20, [4, 3, 3, 4, 3, 3])
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

__all__ = ["DataFrameIter"]


class DataFrameIter:
    """The partitions of a dataset, in a chosen order, for one or more epochs.

    ``len()`` is the number of rows it yields (``merlin.io.DataFrameIter``'s meaning).
    ``iter()`` starts a new pass each time; ``next()`` and ``close()`` work on one current
    pass, so the object also serves where a generator is expected (the data loader stops
    reading ahead by closing it).

    Parameters
    ----------
    produce : callable
        Returns a fresh iterator over one epoch's frames.
    count : callable
        Returns the rows of one epoch.
    epochs : int, default 1
    """

    def __init__(self, produce: Callable[[], Iterator[Any]], count: Callable[[], int], epochs: int = 1) -> None:
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be a positive int, got {epochs!r}")
        self._produce = produce
        self._count = count
        self.epochs = epochs
        self._current: Iterator[Any] | None = None

    def __len__(self) -> int:
        return self._count() * self.epochs

    def __iter__(self) -> Iterator[Any]:
        for _ in range(self.epochs):
            yield from self._produce()

    def __next__(self) -> Any:
        if self._current is None:
            self._current = iter(self)
        return next(self._current)

    def close(self) -> None:
        """Stop the current pass (reading ahead stops; partitions in flight are cancelled)."""
        if self._current is not None and hasattr(self._current, "close"):
            self._current.close()
        self._current = None

    def __repr__(self) -> str:
        return f"DataFrameIter(epochs={self.epochs})"
