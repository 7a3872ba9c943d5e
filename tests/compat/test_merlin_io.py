"""merlin.io / nvtabular.io ``Dataset`` behaviours of 23.08, pinned against plain expectations.

Each test names the 23.08 behaviour it pins (merlin-core ``merlin/io/dataset.py``,
``merlin/io/shuffle.py``, ``merlin/io/dataframe_iter.py``). The schema files under
``merlin_io_data/`` were written by merlin-core 23.08 itself (see the README there).
"""

from __future__ import annotations

import glob
import json
import os
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow.backends import gpu_available
from tabflow.schema import ColumnSchema, Schema, Tags

# pandas' own text dtype (``str`` on pandas 3), what tabflow holds strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")

DATA = os.path.join(os.path.dirname(__file__), "merlin_io_data")


@pytest.fixture
def frame():
    return pd.DataFrame({"a": np.arange(100), "c": [f"k{i % 4}" for i in range(100)], "x": np.arange(100) / 10})


@pytest.fixture
def parquet_dir(tmp_path, frame):
    # 4 files of 25 rows, 5 row groups each.
    directory = tmp_path / "data"
    directory.mkdir()
    for i in range(4):
        pq.write_table(pa.Table.from_pandas(frame.iloc[i * 25:(i + 1) * 25], preserve_index=False),
                       directory / f"part_{i}.parquet", row_group_size=5)
    return directory


# --------------------------------------------------------------------------- import paths


def test_merlin_io_import_paths_are_one_class():
    from tabflow.dataset import Dataset as from_dataset
    from tabflow.io import Dataset as from_io
    from tabflow.io.dataset import Dataset as from_io_dataset

    assert from_io is from_io_dataset is from_dataset is nvt.Dataset


def test_module_names_of_merlin_io():
    from tabflow.io import MERLIN_METADATA_DIR_NAME, DataFrameIter, Shuffle, shuffle_df

    assert MERLIN_METADATA_DIR_NAME == ".merlin"
    assert [(m.name, m.value) for m in Shuffle] == [("PER_PARTITION", 0), ("PER_WORKER", 1), ("FULL", 2)]
    shuffled = shuffle_df(pd.DataFrame({"a": range(50)}))
    assert sorted(shuffled["a"]) == list(range(50)) and list(shuffled.index) == list(range(50))
    assert list(shuffle_df(pd.DataFrame({"a": range(5)}), keep_index=True).sort_index().index) == list(range(5))
    assert len(shuffle_df(pd.DataFrame({"a": range(50)}), size=10)) == 10
    assert isinstance(nvt.Dataset(pd.DataFrame({"a": [1]})).to_iter(), DataFrameIter)


# ----------------------------------------------------------------------- constructor


def test_schema_must_be_a_schema(frame):
    with pytest.raises(TypeError, match="unsupported schema type for Dataset: builtins.dict"):
        nvt.Dataset(frame, schema={"a": "int64"})
    given = Schema([ColumnSchema("a", dtype="int64", tags=[Tags.CATEGORICAL])])
    assert Tags.CATEGORICAL in nvt.Dataset(frame, schema=given).schema["a"].tags


def test_positional_order_is_merlins(frame):
    # (path_or_source, engine, npartitions, part_size, part_mem_fraction, storage_options,
    #  dtypes, client, cpu, base_dataset, schema)
    base = nvt.Dataset(frame)
    given = Schema([ColumnSchema("a", dtype="int64", tags=[Tags.TARGET])])
    ds = nvt.Dataset(frame, None, 2, None, None, None, {"a": "int32"}, "auto", True, base, given)
    assert ds.npartitions == 2 and ds.cpu is True and ds.base_dataset is base
    assert ds.schema["a"].dtype == "int32" and Tags.TARGET in ds.schema["a"].tags
    assert ds.dtypes == {"a": "int32"} and ds.client is None


