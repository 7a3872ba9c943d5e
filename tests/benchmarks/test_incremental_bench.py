"""Smoke test of the incremental-update benchmark script on a tiny log."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def incremental(load_benchmark):
    return load_benchmark("incremental")


def test_benchmark_prints_each_day_the_ratio_and_the_growth(incremental, tmp_path, capsys):
    args = ["--days", "3", "--rows", "3000", "--workdir", str(tmp_path), "--repeat", "2"]
    assert incremental.main(args) == 0
    out = capsys.readouterr().out
    assert "== 3 days of 3,000 rows, 2 run(s)" in out
    days = [line.split()[0] for line in out.split("refit/update")[1].splitlines()[1:4]]
    assert days == ["1", "2", "3"]
    assert "ratio update / fit of that day alone, days 2..3:" in out and "(target <= 1.2x)" in out
    assert "ratio of the fastest update to the fastest fit of that day, over the runs, days 2..3:" in out
    assert "growth day 3 over day 1, update:" in out and "; refit:" in out and "peak RSS:" in out
    # The generated log is reused by the next run.
    (data_dir,) = [p for p in tmp_path.iterdir() if p.name.startswith("drifting-")]
    assert sorted(p.name for p in data_dir.iterdir()) == ["_GENERATED", "day00.parquet", "day01.parquet", "day02.parquet"]
    stamp = (data_dir / "_GENERATED").stat().st_mtime_ns
    assert incremental.ensure_data(incremental.parse_args(args)) == [str(data_dir / f"day{d:02d}.parquet") for d in range(3)]
    assert (data_dir / "_GENERATED").stat().st_mtime_ns == stamp


def test_the_log_drifts_every_day(incremental):
    first, second = incremental.day_frame(0, 5000, 0), incremental.day_frame(1, 5000, 0)
    for name, _, _ in incremental.CATEGORICAL[:3]:
        assert len(set(second[name]) - set(first[name])) > 0.05 * second[name].nunique()


def test_arguments_are_checked(incremental):
    with pytest.raises(SystemExit):
        incremental.parse_args(["--days", "0"])
