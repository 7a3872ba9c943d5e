"""The memory-model benchmark on a tiny log: its parts agree with what they measure."""

from __future__ import annotations

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def memory_model(load_benchmark):
    return load_benchmark("memory_model")


def test_one_shape_measured_in_process(memory_model, tmp_path):
    options = memory_model._shape_options(memory_model.parse_args(["--shape", "small-files", "--rows", "30000"]), "small-files", str(tmp_path))
    result = memory_model.measure(options)
    data = pd.read_parquet(memory_model.etl.ensure_data(options))
    # Distinct values: what pandas counts in the categorical columns.
    assert result["distinct"] == sum(data[c].nunique() for c in memory_model.etl.CATEGORICAL)
    assert result["rows"] == 30000 and result["partitions"] == 1  # three files of 10,000 rows, read together
    assert result["partition_rows"] == 30000
    assert result["partition_in_mb"] > 0 and result["partition_out_mb"] > 0
    assert 0 < result["base_mb"] <= result["fit_peak_mb"] and result["base_mb"] <= result["write_peak_mb"]
    assert result["bytes_per_distinct"] == pytest.approx(result["held_mb"] * 2**20 / result["distinct"])


def test_shapes_are_checked(memory_model):
    with pytest.raises(SystemExit):
        memory_model.parse_args(["--shape", "nope"])
    assert memory_model.parse_args(["--shape", "all"]).shapes == list(memory_model.etl.SHAPES)