def test_dtypes_apply_to_in_memory_frames(frame):
    ds = nvt.Dataset(frame, dtypes={"a": "int32", "x": "float32"}, npartitions=3)
    out = ds.compute()
    assert str(out["a"].dtype) == "int32" and str(out["x"].dtype) == "float32"
    assert ds.schema["a"].dtype == "int32" and out["a"].tolist() == list(range(100))


def test_hex_dtype_on_a_frame():
    ds = nvt.Dataset(pd.DataFrame({"h": ["0a", "ff", None]}), dtypes={"h": "hex"})
    # merlin gives Int32 on pandas; tabflow keeps 64 bits (Criteo's 8-digit ids overflow int32).
    assert ds.compute()["h"].tolist() == [10, 255, pd.NA]
    assert ds.schema["h"].dtype == "Int64"
    with pytest.raises(KeyError, match="lacks"):
        nvt.Dataset(pd.DataFrame({"h": ["0a"]}), dtypes={"nope": "int32"})


def test_parquet_filters_drop_rows_and_count_them(parquet_dir):
    ds = nvt.Dataset(str(parquet_dir), engine="parquet", filters=[("a", ">", 50)])
    assert ds.num_rows == 49
    assert ds.compute()["a"].tolist() == list(range(51, 100))
    assert sum(len(part) for part in ds.to_iter()) == 49  # the direct reader filters too
    either = nvt.Dataset(str(parquet_dir), filters=[[("a", "<", 3)], [("c", "==", "k3"), ("a", ">", 90)]])
    assert sorted(either.compute()["a"]) == [0, 1, 2, 91, 95, 99]
    narrow = nvt.Dataset(str(parquet_dir), filters=[("a", "<", 3)], columns=["x"])
    assert narrow.schema.column_names == ["x"] and narrow.compute()["x"].tolist() == [0.0, 0.1, 0.2]
    with pytest.raises(KeyError, match="nope"):
        nvt.Dataset(str(parquet_dir), filters=[("nope", "==", 1)])
    with pytest.raises(ValueError, match="filter list"):
        nvt.Dataset(str(parquet_dir), filters=[("a", "~", 1)])


def test_parquet_row_groups_per_part(parquet_dir):
    assert nvt.Dataset(str(parquet_dir), row_groups_per_part=2).npartitions == 4 * 3  # 5 row groups -> 2+2+1
    assert nvt.Dataset(str(parquet_dir), row_groups_per_part=5).partition_lens == [25] * 4


def test_reader_options_are_used_or_refused(parquet_dir, frame, tmp_path):
    with pytest.raises(TypeError, match=r"\['split_row_groups'\].*parquet reader does not use.*aggregate_files="):
        nvt.Dataset(str(parquet_dir), split_row_groups=True)
    with pytest.raises(TypeError, match=r"\['sep'\].*parquet"):
        nvt.Dataset(str(parquet_dir), sep=";")
    with pytest.raises(TypeError, match=r"\['filters'\].*in-memory DataFrame"):
        nvt.Dataset(frame, filters=[("a", ">", 1)])
    frame.to_csv(tmp_path / "f.csv", index=False)
    assert nvt.Dataset(str(tmp_path / "f.csv"), skiprows=[1, 2]).num_rows == 98  # passed to the CSV parser


# ------------------------------------------------------------------------ attributes


def test_cpu_attribute_and_engine_moves(frame, parquet_dir):
    ds = nvt.Dataset(frame, cpu=True)
    assert ds.cpu is True
    assert ds.to_cpu() is None and ds.cpu is True  # in place, as merlin
    files = nvt.Dataset(str(parquet_dir), cpu=True)
    files.to_cpu()
    assert files.num_rows == 100
    if gpu_available():
        files.to_gpu()
        assert files.cpu is False and files.engine == "cudf" and files.num_rows == 100
        assert files.compute()["a"].to_pandas().tolist() == list(range(100))
        files.to_cpu()
        assert files.cpu is True and files.compute()["a"].tolist() == list(range(100))
    else:
        with pytest.raises(ImportError, match="cudf"):
            files.to_gpu()
        assert files.cpu is True  # unchanged by the failed move


