"""``python -m tabflow.tools.inspector_script``: the inspector from the command line."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tabflow.tools.inspector_script import main


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({
        "price": rng.uniform(0, 10, 300),
        "item": rng.choice(["apple", "kiwi", "fig"], 300),
        "click": rng.integers(0, 2, 300),
    })
    (tmp_path / "columns.json").write_text(json.dumps({"conts": ["price"], "cats": ["item"], "labels": ["click"]}))
    return tmp_path, frame


@pytest.mark.parametrize("file_format", ["parquet", "csv"])
def test_the_script_writes_the_description(data, file_format, capsys):
    work, frame = data
    source = work / f"data.{file_format}"
    frame.to_parquet(source) if file_format == "parquet" else frame.to_csv(source, index=False)
    out = work / "info.json"
    status = main(["-i", str(source), "-f", file_format, "-c", str(work / "columns.json"), "-o", str(out), "--cpu"])
    assert status == 0
    assert capsys.readouterr().out == f"wrote {out} (300 rows: 1 continuous, 1 categorical, 1 label columns)\n"
    described = json.loads(out.read_text())
    assert described["num_rows"] == 300
    assert described["cats"]["item"]["cardinality"] == 3
    assert (described["cats"]["item"]["min_entry_size"], described["cats"]["item"]["max_entry_size"]) == (3, 5)
    assert described["conts"]["price"]["max_val"] == pytest.approx(frame["price"].max())
    assert described["labels"]["click"]["cardinality"] == 2


def test_a_bad_config_is_a_usage_error(data, capsys):
    work, frame = data
    frame.to_parquet(work / "data.parquet")
    (work / "list.json").write_text('["price"]')
    with pytest.raises(SystemExit) as exit_info:
        main(["-i", str(work / "data.parquet"), "-c", str(work / "list.json"), "--cpu"])
    assert exit_info.value.code == 2 and "must hold an object" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["-i", str(work / "data.parquet"), "-c", str(work / "missing.json"), "--cpu"])
    assert exit_info.value.code == 2 and "cannot read column config" in capsys.readouterr().err


@pytest.mark.distributed
def test_the_script_on_a_local_cluster(data):
    work, frame = data
    frame.to_parquet(work / "data.parquet")
    out = work / "info.json"
    assert main(["-i", str(work / "data.parquet"), "-c", str(work / "columns.json"), "-o", str(out), "--cpu", "--workers", "1"]) == 0
    assert json.loads(out.read_text())["num_rows"] == 300


def test_the_module_runs_as_a_script():
    result = subprocess.run([sys.executable, "-m", "tabflow.tools.inspector_script", "--help"], check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    for option in ("--data_path", "--format", "--config_file", "--output_file", "--part-mem-frac", "--workers", "--cpu", "--gpu"):
        assert option in result.stdout
