"""progress=True: tqdm bars on stderr (a distributed text bar on stdout with a client), results unchanged."""

from __future__ import annotations

import re

import dask
import numpy as np
import pandas as pd
import pytest
from dask.callbacks import Callback

import tabflow as nvt
from tabflow import ops


@pytest.fixture
def frame(rng):
    n = 4000
    frame = pd.DataFrame(
        {
            # A Series keeps None a null on pandas 2 too, where pd.array(..., dtype="str") makes it "None".
            "c": pd.Series(rng.choice(["a", "b", "c", "d", None], n), dtype="str"),
            "x": rng.normal(size=n),
            "y": rng.integers(0, 2, n),
        }
    )
    frame.loc[rng.random(n) < 0.1, "x"] = np.nan
    return frame


def _workflow():
    # Two passes: TargetEncoding reads what Categorify produces.
    encoded = ["c"] >> ops.Categorify() >> ops.TargetEncoding("y")
    return nvt.Workflow((["c"] >> ops.Categorify()) + encoded + (["x"] >> ops.FillMissing() >> ops.Normalize()) + ["y"])


def _bars(text: str) -> dict[str, str]:
    """The last state of each tqdm bar on ``text``, by its description."""
    states = {}
    for part in re.split(r"[\r\n]+", text):
        match = re.match(r"^(?P<desc>[^:]+): +\d+%\|.*\| (?P<count>\d+/\d+) .*?(?P<unit>task|partition)/s\]", part)
        if match:
            states[match["desc"]] = f"{match['count']} {match['unit']}"
    return states


def _done(state: str) -> bool:
    count, _ = state.split()
    done, total = count.split("/")
    return done == total and int(total) > 0


def test_fit_shows_one_task_bar_per_pass_on_stderr_and_fits_the_same(frame, capsys):
    dataset = nvt.Dataset(frame, npartitions=4)
    quiet = _workflow().fit(dataset)
    assert capsys.readouterr().err == ""  # off by default
    shown = _workflow().fit(dataset, progress=True)
    captured = capsys.readouterr()
    bars = _bars(captured.err)
    assert set(bars) == {"fit pass 1", "fit pass 2"} and all(_done(s) and s.endswith("task") for s in bars.values())
    assert captured.out == ""
    pd.testing.assert_frame_equal(shown.transform(frame), quiet.transform(frame))
    assert Callback.active == set()  # handed to each computation, never registered globally


def test_transform_result_shows_a_partition_bar_when_written_and_a_task_bar_when_computed(frame, tmp_path, capsys):
    dataset = nvt.Dataset(frame, npartitions=4)
    workflow = _workflow().fit(dataset)
    quiet = workflow.transform(dataset)
    quiet.to_parquet(str(tmp_path / "quiet"), output_files=3, shuffle="PER_PARTITION", seed=1)
    expected = quiet.compute()
    assert capsys.readouterr().err == ""

    shown = workflow.transform(dataset, progress=True)
    shown.to_parquet(str(tmp_path / "shown"), output_files=3, shuffle="PER_PARTITION", seed=1)
    assert _bars(capsys.readouterr().err) == {"write shown": "4/4 partition"}
    computed = shown.compute()
    assert _done(_bars(capsys.readouterr().err)["compute"])
    shown.to_parquet(str(tmp_path / "again"), progress=False)  # an explicit False wins
    assert capsys.readouterr().err == ""

    pd.testing.assert_frame_equal(computed, expected)
    for name in ("part_0.parquet", "part_1.parquet", "part_2.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "shown" / name), pd.read_parquet(tmp_path / "quiet" / name)
        )


def test_fit_transform_and_a_hive_write_show_their_bars(frame, tmp_path, capsys):
    out = _workflow().fit_transform(nvt.Dataset(frame, npartitions=3), progress=True)
    out.to_parquet(str(tmp_path / "hive"), partition_on="y")
    bars = _bars(capsys.readouterr().err)
    assert set(bars) == {"fit pass 1", "fit pass 2", "write hive"} and bars["write hive"] == "3/3 partition"
    assert nvt.Dataset(str(tmp_path / "hive")).num_rows == len(frame)


def test_progress_under_the_synchronous_scheduler(frame, capsys):
    with dask.config.set(scheduler="sync"):
        workflow = _workflow().fit(nvt.Dataset(frame, npartitions=2), progress=True)
    assert set(_bars(capsys.readouterr().err)) == {"fit pass 1", "fit pass 2"}
    # Four values after index 0 (padding), 1 (null) and 2 (out of vocabulary).
    assert workflow.output_schema["c"].properties["cardinality"] == 3 + 4
    expected = _workflow().fit(nvt.Dataset(frame, npartitions=2)).transform(frame)
    pd.testing.assert_frame_equal(workflow.transform(frame), expected)


@pytest.mark.distributed
@pytest.mark.timeout(180)
def test_with_a_distributed_client_the_bar_is_distributeds_and_results_are_the_same(frame, tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    dataset = nvt.Dataset(frame, npartitions=4)
    expected = _workflow().fit(dataset).transform(frame)
    capsys.readouterr()
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0", silence_logs=50
    ) as cluster, distributed.Client(cluster) as client:
        workflow = _workflow()
        workflow.client = client
        out = workflow.fit_transform(nvt.Dataset(frame, npartitions=4, client=client), progress=True)
        out.to_parquet(str(tmp_path / "out"), output_files=2)
        computed = out.compute()
    captured = capsys.readouterr()
    # tqdm's Dask callback sees only local schedulers: distributed prints its own bar.
    assert captured.out.count("100% Completed") == 3  # two fit passes and compute()
    assert _bars(captured.err) == {"write out": "4/4 partition"}
    pd.testing.assert_frame_equal(workflow.transform(frame), expected)
    pd.testing.assert_frame_equal(computed.reset_index(drop=True), expected)


def test_local_work_never_imports_distributed(tmp_path):
    # dask.compute imports distributed (0.1-0.3 s) to look for a client unless it is told
    # the scheduler; tabflow names it while no client can exist. A scheduler set in
    # dask.config is still obeyed: the synchronous one runs every task in the calling thread.
    import subprocess
    import sys

    script = f"""
import sys, threading
import dask, dask.dataframe as dd, numpy as np, pandas as pd
import tabflow as nvt
from tabflow import ops
frame = pd.DataFrame({{"c": pd.Series(list("abcab") * 40, dtype="str"), "x": np.arange(200.0)}})
threads = []
def seen(part):
    threads.append(threading.get_ident())
    return part
dataset = nvt.Dataset(dd.from_pandas(frame, npartitions=4).map_partitions(seen))
workflow = nvt.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.LogOp() >> ops.Normalize()))
workflow.fit(dataset)
workflow.transform(dataset).to_parquet({str(tmp_path / "out")!r})
out = nvt.Dataset({str(tmp_path / "out")!r}, engine="parquet").compute()
assert out["c"].tolist() == [3, 4, 5, 3, 4] * 40, out["c"].tolist()[:5]
counted = nvt.Dataset(frame, npartitions=3)
assert counted.partition_lengths() == [67, 67, 66] and nvt.Dataset(frame, npartitions=2).num_rows == 200
assert "distributed" not in sys.modules
assert set(threads) - {{threading.get_ident()}}, "the default scheduler runs tasks in its threads"
threads.clear()
with dask.config.set(scheduler="synchronous"):
    workflow.fit(dataset)
assert set(threads) == {{threading.get_ident()}}, threads
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