def test_partition_lens_and_file_partition_map(parquet_dir):
    ds = nvt.Dataset(str(parquet_dir), part_size="1GB")
    assert ds.partition_lens == [25, 25, 25, 25]
    mapping = ds.file_partition_map
    assert {os.path.basename(k): v for k, v in mapping.items()} == {f"part_{i}.parquet": [i] for i in range(4)}
    assert nvt.Dataset(pd.DataFrame({"a": range(10)}), npartitions=3).partition_lens == [4, 3, 3]
    assert nvt.Dataset(pd.DataFrame({"a": range(10)})).file_partition_map is None


def test_infer_schema_and_sample_dtypes():
    frame = pd.DataFrame({"a": [1, 2], "f": np.array([0.5, 1.5], dtype="float32"), "g": [[1, 2], [3]]})
    ds = nvt.Dataset(frame, schema=Schema([ColumnSchema("a", dtype="int64", tags=[Tags.TARGET])]))
    schema = ds.infer_schema()
    assert schema is ds.schema
    assert [(c.name, c.dtype, c.is_list, c.tags) for c in schema] == [
        ("a", "int64", False, frozenset()),  # merlin's infer_schema drops tags as well
        ("f", "float32", False, frozenset()),
        ("g", "list<int64>", True, frozenset()),
    ]
    assert ds.sample_dtypes(annotate_lists=True) == {
        "a": {"dtype": "int64", "is_list": False},
        "f": {"dtype": "float32", "is_list": False},
        "g": {"dtype": "int64", "is_list": True},
    }
    assert list(ds.sample_dtypes(n=2).index) == ["a", "f", "g"]


def test_dask_passthroughs(frame):
    ds = nvt.Dataset(frame, npartitions=4)
    assert len(ds.tail()) == 5 and ds.tail(3)["a"].tolist() == [97, 98, 99]
    persisted = ds.persist()
    assert persisted.npartitions == 4 and len(persisted.compute()) == 100
    assert ds.head(7)["a"].tolist() == list(range(7))


# ---------------------------------------------------------------------------- access


