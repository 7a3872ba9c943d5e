"""Smoke test of the list-column benchmark script on a small file."""

from __future__ import annotations


def test_benchmark_prints_each_path_and_the_ratio(load_benchmark, tmp_path, capsys):
    module = load_benchmark("list_columns")
    assert module.main(["--rows", "2000", "--repeat", "1", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2,000 rows,")
    for line in ("arrow (to_ddf(arrow_lists=True)):", "pandas form (to_ddf()):", "pd.read_parquet:",
                 "back to Arrow (Dataset(frame)):", "ratio pandas form / pd.read_parquet:"):
        assert line in out
    assert list(tmp_path.iterdir()) == []  # the file went with its temporary directory
