"""The ``tabflow`` command: help, usage errors, the demo end to end on small data, and the
dataset tools (``inspect``, ``generate``) on files they describe and write."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tabflow.cli import main
from tabflow.demo import DemoConfig, raw_files, split_train_valid

_RATE = r"([\d,]+) rows/s"


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("demo", "inspect", "generate"):
        assert command in out


@pytest.mark.parametrize(
    "command, options",
    [
        ("inspect", ["--data_path", "--config_file", "--output_file", "--workers", "--cpu", "--gpu"]),
        ("generate", ["DESCRIPTION", "OUTPUT", "--rows", "--distribution", "--entries", "--seed", "--cpu", "--gpu"]),
    ],
)
def test_tool_help_names_its_options(capsys, command, options):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: tabflow {command}")
    for option in options:
        assert option in out


def test_demo_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = capsys.readouterr().out
    for option in ("--rows", "--criteo-dir", "--workdir", "--batch-size", "--epochs", "--cpu", "--gpu"):
        assert option in out
    assert "2000000" in out and "65536" in out


def test_no_command_is_a_usage_error(capsys):
    assert main([]) == 2
    assert "usage: tabflow" in capsys.readouterr().err


def test_cpu_and_gpu_are_exclusive(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--cpu", "--gpu"])
    assert exit_info.value.code == 2


def test_python_dash_m_runs_the_cli():
    done = subprocess.run([sys.executable, "-m", "tabflow", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "demo" in done.stdout


def test_split_keeps_the_last_files_for_validation():
    files = [f"part_{k}.parquet" for k in range(8)]
    assert split_train_valid(files) == (files[:7], files[7:])
    assert split_train_valid(files[:2]) == (files[:1], files[1:2])
    with pytest.raises(ValueError, match="at least 2 files"):
        split_train_valid(files[:1])


def test_generated_data_is_cached_per_rows_and_seed(tmp_path):
    pytest.importorskip("tabflow.datasets")
    messages: list[str] = []
    config = DemoConfig(rows=1000, workdir=str(tmp_path), progress=False)
    first, engine = raw_files(config, messages.append)
    again, _ = raw_files(config, messages.append)
    assert engine == "parquet" and first == again and len(first) == 4
    assert "generated" in messages[0] and "reusing" in messages[1]
    other, _ = raw_files(DemoConfig(rows=1000, seed=1, workdir=str(tmp_path), progress=False), messages.append)
    assert other != first and "generated" in messages[2]


@pytest.mark.slow
def test_demo_end_to_end(tmp_path, capsys):
    pytest.importorskip("fastai")
    pytest.importorskip("matplotlib")
    assert main(["demo", "--rows", "20000", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out

    rates = {
        step: re.search(rf"^{step}: .*?{_RATE}", out, flags=re.MULTILINE)
        for step in ("ETL", "loader", "training")
    }
    for step, match in rates.items():
        assert match, f"no {step} rate in:\n{out}"
        assert int(match.group(1).replace(",", "")) > 0
    auc = re.search(r"^validation: AUC ([\d.]+)", out, flags=re.MULTILINE)
    assert auc, out
    # The generator plants label effects, so even a small one-epoch model beats chance.
    assert float(auc.group(1)) > 0.5

    plot = re.search(r"^loss curve: (.+\.png)$", out, flags=re.MULTILINE)
    assert plot, out
    with open(plot.group(1), "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "processed" / "workflow" / "workflow.json").exists()


def _write_source(directory):
    """Two parquet files with nulls, strings and a label, and the pandas frame they hold."""
    rng = np.random.default_rng(3)
    n = 600
    frame = pd.DataFrame({
        "price": np.where(rng.random(n) < 0.25, np.nan, rng.uniform(2.0, 9.0, n)),
        "item": pd.array(rng.choice(["a", "bb", "ccc", "dddd", "eeeee"], n), dtype="string"),
        "click": rng.integers(0, 2, n),
    })
    os.makedirs(directory)
    frame.iloc[:250].to_parquet(os.path.join(directory, "part_0.parquet"))
    frame.iloc[250:].to_parquet(os.path.join(directory, "part_1.parquet"))
    return frame


def _columns_file(path, **columns):
    with open(path, "w") as handle:
        json.dump(columns, handle)
    return str(path)


def test_inspect_then_generate_then_inspect(tmp_path, capsys):
    source = _write_source(tmp_path / "data")
    columns = _columns_file(tmp_path / "columns.json", conts=["price"], cats=["item"], labels=["click"])
    info = tmp_path / "info.json"
    assert main(["inspect", "-i", str(tmp_path / "data"), "-c", columns, "-o", str(info), "--cpu"]) == 0
    assert f"wrote {info} (600 rows: 1 continuous, 1 categorical, 1 label columns)" in capsys.readouterr().out

    described = json.loads(info.read_text())
    price = described["conts"]["price"]
    assert described["num_rows"] == len(source)
    assert price["per_nan"] == pytest.approx(100 * source["price"].isna().mean())
    assert price["min_val"] == pytest.approx(source["price"].min())
    assert price["max_val"] == pytest.approx(source["price"].max())
    assert price["mean"] == pytest.approx(source["price"].mean())
    lengths = source["item"].str.len()
    assert described["cats"]["item"]["cardinality"] == source["item"].nunique() == 5
    assert (described["cats"]["item"]["min_entry_size"], described["cats"]["item"]["max_entry_size"]) == (lengths.min(), lengths.max())
    assert described["labels"]["click"]["cardinality"] == 2

    out = tmp_path / "synthetic"
    assert main(["generate", str(info), str(out), "--rows", "3000", "--entries", "--seed", "1", "--cpu"]) == 0
    assert f"wrote 3000 rows to 1 file(s) in {out}" in capsys.readouterr().out
    generated = pd.read_parquet(out / "dataset_0.parquet")
    assert list(generated.columns) == ["price", "item", "click"] and len(generated) == 3000
    assert generated["price"].dropna().between(price["min_val"], price["max_val"]).all()
    assert generated["price"].isna().mean() == pytest.approx(price["per_nan"] / 100, abs=0.04)
    assert generated["item"].nunique() == 5
    assert generated["item"].str.len().between(1, 5).all()
    assert set(generated["click"].unique()) == {0, 1}

    # The same seed gives the same data; the generated data describes as the source did.
    again = tmp_path / "again"
    assert main(["generate", str(info), str(again), "--rows", "3000", "--entries", "--seed", "1", "--cpu"]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(again / "dataset_0.parquet"), generated)
    info_again = tmp_path / "info_again.json"
    assert main(["inspect", "-i", str(out / "dataset_0.parquet"), "-c", columns, "-o", str(info_again), "--cpu"]) == 0
    redescribed = json.loads(info_again.read_text())
    assert redescribed["num_rows"] == 3000
    assert redescribed["cats"]["item"]["cardinality"] == 5
    assert redescribed["labels"]["click"]["cardinality"] == 2


def test_generate_defaults_to_the_described_rows(tmp_path, capsys):
    description = {"num_rows": 250, "conts": {"x": {"dtype": "float32", "min_val": 0, "max_val": 1}},
                   "cats": {"c": {"dtype": "int64", "cardinality": 7}}}
    path = tmp_path / "d.json"
    path.write_text(json.dumps(description))
    assert main(["generate", str(path), str(tmp_path / "out"), "--distribution", "powerlaw", "--cpu"]) == 0
    frame = pd.read_parquet(tmp_path / "out" / "dataset_0.parquet")
    assert len(frame) == 250 and str(frame["x"].dtype) == "float32"
    assert frame["c"].nunique() <= 7


def _usage_error(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_inspect_usage_errors_name_the_problem(tmp_path, capsys):
    _write_source(tmp_path / "data")
    data = str(tmp_path / "data")
    good = _columns_file(tmp_path / "columns.json", conts=["price"])
    err = _usage_error(capsys, ["inspect", "-i", data, "-c", str(tmp_path / "missing.json"), "--cpu"])
    assert "tabflow inspect: error:" in err and "missing.json" in err
    absent = _columns_file(tmp_path / "absent.json", conts=["price", "weight"])
    err = _usage_error(capsys, ["inspect", "-i", data, "-c", absent, "--cpu"])
    assert "['weight']" in err and "'price', 'item', 'click'" in err
    kinds = _columns_file(tmp_path / "kinds.json", continuous=["price"])
    assert "unknown column kinds ['continuous']" in _usage_error(capsys, ["inspect", "-i", data, "-c", kinds, "--cpu"])
    err = _usage_error(capsys, ["inspect", "-i", str(tmp_path / "nothing.parquet"), "-c", good, "--cpu"])
    assert "nothing.parquet" in err and "does not exist" in err
    err = _usage_error(capsys, ["inspect", "-i", data, "-c", good, "-o", str(tmp_path), "--cpu"])
    assert str(tmp_path) in err
    assert "required" in _usage_error(capsys, ["inspect", "-c", good])
    assert not os.path.exists("dataset_info.json")


def test_generate_usage_errors_name_the_problem(tmp_path, capsys):
    description = tmp_path / "d.json"
    description.write_text(json.dumps({"num_rows": 10, "conts": {"x": {"dtype": "float64", "min_val": 0, "max_val": 1}}}))
    out = str(tmp_path / "out")
    assert "argument --rows: must be a positive integer, got 0" in _usage_error(capsys, ["generate", str(description), out, "--rows", "0"])
    assert "invalid choice: 'normal'" in _usage_error(capsys, ["generate", str(description), out, "--distribution", "normal"])
    err = _usage_error(capsys, ["generate", str(tmp_path / "none.json"), out])
    assert "none.json" in err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert "broken.json" in _usage_error(capsys, ["generate", str(broken), out])
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"num_rows": 5, "columns": {}}))
    assert "unknown section 'columns'" in _usage_error(capsys, ["generate", str(odd), out, "--cpu"])
    rowless = tmp_path / "rowless.json"
    rowless.write_text(json.dumps({"conts": {"x": {"dtype": "float64", "min_val": 0, "max_val": 1}}}))
    assert "pass --rows N" in _usage_error(capsys, ["generate", str(rowless), out, "--cpu"])
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("keep me")
    assert "not an empty directory" in _usage_error(capsys, ["generate", str(description), str(occupied), "--cpu"])
    assert (occupied / "notes.txt").read_text() == "keep me" and os.listdir(occupied) == ["notes.txt"]
    assert not os.path.exists(out)


def test_a_usage_error_exits_with_status_2(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "tabflow", "generate", str(tmp_path / "none.json"), str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert "tabflow generate: error:" in done.stderr and "Traceback" not in done.stderr


def test_generate_criteo_writes_a_click_log_of_the_chosen_shape(tmp_path, capsys):
    from tabflow.datasets import generate_criteo

    out = tmp_path / "urls"
    argv = ["generate", "--criteo", str(out), "--rows", "3000", "--ids", "text", "--nulls", "sparse",
            "--multi-hot", "C4, C11", "--files", "2", "--row-group-size", "1000", "--seed", "3", "--cardinality-scale", "0.5"]
    assert main(argv) == 0
    assert "wrote 3000 rows to 2 file(s)" in capsys.readouterr().out
    assert sorted(p.name for p in out.glob("*.parquet")) == ["part_0.parquet", "part_1.parquet"]
    read = pd.concat([pd.read_parquet(out / f"part_{k}.parquet") for k in range(2)], ignore_index=True)
    expected = generate_criteo(3000, seed=3, cardinality_scale=0.5, ids="text", nulls="sparse", multi_hot=["C4", "C11"])
    pd.testing.assert_series_equal(read["C1"], expected["C1"], check_dtype=False)
    assert [list(v) for v in read["C4"]] == [list(v) for v in expected["C4"]]
    import pyarrow.parquet as pq

    assert pq.ParquetFile(out / "part_0.parquet").metadata.num_row_groups == 2  # 1500 rows in groups of 1000


def test_generate_criteo_usage_errors_name_the_problem(tmp_path, capsys):
    out = str(tmp_path / "out")
    description = tmp_path / "d.json"
    description.write_text(json.dumps({"num_rows": 10, "conts": {"x": {"dtype": "float64", "min_val": 0, "max_val": 1}}}))
    assert "name only the OUTPUT directory" in _usage_error(capsys, ["generate", "--criteo", str(description), out])
    assert "--entries apply to a DESCRIPTION, not to --criteo" in _usage_error(capsys, ["generate", "--criteo", out, "--entries"])
    err = _usage_error(capsys, ["generate", str(description), out, "--ids", "text"])
    assert "--ids describe a Criteo click log: add --criteo" in err
    assert "name a DESCRIPTION and an OUTPUT" in _usage_error(capsys, ["generate", str(description)])
    assert "invalid choice: 'url'" in _usage_error(capsys, ["generate", "--criteo", out, "--ids", "url"])
    err = _usage_error(capsys, ["generate", "--criteo", out, "--rows", "10", "--multi-hot", "C1,I3"])
    assert "not categorical columns C1..C26: ['I3']" in err
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("keep me")
    assert "not an empty directory" in _usage_error(capsys, ["generate", "--criteo", str(occupied)])
    assert os.listdir(occupied) == ["notes.txt"]
