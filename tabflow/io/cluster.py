"""Which Dask scheduler runs the work: the active client, a cluster made for a block of code
(:class:`Distributed`), or the local synchronous scheduler (:class:`Serial`).

Everything that computes (``Workflow.fit``, ``transform``, ``Dataset.to_parquet``, the
loader's reads) asks :func:`active_client`: an explicit ``client=`` argument wins, then the
scheduler chosen here (by :func:`set_dask_client` or a context manager), then a local
scheduler named in ``dask.config``, then the default ``distributed`` client, else dask's
local threads. The context managers restore what was chosen before, so they nest. A client
is never put into ``dask.config``: the configuration is copied into every worker process a
new cluster starts, and a client in it cannot be (no process-based cluster would start).

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow import ops
>>> wf = nvt.Workflow(["x"] >> ops.Normalize())
>>> with nvt.Serial():
...     wf.fit_transform(pd.DataFrame({"x": [1.0, 2.0, 3.0]}))["x"].tolist()
[-1.0, 0.0, 1.0]
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import dask

from tabflow._install import pip_install

__all__ = ["active_client", "Distributed", "Serial", "global_dask_client", "set_dask_client"]

# dask's own schedulers, by the names dask.config accepts: no distributed client then.
_LOCAL_SCHEDULERS = {"sync", "synchronous", "single-threaded", "threads", "threading", "processes", "multiprocessing"}


# The scheduler chosen for the process: a client, a local scheduler's name, or _UNSET.
_UNSET = object()
_chosen: Any = _UNSET


# What set_dask_client(None) set in dask.config, undone when a client is chosen again.
_threads_config: Any = None


def _choose(scheduler: Any) -> Any:
    """Make ``scheduler`` the chosen one; return the one chosen before (to restore it)."""
    global _chosen
    previous, _chosen = _chosen, scheduler
    return previous


def _is_client(obj: Any) -> bool:
    return "Client" in type(obj).__name__ and hasattr(obj, "submit")


def active_client(client: Any = None) -> Any:
    """The given client, else the one ``dask.config`` names, else the default distributed
    client; None when the work runs on dask's local schedulers.

    Examples
    --------
    >>> import tabflow as nvt
    >>> with nvt.Serial():
    ...     active_client() is None
    True
    """
    if client is not None:
        return client
    chosen = _chosen
    if _is_client(chosen) and getattr(chosen, "status", None) not in ("closing", "closed"):
        return chosen
    if isinstance(chosen, str):
        return None
    configured = dask.config.get("scheduler", None)
    if _is_client(configured):
        return configured
    if isinstance(configured, str) and configured.lower() in _LOCAL_SCHEDULERS:
        return None
    if "distributed" not in sys.modules:
        # No client can exist without the package imported, and importing it costs ~0.3 s.
        return None
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:
        return None


def global_dask_client() -> Any:
    """The client work runs on now (None for dask's local schedulers), as merlin's."""
    return active_client()


def set_dask_client(client: Any = "auto", new_cluster: str | None = None, force_new: bool = False, **cluster_options: Any) -> Any:
    """Make ``client`` the one work runs on, for the rest of the process; returns it.

    ``"auto"`` keeps the active client (or, with ``new_cluster="cpu"``/``"cuda"`` and no
    client or ``force_new=True``, starts a local cluster of that kind with
    ``cluster_options``); ``None`` goes back to dask's local threads. As merlin's, this
    chooses the client tabflow's work runs on; dask's own default client (the one plain
    ``ddf.compute()`` uses) stays what ``distributed`` made it, and ``dask.config`` never
    holds the client, so process-based clusters still start afterwards.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from distributed import Client, LocalCluster
    >>> from tabflow.utils import global_dask_client, set_dask_client
    >>> client = Client(LocalCluster(n_workers=1, processes=False, dashboard_address=":0"), set_as_default=False)
    >>> set_dask_client(client) is client and global_dask_client() is client
    True
    >>> nvt.Dataset(pd.DataFrame({"x": [1, 2, 3]})).num_rows
    3
    >>> set_dask_client(None) is None and global_dask_client() is None
    True
    >>> set_dask_client("auto") is None  # back to the client of the context (none here)
    True
    >>> client.close(); client.cluster.close()
    """
    global _threads_config
    if client == "auto":
        # As merlin's "auto": forget an earlier choice and find the client the context has,
        # now and on every later call, until one is chosen again.
        _choose(_UNSET)
        if _threads_config is not None:
            _threads_config, config = None, _threads_config
            config.__exit__(None, None, None)
        client = None if force_new else active_client()
        if client is not None and new_cluster is not None:
            _warn_not_started(client, new_cluster, cluster_options)
        if client is None and new_cluster is not None:
            client = _start_client(new_cluster, cluster_options)
        if client is None:
            return None
    if client is None:
        _choose("threads")
        if _threads_config is None:
            # A name, never the client: dask work left to dask's default runs locally too.
            _threads_config = dask.config.set(scheduler="threads")
    else:
        _choose(client)
        if _threads_config is not None:
            _threads_config, config = None, _threads_config
            config.__exit__(None, None, None)
    return client


def _start_client(cluster_type: str, cluster_options: dict) -> Any:
    """A client on a new local cluster (``"cpu"``: distributed.LocalCluster, ``"cuda"``:
    dask_cuda.LocalCUDACluster)."""
    if cluster_type not in ("cpu", "cuda"):
        raise ValueError(f"cluster_type must be 'cpu' or 'cuda', got {cluster_type!r}")
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ImportError("a local cluster needs the 'distributed' package: pip install distributed") from None
    if cluster_type == "cuda":
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise ImportError(
                f"cluster_type='cuda' needs dask-cuda ({pip_install('gpu-cu12')} or {pip_install('gpu-cu13')}); "
                "use cluster_type='cpu' for a CPU cluster"
            ) from None
        return Client(LocalCUDACluster(**cluster_options), set_as_default=False)
    return Client(LocalCluster(**cluster_options), set_as_default=False)


def _warn_not_started(client: Any, cluster_type: str, cluster_options: dict) -> None:
    # As merlin's: the cluster asked for is not started beside the client already running.
    warnings.warn(
        f"an active Dask client ({client!r}) is used: no new {cluster_type} cluster is started"
        + (f" and its options {cluster_options} are not applied" if cluster_options else "")
        + "; pass force_new=True to start one",
        UserWarning,
        stacklevel=4,
    )


def _gpu_cluster_available() -> bool:
    try:
        import dask_cuda  # noqa: F401
        from numba import cuda
    except ImportError:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver means: no GPU cluster
        return False


class Distributed:
    """Run a block of code on a Dask cluster: the ``client`` given, else the active one,
    else a local cluster started here (and closed at the end).

    Parameters
    ----------
    client : distributed.Client, optional
        The client to use.
    cluster_type : {"cuda", "cpu"}, optional
        The kind of local cluster to start when there is no client (or ``force_new``):
        ``"cuda"`` (dask_cuda.LocalCUDACluster, one worker per GPU) when dask-cuda and a
        GPU are there, ``"cpu"`` (distributed.LocalCluster) otherwise.
    force_new : bool
        Start a local cluster even when a client is active.
    **cluster_options
        Passed to the cluster, e.g. ``n_workers=2, threads_per_worker=1``.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow import ops
    >>> wf = nvt.Workflow(["x"] >> ops.Normalize())
    >>> with nvt.Distributed(cluster_type="cpu", n_workers=1, threads_per_worker=1, processes=False) as d:
    ...     _ = wf.fit(nvt.Dataset(pd.DataFrame({"x": [1.0, 2.0, 3.0]})))
    ...     type(d.client).__name__
    'Client'
    >>> wf.transform(pd.DataFrame({"x": [3.0]}))["x"].tolist()
    [1.0]
    """

    def __init__(self, client: Any = None, cluster_type: str | None = None, force_new: bool = False, **cluster_options: Any) -> None:
        self.cluster_type = cluster_type or ("cuda" if _gpu_cluster_available() else "cpu")
        self.cluster_options = cluster_options
        self.force_new = force_new
        self._given = client
        self._client: Any = None
        self._owned = False  # whether this object started the cluster (and so closes it)
        self._config: Any = None
        self._asked_for_cluster = cluster_type is not None or bool(cluster_options)
        self._activate()

    @property
    def client(self) -> Any:
        return self._client

    @property
    def cluster(self) -> Any:
        return self._client.cluster

    @property
    def dashboard_link(self) -> str:
        return self._client.dashboard_link

    def _activate(self) -> None:
        if self._config is not None:
            return
        client = self._given if self._given is not None else (None if self.force_new else active_client())
        if client is not None and self._given is None and self._asked_for_cluster:
            _warn_not_started(client, self.cluster_type, self.cluster_options)
        if client is None:
            client = _start_client(self.cluster_type, self.cluster_options)
            self._owned = True
        self._client = client
        self._config = (_choose(client),)

    def deactivate(self) -> None:
        """Go back to the scheduler that was active before (closing a cluster started here)."""
        if self._config is None:
            return
        (previous,), self._config = self._config, None
        _choose(previous)
        if self._owned:
            cluster = self._client.cluster
            self._client.close()
            if cluster is not None:
                cluster.close()
            self._owned = False

    def __enter__(self) -> "Distributed":
        self._activate()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.deactivate()

    def __del__(self) -> None:
        if getattr(self, "_config", None) is not None and not sys.is_finalizing():
            self.deactivate()


class Serial:
    """Run a block of code on dask's synchronous scheduler, even when a distributed client
    is active (for debugging, or work too small to ship to workers).

    Examples
    --------
    >>> import tabflow as nvt
    >>> with nvt.Serial() as serial:
    ...     serial.client is None
    True
    """

    def __init__(self) -> None:
        self._config: Any = None
        self._activate()

    @property
    def client(self) -> None:
        return None

    def _activate(self) -> None:
        if self._config is None:
            # Both: tabflow's work (which asks active_client) and raw dask work in the block.
            self._config = (_choose("synchronous"), dask.config.set(scheduler="synchronous"))

    def deactivate(self) -> None:
        """Go back to the scheduler that was active before."""
        if self._config is not None:
            (previous, config), self._config = self._config, None
            config.__exit__(None, None, None)
            _choose(previous)

    def __enter__(self) -> "Serial":
        self._activate()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.deactivate()
