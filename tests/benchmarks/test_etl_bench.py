"""Smoke test of the ETL benchmark script on a tiny data set."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

_SCRIPT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "benchmarks", "etl.py")


@pytest.fixture(scope="module")
def etl():
    spec = importlib.util.spec_from_file_location("tabflow_benchmark_etl", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs, as an imported module is (its dataclasses look it up).
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_benchmark_prints_throughput_memory_and_ratio(etl, tmp_path, capsys):
    # --check compares the hand-written pandas ETL's output with tabflow's, value for value.
    args = ["--rows", "20000", "--workdir", str(tmp_path), "--part-size", "1MB", "--baselines", "pandas", "--check"]
    assert etl.main(args) == 0
    out = capsys.readouterr().out
    assert "ratio tabflow / pyarrow floor:" in out and "(target <= 1.5x)" in out
    assert "tabflow fit:" in out and "tabflow transform + write:" in out and "peak RSS" in out
    assert "ratio tabflow / pandas time:" in out and "check: pandas wrote the same 20,000 rows as tabflow" in out
    # The generated data are cached in the work directory and reused by the next run.
    (data_dir,) = [p for p in tmp_path.iterdir() if p.name.startswith("criteo-")]
    marker = data_dir / "_GENERATED"
    stamp = marker.stat().st_mtime_ns
    options = etl.parse_args(["--rows", "20000", "--workdir", str(tmp_path)])
    assert etl.ensure_data(options) == str(data_dir)
    assert marker.stat().st_mtime_ns == stamp and "generating" not in capsys.readouterr().out


def test_every_named_workflow_builds(etl):
    options = etl.parse_args(["--rows", "10"])
    for name, build in etl.WORKFLOWS.items():
        assert build(options).output_node is not None, name


def test_vocabulary_scaling_reports_each_size(etl, tmp_path, capsys):
    assert etl.main(["--cardinality", "2000,5000", "--workdir", str(tmp_path), "--baselines", ""]) == 0
    out = capsys.readouterr().out
    assert "2,000" in out and "5,000" in out and "peak RSS" in out


def test_two_sizes_report_memory_growth(etl, tmp_path, capsys):
    args = ["--rows", "20000,40000", "--workdir", str(tmp_path), "--part-size", "1MB", "--baselines", "pandas"]
    assert etl.main(args) == 0
    out = capsys.readouterr().out
    assert "-- run 1: 20,000 rows" in out and "-- run 1: 40,000 rows" in out
    growth = out.split("== peak RSS at 40,000 rows over 20,000 rows, min-max:")[1].splitlines()
    assert growth[1].startswith("tabflow: ") and "(target <= 1.1x)" in growth[1]
    assert growth[2].startswith("pandas: ")
    # Each size has its own generated data (one file per 500,000 rows, at least one).
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("criteo-")) == [
        "criteo-20000rows-1files-seed0-card2", "criteo-40000rows-1files-seed0-card2"]


def test_rows_must_be_counts(etl):
    with pytest.raises(SystemExit):
        etl.parse_args(["--rows", "5M"])


@pytest.mark.parametrize("workflow", ["categorify", "features"])
def test_engine_check_compares_the_outputs_row_for_row(etl, tmp_path, capsys, workflow):
    # What --gpu --check runs after the GPU phase: the CPU engine's output as the reference.
    # Here both runs are on the CPU; a changed value is named by column and row.
    import pandas as pd

    options = etl.parse_args(["--rows", "20000", "--workdir", str(tmp_path), "--part-size", "1MB", "--workflow", workflow,
                              "--check", "--device", "cpu"])
    options.data_dir = etl.ensure_data(options)
    etl.run_tabflow(options)
    etl.run_tabflow_cpu(options)
    assert etl.check_engines(options) == 20_000
    assert "check: tabflow on the GPU wrote the same 20,000 rows as tabflow on the CPU" in capsys.readouterr().out
    path = tmp_path / f"out-tabflow-{workflow}" / "part_0.parquet"
    frame = pd.read_parquet(path)
    column = frame.columns[0]
    frame.loc[3, column] = frame.loc[4, column] if frame.loc[3, column] != frame.loc[4, column] else frame.loc[3, column] + 1
    frame.to_parquet(path, index=False)
    with pytest.raises(AssertionError, match=f"column {column}"):
        etl.check_engines(options)


def test_shapes_against_duckdb_print_every_ratio_and_check_the_rows(etl, tmp_path, capsys):
    pytest.importorskip("duckdb")
    args = ["--rows", "12000", "--shape", "text,lists", "--workdir", str(tmp_path), "--part-size", "1MB",
            "--baselines", "duckdb", "--check"]
    assert etl.main(args) == 0
    out = capsys.readouterr().out
    assert "shape text" in out and "shape lists" in out
    assert "ratio tabflow / DuckDB time:" in out and "(target <= 0.7x)" in out
    assert "ratio tabflow / DuckDB peak RSS:" in out and "(target <= 0.8x)" in out
    assert out.count("check: duckdb wrote the same 12,000 rows as tabflow (compared as sets") == 2
    table = out.split("== tabflow over each system")[1].splitlines()
    assert table[1].startswith("| shape | rows | floor time (<= 1.5x) | duckdb time (<= 0.7x) | duckdb RSS (<= 0.8x) |")
    assert table[3].startswith("| text | 12,000 | ") and table[4].startswith("| lists | 12,000 | ")
    # Each shape's data are generated by the library's generator under their own name.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("criteo-")) == [
        "criteo-12000rows-1files-seed0-card2-multihotC4+C11+C21+C24", "criteo-12000rows-1files-seed0-card2-text"]


def test_shapes_lay_out_their_files(etl):
    assert etl.parse_args(["--shape", "all"]).shapes == list(etl.SHAPES)
    assert [etl.SHAPES[name].files(5_000_000) for name in ("hex", "small-files", "one-file")] == [10, 500, 1]
    assert etl.parse_args(["--rows", "5000000", "--shape", "small-files"]).files == 500
    with pytest.raises(SystemExit):
        etl.parse_args(["--shape", "urls"])


def test_check_compares_unordered_rows_as_sets(etl, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    options = etl.parse_args(["--rows", "10", "--workdir", str(tmp_path)])
    table = pa.table({"C1": [3, 4, 1, 3], "C2": pa.array([[3], [4, 2], [5], [3, 3]]), "I1": [0.5, -1.0, 2.0, 0.25], "label": [0, 1, 0, 1]})
    for name, rows in (("tabflow-categorify", table), ("duckdb", table.take([3, 1, 0, 2])), ("polars", table.take([3, 1, 0, 2]))):
        os.makedirs(tmp_path / f"out-{name}")
        pq.write_table(rows, tmp_path / f"out-{name}" / "part_0.parquet")
    etl.check_outputs(options, ["duckdb"])  # the same rows in another order
    with pytest.raises(AssertionError, match="polars: C1"):
        etl.check_outputs(options, ["polars"])  # Polars keeps the order: another order is wrong
    pq.write_table(table.set_column(1, "C2", pa.array([[3], [4, 2], [5], [3, 2]])), tmp_path / "out-duckdb" / "part_0.parquet")
    with pytest.raises(AssertionError, match="duckdb: C2"):
        etl.check_outputs(options, ["duckdb"])
