"""merlin-core 23.08's HugeCTR outputs and ``merlin.core.utils`` helpers: ``Dataset.to_hugectr``
(binary ``.data`` files, ``_file_list.txt``, ``_metadata.json``), the HugeCTR files that
``to_parquet`` writes next to the parquet (and ``_hugectr.keyset``), ``download_file``,
``run_on_worker``, ``HAS_GPU``, ``reinitialize`` and the inspector script's ``parse_args``.
Expected bytes and values come from numpy/pandas, following merlin's writer.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import threading
import zipfile

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.io import Shuffle
from tabflow.schema import Schema, Tags


@pytest.fixture
def frame():
    rng = np.random.default_rng(3)
    n = 50
    return pd.DataFrame(
        {
            "c1": rng.integers(0, 1000, n),
            "x": rng.random(n),
            "c2": rng.integers(0, 2**32 - 1, n, dtype=np.uint64).astype(np.int64),
            "label": rng.integers(0, 2, n),
            "unused": ["u"] * n,
        }
    )


def _records(path, n_labels, n_conts, n_cats):
    """The header and the records of a .data file, read as merlin's writer laid them out."""
    raw = np.fromfile(path, dtype=np.uint8)
    header = raw[:64].view("<i8")
    record = np.dtype(
        [("labels", "<f4", (n_labels,)), ("conts", "<f4", (n_conts,)), ("cats", [("nnz", "<i4"), ("key", "<u4")], (n_cats,))]
    )
    return header.tolist(), raw[64:].view(record)


def test_to_hugectr_writes_merlins_binary_layout(frame, tmp_path):
    out = tmp_path / "hugectr"
    files = nvt.Dataset(frame, npartitions=3).to_hugectr(str(out), cats=["c1", "c2"], conts=["x"], labels=["label"])
    assert files == [str(out / "0.data")]
    header, rows = _records(files[0], 1, 1, 2)
    assert header == [0, len(frame), 1, 1, 2, 0, 0, 0]
    np.testing.assert_array_equal(rows["labels"][:, 0], frame["label"].to_numpy(np.float32))
    np.testing.assert_array_equal(rows["conts"][:, 0], frame["x"].to_numpy(np.float32))
    assert (rows["cats"]["nnz"] == 1).all()
    np.testing.assert_array_equal(rows["cats"]["key"], frame[["c1", "c2"]].to_numpy(np.uint32))
    assert (out / "_file_list.txt").read_text() == f"1\n{out / '0.data'}\n"
    metadata = json.loads((out / "_metadata.json").read_text())
    assert metadata == {
        "file_stats": [{"file_name": "0.data", "num_rows": len(frame)}],
        "cats": [{"col_name": "c1", "index": 0}, {"col_name": "c2", "index": 2}],
        "conts": [{"col_name": "x", "index": 1}],
        "labels": [{"col_name": "label", "index": 3}],
    }
    schema = Schema.from_dict(json.loads((out / "_schema.json").read_text()))
    assert Tags.CATEGORICAL in schema["c1"].tags and Tags.CONTINUOUS in schema["x"].tags and Tags.TARGET in schema["label"].tags


def test_to_hugectr_spreads_rows_over_files_and_keeps_them_all(frame, tmp_path):
    out = tmp_path / "h"
    ds = nvt.Dataset(frame, npartitions=4)
    files = ds.to_hugectr(str(out), cats=["c1"], conts=["x"], labels=["label"], out_files_per_proc=2, shuffle=Shuffle.PER_PARTITION, seed=1)
    assert [os.path.basename(f) for f in files] == ["0.data", "1.data"]
    parts = [_records(f, 1, 1, 1) for f in files]
    assert sum(h[1] for h, _ in parts) == len(frame) and all(h[1] == len(r) for h, r in parts)
    got = sorted(zip(*(np.concatenate([r["cats"]["key"][:, 0] for _, r in parts]), np.concatenate([r["conts"][:, 0] for _, r in parts]))))
    assert got == sorted(zip(frame["c1"].to_numpy(np.uint32), frame["x"].to_numpy(np.float32)))
    stats = json.loads((out / "_metadata.json").read_text())["file_stats"]
    assert [s["num_rows"] for s in stats] == [h[1] for h, _ in parts]
    mapped = ds.to_hugectr(str(tmp_path / "m"), cats=["c1"], conts=[], labels=["label"], file_partition_map={"a.data": [0, 2]})
    header, rows = _records(mapped[0], 1, 0, 1)
    part_rows = ds.partition_lens
    assert header[1] == part_rows[0] + part_rows[2] == len(rows)


