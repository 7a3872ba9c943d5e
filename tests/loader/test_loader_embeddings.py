"""EmbeddingOperator and TensorTable on data written to several files: unseen ids, nulls,
ragged lists and memory-mapped tables, against NumPy references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow.loader.array import Loader
from tabflow.loader.ops import EmbeddingOperator
from tabflow.table import TensorColumn, TensorTable

TABLE = np.random.default_rng(0).random((50, 4))
IDS = np.arange(100, 150)


def _write(tmp_path, frame, files=3):
    for k, part in enumerate(np.array_split(np.arange(len(frame)), files)):
        frame.iloc[part].to_parquet(tmp_path / f"part_{k}.parquet")
    return nvt.Dataset(str(tmp_path), engine="parquet", cpu=True)


def _reference(ids, unknown):
    out = []
    for i in ids:
        row = None if i is None or pd.isna(i) else np.nonzero(IDS == i)[0]
        out.append(TABLE[row[0]] if row is not None and len(row) else np.full(4, unknown))
    return np.array(out)


@pytest.mark.parametrize("mmap", [False, True])
def test_lookup_over_several_files_with_unseen_ids(tmp_path, mmap):
    ids = pd.array([100, 149, 3, 7, 120, 100, 0, 999, 101, 130, 131], dtype="int64")
    frame = pd.DataFrame({"id": ids, "x": np.arange(len(ids), dtype=np.float32)})
    np.save(tmp_path / "table.npy", TABLE)
    data = tmp_path / "data"
    data.mkdir()
    op = EmbeddingOperator(str(tmp_path / "table.npy"), id_lookup_table=IDS, mmap=mmap, unknown_value=-1.0)
    with Loader(_write(data, frame), batch_size=4, transforms=[op]) as loader:
        got = np.concatenate([inputs["embeddings"].values for inputs, _ in loader])
    np.testing.assert_array_equal(got, _reference(list(ids), -1.0))
    assert loader.output_schema["embeddings"].value_count.max == 4 and not loader.output_schema["embeddings"].is_ragged


def test_ragged_lists_of_ids_keep_their_offsets(tmp_path):
    rows = [[100, 101], [], [149, 5, 120], [130]]
    frame = pd.DataFrame({"id": pd.Series(rows, dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
    op = EmbeddingOperator(TABLE, id_lookup_table=IDS)
    with Loader(_write(tmp_path, frame, files=2), batch_size=4, transforms=[op]) as loader:
        inputs, _ = loader.peek()
    column = inputs["embeddings"]
    assert column.offsets.tolist() == [0, 2, 2, 5, 6] == inputs["id"].offsets.tolist()
    np.testing.assert_array_equal(column.values, _reference([i for r in rows for i in r], 0.0))


def test_row_numbers_outside_the_table_and_a_mismatched_lookup_are_refused_or_unknown():
    frame = pd.DataFrame({"id": pd.array([0, -1, 50, None, 49], dtype="Int64")})
    out = nvt.Workflow(["id"] >> EmbeddingOperator(TABLE, unknown_value=9.0)).fit_transform(frame)
    got = np.array(out["embeddings"].tolist())
    unknown = np.full(4, 9.0)
    np.testing.assert_array_equal(got, np.stack([TABLE[0], unknown, unknown, unknown, TABLE[49]]))
    with pytest.raises(ValueError, match=r"Expected IDs with shape \(50,\)"):
        EmbeddingOperator(TABLE, id_lookup_table=IDS[:3])


def test_tensor_table_round_trips_through_a_frame():
    table = TensorTable({"a": np.array([1, 2, 3], dtype=np.int32), "b__values": np.arange(5.0), "b__offsets": np.array([0, 2, 2, 5])})
    frame = table.to_df()
    assert frame["b"].tolist() == [[0.0, 1.0], [], [2.0, 3.0, 4.0]]
    assert TensorTable.from_df(frame) == table
    assert table["b"][2].tolist() == [2.0, 3.0, 4.0] and table.num_rows == 3
    with pytest.raises(ValueError, match="last offset"):
        TensorColumn(np.arange(3), offsets=np.array([0, 2]))
    with pytest.raises(ValueError, match="rows"):
        table["c"] = np.arange(4)
