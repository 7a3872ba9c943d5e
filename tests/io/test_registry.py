"""The reader registry: a new format is one reader function and one ``register`` call."""

from __future__ import annotations

import json

import dask.dataframe as dd
import pandas as pd
import pytest

import tabflow as nvt
from tabflow.io.readers import (
    DatasetReadError,
    Source,
    format_for,
    guess_format,
    register,
)
from tabflow.schema import ColumnSchema, Schema, Tags


def read_json_lines(paths, options):
    """A toy reader: one partition per JSON-lines file."""
    files = list(paths)
    frames = dd.from_map(lambda path: pd.read_json(path, lines=True), files, label="read-jsonl")
    return Source(frames, "pandas", partition_sources=lambda: files)


@pytest.fixture
def jsonl_dir(tmp_path):
    # The registration lasts for the whole process, as a plugin's would; no other test
    # uses the name.
    register("jsonl", read_json_lines, suffixes=(".jsonl",))
    for k in range(3):
        rows = [{"a": 10 * k + i, "x": i / 2} for i in range(4)]
        (tmp_path / f"day_{k}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "notes.txt").write_text("not data\n")
    return tmp_path


def test_a_registered_format_reads_through_dataset(jsonl_dir):
    ds = nvt.Dataset(str(jsonl_dir), engine="jsonl", cpu=True)
    assert ds.file_engine == "jsonl" and ds.npartitions == 3
    assert [p.rsplit("/", 1)[-1] for p in ds.paths] == ["day_0.jsonl", "day_1.jsonl", "day_2.jsonl"]  # notes.txt is not listed
    assert ds.num_rows == 12 and ds.schema.dtypes == {"a": "int64", "x": "float64"}
    assert ds.compute()["a"].tolist() == [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]


def test_a_registered_suffix_selects_the_format(jsonl_dir):
    ds = nvt.Dataset(str(jsonl_dir / "*.jsonl"), cpu=True)
    assert ds.file_engine == "jsonl" and ds.num_rows == 12
    assert guess_format("a/b.JSONL").name == "jsonl"


def test_a_registered_format_gets_the_schema_and_preserved_files(jsonl_dir, tmp_path_factory):
    Schema([ColumnSchema("a", dtype="int64", tags={Tags.CATEGORICAL})]).to_json(str(jsonl_dir / "schema.json"))
    ds = nvt.Dataset(str(jsonl_dir), engine="jsonl", cpu=True)
    assert Tags.CATEGORICAL in ds.schema["a"].tags
    out = tmp_path_factory.mktemp("out") / "parquet"
    files = ds.to_parquet(str(out), preserve_files=True)
    assert [pd.read_parquet(f)["a"].tolist() for f in files] == [[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]


def test_built_in_formats_and_unknown_names():
    assert [format_for(name).name for name in ("parquet", "csv", "orc", "criteo")] == ["parquet", "csv", "orc", "criteo"]
    assert guess_format("x.parq").name == "parquet" and guess_format("x.csv.gz").name == "csv"
    with pytest.raises(ValueError, match=r"unknown engine 'avro'; use one of \('parquet', 'csv', 'orc', 'criteo'"):
        format_for("avro")
    with pytest.raises(ValueError, match=r"cannot tell the format of 'x.bin'; pass engine='parquet', 'csv', 'orc',? (or )?'criteo'"):
        guess_format("x.bin")


def test_unknown_engine_is_refused_before_the_files_are_listed(tmp_path):
    with pytest.raises(ValueError, match="unknown engine 'avro'"):
        nvt.Dataset(str(tmp_path / "missing"), engine="avro")
    with pytest.raises(DatasetReadError, match="does not exist"):
        nvt.Dataset(str(tmp_path / "missing"), engine="parquet")


def test_hex_dtypes_are_refused_by_typed_formats(tmp_path):
    pd.DataFrame({"x": [1]}).to_parquet(tmp_path / "a.parquet")
    with pytest.raises(ValueError, match=r"dtype 'hex' \(columns \['x'\]\) only applies to CSV files, not parquet"):
        nvt.Dataset(str(tmp_path), dtypes={"x": "hex"})