def test_to_hugectr_refuses_what_hugectr_cannot_read(frame, tmp_path):
    with_null = frame.assign(c1=frame["c1"].astype("Int64").mask(frame.index == 3))
    with pytest.raises(ValueError, match=r"'c1' has 1 null"):
        nvt.Dataset(with_null).to_hugectr(str(tmp_path / "a"), cats=["c1"], conts=["x"], labels=["label"])
    with pytest.raises(ValueError, match="unsigned 32-bit"):
        nvt.Dataset(frame.assign(c1=-frame["c1"] - 1)).to_hugectr(str(tmp_path / "b"), cats=["c1"], conts=[], labels=["label"])
    with pytest.raises(ValueError, match="Categorify"):
        nvt.Dataset(frame).to_hugectr(str(tmp_path / "c"), cats=["unused"], conts=[], labels=["label"])
    with pytest.raises(ValueError, match="PER_WORKER"):
        nvt.Dataset(frame).to_hugectr(str(tmp_path / "d"), cats=["c1"], conts=[], labels=["label"], shuffle=Shuffle.PER_WORKER)
    with pytest.raises(KeyError, match="nope"):
        nvt.Dataset(frame).to_hugectr(str(tmp_path / "e"), cats=["nope"], conts=[], labels=["label"])
    assert not any((tmp_path / name).exists() for name in "abcde")  # nothing half-written


def test_to_parquet_writes_hugectrs_file_list_metadata_and_keyset(frame, tmp_path):
    wf = nvt.Workflow((["c1"] >> ops.Categorify()) + ["x", "label"])
    transformed = wf.fit_transform(nvt.Dataset(frame, npartitions=2))
    out = tmp_path / "pq"
    files = transformed.to_parquet(str(out), output_files=2, cats=["c1"], conts=["x"], labels=["label"], write_hugectr_keyset=True)
    assert (out / "_file_list.txt").read_text().splitlines() == ["2", *files]
    metadata = json.loads((out / "_metadata.json").read_text())
    assert [s["num_rows"] for s in metadata["file_stats"]] == [len(pd.read_parquet(f)) for f in files]
    assert [s["file_name"] for s in metadata["file_stats"]] == ["part_0.parquet", "part_1.parquet"]
    assert metadata["cats"] == [{"col_name": "c1", "index": 0}] and metadata["labels"] == [{"col_name": "label", "index": 2}]
    cardinality = wf.output_schema["c1"].properties["embedding_sizes"]["cardinality"]
    keys = np.frombuffer((out / "_hugectr.keyset").read_bytes(), dtype=">u4")
    np.testing.assert_array_equal(keys, np.arange(cardinality + 1))
    # Without roles the lists are empty, as merlin wrote them; no keyset unless asked.
    plain = tmp_path / "plain"
    nvt.Dataset(frame).to_parquet(str(plain))
    assert json.loads((plain / "_metadata.json").read_text())["cats"] == []
    assert not (plain / "_hugectr.keyset").exists()
    assert nvt.Dataset(str(plain)).num_rows == len(frame)  # the extra files do not disturb reading


# ------------------------------------------------------------------------- merlin.core.utils
@pytest.fixture
def http_directory(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_download_file_fetches_and_unpacks(http_directory, tmp_path):
    from tabflow.utils import download_file

    served, url = http_directory
    with zipfile.ZipFile(served / "data.zip", "w") as archive:
        archive.writestr("ml/ratings.csv", "user,item\n1,2\n")
    target = tmp_path / "down" / "data.zip"
    download_file(f"{url}/data.zip", str(target))
    assert (tmp_path / "down" / "ml" / "ratings.csv").read_text() == "user,item\n1,2\n"
    assert [p.name for p in (tmp_path / "down").iterdir() if ".tmp-" in p.name] == []
    # redownload=False keeps the file there; a missing URL leaves nothing behind.
    target.write_bytes(target.read_bytes())
    download_file(f"{url}/missing.zip", str(target), redownload=False)
    with pytest.raises(OSError):
        download_file(f"{url}/missing.csv", str(tmp_path / "down" / "missing.csv"))
    assert not (tmp_path / "down" / "missing.csv").exists()
    with zipfile.ZipFile(served / "evil.zip", "w") as archive:
        archive.writestr("../escape.txt", "x")
    with pytest.raises(ValueError, match="outside"):
        download_file(f"{url}/evil.zip", str(tmp_path / "down" / "evil.zip"))
    assert not (tmp_path / "escape.txt").exists()


def test_core_utils_and_dispatch_names():
    from tabflow import dispatch, utils
    from tabflow.tools.inspector_script import parse_args

    assert utils.run_on_worker(divmod, 17, 5) == (3, 2)
    assert utils.HAS_GPU is dispatch.HAS_GPU and isinstance(utils.HAS_GPU, bool)
    assert dispatch.reinitialize(managed_memory=True) is None
    args = parse_args(["-i", "d", "-c", "c.json", "-o", "out.json"])
    assert (args.data_path, args.config_file, args.output_file) == ("d", "c.json", "out.json")
