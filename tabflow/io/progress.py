"""Progress bars for the Dask computations tabflow runs, shown on request (``progress=True``).

``Workflow.fit`` / ``transform`` / ``fit_transform`` and ``Dataset.to_parquet`` / ``compute``
take a ``progress`` option, off by default:

- a computation on Dask's local schedulers (threads, processes, synchronous) shows tqdm's
  Dask callback, :class:`tqdm.dask.TqdmCallback`: one bar of tasks per computation (a fit
  pass), made by ``tqdm.auto`` so that a notebook with ipywidgets gets a widget and a
  terminal a text bar on stderr. The callback is handed to that one computation, not
  registered globally, so computations in other threads (a data loader reading ahead)
  neither show in the bar nor hide it;
- that callback sees only local schedulers. With a ``distributed`` client, the same
  computation shows :func:`distributed.progress` instead: distributed's text bar, which it
  prints on stdout (in notebooks too, where its widget would show only as a cell's value);
- writing parquet streams the partitions one at a time (each computed on its own, a few
  ahead of the writer), so its bar counts the partitions written (``tqdm.auto``), on both
  kinds of scheduler.

Examples
--------
>>> import pandas as pd, dask.dataframe as dd
>>> from tabflow.io.progress import compute
>>> ddf = dd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
>>> total, mean = compute(ddf.a.sum(), ddf.a.mean(), progress=True, desc="sums")  # a bar on stderr
>>> int(total), float(mean)
(15, 2.5)
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import dask

from tabflow.io.cluster import active_client

__all__ = ["compute", "partition_bar"]


def compute(
    *collections: Any, client: Any = None, progress: bool = False, desc: str | None = None, **dask_options: Any
) -> tuple:
    """``dask.compute(*collections)`` on ``client`` (default: the active one, else dask's
    local scheduler), with a progress bar when ``progress`` is true.

    ``dask_options`` go to ``dask.compute`` unchanged (``optimize_graph=False``, ...); a
    ``scheduler`` among them is used instead of any client, as ``dask.compute`` does.
    """
    client = None if "scheduler" in dask_options else active_client(client)
    if client is not None:
        if not progress:
            return dask.compute(*collections, scheduler=client, **dask_options)
        from distributed import progress as show_progress

        futures = client.compute(list(collections), **dask_options)  # values that are not collections pass through
        # The text bar, in notebooks too: distributed's widget shows only as a cell's value.
        show_progress([f for f in futures if hasattr(f, "key")], notebook=False)
        return tuple(client.gather(futures))
    dask_options = _local_options(collections, dask_options)
    if not progress:
        return dask.compute(*collections, **dask_options)
    from dask.callbacks import normalize_callback
    from tqdm.dask import TqdmCallback

    bar = TqdmCallback(desc=desc, unit="task")
    return dask.compute(*collections, callbacks=[normalize_callback(bar)], **dask_options)


def _local_options(collections: tuple, dask_options: dict[str, Any]) -> dict[str, Any]:
    """``dask_options`` naming the collections' own scheduler where dask would pick it.

    Without a scheduler named, ``dask.compute`` imports ``distributed`` to look for a client
    (0.1-0.3 s, the first time). No client exists while that package is not imported, so the
    scheduler dask would fall back to, the collections' default, is named instead. A
    scheduler in ``dask.config`` is left to dask, as are collections without one default.
    """
    if "scheduler" in dask_options or "distributed" in sys.modules or dask.config.get("scheduler", None) is not None:
        return dask_options
    defaults = {c.__dask_scheduler__ for c in collections if dask.is_dask_collection(c)}
    if len(defaults) != 1:
        return dask_options
    return {**dask_options, "scheduler": defaults.pop()}


@contextmanager
def partition_bar(total: int, enabled: bool, desc: str) -> Iterator[Callable[[], None]]:
    """A function to call once per partition done, which advances a ``tqdm.auto`` bar of
    ``total`` partitions when ``enabled`` (and does nothing otherwise)."""
    if not enabled:
        yield lambda: None
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=desc, unit="partition") as bar:
        yield lambda: bar.update(1)
