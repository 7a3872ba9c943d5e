"""Schema files of other formats beside datasets, through ``register_schema_format``: a format
other than merlin's is read where it is the only schema, written beside every dataset, kept out
of directory listings, and looked for in the directory's parent."""

from __future__ import annotations

import os

import pandas as pd
import pytest

import tabflow as nvt
from tabflow.io.readers import _schema_files
from tabflow.io.readers._schema_files import SchemaFormat, is_schema_file, register_schema_format, schema_formats
from tabflow.schema import ColumnSchema, Schema

# A plain-text format: one "column tag,tag" line per column.
_PATH = "tags.txt"


def _read(text: str, where: str) -> Schema:
    columns = []
    for line in text.splitlines():
        name, _, tags = line.partition(" ")
        columns.append(ColumnSchema(name, tags=[t for t in tags.split(",") if t]))
    return Schema(columns)


def _write(schema: Schema) -> bytes:
    return "".join(f"{c.name} {','.join(sorted(str(t) for t in c.tags))}\n" for c in schema).encode()


@pytest.fixture
def tags_format(monkeypatch):
    monkeypatch.setattr(_schema_files, "_FORMATS", list(_schema_files._FORMATS))
    register_schema_format(SchemaFormat(_PATH, read=_read, write=_write))
    return _PATH


def _frame(rows: int, start: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"item": [f"i{k % 3}" if k % 4 else None for k in range(start, start + rows)], "y": [float(k) for k in range(start, start + rows)]})


def test_a_registered_format_is_written_beside_every_dataset_and_read_back(tmp_path, tags_format):
    frame = pd.concat([_frame(5), _frame(0, 5), _frame(4, 5)], ignore_index=True)
    out = str(tmp_path / "out")
    schema = Schema([ColumnSchema("item", tags=["categorical"]), ColumnSchema("y", tags=["target"])])
    nvt.Dataset(frame, npartitions=3, schema=schema).to_parquet(out, output_files=2)
    with open(os.path.join(out, tags_format), encoding="utf-8") as handle:
        assert handle.read() == "item categorical\ny target\n"
    # tabflow's own _schema.json comes first; without it the registered file is the schema.
    os.remove(os.path.join(out, "_schema.json"))
    read = nvt.Dataset(os.path.join(out, "*.parquet"))
    assert [str(t) for t in read.schema["y"].tags] == ["target"]
    got = read.to_ddf().compute().reset_index(drop=True)
    assert got["y"].tolist() == frame["y"].tolist()
    assert [None if pd.isna(v) else v for v in got["item"]] == [None if pd.isna(v) else v for v in frame["item"]]


def test_files_of_a_registered_format_are_never_data_and_are_found_in_the_parent(tmp_path, tags_format):
    data = tmp_path / "day=1"
    data.mkdir()
    for index in range(2):
        _frame(4, 4 * index).to_parquet(data / f"part_{index}.parquet")
    (data / tags_format).write_text("item categorical\n")
    assert is_schema_file(tags_format) and not is_schema_file("part_0.parquet")
    read = nvt.Dataset(str(data))
    assert read.npartitions == 2 and read.num_rows == 8
    assert [str(t) for t in read.schema["item"].tags] == ["categorical"]
    os.remove(data / tags_format)
    (tmp_path / tags_format).write_text("item categorical\ny target\n")
    assert [str(t) for t in nvt.Dataset(str(data)).schema["y"].tags] == ["target"]


def test_registering_a_path_again_replaces_the_format(tags_format):
    register_schema_format(SchemaFormat(tags_format, read=_read))
    assert [f.path for f in schema_formats()].count(tags_format) == 1
    assert next(f for f in schema_formats() if f.path == tags_format).write is None


def test_merlins_files_are_registered_by_compat():
    assert [f.path for f in schema_formats()][:2] == [".merlin/schema.json", "schema.pbtxt"]
