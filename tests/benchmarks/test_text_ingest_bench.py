"""Smoke test of ``benchmarks/text_ingest.py`` on a tiny data set: the report, not the timings."""

from __future__ import annotations

import re

import pytest


@pytest.fixture(scope="module")
def text_ingest(load_benchmark):
    return load_benchmark("text_ingest")


def test_benchmark_prints_rates_memory_and_ratios(text_ingest, tmp_path, capsys):
    argv = ["--rows", "3000", "--workdir", str(tmp_path), "--part-size", "64KB"]
    assert text_ingest.main(argv) == 0
    out = capsys.readouterr().out
    for label in text_ingest.LABELS.values():
        line = rf"^{re.escape(label)}\s+[\d.]+ s\s+[\d,]+ rows/s\s+CPU\s+[\d.]+ s\s+peak RSS [\d,]+ MB$"
        assert re.search(line, out, flags=re.MULTILINE), (label, out)
    assert re.search(r"^-- run 1: 3,000 rows, 1 files, \d+ tabflow partitions, tabflow parser pyarrow$", out, re.MULTILINE), out
    assert "== over 1 run(s), min-max:" in out
    ratio = r"[\d.]+(-[\d.]+)?x"
    assert re.search(rf"^ratio tabflow / pyarrow.csv floor time: {ratio} \(target <= 1.2x\); CPU time {ratio}$", out, re.MULTILINE), out
    for name in ("pandas.read_csv", r"dask \+ pandas block reader \(before\)"):
        assert re.search(rf"^ratio tabflow / {name} time: {ratio}; CPU time {ratio}; peak RSS {ratio}$", out, re.MULTILINE), out
    # The generated text files are kept in the work directory and reused by the next run.
    (data_dir,) = [p for p in tmp_path.iterdir() if p.name.startswith("criteo-")]
    assert data_dir.name.endswith("-criteo_text") and (data_dir / "day_0").stat().st_size > 0
    stamp = (data_dir / "_GENERATED").stat().st_mtime_ns
    assert text_ingest.criteo_data(str(tmp_path), 3000, 1, format="criteo_text") == str(data_dir)
    assert (data_dir / "_GENERATED").stat().st_mtime_ns == stamp and "generating" not in capsys.readouterr().out


def test_unknown_baseline_is_refused(text_ingest):
    with pytest.raises(SystemExit):
        text_ingest.parse_args(["--baselines", "polars"])
