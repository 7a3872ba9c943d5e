"""Shuffle modes of :meth:`tabflow.Dataset.to_parquet`, and :func:`shuffle_df`."""

from __future__ import annotations

import warnings
from enum import Enum
from typing import Any

__all__ = ["Shuffle", "normalize_shuffle", "shuffle_df"]


class Shuffle(Enum):
    """How rows are shuffled while writing (values as ``merlin.io.Shuffle``'s).

    ``PER_PARTITION``: the rows of each partition are permuted and each partition's rows are
    spread in contiguous slices over all output files. ``PER_WORKER``: every row goes to a
    uniformly random output file (stronger mixing; memory still bounded by the partitions in
    flight). ``None`` (no shuffle) keeps the row order: output files hold consecutive rows.
    ``FULL`` is refused, as in NVTabular.

    Examples
    --------
    >>> from tabflow.io import Shuffle
    >>> Shuffle.PER_PARTITION.value, Shuffle.PER_WORKER.value, Shuffle.FULL.value
    (0, 1, 2)
    >>> Shuffle["PER_WORKER"] is Shuffle(1)
    True
    """

    PER_PARTITION = 0
    PER_WORKER = 1
    FULL = 2


def normalize_shuffle(shuffle: Any) -> Shuffle | None:
    """The :class:`Shuffle` that ``shuffle`` names, or None.

    As NVTabular 23.08: ``True`` means ``PER_WORKER`` with a DeprecationWarning, ``False``
    means None, ``FULL`` is a ValueError. tabflow also takes the names as strings
    (``"per_worker"``).
    """
    if shuffle is None or shuffle is False:
        return None
    if shuffle is True:
        warnings.warn("`shuffle=True` is deprecated. Using `PER_WORKER`.", DeprecationWarning, stacklevel=3)
        return Shuffle.PER_WORKER
    if isinstance(shuffle, Shuffle):
        if shuffle is Shuffle.FULL:
            raise ValueError(
                "Shuffle.FULL would need the whole dataset in memory; use Shuffle.PER_WORKER, which "
                "sends every row to a random output file with bounded memory"
            )
        return shuffle
    if isinstance(shuffle, str) and shuffle.upper() in Shuffle.__members__:
        return normalize_shuffle(Shuffle[shuffle.upper()])
    raise ValueError(f"unknown shuffle mode {shuffle!r}; use tabflow.io.Shuffle.PER_PARTITION, PER_WORKER or None")


def shuffle_df(df: Any, size: int | None = None, keep_index: bool = False) -> Any:
    """``size`` rows of ``df`` (default: all) in random order; the index is reset unless
    ``keep_index`` (``merlin.io.shuffle_df``).

    Examples
    --------
    >>> import pandas as pd
    >>> from tabflow.io import shuffle_df
    >>> out = shuffle_df(pd.DataFrame({"a": range(5)}))
    >>> sorted(out["a"]), list(out.index)
    ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4])
    """
    return df.sample(n=len(df) if size is None else size, ignore_index=not keep_index)
