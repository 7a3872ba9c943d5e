"""The library says what it plans and does on the "tabflow.*" loggers, and nothing unless asked."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops


@pytest.fixture
def frame(rng):
    n = 3000
    return pd.DataFrame(
        {
            "c": pd.Series(rng.choice(["a", "b", None], n), dtype="str"),
            **{f"x{i}": rng.normal(size=n) for i in range(6)},
            "y": rng.integers(0, 2, n),
        }
    )


def _workflow():
    conts = [f"x{i}" for i in range(6)]
    return nvt.Workflow((["c"] >> ops.Categorify() >> ops.TargetEncoding("y")) + (conts >> ops.Normalize()) + ["y"])


def _messages(caplog, logger):
    return [record.getMessage() for record in caplog.records if record.name == logger]


def test_fit_logs_the_partitions_and_each_pass(frame, caplog):
    caplog.set_level(logging.INFO, logger="tabflow")
    _workflow().fit(nvt.Dataset(frame, npartitions=3))
    messages = _messages(caplog, "tabflow.workflow")
    assert messages[:2] == [
        "fit: 3 statistics op(s) over 3 partition(s)",
        "fit pass 1: Categorify(c), Normalize(x0, x1, x2, x3, ... (6 columns))",
    ]
    assert messages[2].startswith("fit pass 1 done in ") and messages[2].endswith(" s")
    assert messages[3] == "fit pass 2: TargetEncoding(c, y)"
    assert messages[4].startswith("fit pass 2 done in ") and len(messages) == 5
    assert all(record.levelno == logging.INFO for record in caplog.records)


def test_writing_logs_the_plan_the_files_and_a_replaced_directory(frame, tmp_path, caplog):
    workflow = _workflow().fit(frame)
    caplog.set_level(logging.INFO, logger="tabflow")
    out = str(tmp_path / "out")
    workflow.transform(nvt.Dataset(frame, npartitions=4)).to_parquet(out, output_files=2, shuffle="PER_PARTITION", seed=0)
    assert _messages(caplog, "tabflow.workflow") == [
        "transform: 4 partition(s), 8 column(s) in, 8 out; computed when the result is written or computed"
    ]
    assert _messages(caplog, "tabflow.io.writer") == [
        f"writing 4 partition(s) to 2 file(s) in {out}, shuffled PER_PARTITION",
        f"wrote 2 file(s), {len(frame)} rows, to {out}",
    ]
    assert _messages(caplog, "tabflow.io.atomic") == []  # a new directory replaces nothing

    caplog.clear()
    nvt.Dataset(frame.iloc[:10]).to_parquet(out)
    assert _messages(caplog, "tabflow.io.atomic") == [f"replacing the dataset at {out} (a previous output)"]
    assert _messages(caplog, "tabflow.io.writer")[-1] == f"wrote 1 file(s), 10 rows, to {out}"

    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a dataset")
    caplog.clear()
    nvt.Dataset(frame.iloc[:10]).to_parquet(str(other), overwrite=True)
    assert _messages(caplog, "tabflow.io.atomic") == [f"replacing the dataset at {other} (overwrite=True)"]


def test_hive_writes_and_saves_are_logged(frame, tmp_path, caplog):
    workflow = _workflow().fit(frame)
    caplog.set_level(logging.INFO, logger="tabflow")
    nvt.Dataset(frame, npartitions=2).to_parquet(str(tmp_path / "hive"), partition_on="y")
    assert _messages(caplog, "tabflow.io.writer")[0] == f"writing 2 partition(s) to {tmp_path / 'hive'}, one directory per value of ['y']"
    target = str(tmp_path / "workflow")
    workflow.save(target)
    workflow.save(target)
    assert _messages(caplog, "tabflow.workflow") == [f"saved the workflow ({len(workflow.nodes)} nodes) to {target}"] * 2
    assert _messages(caplog, "tabflow.io.atomic") == [f"replacing the workflow at {target} (a previous output)"]


def test_silent_unless_the_application_configures_logging(tmp_path):
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("tabflow").handlers)
    script = (
        "import pandas as pd, tabflow as nvt\n"
        "from tabflow import ops\n"
        "df = pd.DataFrame({'c': ['a', 'b', None] * 10, 'x': [1.0, None, 3.0] * 10})\n"
        "wf = nvt.Workflow((['c'] >> ops.Categorify()) + (['x'] >> ops.FillMissing() >> ops.Normalize()))\n"
        f"wf.fit_transform(nvt.Dataset(df, npartitions=2)).to_parquet({str(tmp_path / 'out')!r})\n"
        f"wf.save({str(tmp_path / 'wf')!r}); wf.save({str(tmp_path / 'wf')!r})\n"
        "import logging; logging.getLogger('tabflow.workflow').warning('unseen')\n"
        "logging.basicConfig(format='%(name)s: %(message)s', level=logging.INFO)\n"
        f"wf.save({str(tmp_path / 'wf')!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr
    # The package's NullHandler keeps even warnings from logging's last-resort handler; once
    # the application configures logging, the records show.
    assert done.stdout == ""
    assert done.stderr == (
        f"tabflow.io.atomic: replacing the workflow at {tmp_path / 'wf'} (a previous output)\n"
        f"tabflow.workflow: saved the workflow (6 nodes) to {tmp_path / 'wf'}\n"
    )
    assert np.isfinite(pd.read_parquet(tmp_path / "out")["x"]).all()
