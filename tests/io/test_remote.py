"""Datasets read from and written to URLs through fsspec: the in-memory filesystem, and a real
S3 API (moto's server on 127.0.0.1, spoken to by s3fs with ``storage_options``).

The S3 tests need ``moto[server]`` and ``s3fs`` (the ``dev`` extra); without them they are
skipped, saying so.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow.exceptions import SaveError
from tabflow.io.readers import DatasetReadError
from tabflow.schema import Tags

BUCKET = "tabflow-test"


# ------------------------------------------------------------------------------ stores


class Store:
    """One remote location for a test: a fresh URL prefix, its fsspec filesystem and options."""

    def __init__(self, protocol: str, storage_options: dict, root: str) -> None:
        import fsspec

        self.protocol = protocol
        self.storage_options = storage_options
        self.fs = fsspec.filesystem(protocol, **storage_options)
        self.root = root  # filesystem path of the prefix (no protocol)
        self.url = f"{protocol}://{root}"

    def path(self, *names: str) -> str:
        return "/".join([self.root, *names])

    def at(self, *names: str) -> str:
        return "/".join([self.url, *names])

    def put_frame(self, frame: pd.DataFrame, *names: str, **kwargs) -> None:
        with self.fs.open(self.path(*names), "wb") as handle:
            pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), handle, **kwargs)

    def listing(self, *names: str) -> list[str]:
        """Every file under the prefix, relative to it."""
        base = self.path(*names).rstrip("/") + "/"
        self.fs.invalidate_cache()
        return sorted(p[len(base):] for p in self.fs.find(self.path(*names)))


@pytest.fixture
def memory_store():
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"/tabflow-{uuid.uuid4().hex[:8]}"
    store = Store("memory", {}, root)
    yield store
    if fs.exists(root):
        fs.rm(root, recursive=True)


@pytest.fixture(scope="module")
def moto_endpoint():
    pytest.importorskip("s3fs", reason="S3 tests need s3fs (pip install 's3fs' or the 'dev' extra)")
    server_module = pytest.importorskip("moto.server", reason="S3 tests need moto's server (pip install 'moto[server]')")
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # never ask an instance-metadata service
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    # start() waits for the server forever if it cannot bind; bound it instead.
    starter = threading.Thread(target=server.start, daemon=True)
    starter.start()
    starter.join(timeout=60)
    if starter.is_alive():
        pytest.fail("moto's S3 server did not start within 60 s")
    host, port = server.get_host_and_port()
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection((host, port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                server.stop()
                pytest.fail(f"moto's S3 server on {host}:{port} accepts no connection")
            time.sleep(0.05)
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_store(moto_endpoint):
    import s3fs

    options = {
        "key": "testing", "secret": "testing",
        "client_kwargs": {"endpoint_url": moto_endpoint, "region_name": "us-east-1"},
    }
    fs = s3fs.S3FileSystem(**options)
    if not fs.exists(BUCKET):
        import boto3  # comes with moto; s3fs's mkdir sends a region constraint moto refuses for us-east-1

        boto3.client(
            "s3", endpoint_url=moto_endpoint, region_name="us-east-1", aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket=BUCKET)
        fs.invalidate_cache()
    store = Store("s3", options, f"{BUCKET}/{uuid.uuid4().hex[:8]}")
    yield store
    fs.invalidate_cache()
    if fs.exists(store.root):
        fs.rm(store.root, recursive=True)


@pytest.fixture(params=["memory", "s3"])
def store(request):
    return request.getfixturevalue(f"{request.param}_store")


@pytest.fixture
def frame():
    return pd.DataFrame({
        "a": np.arange(120), "s": [f"v{i % 7}" for i in range(120)], "x": np.linspace(0, 1, 120),
        "l": [[i, i + 1] for i in range(120)],
    })


# ------------------------------------------------------------------------------- reading


def test_parquet_glob_directory_and_file(store, frame):
    for i in range(3):
        store.put_frame(frame.iloc[i * 40:(i + 1) * 40], "data", f"part_{i}.parquet", row_group_size=10)
    store.fs.pipe(store.path("data", "notes.txt"), b"not data")
    options = store.storage_options
    for source in (store.at("data", "*.parquet"), store.at("data"), [store.at("data", f"part_{i}.parquet") for i in range(3)]):
        ds = nvt.Dataset(source, engine="parquet", storage_options=options)
        assert ds.num_rows == 120 and ds.partition_lens == [40, 40, 40]  # from the footers
        assert all(p.startswith(f"{store.protocol}://") for p in ds.paths)
        out = ds.compute()
        assert out["a"].tolist() == list(range(120)) and [list(v) for v in out["l"]] == frame["l"].tolist()
        assert sum(len(p) for p in ds.to_iter()) == 120  # the direct partition reader
    filtered = nvt.Dataset(store.at("data"), filters=[("a", ">=", 100)], storage_options=options)
    assert filtered.num_rows == 20
    small = nvt.Dataset(store.at("data"), part_size="1KB", storage_options=options)
    assert small.npartitions > 3 and small.compute()["a"].tolist() == list(range(120))


def test_missing_remote_paths_are_clear(store):
    options = store.storage_options
    with pytest.raises(DatasetReadError, match="no file matches"):
        nvt.Dataset(store.at("nothing", "*.parquet"), storage_options=options)
    with pytest.raises(DatasetReadError, match="does not exist"):
        nvt.Dataset(store.at("nothing.parquet"), storage_options=options)
    store.fs.pipe(store.path("d", "x.txt"), b"1")
    with pytest.raises(DatasetReadError, match="holds no parquet files"):
        nvt.Dataset(store.at("d"), storage_options=options)


def test_corrupt_remote_parquet_names_the_url(store, frame):
    store.put_frame(frame, "data", "good.parquet")
    store.fs.pipe(store.path("data", "bad.parquet"), b"PAR1 this is not parquet")
    with pytest.raises(DatasetReadError, match=r"bad.parquet"):
        nvt.Dataset(store.at("data"), storage_options=store.storage_options)


def test_csv_orc_and_criteo(store, frame):
    with store.fs.open(store.path("csv", "day_0.csv"), "wb") as handle:
        handle.write(frame[["a", "s", "x"]].to_csv(index=False).encode())
    ds = nvt.Dataset(store.at("csv", "*.csv"), storage_options=store.storage_options, part_size="1KB")
    assert ds.num_rows == 120 and ds.compute()["s"].tolist() == frame["s"].tolist()
    assert ds.npartitions > 1  # blocks of a remote file
    with store.fs.open(store.path("orc", "x.orc"), "wb") as handle:
        orc.write_table(pa.table({"a": np.arange(50), "f": np.ones(50)}), handle)
    ds = nvt.Dataset(store.at("orc"), engine="orc", storage_options=store.storage_options)
    assert ds.num_rows == 50 and ds.compute()["a"].tolist() == list(range(50))
    line = "\t".join(["1", "5"] + [""] * 12 + ["68fd1e64"] * 26) + "\n"
    store.fs.pipe(store.path("criteo", "day_0"), (line * 3).encode())
    ds = nvt.Dataset(store.at("criteo", "day_0"), engine="criteo", storage_options=store.storage_options)
    assert ds.compute()["I1"].tolist() == [5, 5, 5]


# ------------------------------------------------------------------------------- writing


def test_to_parquet_round_trip_with_schema_and_summary(store, frame):
    ds = nvt.Dataset(frame, npartitions=3)
    files = ds.to_parquet(store.at("out"), output_files=2, cats=["s"], labels=["x"], storage_options=store.storage_options)
    assert files == [store.at("out", "part_0.parquet"), store.at("out", "part_1.parquet")]
    assert store.listing("out") == [
        ".merlin/schema.json", ".tabflow-dataset.json", "_file_list.txt", "_metadata", "_metadata.json", "_schema.json",
        "part_0.parquet", "part_1.parquet",
    ]
    with store.fs.open(store.path("out", "_metadata"), "rb") as handle:
        assert pq.read_metadata(handle).num_rows == 120
    back = nvt.Dataset(store.at("out"), storage_options=store.storage_options)
    assert Tags.CATEGORICAL in back.schema["s"].tags and Tags.TARGET in back.schema["x"].tags  # _schema.json read remotely
    out = back.compute()
    assert out["a"].tolist() == list(range(120)) and out["s"].tolist() == frame["s"].tolist()
    with store.fs.open(store.path("out", ".merlin", "schema.json"), "rb") as handle:
        assert {f["name"] for f in json.load(handle)["feature"]} == {"a", "s", "x", "l"}
    # no temporary prefix is left next to the output
    parent = store.path()
    assert [p for p in store.fs.ls(parent, detail=False) if ".tmp-" in p] == []


def test_rewrite_replaces_a_previous_dataset_only(store, frame):
    options = store.storage_options
    nvt.Dataset(frame, npartitions=4).to_parquet(store.at("out"), storage_options=options)
    nvt.Dataset(frame.iloc[:10]).to_parquet(store.at("out"), storage_options=options)
    assert store.listing("out") == [
        ".merlin/schema.json", ".tabflow-dataset.json", "_file_list.txt", "_metadata", "_metadata.json", "_schema.json",
        "part_0.parquet",
    ]
    assert nvt.Dataset(store.at("out"), storage_options=options).compute()["a"].tolist() == list(range(10))
    store.fs.pipe(store.path("project", "notes.txt"), b"keep me")
    store.fs.pipe(store.path("project", "part_1.parquet"), b"not tabflow's")
    with pytest.raises(SaveError, match=r"project/part_1\.parquet exists and was not written by tabflow"):
        nvt.Dataset(frame, npartitions=2).to_parquet(store.at("project"), output_files=2, storage_options=options)
    assert store.listing("project") == ["notes.txt", "part_1.parquet"]
    # beside other objects: added, and a rewrite replaces only its own files
    nvt.Dataset(frame, npartitions=3).to_parquet(store.at("project"), output_files=["a.parquet", "b.parquet"], storage_options=options)
    nvt.Dataset(frame.iloc[:10]).to_parquet(store.at("project"), output_files=["a.parquet"], storage_options=options)
    listing = store.listing("project")
    assert "notes.txt" in listing and "part_1.parquet" in listing and "a.parquet" in listing and "b.parquet" not in listing
    assert store.fs.cat(store.path("project", "notes.txt")) == b"keep me"
    assert nvt.Dataset(store.at("project"), storage_options=options).compute()["a"].tolist() == list(range(10))
    store.fs.pipe(store.path("afile"), b"x")
    with pytest.raises(SaveError, match="is a file"):
        nvt.Dataset(frame).to_parquet(store.at("afile"), storage_options=options)
    nvt.Dataset(frame).to_parquet(store.at("project"), overwrite=True, storage_options=options)
    assert "notes.txt" not in store.listing("project")


def test_bucket_root_is_refused(s3_store, frame):
    with pytest.raises(SaveError, match="root of a bucket"):
        nvt.Dataset(frame).to_parquet(f"s3://{BUCKET}", storage_options=s3_store.storage_options, overwrite=True)


def _boom(part):
    if len(part) and part["a"].iloc[0] >= 60:
        raise RuntimeError("partition failed")
    return part


def test_failed_write_keeps_the_previous_output(store, frame):
    options = store.storage_options
    nvt.Dataset(frame.iloc[:10]).to_parquet(store.at("out"), storage_options=options)
    before = {p: store.fs.cat_file(store.path("out", p)) for p in store.listing("out")}
    import dask.dataframe as dd

    ddf = dd.from_pandas(frame, npartitions=4).map_partitions(_boom, meta=dd.from_pandas(frame, npartitions=1)._meta)
    with pytest.raises(RuntimeError, match="partition failed"):
        nvt.Dataset(ddf).to_parquet(store.at("out"), storage_options=options)
    assert {p: store.fs.cat_file(store.path("out", p)) for p in store.listing("out")} == before
    assert [p for p in store.fs.ls(store.path(), detail=False) if ".tmp-" in p] == []


def test_stale_temporary_prefix_of_a_dead_writer_is_removed(store, frame):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    leftover = store.path(f"out.tmp-{'a' * 12}")
    store.fs.pipe(f"{leftover}/part_0.parquet", b"half")
    store.fs.pipe(f"{leftover}/.tabflow-writing", f"{socket.gethostname()}\n{dead}\n".encode())
    other = store.path(f"out.tmp-{'b' * 12}")
    store.fs.pipe(f"{other}/.tabflow-writing", b"another-host\n1\n")
    nvt.Dataset(frame).to_parquet(store.at("out"), storage_options=store.storage_options)
    store.fs.invalidate_cache()
    assert not store.fs.exists(leftover) and store.fs.exists(other)


def test_a_half_published_output_is_replaced_not_refused(store, frame):
    # A writer killed while moving files leaves some files and the publishing marker.
    store.fs.pipe(store.path("out", "part_0.parquet"), b"half")
    store.fs.pipe(store.path("out", ".tabflow-publishing"), b"some-host\n1\n")
    nvt.Dataset(frame).to_parquet(store.at("out"), storage_options=store.storage_options)
    assert store.listing("out") == [
        ".merlin/schema.json", ".tabflow-dataset.json", "_file_list.txt", "_metadata", "_metadata.json", "_schema.json",
        "part_0.parquet",
    ]
    assert nvt.Dataset(store.at("out"), storage_options=store.storage_options).num_rows == 120


def test_partition_on_and_preserve_files_remote(store, frame):
    options = store.storage_options
    frame = frame.assign(day=frame["a"] % 3)
    nvt.Dataset(frame, npartitions=2).to_parquet(store.at("hive"), partition_on="day", storage_options=options)
    assert [p for p in store.listing("hive") if p.endswith(".parquet")] == [
        f"day={d}/part_{i}.parquet" for d in range(3) for i in range(2)
    ]
    back = nvt.Dataset(store.at("hive"), storage_options=options).compute().sort_values("a")
    assert back["day"].tolist() == frame["day"].tolist()
    with store.fs.open(store.path("csv", "day_0.csv"), "wb") as handle:
        handle.write(frame[["a"]].to_csv(index=False).encode())
    files = nvt.Dataset(store.at("csv", "day_0.csv"), storage_options=options).to_parquet(
        store.at("converted"), preserve_files=True, storage_options=options
    )
    assert files == [store.at("converted", "day_0.parquet")]


def test_the_datasets_storage_options_are_the_default_for_writing(store, frame):
    store.put_frame(frame, "data", "p.parquet")
    ds = nvt.Dataset(store.at("data"), storage_options=store.storage_options)
    ds.to_parquet(store.at("copy"))
    assert nvt.Dataset(store.at("copy"), storage_options=store.storage_options).num_rows == 120


# ------------------------------------------------------------------------- file:// URLs


def test_file_urls_take_the_local_path(tmp_path, frame):
    frame.to_parquet(tmp_path / "p.parquet")
    ds = nvt.Dataset(f"file://{tmp_path}", engine="parquet")
    assert ds.num_rows == 120 and ds.paths == [str(tmp_path / "p.parquet")]
    files = ds.to_parquet(f"file://{tmp_path}/out")
    assert files == [str(tmp_path / "out" / "part_0.parquet")]
    assert nvt.Dataset(f"file://{tmp_path}/out").num_rows == 120
