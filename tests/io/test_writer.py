"""Dataset.to_parquet: file counts, row order, shuffles, _schema.json, dtypes and atomicity."""

from __future__ import annotations

import glob
import json
import os

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow.io import Shuffle
from tabflow.schema import SCHEMA_FILENAME, Schema, Tags


@pytest.fixture
def frame(rng):
    n = 1000
    return pd.DataFrame(
        {
            "rid": np.arange(n, dtype="int64"),
            "x": rng.normal(size=n),
            "cat": rng.choice(["u", "v", "w"], size=n),
            "tags": pd.Series(
                [list(range(i % 4)) for i in range(n)], dtype=pd.ArrowDtype(pa.list_(pa.int64()))
            ),
        }
    )


def _parquet_files(path):
    return sorted(glob.glob(os.path.join(path, "*.parquet")))


def _read_back(path):
    # As written: list columns as the engine holds them (what the next reader gets).
    return nvt.Dataset(str(path)).to_ddf(arrow_lists=True).compute()


@pytest.mark.parametrize("nparts, output_files", [(4, 1), (4, 3), (4, 4), (3, 7), (1, 5)])
def test_exact_file_count_and_order_kept(tmp_path, frame, nparts, output_files):
    out = tmp_path / "out"
    files = nvt.Dataset(frame, npartitions=nparts).to_parquet(str(out), output_files=output_files)
    assert len(files) == output_files and _parquet_files(out) == sorted(files)
    back = _read_back(out)
    # Without a shuffle, file k holds rows after those of file k - 1.
    assert back["rid"].tolist() == frame["rid"].tolist()
    np.testing.assert_array_equal(back["x"].to_numpy(), frame["x"].to_numpy())
    assert back["cat"].tolist() == frame["cat"].tolist()
    assert [list(v) for v in back["tags"]] == [list(v) for v in frame["tags"]]
    assert back["tags"].dtype == pd.ArrowDtype(pa.list_(pa.int64()))


def test_default_is_one_file_per_partition(tmp_path, frame):
    files = nvt.Dataset(frame, npartitions=3).to_parquet(str(tmp_path / "out"))
    assert len(files) == 3


def test_out_files_per_proc(tmp_path, frame):
    files = nvt.Dataset(frame, npartitions=5).to_parquet(str(tmp_path / "out"), out_files_per_proc=2)
    assert len(files) == 2
    assert _read_back(tmp_path / "out")["rid"].tolist() == frame["rid"].tolist()


@pytest.mark.parametrize("shuffle", [Shuffle.PER_PARTITION, Shuffle.PER_WORKER, "PER_WORKER", "per_partition"])
def test_shuffle_delivers_every_row_once_and_is_reproducible(tmp_path, frame, shuffle):
    ds = nvt.Dataset(frame, npartitions=4)
    ds.to_parquet(str(tmp_path / "a"), output_files=3, shuffle=shuffle, seed=7)
    ds.to_parquet(str(tmp_path / "b"), output_files=3, shuffle=shuffle, seed=7)
    ds.to_parquet(str(tmp_path / "c"), output_files=3, shuffle=shuffle, seed=8)
    a, b, c = (_read_back(tmp_path / d) for d in "abc")
    assert sorted(a["rid"]) == list(range(len(frame)))
    assert a["rid"].tolist() != frame["rid"].tolist()
    pd.testing.assert_frame_equal(a, b)
    assert a["rid"].tolist() != c["rid"].tolist()
    # Rows stay whole: every row's values travel with its id.
    merged = a.sort_values("rid").reset_index(drop=True)
    np.testing.assert_array_equal(merged["x"].to_numpy(), frame["x"].to_numpy())
    assert merged["cat"].tolist() == frame["cat"].tolist()


def test_per_worker_spreads_rows_over_all_files(tmp_path, frame):
    files = nvt.Dataset(frame, npartitions=2).to_parquet(str(tmp_path / "o"), output_files=4, shuffle=Shuffle.PER_WORKER, seed=0)
    rows = [pq.read_metadata(f).num_rows for f in files]
    assert sum(rows) == len(frame) and min(rows) > 150