def test_to_ddf_shuffles_partitions_with_a_seed(frame):
    ds = nvt.Dataset(frame, npartitions=4)
    shuffled = ds.to_ddf(shuffle=True, seed=1)
    assert shuffled.npartitions == ds.npartitions
    order = [int(part["a"].iloc[0]) // 25 for part in (shuffled.get_partition(i).compute() for i in range(4))]
    import random

    expected = list(range(4))
    random.Random(1).shuffle(expected)  # merlin: random.seed(seed); random.shuffle(indices)
    assert order == expected
    assert ds.to_ddf(shuffle=True, seed=1).compute()["a"].tolist() == shuffled.compute()["a"].tolist()
    assert ds.to_ddf(columns="c").columns.tolist() == ["c"]


def test_to_iter_length_epochs_shuffle_and_indices(frame):
    ds = nvt.Dataset(frame, npartitions=4)
    assert len(ds.to_iter()) == 100
    assert sum(1 for _ in ds.to_iter(epochs=2)) == 2 * ds.npartitions
    assert len(ds.to_iter(epochs=3)) == 300
    assert len(ds.to_iter(indices=[1, 3])) == 50
    iterator = ds.to_iter(shuffle=True, seed=5)
    starts = [int(p["a"].iloc[0]) for p in iterator]
    assert sorted(starts) == [0, 25, 50, 75] and len(iterator) == 100
    # indices refer to the partitions after the shuffle, as in merlin
    assert [int(p["a"].iloc[0]) for p in ds.to_iter(shuffle=True, seed=5, indices=[0])] == starts[:1]
    # re-iterable: each iter() is a new pass
    assert [len(p) for p in iterator] == [25] * 4
    # tabflow's prefetch / convert keywords (the data loader's) still work
    assert list(ds.to_iter(columns="a", indices=[2], prefetch=1, convert=lambda p: int(p["a"].sum()))) == [sum(range(50, 75))]
    with pytest.raises(ValueError, match="epochs"):
        ds.to_iter(epochs=0)


def test_to_iter_with_file_metadata(parquet_dir):
    ds = nvt.Dataset(str(parquet_dir), part_size="1GB")
    derived = nvt.Dataset(ds.to_ddf(), base_dataset=ds)
    assert len(derived.to_iter(use_file_metadata=True)) == 100
    assert len(derived.to_iter(use_file_metadata=False)) == 100


# --------------------------------------------------------------------------- reshaping


def test_repartition_by_count_or_size(frame):
    ds = nvt.Dataset(frame)
    assert ds.repartition(npartitions=5).npartitions == 5
    by_size = ds.repartition(partition_size="1KB")
    assert by_size.npartitions > 1 and by_size.compute()["a"].tolist() == list(range(100))
    with pytest.raises(ValueError, match="npartitions or partition_size"):
        ds.repartition()


def test_shuffle_by_keys_takes_hive_data_second(frame):
    ds = nvt.Dataset(frame, npartitions=4)
    for out in (ds.shuffle_by_keys(["c"], False), ds.shuffle_by_keys("c", hive_data=None, npartitions=2)):
        seen = [set(part["c"]) for part in out.to_iter()]
        assert sorted(k for keys in seen for k in keys) == ["k0", "k1", "k2", "k3"]
        assert out.num_rows == 100
    assert ds.shuffle_by_keys("c", hive_data=False, npartitions=2).npartitions == 2


def test_merge_is_a_classmethod():
    left = nvt.Dataset(pd.DataFrame({"k": [1, 2, 3, 4], "x": [10, 20, 30, 40]}), npartitions=2)
    right = nvt.Dataset(pd.DataFrame({"k": [1, 3], "y": [0.5, 1.5]}))
    merged = nvt.Dataset.merge(left, right, on="k", how="left")
    assert isinstance(merged, nvt.Dataset) and merged.num_rows == left.num_rows
    out = merged.compute().sort_values("k")
    assert out["y"].tolist()[::2] == [0.5, 1.5] and out["y"].isna().tolist() == [False, True, False, True]
    inner = nvt.Dataset.merge(left, right, on="k", how="inner")
    assert sorted(inner.compute()["x"]) == [10, 30]


# ------------------------------------------------------------------------------ to_npy


def test_to_npy_writes_and_appends(tmp_path):
    ds = nvt.Dataset(pd.DataFrame({"a": [1, 2, 3], "v": [[0.5, 1.0], [1.5, 2.0], [2.5, 3.0]]}), npartitions=2)
    path = str(tmp_path / "x.npy")
    ds.to_npy(path)
    expected = np.array([[1, 0.5, 1.0], [2, 1.5, 2.0], [3, 2.5, 3.0]])
    np.testing.assert_array_equal(np.load(path), expected)
    ds.to_npy(path, append=True)
    np.testing.assert_array_equal(np.load(path), np.concatenate([expected, expected]))
    # appending to a file np.save wrote
    np.save(str(tmp_path / "y.npy"), np.zeros((2, 3)))
    ds.to_npy(str(tmp_path / "y.npy"), append=True)
    assert np.load(str(tmp_path / "y.npy")).shape == (5, 3)
    with pytest.raises(ValueError, match="null values"):
        nvt.Dataset(pd.DataFrame({"a": [1.0, None]})).to_npy(str(tmp_path / "z.npy"))
    with pytest.raises(TypeError, match="strings"):
        nvt.Dataset(pd.DataFrame({"s": ["a"]})).to_npy(str(tmp_path / "z.npy"))
    assert not os.path.exists(tmp_path / "z.npy")


# -------------------------------------------------------------------------- to_parquet


def _names(files):
    return [os.path.basename(f) for f in files]


def test_to_parquet_positional_order_is_nvtabulars(tmp_path, frame):
    # (output_path, shuffle, preserve_files, output_files, out_files_per_proc, row_group_size, ...)
    files = nvt.Dataset(frame, npartitions=2).to_parquet(str(tmp_path / "o"), None, False, 3, None, 10)
    assert _names(files) == ["part_0.parquet", "part_1.parquet", "part_2.parquet"]
    assert max(pq.read_metadata(f).row_group(i).num_rows for f in files for i in range(pq.read_metadata(f).num_row_groups)) <= 10


def test_output_files_as_a_list_of_names(tmp_path, frame):
    files = nvt.Dataset(frame, npartitions=4).to_parquet(str(tmp_path / "o"), output_files=["a.parquet", "b.parquet"])
    assert _names(files) == ["a.parquet", "b.parquet"]
    assert [pq.read_metadata(f).num_rows for f in files] == [50, 50]
    assert pd.read_parquet(files[0])["a"].tolist() == list(range(50))


def test_output_files_as_a_dict_of_partitions(tmp_path, frame):
    ds = nvt.Dataset(frame, npartitions=4)  # partitions of 25 rows
    files = ds.to_parquet(str(tmp_path / "o"), output_files={"first.parquet": [0, 2], ("x.parquet", "y.parquet"): [1, 3]})
    assert sorted(_names(files)) == ["first.parquet", "x.parquet", "y.parquet"]
    first = pd.read_parquet(tmp_path / "o" / "first.parquet")["a"].tolist()
    assert first == list(range(25)) + list(range(50, 75))
    x = pd.read_parquet(tmp_path / "o" / "x.parquet")["a"].tolist()
    y = pd.read_parquet(tmp_path / "o" / "y.parquet")["a"].tolist()
    assert x == list(range(25, 50)) and y == list(range(75, 100))
    # partitions no key lists are not written
    files = ds.to_parquet(str(tmp_path / "p"), output_files={"only.parquet": [3]})
    assert nvt.Dataset(str(tmp_path / "p")).compute()["a"].tolist() == list(range(75, 100))
    with pytest.raises(ValueError, match="out_files_per_proc"):
        ds.to_parquet(str(tmp_path / "q"), output_files={"a.parquet": [0]}, out_files_per_proc=2)
    with pytest.raises(TypeError, match="not a supported type"):
        ds.to_parquet(str(tmp_path / "q"), output_files=2.5)


def test_shuffle_true_is_per_worker_with_a_deprecation_warning(tmp_path, frame):
    ds = nvt.Dataset(frame, npartitions=2)
    with pytest.warns(DeprecationWarning, match="shuffle=True.*PER_WORKER"):
        files = ds.to_parquet(str(tmp_path / "o"), shuffle=True, output_files=4, seed=3)
    # PER_WORKER: each row to a random file (both partitions reach every file)
    parts = [pd.read_parquet(f)["a"] for f in files]
    assert sorted(v for p in parts for v in p) == list(range(100))
    assert all((p < 50).any() and (p >= 50).any() for p in parts)
    from tabflow.io import Shuffle

    ds.to_parquet(str(tmp_path / "p"), shuffle=Shuffle.PER_WORKER, output_files=4, seed=3)
    assert [pd.read_parquet(f)["a"].tolist() for f in sorted(glob.glob(str(tmp_path / "p" / "*.parquet")))] == [
        p.tolist() for p in parts
    ]
    with pytest.raises(ValueError, match="PER_WORKER"):
        ds.to_parquet(str(tmp_path / "q"), shuffle=Shuffle.FULL)


def test_metadata_summary_file(tmp_path, frame):
    out = tmp_path / "o"
    files = nvt.Dataset(frame, npartitions=3).to_parquet(str(out), output_files=3, row_group_size=10)
    summary = pq.read_metadata(out / "_metadata")
    assert summary.num_rows == 100
    paths = [summary.row_group(i).column(0).file_path for i in range(summary.num_row_groups)]
    assert sorted(set(paths)) == _names(files)
    assert summary.num_row_groups == sum(pq.read_metadata(f).num_row_groups for f in files)
    # pyarrow reads the dataset through the summary, and our own _schema.json is kept
    assert pq.ParquetDataset(str(out)).read().num_rows == 100
    assert (out / "_schema.json").exists()
    assert nvt.Dataset(str(out)).num_rows == 100  # the summary is not data


def test_merlin_schema_json_is_written_for_merlin_readers(tmp_path, frame):
    out = tmp_path / "o"
    nvt.Dataset(frame).to_parquet(str(out), cats=["c"], labels=["x"])
    with open(out / ".merlin" / "schema.json") as handle:
        document = json.load(handle)
    features = {f["name"]: f for f in document["feature"]}
    assert features["c"]["type"] == "BYTES" and "categorical" in features["c"]["annotation"]["tag"]
    assert features["x"]["type"] == "FLOAT" and features["x"]["annotation"]["tag"] == ["target"]
    assert features["a"]["type"] == "INT" and features["a"]["annotation"]["extraMetadata"][0]["dtype_item_size"] == 64.0
    assert pd.read_parquet(out)["a"].tolist() == list(range(100))  # hidden: plain readers skip it


def test_partition_on_writes_a_hive_layout(tmp_path):
    frame = pd.DataFrame({"day": [1, 2, 1, 3, 2, 1], "c": ["x/y", "z", None, "z", "z", "x/y"], "v": np.arange(6.0)})
    out = tmp_path / "o"
    files = nvt.Dataset(frame, npartitions=2).to_parquet(str(out), partition_on=["day", "c"])
    relative = sorted(os.path.relpath(f, out) for f in files)
    assert relative == [
        "day=1/c=__HIVE_DEFAULT_PARTITION__/part_0.parquet",
        "day=1/c=x%2Fy/part_0.parquet",
        "day=1/c=x%2Fy/part_1.parquet",
        "day=2/c=z/part_0.parquet",
        "day=2/c=z/part_1.parquet",
        "day=3/c=z/part_1.parquet",
    ]
    assert pq.read_schema(files[0]).names == ["v"]  # keys live in the directory names
    # pyarrow's hive discovery reads the same rows back
    table = pq.read_table(out).to_pydict()
    assert sorted(zip(table["v"], table["day"], table["c"])) == [
        (0.0, 1, "x/y"), (1.0, 2, "z"), (2.0, 1, None), (3.0, 3, "z"), (4.0, 2, "z"), (5.0, 1, "x/y"),
    ]
    # and so does tabflow (key columns last, ints where every value is one)
    back = nvt.Dataset(str(out))
    assert back.schema.column_names == ["v", "day", "c"] and back.schema["day"].dtype == "int64"
    rows = back.compute().sort_values("v")
    assert rows["day"].tolist() == frame["day"].tolist()
    pd.testing.assert_series_equal(rows["c"].reset_index(drop=True), pd.Series(["x/y", "z", None, "z", "z", "x/y"], name="c", dtype=STRING))
    assert nvt.Dataset(str(out), filters=[("day", "==", 1)]).num_rows == 3
    assert pq.read_metadata(out / "_metadata").num_rows == 6
    ds = nvt.Dataset(frame)
    for bad in ({"output_files": 2}, {"out_files_per_proc": 2}, {"preserve_files": True}):
        with pytest.raises(ValueError, match="not supported when `partition_on` is used"):
            ds.to_parquet(str(tmp_path / "bad"), partition_on="day", **bad)
    from tabflow.io import Shuffle

    with pytest.raises(ValueError, match="PER_WORKER"):
        ds.to_parquet(str(tmp_path / "bad"), partition_on="day", shuffle=Shuffle.PER_WORKER)
    with pytest.raises(KeyError, match="nope"):
        ds.to_parquet(str(tmp_path / "bad"), partition_on="nope")
    assert not (tmp_path / "bad").exists()


def test_method_argument(tmp_path, frame):
    nvt.Dataset(frame).to_parquet(str(tmp_path / "o"), method="worker")
    with pytest.raises(ValueError, match="not a recognized method"):
        nvt.Dataset(frame).to_parquet(str(tmp_path / "p"), method="threads")
    with pytest.raises(ValueError, match="subgraph"):
        nvt.Dataset(frame).to_parquet(str(tmp_path / "p"), method="worker", output_files=2)


# ------------------------------------------------------------ NVTabular-written schemas


@pytest.mark.parametrize("layout", [
    ("schema_expanded.pbtxt", "schema.pbtxt"),
    ("schema_serialized.pbtxt", "schema.pbtxt"),
    ("merlin_schema.json", ".merlin/schema.json"),
    ("merlin_schema.json", "schema.json"),  # merlin's JSON under tabflow's other name
])
def test_nvtabular_schema_files_give_tags_and_properties(tmp_path, layout):
    source, name = layout
    directory = tmp_path / "nvt_out"
    (directory / os.path.dirname(name)).mkdir(parents=True, exist_ok=True)
    shutil.copy(os.path.join(DATA, source), directory / name)
    pd.DataFrame({
        "user": np.array([1, 2], dtype="int32"), "label": np.array([0.0, 1.0], dtype="float32"),
        "genres": [[1, 2], [3]], "name": ["a", "b"],
    }).to_parquet(directory / "part_0.parquet")
    ds = nvt.Dataset(str(directory), engine="parquet")
    assert ds.num_rows == 2  # schema files are not data
    schema = ds.schema
    assert schema["user"].tags == {Tags.USER, Tags.ID, Tags.CATEGORICAL}  # merlin atomises USER_ID
    assert schema["user"].properties == {"embedding_sizes": {"cardinality": 101, "dimension": 16},
                                         "domain": {"min": 0, "max": 100, "name": "user"}}
    assert schema["label"].tags == {Tags.TARGET}
    assert schema["genres"].is_list and schema["genres"].value_count == {"min": 1, "max": 5}
    assert Tags.CATEGORICAL in schema["genres"].tags
    # dtypes come from the data
    assert schema.dtypes == {"user": "int32", "label": "float32", "genres": "list<int64>", "name": "string"}


def test_merlin_schema_in_the_parent_directory(tmp_path):
    # merlin.io looks next to the files, then one directory up
    (tmp_path / ".merlin").mkdir()
    shutil.copy(os.path.join(DATA, "merlin_schema.json"), tmp_path / ".merlin" / "schema.json")
    (tmp_path / "train").mkdir()
    pd.DataFrame({"label": np.array([1.0], dtype="float32")}).to_parquet(tmp_path / "train" / "p.parquet")
    assert nvt.Dataset(str(tmp_path / "train")).schema["label"].tags == {Tags.TARGET}


def test_tabflow_schema_wins_over_merlins(tmp_path):
    shutil.copy(os.path.join(DATA, "schema_expanded.pbtxt"), tmp_path / "schema.pbtxt")
    Schema([ColumnSchema("label", dtype="float32", tags=[Tags.CONTINUOUS])]).to_json(str(tmp_path / "_schema.json"))
    pd.DataFrame({"label": np.array([1.0], dtype="float32")}).to_parquet(tmp_path / "p.parquet")
    assert nvt.Dataset(str(tmp_path)).schema["label"].tags == {Tags.CONTINUOUS}


def test_a_malformed_pbtxt_is_a_clear_error(tmp_path):
    from tabflow.exceptions import LoadError

    (tmp_path / "schema.pbtxt").write_text('feature { name: "a" annotation { tag: "x" }')
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "p.parquet")
    with pytest.raises(LoadError, match=r"schema.pbtxt.*missing '\}'"):
        nvt.Dataset(str(tmp_path))


def test_csv_directories_skip_schema_files(tmp_path):
    shutil.copy(os.path.join(DATA, "schema_expanded.pbtxt"), tmp_path / "schema.pbtxt")
    (tmp_path / "day_0").write_text("label\n1.0\n0.0\n")
    ds = nvt.Dataset(str(tmp_path), engine="csv")
    assert ds.num_rows == 2 and ds.schema["label"].tags == {Tags.TARGET}
