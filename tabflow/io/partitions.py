"""Compute a dask DataFrame's partitions one by one, in order, a few ahead of the consumer.

The writer and the data loader both stream partitions: memory holds at most ``prefetch + 1``
partitions whatever the dataset size. On a dask distributed cluster partitions are computed
by the workers; otherwise by local threads, each running dask's synchronous scheduler.

Examples
--------
>>> import pandas as pd, dask.dataframe as dd
>>> from tabflow.io.partitions import iter_partitions
>>> ddf = dd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
>>> [len(p) for p in iter_partitions(ddf)]
[2, 2, 2]
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Generator, Iterator, Sequence

import dask.local

from tabflow.io.cluster import active_client

__all__ = ["iter_partitions", "iter_calls"]


def iter_partitions(
    ddf: Any, order: Sequence[int] | None = None, prefetch: int = 2, client: Any = None,
    convert: Callable[[Any], Any] | None = None,
) -> Iterator[Any]:
    """Yield computed partitions of ``ddf`` in ``order`` (default: natural order).

    ``convert`` (optional) is applied to each computed partition; locally it runs in the
    reading threads, so converting overlaps with the consumer's work.
    """
    parts = ddf.to_delayed()
    order = range(len(parts)) if order is None else order
    client = active_client(client)
    if client is not None:
        results = _windowed(lambda index: client.compute(parts[index]), order, prefetch)
        yield from results if convert is None else map(convert, results)
        return
    # The synchronous scheduler as a function: named by a string, dask imports distributed
    # to look for a client first.
    with ThreadPoolExecutor(max_workers=max(1, prefetch), thread_name_prefix="tabflow-read") as pool:
        yield from _windowed(lambda index: pool.submit(_then(convert, parts[index].compute), scheduler=dask.local.get_sync), order, prefetch)


def iter_calls(calls: Sequence[Any], prefetch: int = 2, convert: Callable[[Any], Any] | None = None) -> Generator[Any, None, None]:
    """Yield ``call()`` (or ``convert(call())``) for each call, in order, running up to
    ``prefetch`` ahead in threads."""
    with ThreadPoolExecutor(max_workers=max(1, prefetch), thread_name_prefix="tabflow-read") as pool:
        yield from _windowed(lambda index: pool.submit(_then(convert, calls[index])), range(len(calls)), prefetch)


def _then(convert: Callable[[Any], Any] | None, call: Callable[..., Any]) -> Callable[..., Any]:
    if convert is None:
        return call
    return lambda *args, **kwargs: convert(call(*args, **kwargs))


def _windowed(submit: Any, order: Sequence[int], prefetch: int) -> Iterator[Any]:
    """Submit partitions in order, keeping ``prefetch`` ahead of the consumer."""
    pending: deque = deque()
    try:
        for index in order:
            pending.append(submit(index))
            if len(pending) > prefetch:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        # A consumer that stops early must not leave partitions computing (locally or on
        # the cluster).
        for future in pending:
            future.cancel()
