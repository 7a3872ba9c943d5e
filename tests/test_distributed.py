"""A two-process dask cluster gives exactly what the single-process scheduler gives."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.io import Shuffle

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(180)]


def _workflow():
    return nvt.Workflow((["x", "y"] >> ops.Clip(min_value=-1.0) >> ops.Normalize()) + ["rid", "s"])


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
    ) as cluster:
        yield cluster


@pytest.fixture
def data_dir(tmp_path, rng):
    n = 3000
    df = pd.DataFrame(
        {
            "rid": np.arange(n),
            "x": rng.normal(size=n),
            "y": rng.exponential(size=n),
            "s": rng.choice(["a", "b", "c"], size=n),
        }
    )
    for i in range(3):
        df.iloc[i * 1000 : (i + 1) * 1000].to_parquet(tmp_path / f"in_{i}.parquet", index=False, row_group_size=250)
    return tmp_path


def _run(data_dir, out, client=None):
    wf = _workflow()
    wf.client = client
    ds = nvt.Dataset(str(data_dir), engine="parquet", part_size=1, client=client)
    assert ds.npartitions == 12
    wf.fit(ds)
    wf.transform(ds).to_parquet(str(out), output_files=4, shuffle=Shuffle.PER_WORKER, seed=3)
    stats = [(op.means_, op.stds_) for op in wf.ops if isinstance(op, ops.Normalize)]
    return stats, [pq.read_table(f).to_pandas() for f in sorted(out.glob("*.parquet"))]


class _AssignmentLog(distributed.diagnostics.plugin.SchedulerPlugin):
    """Keys the scheduler hands to a worker while the log is installed.

    Counting assignments, not the task stream, tells new work from old: a task stream record
    is kept when a task ends, and its times are the worker's clock shifted by the worker's
    estimate of its offset from the scheduler, which drifts by tenths of a second on a busy
    machine. A task already running when the log opens was assigned before it.
    """

    name = "tabflow-assignment-log"

    def __init__(self):
        self.keys = []

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "processing":
            self.keys.append(key)


def _assigned_while(client, work):
    """Return what ``work()`` returns and the keys the scheduler of ``client`` assigned meanwhile."""
    client.register_plugin(_AssignmentLog())
    try:
        result = work()
    finally:
        keys = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.plugins[_AssignmentLog.name].keys))
        client.unregister_scheduler_plugin(_AssignmentLog.name)
    return result, keys


def _same(left, right):
    left_stats, left_files = left
    right_stats, right_files = right
    assert left_stats == right_stats  # exactly, not approximately
    assert len(left_files) == len(right_files) == 4
    for a, b in zip(left_files, right_files):
        pd.testing.assert_frame_equal(a, b)


def test_explicit_and_default_client_match_local_scheduler(cluster, data_dir, tmp_path):
    local = _run(data_dir, tmp_path / "local")
    with distributed.Client(cluster) as client:
        _same(local, _run(data_dir, tmp_path / "explicit", client=client))
        # No client passed: the active one is used.
        _same(local, _run(data_dir, tmp_path / "default"))
        assert len(client.nthreads()) == 2
        files = nvt.Dataset(str(data_dir)).to_parquet(str(tmp_path / "per_proc"), out_files_per_proc=2)
        assert len(files) == 4


def test_to_iter_converts_partitions_computed_by_the_cluster(cluster, data_dir):
    with distributed.Client(cluster) as client:
        ds = nvt.Dataset(str(data_dir), engine="parquet", part_size=1, client=client)
        sums = list(ds.to_iter(columns=["rid"], indices=[3, 0], convert=lambda frame: int(frame["rid"].sum())))
        parts = list(ds.to_iter(columns=["rid"], indices=[3, 0]))
    assert sums == [int(p["rid"].sum()) for p in parts] and len(sums) == 2


@pytest.mark.gpu
def test_local_cuda_cluster_matches_the_local_gpu_run(data_dir, tmp_path, cudf_engine):
    dask_cuda = pytest.importorskip("dask_cuda")

    def run(out, client=None):
        wf = _workflow()
        wf.client = client
        ds = nvt.Dataset(str(data_dir), engine="parquet", part_size=1, client=client, cpu=False)
        assert ds.engine == "cudf"
        wf.fit(ds)
        wf.transform(ds).to_parquet(str(out), output_files=4, shuffle=Shuffle.PER_WORKER, seed=3)
        stats = [(op.means_, op.stds_) for op in wf.ops if isinstance(op, ops.Normalize)]
        return stats, [pq.read_table(f).to_pandas() for f in sorted(out.glob("*.parquet"))]

    local = run(tmp_path / "local")
    with dask_cuda.LocalCUDACluster(n_workers=1, dashboard_address=":0", silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        on_cluster = run(tmp_path / "cluster", client=client)
        assert len(client.scheduler_info()["workers"]) == 1
    left_stats, right_stats = local[0], on_cluster[0]
    for (lm, ls), (rm, rs) in zip(left_stats, right_stats):
        assert lm == pytest.approx(rm, rel=1e-12) and ls == pytest.approx(rs, rel=1e-12)
    assert len(local[1]) == len(on_cluster[1]) == 4
    for a, b in zip(local[1], on_cluster[1]):
        pd.testing.assert_frame_equal(a, b)
    # The same statistics as the pandas engine.
    cpu = _run(data_dir, tmp_path / "cpu")
    for (lm, ls), (cm, cs) in zip(left_stats, cpu[0]):
        assert lm == pytest.approx(cm, rel=1e-9) and ls == pytest.approx(cs, rel=1e-9)


# ------------------------------------------------------------ Distributed / Serial blocks
def test_distributed_block_runs_the_work_on_the_given_client_and_serial_does_not(cluster, data_dir, tmp_path):
    from tabflow.io.cluster import active_client

    reference = _run(data_dir, tmp_path / "local")
    with distributed.Client(cluster, set_as_default=False) as client:
        assert active_client() is None  # a client that is not the default is used only when asked
        with nvt.Distributed(client=client) as block:
            assert block.client is client and active_client() is client
            with distributed.get_task_stream(client=client) as tasks:
                on_cluster = _run(data_dir, tmp_path / "cluster")
            assert len(tasks.data) > 0
            with nvt.Serial():
                assert active_client() is None
                serial, assigned = _assigned_while(client, lambda: _run(data_dir, tmp_path / "serial"))
            assert assigned == []  # nothing was handed to the cluster's workers
            assert active_client() is client  # Serial restored the block's client
        assert active_client() is None  # and the block restored the local scheduler
        assert client.status == "running"  # a given client is not closed by the block
    _same(reference, on_cluster)
    _same(reference, serial)


def test_distributed_starts_and_closes_a_local_cluster_without_a_client(data_dir, tmp_path):
    from tabflow.io.cluster import active_client

    block = nvt.Distributed(cluster_type="cpu", n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    try:
        assert active_client() is block.client
        assert isinstance(block.cluster, distributed.LocalCluster)
        assert block.dashboard_link
        result = _run(data_dir, tmp_path / "out")
    finally:
        block.deactivate()
    assert block.client.status == "closed" and active_client() is None
    _same(_run(data_dir, tmp_path / "local"), result)
    with pytest.raises(ValueError, match="cluster_type must be"):
        nvt.Distributed(cluster_type="tpu", force_new=True)
    try:
        import dask_cuda  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="dask-cuda"):
            nvt.Distributed(cluster_type="cuda", force_new=True)


def test_asking_for_a_cluster_beside_an_active_client_warns_that_none_is_started(monkeypatch):
    # merlin's Distributed and set_dask_client warn so; the running client does the work.
    import warnings

    from tabflow.io import cluster as cluster_module
    from tabflow.io.cluster import active_client, set_dask_client

    with distributed.Client(processes=False, n_workers=1, dashboard_address=":0", set_as_default=False) as client:
        set_dask_client(client)
        try:
            with pytest.warns(UserWarning, match=r"no new cpu cluster is started and its options \{'n_workers': 3\}"):
                with nvt.Distributed(cluster_type="cpu", n_workers=3) as block:
                    assert block.client is client and active_client() is client
            with monkeypatch.context() as patched, pytest.warns(UserWarning, match="pass force_new=True"):
                patched.setattr(cluster_module, "active_client", lambda: client)  # "auto" finds this client
                assert set_dask_client("auto", new_cluster="cpu") is client
            set_dask_client(client)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with nvt.Distributed() as block:  # asking for nothing: the running client, quietly
                    assert block.client is client
                with nvt.Distributed(client=client):
                    pass
            assert active_client() is client
        finally:
            set_dask_client(None)


def test_compute_with_a_scheduler_runs_there_even_with_a_client(cluster):
    # merlin's Dataset.compute(**kwargs) is dask's: NVTabular's tests call
    # transform(ds).compute(scheduler="synchronous") with a client active.
    import os

    import dask.dataframe as dd

    frame = pd.DataFrame({"rid": np.arange(40), "x": np.linspace(0.0, 1.0, 40)})
    tagged = dd.from_pandas(frame, npartitions=4).map_partitions(lambda part: part.assign(pid=os.getpid()))
    with distributed.Client(cluster) as client:
        dataset = nvt.Dataset(tagged, client=client)
        on_workers = dataset.compute()
        here = dataset.compute(scheduler="synchronous")
        persisted = dataset.persist(scheduler="synchronous").compute(scheduler="synchronous")
    assert os.getpid() not in set(on_workers["pid"])
    assert set(here["pid"]) == set(persisted["pid"]) == {os.getpid()}
    pd.testing.assert_frame_equal(here.drop(columns="pid"), frame)
    pd.testing.assert_frame_equal(on_workers.drop(columns="pid"), frame)


def _no_client_in(config):
    """Whether a (nested) dask config holds no client object."""
    if isinstance(config, dict):
        return all(_no_client_in(v) for v in config.values())
    if isinstance(config, (list, tuple)):
        return all(_no_client_in(v) for v in config)
    return not isinstance(config, distributed.Client)


def test_a_chosen_client_lets_process_based_clusters_start(data_dir, tmp_path, monkeypatch):
    # merlin's set_dask_client: the client becomes the one work runs on, and dask's
    # configuration (copied into every new worker process) never holds it.
    import dask

    from tabflow.io import cluster as clusters
    from tabflow.io.cluster import active_client
    from tabflow.utils import global_dask_client, set_dask_client

    monkeypatch.setattr(clusters, "_chosen", clusters._UNSET)  # the choice made here ends with the test
    reference = _run(data_dir, tmp_path / "local")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as threads:
        with distributed.Client(threads, set_as_default=False) as client:
            try:
                assert set_dask_client(client) is client
                assert active_client() is client and global_dask_client() is client
                assert _no_client_in(dask.config.config)
                with distributed.get_task_stream(client=client) as tasks:
                    on_client = _run(data_dir, tmp_path / "chosen")
                assert len(tasks.data) > 0
                with nvt.Distributed(client=client), nvt.Serial():
                    assert active_client() is None and _no_client_in(dask.config.config)
                assert active_client() is client  # both blocks restored the chosen client
                with distributed.LocalCluster(
                    n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
                ) as processes, distributed.Client(processes, set_as_default=False) as other:
                    assert other.submit(sum, [1, 2, 3]).result(timeout=60) == 6
            finally:
                set_dask_client(None)
            assert active_client() is None and dask.config.get("scheduler") == "threads"
            set_dask_client(client)  # chosen again: dask's configuration is as it was before
            assert active_client() is client and dask.config.get("scheduler", None) is None
    _same(reference, on_client)


def test_auto_forgets_an_earlier_choice_and_finds_the_context_client(monkeypatch):
    # merlin's set_dask_client("auto"): after set_dask_client(None), "auto" goes back to the
    # client the context has (the default distributed client), on this and every later call.
    import dask

    from tabflow.io import cluster as clusters
    from tabflow.utils import global_dask_client, set_dask_client

    monkeypatch.setattr(clusters, "_chosen", clusters._UNSET)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as threads:
        set_dask_client(None)
        try:
            assert global_dask_client() is None and dask.config.get("scheduler") == "threads"
            with distributed.Client(threads) as client:  # the default client from here on
                assert global_dask_client() is None  # None was chosen: not overridden by the context
                assert set_dask_client("auto") is client
                assert global_dask_client() is client and dask.config.get("scheduler", None) is None
            assert global_dask_client() is None  # its block closed it: no client in the context
        finally:
            set_dask_client(None)
            set_dask_client("auto")
    # (Closing a default client restores dask.config as it was when the client started, so what
    # dask.config names now is distributed's to say; tabflow's own choice is back to "auto".)
    assert global_dask_client() is None
