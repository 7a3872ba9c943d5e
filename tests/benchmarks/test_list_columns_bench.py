"""Smoke test of the list-column benchmark script on a small file."""

from __future__ import annotations

import importlib.util
import os

_SCRIPT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "benchmarks", "list_columns.py")


def test_benchmark_prints_each_path_and_the_ratio(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("tabflow_benchmark_list_columns", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--rows", "2000", "--repeat", "1", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2,000 rows,")
    for line in ("arrow (to_ddf(arrow_lists=True)):", "pandas form (to_ddf()):", "pd.read_parquet:",
                 "back to Arrow (Dataset(frame)):", "ratio pandas form / pd.read_parquet:"):
        assert line in out
    assert list(tmp_path.iterdir()) == []  # the file went with its temporary directory
