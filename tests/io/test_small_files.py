"""Many small parquet files: partitions that gather several files (``aggregate_files=``),
and workflows that fit and transform small partitions together where their ops are row-wise.

Every result is checked against plain pandas over the concatenated files, and against the
same workflow run one partition at a time.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.io.readers import DatasetChangedError, DatasetReadError


def _frame(start: int, rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 40, rows)
    return pd.DataFrame({
        "id": pd.array([None if i % 7 == 0 else f"u{i}" for i in ids], dtype="string"),
        "n": pd.array([None if k % 5 == 0 else k for k in range(start, start + rows)], dtype="Int64"),
        "x": rng.normal(size=rows),
    })


@pytest.fixture
def small_files(tmp_path):
    """24 files of 0-60 rows: nulls, an empty file, a file storing ``n`` as int32 and ``id``
    plain (the others dictionary-encoded), a file of several row groups."""
    directory = tmp_path / "days"
    directory.mkdir()
    frames = []
    start = 0
    for k in range(24):
        rows = 0 if k == 5 else 20 + (k * 7) % 41
        frame = _frame(start, rows, seed=k)
        start += rows
        frames.append(frame)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        if k == 9:
            table = table.set_column(1, pa.field("n", pa.int32()), table.column("n").cast(pa.int32()))
        pq.write_table(table, directory / f"part_{k:02d}.parquet", use_dictionary=k != 9, row_group_size=8 if k == 13 else None)
    return directory, pd.concat(frames, ignore_index=True)


def _files(directory) -> list[str]:
    return sorted(os.path.join(directory, name) for name in os.listdir(directory) if name.endswith(".parquet"))


def test_aggregate_files_gathers_files_up_to_part_size(small_files):
    directory, expected = small_files
    apart = nvt.Dataset(str(directory))
    together = nvt.Dataset(str(directory), aggregate_files=True)
    assert apart.npartitions == 24 and together.npartitions == 1
    assert together.partition_lengths() == [len(expected)]
    got = together.compute()
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    assert str(got["n"].dtype) == "Int64"  # int32 in one file, Int64 planned for all
    # Each file maps to the partition that reads it.
    assert together.file_partition_map == {path: [0] for path in _files(directory)}
    # A small part_size gathers fewer files at a time; rows and order stay.
    sized = nvt.Dataset(str(directory), aggregate_files=True, part_size="6KB")
    assert 1 < sized.npartitions < 24
    assert sum(sized.partition_lengths()) == len(expected)
    assert [len(p) for p in sized.to_iter()] == sized.partition_lengths()
    pd.testing.assert_frame_equal(pd.concat(list(sized.to_iter()), ignore_index=True), expected, check_dtype=False)


def test_aggregate_files_with_row_groups_per_part(small_files):
    directory, expected = small_files
    # File 13 has 4 row groups (of at most 8 rows), the empty file none, the others one each:
    # partitions gather consecutive files up to 4 row groups, file 13's four stay together.
    by_count = nvt.Dataset(str(directory), aggregate_files=True, row_groups_per_part=4)
    groups = [len(piece[1]) if isinstance(piece[0], str) else sum(len(m[1]) for m in piece) for piece in by_count._direct[1]]
    assert groups == [4, 4, 4, 1, 4, 4, 4, 2]
    assert sum(by_count.partition_lengths()) == len(expected)
    pd.testing.assert_frame_equal(by_count.compute(), expected, check_dtype=False)


def test_aggregate_files_by_hive_key(tmp_path):
    # merlin's test: one partition per day, also with filters.
    rows = pd.DataFrame({"day": np.repeat([1, 2, 3], 40), "v": np.arange(120)})
    for day, group in rows.groupby("day"):
        for half in range(4):
            path = tmp_path / f"day={day}" / f"part_{half}.parquet"
            path.parent.mkdir(exist_ok=True)
            group.iloc[half * 10:(half + 1) * 10][["v"]].to_parquet(path, index=False)
    by_day = nvt.Dataset(str(tmp_path), aggregate_files="day", part_size="1GB")
    assert by_day.npartitions == 3 and by_day.partition_lengths() == [40, 40, 40]
    assert [sorted(set(p["day"])) for p in by_day.to_iter()] == [[1], [2], [3]]
    assert by_day.compute()["v"].tolist() == list(range(120))
    one_day = nvt.Dataset(str(tmp_path), aggregate_files="day", filters=[("day", "==", 2)], part_size="1GB")
    # The other days' files are not even read (merlin's expectation: one partition).
    assert one_day.to_ddf().npartitions == 1 and one_day.compute()["v"].tolist() == list(range(40, 80))
    apart = nvt.Dataset(str(tmp_path), filters=[[("day", ">=", 3)], [("day", "in", [1]), ("v", "<", 5)]])
    assert apart.npartitions == 8 and apart.compute()["v"].tolist() == [0, 1, 2, 3, 4, *range(80, 120)]
    nothing = nvt.Dataset(str(tmp_path), filters=[("day", "==", 9)])
    assert nothing.npartitions == 1 and len(nothing.compute()) == 0 and "v" in nothing.schema.column_names
    assert nvt.Dataset(str(tmp_path), aggregate_files=True, part_size="1GB").npartitions == 1
    with pytest.raises(ValueError, match=r"aggregate_files='month' names no hive partitioning key.*\['day'\]"):
        nvt.Dataset(str(tmp_path), aggregate_files="month")
    with pytest.raises(TypeError, match="aggregate_files must be True, False or the name"):
        nvt.Dataset(str(tmp_path), aggregate_files=3)


def test_gathered_partitions_refuse_preserve_files(small_files, tmp_path):
    directory, _ = small_files
    together = nvt.Dataset(str(directory), aggregate_files=True)
    with pytest.raises(ValueError, match="preserve_files=True writes each input file's rows.*without aggregate_files"):
        together.to_parquet(str(tmp_path / "out"), preserve_files=True)
    assert not (tmp_path / "out").exists()


def test_a_gathered_partition_names_its_bad_or_changed_file(small_files):
    directory, _ = small_files
    files = _files(directory)
    together = nvt.Dataset(str(directory), aggregate_files=True)
    with open(files[17], "r+b") as handle:  # the same size, other bytes: a corrupt page
        handle.seek(40)
        handle.write(b"\xff" * 64)
    with pytest.raises(DatasetChangedError, match="part_17.parquet"):
        together.compute()
    with pytest.raises(DatasetReadError, match=r"part_17.parquet.*(corrupt|truncated)"):
        nvt.Dataset(str(directory), aggregate_files=True).compute()


class _SeesPartitions(ops.Operator):
    """Records the rows of each frame it transforms (one output row per input row)."""

    row_wise = True
    seen: list[int] = []

    def transform(self, col_selector, df):
        type(self).seen.append(len(df))
        return df[col_selector.names]


class _SeesPartitionsAcrossRows(_SeesPartitions):
    row_wise = False


def test_fit_and_transform_gather_small_partitions_when_every_op_is_row_wise(small_files, tmp_path):
    directory, expected = small_files
    dataset = nvt.Dataset(str(directory))
    assert dataset.npartitions == 24

    def workflow(probe):
        cats = ["id"] >> probe() >> ops.Categorify()
        conts = ["n", "x"] >> ops.FillMissing() >> ops.Normalize()
        return nvt.Workflow(cats + conts)

    _SeesPartitions.seen = []
    gathered = workflow(_SeesPartitions).fit(dataset)
    # The fit read the 24 files as one partition (besides the first rows its schema pass reads).
    assert max(_SeesPartitions.seen) == len(expected)
    _SeesPartitions.seen = []
    files = [os.path.basename(f) for f in gathered.transform(dataset).to_parquet(str(tmp_path / "gathered"))]
    assert max(_SeesPartitions.seen) == len(expected)
    assert len(files) == 24  # still one output file per partition, as NVTabular writes

    _SeesPartitionsAcrossRows.seen = []
    apart = workflow(_SeesPartitionsAcrossRows).fit(dataset)
    assert max(_SeesPartitionsAcrossRows.seen) == max(dataset.partition_lengths())  # a file at a time
    apart.transform(dataset).to_parquet(str(tmp_path / "apart"))

    # The same moments (to rounding), the same files row for row.
    normalize = lambda wf: next(n.op for n in wf.nodes if isinstance(n.op, ops.Normalize))  # noqa: E731
    for column in ("n", "x"):
        assert normalize(gathered).means_[column] == pytest.approx(normalize(apart).means_[column], rel=1e-12)
        assert normalize(gathered).stds_[column] == pytest.approx(normalize(apart).stds_[column], rel=1e-12)
    for name in files:
        left = pq.read_table(tmp_path / "gathered" / name).to_pandas()
        right = pq.read_table(tmp_path / "apart" / name).to_pandas()
        pd.testing.assert_frame_equal(left, right, rtol=1e-12)
    # Against pandas: codes by descending frequency, z-scores with the sample deviation.
    out = nvt.Dataset(str(tmp_path / "gathered")).compute()
    filled = expected["n"].fillna(0).astype(float)
    np.testing.assert_allclose(out["n"], (filled - filled.mean()) / filled.std(), rtol=1e-9)
    counts = expected["id"].value_counts()
    assert out["id"][expected["id"] == counts.index[0]].unique().tolist() == [3]
    assert (out["id"][expected["id"].isna()] == 1).all()


class _DropsFirstRow(ops.Operator):
    """Declares itself row-wise but drops each frame's first row: the writer must notice the
    row count and compute each partition on its own."""

    row_wise = True

    def transform(self, col_selector, df):
        return df[col_selector.names].iloc[1:]


def test_a_gathered_transform_that_changes_the_rows_is_computed_partition_by_partition(small_files, tmp_path):
    directory, _ = small_files
    dataset = nvt.Dataset(str(directory))
    workflow = nvt.Workflow(["x"] >> _DropsFirstRow()).fit(dataset)
    files = [os.path.basename(f) for f in workflow.transform(dataset).to_parquet(str(tmp_path / "out"))]
    for name, part in zip(files, dataset.to_iter()):
        written = pq.read_table(tmp_path / "out" / name).to_pandas()
        assert written["x"].tolist() == part["x"].iloc[1:].tolist()


@pytest.mark.parametrize("layout", [
    {"output_files": 5}, {"output_files": ["a.parquet", "b.parquet"]}, {"preserve_files": True},
    {"output_files": {"one.parquet": [0, 1, 2], "two.parquet": list(range(3, 24))}},
])
def test_gathered_transform_writes_the_files_a_partition_at_a_time_transform_writes(small_files, tmp_path, layout):
    directory, _ = small_files
    dataset = nvt.Dataset(str(directory))
    workflow = nvt.Workflow((["id"] >> ops.Categorify()) + (["n"] >> ops.Clip(min_value=10) >> ops.HashBucket(7)))
    workflow.fit(dataset)
    gathered = workflow.transform(dataset)
    assert gathered._gathered is not None
    apart = workflow.transform(dataset)
    apart._gathered = None  # computed a partition at a time
    files = [os.path.basename(f) for f in gathered.to_parquet(str(tmp_path / "gathered"), **layout)]
    assert files == [os.path.basename(f) for f in apart.to_parquet(str(tmp_path / "apart"), **layout)]
    for name in files:
        assert (tmp_path / "gathered" / name).read_bytes() == (tmp_path / "apart" / name).read_bytes()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("layout", [{}, {"output_files": 5}])
def test_a_gathered_partition_that_fails_fails_the_write_and_leaves_nothing(small_files, tmp_path, layout):
    # Several gathered partitions (a small part_size), output files shared by partitions of
    # different gathered partitions (output_files=5): the error comes out, no thread is left
    # waiting for a file's turn, and the output directory is not created.
    directory, _ = small_files
    bad = set(pq.read_table(directory / "part_13.parquet").column("x").to_pylist())

    class FailsOnAFile(ops.Operator):
        row_wise = True

        def transform(self, col_selector, df):
            if df["x"].isin(bad).any():
                raise ValueError("a row of part_13")
            return df[col_selector.names]

    dataset = nvt.Dataset(str(directory), part_size="6KB")
    transformed = nvt.Workflow(["x"] >> FailsOnAFile()).fit(dataset).transform(dataset)
    assert transformed._gathered is not None and len(transformed._gathered.groups) > 2
    with pytest.raises(ValueError, match="a row of part_13"):
        transformed.to_parquet(str(tmp_path / "out"), **layout)
    assert not (tmp_path / "out").exists()


@pytest.mark.timeout(60)
def test_a_failure_known_early_abandons_only_the_later_partitions_of_its_file():
    # A gathered partition (12, 13) fails before partition 10, earlier in the same file, has
    # had its turn: 10 is still written once 8 is, so the first error in partition order is
    # the failure itself, not an abandoned partition; 13 and the file's later 15 give up.
    import threading

    from tabflow.io.writer import _Abandoned, _FileTurns

    turns = _FileTurns([2, 2, 2, 2], [8, 10, 13, 15])
    written, outcome = [], {}

    def write(index):
        try:
            turns.write(2, index, lambda: written.append(index))
            outcome[index] = "written"
        except _Abandoned:
            outcome[index] = "abandoned"

    waiting = [threading.Thread(target=write, args=(index,), daemon=True) for index in (10, 15)]
    for thread in waiting:
        thread.start()
    turns.fail(2, 13)
    waiting[1].join(timeout=30)
    assert outcome == {15: "abandoned"}  # 10 still waits for its turn
    write(8)
    waiting[0].join(timeout=30)
    assert outcome == {8: "written", 10: "written", 15: "abandoned"} and written == [8, 10]
    write(13)
    assert outcome[13] == "abandoned"
