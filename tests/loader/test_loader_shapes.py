"""List columns of any shape in the loaders: fixed shapes as dense ``[rows, *shape]`` tensors,
ragged ones (lists of lists too) as values and offsets, as merlin's loader gives them; with
shuffling, several files, uneven and empty partitions, data-parallel ranks and resumption."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import tabflow as nvt
from tabflow.loader.torch import Loader, TorchAsyncItr
from tabflow.schema import ColumnSchema, Schema, Tags

# Rows per file and row-group size (one partition per row group with part_size=1); the
# middle file's second row group is empty of rows after the filter below.
FILES = [(31, 10), (17, 17), (24, 7)]
NUM_ROWS = sum(n for n, _ in FILES)


def _frame(num_rows: int, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    fixed = rng.integers(1, 50, size=(num_rows, 3))
    cube = rng.random((num_rows, 3, 2)).astype(np.float32)
    pairs = [rng.integers(0, 9, size=(k, 2)).tolist() for k in rng.integers(0, 4, size=num_rows)]
    pairs = [None if i % 5 == 2 else p for i, p in enumerate(pairs)]  # null rows in a ragged column
    bags = [None if i % 6 == 1 else rng.integers(1, 20, size=k).tolist() for i, k in enumerate(rng.integers(0, 5, size=num_rows))]
    frame = pd.DataFrame({"row_id": np.arange(num_rows), "x": rng.random(num_rows), "label": rng.integers(0, 2, size=num_rows)})
    frame["fixed"] = pd.Series(fixed.tolist(), dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    frame["cube"] = pd.Series(cube.tolist(), dtype=pd.ArrowDtype(pa.list_(pa.list_(pa.float32()))))
    frame["pairs"] = pd.Series(pairs, dtype=pd.ArrowDtype(pa.list_(pa.list_(pa.int64()))))
    frame["bags"] = pd.Series(bags, dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    return frame


def _schema() -> Schema:
    return Schema([
        ColumnSchema("row_id", tags=[Tags.CATEGORICAL], dtype="int64"),
        ColumnSchema("x", tags=[Tags.CONTINUOUS], dtype="float64"),
        ColumnSchema("label", tags=[Tags.TARGET], dtype="int64"),
        ColumnSchema("fixed", tags=[Tags.CATEGORICAL], dtype="int64", dims=(None, 3)),
        ColumnSchema("cube", tags=[Tags.CONTINUOUS], dtype="float32", dims=(None, 3, 2)),
        ColumnSchema("pairs", tags=[Tags.CATEGORICAL], dtype="int64", dims=(None, None, 2)),
        ColumnSchema("bags", tags=[Tags.CATEGORICAL], dtype="int64", dims=(None, None)),
    ])


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return _frame(NUM_ROWS)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, frame) -> str:
    directory = str(tmp_path_factory.mktemp("shapes"))
    start = 0
    for k, (rows, group) in enumerate(FILES):
        table = pa.Table.from_pandas(frame.iloc[start:start + rows], preserve_index=False)
        pq.write_table(table, os.path.join(directory, f"part_{k}.parquet"), row_group_size=group)
        start += rows
    # An empty file: an empty partition among the others.
    pq.write_table(pa.Table.from_pandas(frame.iloc[:0], preserve_index=False), os.path.join(directory, "part_3.parquet"))
    _schema().to_json(os.path.join(directory, "_schema.json"))
    return directory


@pytest.fixture
def dataset(data_dir):
    return nvt.Dataset(data_dir, engine="parquet", part_size=1, cpu=True)


def _flat(row: list | None) -> list:
    if not isinstance(row, list):  # a null row (NA) is an empty one
        return []
    return [x for item in row for x in (item if isinstance(item, list) else [item])]


def _check_batches(batches, frame: pd.DataFrame) -> list[int]:
    """Every batch against the reference rows it names; the row ids in delivery order."""
    reference = {name: frame[name].tolist() for name in frame.columns}
    ids = []
    for inputs, y in batches:
        rows = inputs["row_id"].tolist()
        ids += rows
        n = len(rows)
        assert inputs["fixed"].shape == (n, 3) and inputs["fixed"].dtype == torch.int64
        assert inputs["fixed"].tolist() == [reference["fixed"][r] for r in rows]
        assert inputs["cube"].shape == (n, 3, 2) and inputs["cube"].dtype == torch.float32
        cube = np.asarray([reference["cube"][r] for r in rows], dtype=np.float32).reshape(n, 3, 2)
        np.testing.assert_array_equal(inputs["cube"].numpy(), cube)
        for name in ("pairs", "bags"):
            # Ragged: flat values and offsets counting them, nulls as empty rows (merlin's layout).
            offsets = inputs[f"{name}__offsets"].tolist()
            values = inputs[f"{name}__values"].tolist()
            assert len(offsets) == n + 1 and offsets[0] == 0
            assert [values[a:b] for a, b in zip(offsets[:-1], offsets[1:])] == [_flat(reference[name][r]) for r in rows]
        assert y.tolist() == [reference["label"][r] for r in rows]
    return ids


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("parts_per_chunk", [1, 3])
def test_fixed_and_ragged_shapes_together(dataset, frame, shuffle, parts_per_chunk):
    with Loader(dataset, batch_size=9, shuffle=shuffle, parts_per_chunk=parts_per_chunk, seed_fn=lambda: 5) as loader:
        assert loader.input_schema["cube"].shape.as_tuple == ((0, None), 3, 2)
        batches = list(loader)
    ids = _check_batches(batches, frame)
    assert sorted(ids) == list(range(NUM_ROWS))
    assert (ids == list(range(NUM_ROWS))) != shuffle


def test_data_parallel_ranks_and_resume_with_shapes(dataset, frame):
    options = dict(batch_size=8, shuffle=True, seed_fn=lambda: 11, global_size=2)
    seen = []
    for rank in range(2):
        with Loader(dataset, global_rank=rank, **options) as loader:
            seen += _check_batches(list(loader), frame)
    assert sorted(seen) == list(range(NUM_ROWS))  # 72 rows: an even share each, every row once

    with Loader(dataset, global_rank=1, **options) as reference:
        whole = [inputs["row_id"].tolist() for inputs, _ in reference]
    with Loader(dataset, global_rank=1, **options) as first:
        it = iter(first)
        head = [next(it) for _ in range(2)]
        state = first.state_dict()
    with Loader(dataset, global_rank=1, **options) as resumed:
        resumed.load_state_dict(state)
        rest = list(resumed)
    assert [inputs["row_id"].tolist() for inputs, _ in head + rest] == whole
    _check_batches(rest, frame)


def test_torch_async_itr_gives_the_dict_form_with_shapes(dataset, frame):
    with TorchAsyncItr(dataset, cats=["row_id", "fixed", "pairs", "bags"], conts=["cube"], labels=["label"], batch_size=16) as itr:
        batches = list(itr)
    assert sorted(_check_batches(batches, frame)) == list(range(NUM_ROWS))


def test_merlins_fixed_column_shapes():
    # merlin-dataloader's own case: a column of shape (None, *shape) comes out [batch, *shape].
    for shape in [(), (1,), (2,), (3, 4)]:
        df = pd.DataFrame({f"col{i}": np.random.default_rng(i).random((4, *shape)).tolist() for i in range(2)})
        ds = nvt.Dataset(df)
        for column in ds.schema:
            ds.schema[column.name] = column.with_shape((None, *shape))
        with Loader(ds, batch_size=3) as loader:
            batches = list(loader)
        assert [tuple(t.shape) for t in batches[0][0].values()] == [(3, *shape)] * 2
        assert [tuple(t.shape) for t in batches[1][0].values()] == [(1, *shape)] * 2
        np.testing.assert_allclose(batches[0][0]["col0"].numpy(), np.asarray(df["col0"].tolist()[:3]), rtol=1e-6)


def test_a_row_that_does_not_fit_the_fixed_shape_is_an_error_naming_the_column(tmp_path):
    df = pd.DataFrame({"m": [[1, 2, 3], None, [4, 5, 6]], "y": [0, 1, 0]})
    ds = nvt.Dataset(df)
    ds.schema["m"] = ds.schema["m"].with_shape((None, 3))
    with pytest.raises(ValueError, match=r"'m' has shape \(None, 3\).*length 0 instead of 3.*null"):
        with Loader(ds, batch_size=3, labels=["y"]) as loader:
            list(loader)
    ds.schema["m"] = ds.schema["m"].with_shape((None, 3, 1))
    with pytest.raises(ValueError, match=r"'m'.*2 level\(s\) of lists.*data holds 1"):
        with Loader(ds, batch_size=3, labels=["y"]) as loader:
            list(loader)


def test_shapes_survive_the_written_schema(tmp_path, frame):
    # Written by to_parquet into _schema.json, read back by Dataset, used by the loader.
    ds = nvt.Dataset(frame.iloc[:20].reset_index(drop=True), schema=_schema())
    ds.to_parquet(str(tmp_path / "out"))
    back = nvt.Dataset(str(tmp_path / "out"), engine="parquet", cpu=True)
    assert [c.shape.as_tuple for c in back.schema] == [c.shape.as_tuple for c in _schema()]
    with Loader(back, batch_size=20) as loader:
        inputs, _ = next(iter(loader))
    assert inputs["cube"].shape == (20, 3, 2) and inputs["fixed"].shape == (20, 3)


def test_sparse_tensors_of_lists_of_lists_are_refused(dataset):
    with pytest.raises(TypeError, match="'pairs'.*lists of lists.*values and offsets"):
        Loader(dataset, batch_size=4, sparse_names=["pairs"])


def test_a_fixed_shape_target_is_a_dense_tensor_and_a_ragged_one_is_refused():
    df = pd.DataFrame({"a": [[0.1], [0.2], [0.3]], "label": [[0], [1], [0]]})
    ds = nvt.Dataset(df)
    ds.schema["label"] = ds.schema["label"].with_tags(Tags.TARGET).with_shape((None, 1))
    ds.schema["a"] = ds.schema["a"].with_shape((None, 1))
    with Loader(ds, batch_size=2) as loader:
        batches = list(loader)
    assert [tuple(y.shape) for _, y in batches] == [(2, 1), (1, 1)]
    assert torch.cat([y for _, y in batches]).tolist() == [[0], [1], [0]]
    ds.schema["label"] = ds.schema["label"].with_shape((None, None))
    with pytest.raises(TypeError, match="'label' is a ragged list column"):
        Loader(ds, batch_size=2)