def test_full_shuffle_is_refused(tmp_path, frame):
    with pytest.raises(ValueError, match="PER_WORKER"):
        nvt.Dataset(frame).to_parquet(str(tmp_path / "o"), shuffle=Shuffle.FULL)
    with pytest.raises(ValueError, match="unknown shuffle"):
        nvt.Dataset(frame).to_parquet(str(tmp_path / "o"), shuffle="sideways")


def test_schema_json_tags_and_dtypes(tmp_path, frame):
    out = tmp_path / "out"
    nvt.Dataset(frame).to_parquet(
        str(out), cats=["cat"], conts=["x"], labels=["rid"], dtypes={"x": "float32", "rid": "Int64"}
    )
    schema = Schema.from_json(str(out / SCHEMA_FILENAME))
    assert Tags.CATEGORICAL in schema["cat"].tags
    assert Tags.CONTINUOUS in schema["x"].tags
    assert Tags.TARGET in schema["rid"].tags
    assert schema["x"].dtype == "float32" and schema["rid"].dtype == "Int64"
    assert schema["tags"].is_list and schema["tags"].dtype == "list<int64>"
    with open(out / SCHEMA_FILENAME) as handle:
        assert json.load(handle)["format"] == "tabflow.schema"
    # The files hold the cast dtypes, and reading the directory back picks the schema up.
    arrow = pq.read_schema(_parquet_files(out)[0])
    assert arrow.field("x").type == pa.float32()
    ds = nvt.Dataset(str(out))
    assert Tags.CATEGORICAL in ds.schema["cat"].tags
    assert ds.compute()["x"].dtype == np.float32


def test_unknown_tag_column(tmp_path, frame):
    with pytest.raises(KeyError, match="nope"):
        nvt.Dataset(frame).to_parquet(str(tmp_path / "o"), cats=["nope"])


def test_empty_partitions(tmp_path, frame):
    ddf = dd.from_pandas(frame, npartitions=4)
    ddf = ddf[ddf["rid"] < 300]  # partitions 2 and 3 become empty
    files = nvt.Dataset(ddf).to_parquet(str(tmp_path / "o"), output_files=4)
    assert len(files) == 4
    back = _read_back(tmp_path / "o")
    assert back["rid"].tolist() == list(range(300))
    assert back["tags"].dtype == pd.ArrowDtype(pa.list_(pa.int64()))
    files = nvt.Dataset(ddf).to_parquet(str(tmp_path / "s"), output_files=3, shuffle=Shuffle.PER_WORKER, seed=1)
    assert sorted(_read_back(tmp_path / "s")["rid"]) == list(range(300))


def test_nullable_and_string_columns_round_trip(tmp_path):
    df = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "s": ["x", None, "z"]})
    nvt.Dataset(df).to_parquet(str(tmp_path / "o"))
    back = _read_back(tmp_path / "o")
    assert str(back["a"].dtype) == "Int64" and back["a"].isna().tolist() == [False, True, False]
    assert back["s"].isna().tolist() == [False, True, False]
    # Plain (not large) Arrow types: every parquet reader understands them.
    assert pq.read_schema(_parquet_files(tmp_path / "o")[0]).field("s").type == pa.string()



def _boom(df, marker):
    if len(df) and df["rid"].iloc[0] >= marker:
        raise RuntimeError("partition failed")
    return df


def test_failed_write_leaves_nothing(tmp_path, frame):
    ddf = dd.from_pandas(frame, npartitions=4).map_partitions(_boom, 500, meta=dd.from_pandas(frame, npartitions=1)._meta)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="partition failed"):
        nvt.Dataset(ddf).to_parquet(str(out), output_files=2)
    assert os.listdir(tmp_path) == []


def test_failed_write_keeps_previous_output(tmp_path, frame):
    out = tmp_path / "out"
    nvt.Dataset(frame.iloc[:10]).to_parquet(str(out))
    before = _contents(out)
    ddf = dd.from_pandas(frame, npartitions=4).map_partitions(_boom, 500, meta=dd.from_pandas(frame, npartitions=1)._meta)
    with pytest.raises(RuntimeError):
        nvt.Dataset(ddf).to_parquet(str(out))
    assert os.listdir(tmp_path) == ["out"]
    assert _contents(out) == before


