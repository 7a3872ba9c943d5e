"""Smoke test of ``benchmarks/serving.py`` on a small data set."""

from __future__ import annotations

import re

import pytest


@pytest.fixture(scope="module")
def serving(load_benchmark):
    return load_benchmark("serving")


def test_benchmark_prints_percentiles_and_ratios(serving, tmp_path, capsys):
    argv = ["--rows", "5000", "--requests", "40", "--batch-requests", "3", "--repeat", "2", "--workdir", str(tmp_path)]
    assert serving.main(argv) == 0
    out = capsys.readouterr().out
    assert "ops run by their transform: none" in out
    paths = ("hand-written", "transform(dict)", "transform(frame)", "transform(JSON frame)", "pandas work alone", "public pandas calls", "batch path")
    for path in paths:
        assert re.search(rf"^{re.escape(path)}: +p50 +[\d.]+ ms +p99 +[\d.]+ ms", out, flags=re.MULTILINE), out
    for path in ("transform(dict)", "transform(frame)"):
        assert re.search(rf"^{re.escape(path)} p50: +[\d.]+(-[\d.]+)?x \(target <= 20x\)$", out, flags=re.MULTILINE), out
    # The fitted workflow is kept in the work directory and loaded by the next run.
    assert serving.main(argv[:-4] + ["--repeat", "1", "--workdir", str(tmp_path)]) == 0
    assert "fitted on" not in capsys.readouterr().out