def _contents(directory):
    """Every file under ``directory`` (relative path) and its bytes."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_rewrite_replaces_output(tmp_path, frame):
    out = tmp_path / "out"
    nvt.Dataset(frame, npartitions=4).to_parquet(str(out))
    nvt.Dataset(frame.iloc[:10]).to_parquet(str(out))
    assert len(_parquet_files(out)) == 1 and _read_back(out)["rid"].tolist() == list(range(10))
    assert os.listdir(tmp_path) == ["out"]


def test_bad_arguments(tmp_path, frame):
    with pytest.raises(ValueError, match="output_files"):
        nvt.Dataset(frame).to_parquet(str(tmp_path / "o"), output_files=0)
    with pytest.raises(TypeError, match="unexpected"):
        nvt.Dataset(frame).to_parquet(str(tmp_path / "o"), colour="red")


def test_output_directory_reads_with_plain_pandas(tmp_path, frame):
    # The schema file starts with "_" so that other tools reading the directory skip it.
    out = tmp_path / "out"
    nvt.Dataset(frame, npartitions=3).to_parquet(str(out), output_files=2)
    assert (out / SCHEMA_FILENAME).exists() and SCHEMA_FILENAME.startswith("_")
    back = pd.read_parquet(out)
    assert sorted(back.columns) == sorted(frame.columns)
    assert len(back) == len(frame)


class _EngineParquetFile:
    """What an engine's own parquet writer does (cuDF's, on a GPU): frames in, one file out,
    no file at all when it received no rows."""

    def __init__(self, path, row_group_size, opened):
        self.path, self.row_group_size, self.writer = path, row_group_size, None
        opened.append(self)

    def write(self, frame):
        table = pa.Table.from_pandas(frame, preserve_index=False)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, table.schema)
        self.writer.write_table(table, row_group_size=self.row_group_size)

    def close(self):
        if self.writer is not None:
            self.writer.close()


@pytest.mark.parametrize("layout", ["files", "more files than partitions", "partition files", "empty partitions", "per partition", "per worker"])
def test_an_engines_own_parquet_writer_writes_what_pyarrow_writes(frame, tmp_path, monkeypatch, layout):
    # Local writes go through the engine's writer where it has one: the files, the rows in
    # each (shuffles draw the same permutations), empty files and _metadata are those of the
    # Arrow path.
    from tabflow.backends.pandas_backend import PandasBackend

    frame = frame.drop(columns=["tags"])
    dataset = nvt.Dataset(frame, npartitions=6)
    if layout == "empty partitions":  # the last four partitions (and so two files) get no rows
        ddf = dd.from_pandas(frame, npartitions=6)
        dataset = nvt.Dataset(ddf[ddf["rid"] < 300])
        frame = frame[frame["rid"] < 300]
    options = {"files": {"output_files": 3}, "more files than partitions": {"output_files": 8},
               "empty partitions": {"output_files": 3},
               "per partition": {"output_files": 2, "shuffle": Shuffle.PER_PARTITION, "seed": 4},
               "per worker": {"output_files": 4, "shuffle": Shuffle.PER_WORKER, "seed": 4}}.get(layout)

    def write(path):
        if layout == "partition files":
            dataset.to_parquet(path, output_files={"a.parquet": [0, 1, 2], "b.parquet": [3], "c.parquet": [4, 5]})
        else:
            dataset.to_parquet(path, **options)

    write(str(tmp_path / "arrow"))
    opened = []
    monkeypatch.setattr(PandasBackend, "parquet_file_writer", lambda self, path, rows=None: _EngineParquetFile(path, rows, opened))
    write(str(tmp_path / "engine"))
    assert opened  # the engine's writers were used
    arrow_files = sorted(os.listdir(tmp_path / "arrow"))
    assert sorted(os.listdir(tmp_path / "engine")) == arrow_files
    for name in arrow_files:
        if name.endswith(".parquet"):
            engine, arrow = (pq.read_table(tmp_path / kind / name).to_pandas() for kind in ("engine", "arrow"))
            pd.testing.assert_frame_equal(engine, arrow, check_dtype=False)  # the same values, row for row
    summary = pq.read_metadata(tmp_path / "engine" / "_metadata")
    assert summary.num_rows == len(frame)
    back = nvt.Dataset(str(tmp_path / "engine")).compute().sort_values("rid").reset_index(drop=True)
    pd.testing.assert_frame_equal(back, frame.reset_index(drop=True), check_dtype=False)


def _slow_early_partitions(df, delays):
    # The earlier a partition, the longer it takes: with several threads, later partitions
    # finish first and wait for their file's turn.
    import time

    if len(df):
        time.sleep(delays[int(df["rid"].iloc[0]) * len(delays) // 1000])
    return df


@pytest.mark.parametrize("layout", ["one file each", "files shared", "more files than partitions", "partition files", "empty partitions"])
def test_partitions_written_side_by_side_give_the_files_of_one_at_a_time(frame, tmp_path, monkeypatch, layout):
    # Several threads each compute and write partitions; a file's partitions still go in in
    # their order, so the files are byte for byte those of one thread writing in turn.
    import tabflow.io.writer as writer

    frame = frame.drop(columns=["tags"])
    ddf = dd.from_pandas(frame, npartitions=6)
    ddf = ddf.map_partitions(_slow_early_partitions, [0.3, 0.25, 0.2, 0.15, 0.1, 0.0], meta=ddf._meta)
    expected = frame
    if layout == "empty partitions":
        ddf, expected = ddf[ddf["rid"] < 300], frame[frame["rid"] < 300]
    options = {"one file each": {}, "files shared": {"output_files": 4}, "more files than partitions": {"output_files": 8},
               "partition files": {"output_files": {"a.parquet": [0, 1, 2], "b.parquet": [3], "c.parquet": [4, 5]}},
               "empty partitions": {"output_files": 3}}[layout]
    written = {}
    for threads in (1, 4):
        monkeypatch.setattr(writer, "_prefetch", lambda threads=threads: threads - 1)
        nvt.Dataset(ddf).to_parquet(str(tmp_path / str(threads)), **options)
        # HugeCTR's file list names the files by their full paths.
        written[threads] = {name: data.replace(str(tmp_path / str(threads)).encode(), b"OUT") for name, data in _contents(tmp_path / str(threads)).items()}
    assert written[4] == written[1]
    back = _read_back(tmp_path / "4")
    if layout == "partition files":  # a.parquet, b.parquet, c.parquet: the partitions' order
        assert sorted(back["rid"].tolist()) == expected["rid"].tolist()
    else:
        assert back["rid"].tolist() == expected["rid"].tolist()
    for name in written[4]:
        if name.endswith(".parquet"):  # within each file, rows in partition order
            rids = pq.read_table(tmp_path / "4" / name)["rid"].to_pylist()
            assert rids == sorted(rids)


def _fails_slowly(df, marker):
    import time

    if len(df) and df["rid"].iloc[0] == marker:
        time.sleep(0.2)  # the partitions after it finish first, then wait for its turn
        raise RuntimeError("partition failed")
    return df


def test_a_failed_partition_written_side_by_side_raises_its_own_error(tmp_path, frame, monkeypatch):
    import tabflow.io.writer as writer

    monkeypatch.setattr(writer, "_prefetch", lambda: 3)
    ddf = dd.from_pandas(frame, npartitions=6)
    marker = int(ddf.get_partition(1).compute()["rid"].iloc[0])
    ddf = ddf.map_partitions(_fails_slowly, marker, meta=ddf._meta)
    with pytest.raises(RuntimeError, match="partition failed"):
        nvt.Dataset(ddf).to_parquet(str(tmp_path / "out"), output_files=2)  # partitions 0-2 share a file
    assert os.listdir(tmp_path) == []
