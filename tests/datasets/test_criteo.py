"""The synthetic Criteo generator: determinism, dtypes, skew, formats and the planted signal."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import tabflow as nvt
from tabflow.datasets import (
    CATEGORICAL_COLUMNS,
    CONTINUOUS_COLUMNS,
    generate_criteo,
    write_criteo,
)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate_criteo(40_000, seed=5)


def test_columns_and_dtypes(frame):
    assert list(frame.columns) == ["label", *CONTINUOUS_COLUMNS, *CATEGORICAL_COLUMNS]
    assert str(frame["label"].dtype) == "int64"
    assert set(frame["label"].unique()) == {0, 1}
    assert 0.15 < frame["label"].mean() < 0.35
    for name in CONTINUOUS_COLUMNS:
        assert str(frame[name].dtype) == "Int64"
    backend = nvt.Dataset(frame.head(1)).backend
    for name in CATEGORICAL_COLUMNS:
        assert backend.canonical_dtype(frame[name].dtype) == "string"


def test_same_seed_same_rows_other_seed_other_rows():
    first = generate_criteo(3_000, seed=11)
    pd.testing.assert_frame_equal(first, generate_criteo(3_000, seed=11))
    assert not first["I5"].equals(generate_criteo(3_000, seed=12)["I5"])


def test_prefix_of_longer_generation_is_identical():
    short = generate_criteo(20_000, seed=2)
    longer = generate_criteo(50_000, seed=2).iloc[:20_000]
    pd.testing.assert_frame_equal(short, longer)


def test_files_and_chunks_do_not_change_the_data(tmp_path):
    expected = generate_criteo(40_000, seed=3)
    paths = write_criteo(tmp_path / "a", 40_000, num_files=3, seed=3, chunk_rows=10_000, row_group_size=7_000)
    assert [os.path.basename(p) for p in paths] == ["part_0.parquet", "part_1.parquet", "part_2.parquet"]
    assert [pq.ParquetFile(p).metadata.num_rows for p in paths] == [13_333, 13_333, 13_334]
    assert max(pq.ParquetFile(paths[0]).metadata.row_group(i).num_rows for i in range(2)) <= 7_000
    read = nvt.Dataset(paths).compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(read, expected)


def test_written_schema_tags_columns(tmp_path):
    write_criteo(tmp_path, 100)
    schema = nvt.Dataset(str(tmp_path), engine="parquet").schema
    assert schema.select_by_tag(nvt.schema.Tags.CATEGORICAL).column_names == CATEGORICAL_COLUMNS
    assert schema.select_by_tag(nvt.schema.Tags.CONTINUOUS).column_names == CONTINUOUS_COLUMNS
    assert schema.select_by_tag(nvt.schema.Tags.TARGET).column_names == ["label"]


def test_null_fractions(frame):
    nulls = frame.isna().mean()
    assert nulls["label"] == 0
    assert all(0.03 <= nulls[name] <= 0.42 for name in CONTINUOUS_COLUMNS)
    assert all(nulls[name] <= 0.32 for name in CATEGORICAL_COLUMNS)
    assert (nulls[CATEGORICAL_COLUMNS] > 0.2).any() and (nulls[CATEGORICAL_COLUMNS] == 0).any()


def test_continuous_columns_are_heavy_tailed_counts(frame):
    for name in CONTINUOUS_COLUMNS:
        values = frame[name].dropna().to_numpy(dtype="int64")
        if name == "I2":
            assert 0.01 < (values < 0).mean() < 0.1 and values.min() >= -3
        else:
            assert values.min() >= 0
        assert values.max() > 5 * max(1.0, np.median(values))


def test_cardinality_spread_and_skew(frame):
    distinct = frame[CATEGORICAL_COLUMNS].nunique()
    assert distinct.min() == 3
    assert distinct.max() > 10_000
    # Zipf skew: the most frequent value of a big column is far above the uniform share.
    top_share = frame["C3"].value_counts(normalize=True).iloc[0]
    assert top_share > 100 / distinct["C3"]


def test_cardinality_scale_shrinks_vocabularies():
    small = generate_criteo(20_000, seed=1, cardinality_scale=0.001)
    distinct = small[CATEGORICAL_COLUMNS].nunique()
    assert distinct.min() >= 2 and distinct.max() <= 10_200
    assert distinct["C3"] < generate_criteo(20_000, seed=1)["C3"].nunique() / 2


def test_hex_format(frame):
    for name in CATEGORICAL_COLUMNS:
        assert frame[name].dropna().str.fullmatch(r"[0-9a-f]{8}").all(), name


def test_text_format_reads_back_like_parquet(tmp_path):
    text = write_criteo(tmp_path / "text", 5_000, num_files=2, format="criteo_text", seed=9, chunk_rows=2_000)
    write_criteo(tmp_path / "parquet", 5_000, num_files=1, seed=9)
    with open(text[0]) as handle:
        first = handle.readline().rstrip("\n").split("\t")
    assert len(first) == 40 and first[0] in ("0", "1")
    from_text = nvt.Dataset(str(tmp_path / "text"), engine="criteo").compute().reset_index(drop=True)
    from_parquet = nvt.Dataset(str(tmp_path / "parquet")).compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(from_text, from_parquet)


def test_empty_and_invalid_arguments(tmp_path):
    assert generate_criteo(0).shape == (0, 40)
    (path,) = write_criteo(tmp_path, 0)
    assert pq.ParquetFile(path).metadata.num_rows == 0
    with pytest.raises(ValueError, match="format"):
        write_criteo(tmp_path, 10, format="csv")
    with pytest.raises(ValueError, match="seed"):
        generate_criteo(10, seed=-1)
    with pytest.raises(ValueError, match="cardinality_scale"):
        generate_criteo(10, cardinality_scale=0)


def test_planted_signal_is_learnable():
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # Two seeds share vocabularies and effects, like two days of the same log.
    train, valid = generate_criteo(30_000, seed=0), generate_criteo(15_000, seed=1)
    prior = train["label"].mean()
    encodings = {}
    for name in CATEGORICAL_COLUMNS:
        stats = train.groupby(name)["label"].agg(["sum", "count"])
        encodings[name] = (stats["sum"] + 20 * prior) / (stats["count"] + 20)

    def features(df: pd.DataFrame) -> np.ndarray:
        columns = [np.log1p(df[c].clip(lower=0).astype("float64").fillna(0.0).to_numpy()) for c in CONTINUOUS_COLUMNS]
        columns += [df[c].map(encodings[c]).astype("float64").fillna(prior).to_numpy() for c in CATEGORICAL_COLUMNS]
        return np.column_stack(columns)

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    model.fit(features(train), train["label"])
    auc = roc_auc_score(valid["label"], model.predict_proba(features(valid))[:, 1])
    assert auc > 0.7


def test_files_written_by_several_threads_are_identical(tmp_path):
    serial = write_criteo(tmp_path / "serial", 30_000, num_files=4, seed=2, chunk_rows=5_000)
    threaded = write_criteo(tmp_path / "threaded", 30_000, num_files=4, seed=2, chunk_rows=5_000, num_workers=3)
    assert [os.path.basename(p) for p in threaded] == [os.path.basename(p) for p in serial]
    for a, b in zip(serial, threaded):
        assert pq.read_table(a).equals(pq.read_table(b))


@pytest.mark.parametrize("num_workers", [0, -1, 1.5])
def test_num_workers_must_be_a_positive_integer(tmp_path, num_workers):
    with pytest.raises(ValueError, match="num_workers"):
        write_criteo(tmp_path, 10, num_workers=num_workers)


# ------------------------------------------------------------------------- other shapes


@pytest.fixture(scope="module")
def hex_frame() -> pd.DataFrame:
    return generate_criteo(20_000, seed=4)


def _same_categories(a: pd.Series, b: pd.Series) -> bool:
    # One-to-one: each value of a goes with one value of b and back, nulls in the same rows.
    if not a.isna().equals(b.isna()):
        return False
    pairs = pd.DataFrame({"a": a.astype(object), "b": b.astype(object)}).dropna().drop_duplicates()
    return pairs["a"].is_unique and pairs["b"].is_unique


def test_text_ids_spell_the_same_categories_as_urls_and_user_agents(hex_frame):
    text = generate_criteo(20_000, seed=4, ids="text")
    pd.testing.assert_frame_equal(text.drop(columns=CATEGORICAL_COLUMNS), hex_frame.drop(columns=CATEGORICAL_COLUMNS))
    for name in CATEGORICAL_COLUMNS:
        values = text[name].dropna()
        assert values.str.len().between(30, 80).all(), name
        # The id is in the string: the same rows share a category in both spellings.
        assert all(h in t for h, t in zip(hex_frame[name].dropna().head(50), values.head(50))), name
        assert _same_categories(text[name], hex_frame[name]), name
    # Long strings whose first eight bytes many share, as URLs' do.
    c3 = text["C3"].dropna()
    assert c3.str.len().mean() > 40 and c3.str[:8].value_counts().iloc[0] > 0.3 * len(c3)
    assert c3.str.startswith(("https://", "Mozilla/", "app://", "user-")).all()


def test_int_ids_are_int64_of_the_same_categories(hex_frame):
    ints = generate_criteo(20_000, seed=4, ids="int")
    for name in CATEGORICAL_COLUMNS:
        assert str(ints[name].dtype) == "Int64", name
        assert _same_categories(ints[name], hex_frame[name]), name
        assert ints[name].dropna().min() >= 0
    assert ints["C3"].dropna().max() > 2**62  # spread over 63 bits, not small codes


def test_sparse_nulls_in_every_other_column(hex_frame):
    sparse = generate_criteo(40_000, seed=4, nulls="sparse")
    nulls = sparse.isna().mean()
    for columns in (CONTINUOUS_COLUMNS, CATEGORICAL_COLUMNS):
        sparse_rates = nulls[columns[::2]]
        assert sparse_rates.between(0.57, 0.93).all() and sparse_rates.min() < 0.63 and sparse_rates.max() > 0.87
        # The other columns keep Criteo's rates and values.
        for name in columns[1::2]:
            pd.testing.assert_series_equal(sparse[name].head(20_000), hex_frame[name])
    # Values where both keep them are Criteo's.
    both = sparse["C1"].head(20_000).notna()
    assert (sparse["C1"].head(20_000)[both] == hex_frame["C1"][both]).all()


def test_multi_hot_columns_are_lists_of_one_to_twenty_ids_led_by_the_row_category(hex_frame):
    lists = generate_criteo(20_000, seed=4, multi_hot=["C3", "C11"])
    pd.testing.assert_frame_equal(lists.drop(columns=["C3", "C11"]), hex_frame.drop(columns=["C3", "C11"]))
    for name in ("C3", "C11"):
        column = lists[name]
        assert str(column.dtype).startswith("list<item: string>") and not column.isna().any()
        lengths = column.list.len()
        assert lengths.min() == 1 and lengths.max() == 20 and 9.5 < lengths.mean() < 11.5
        first = column.list[0]
        known = hex_frame[name].notna()
        assert (first[known] == hex_frame[name][known]).all()
        items = column.explode()
        assert items.str.fullmatch(r"[0-9a-f]{8}").all()
        # The other ids come from the column's distribution: the values seen are the column's.
        assert items.nunique() > hex_frame[name].nunique()
    assert str(generate_criteo(100, ids="int", multi_hot=["C1"])["C1"].dtype).startswith("list<item: int64>")


def test_shapes_are_written_and_read_back(tmp_path):
    paths = write_criteo(tmp_path / "d", 30_000, num_files=1, seed=6, ids="text", nulls="sparse",
                         multi_hot=["C2"], chunk_rows=8_000, row_group_size=20_000)
    metadata = pq.ParquetFile(paths[0]).metadata
    # Row groups larger than a chunk are gathered to their size.
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [20_000, 10_000]
    expected = generate_criteo(30_000, seed=6, ids="text", nulls="sparse", multi_hot=["C2"])
    dataset = nvt.Dataset(str(tmp_path / "d"), engine="parquet")
    assert dataset.schema["C2"].is_list and dataset.schema["C2"].dtype == "list<string>"
    assert dataset.schema.select_by_tag(nvt.schema.Tags.CATEGORICAL).column_names == CATEGORICAL_COLUMNS
    table = pq.read_table(paths[0])
    assert table.column("C1").to_pylist() == [None if pd.isna(v) else v for v in expected["C1"]]
    assert table.column("C2").to_pylist()[:50] == [list(v) for v in expected["C2"].head(50)]
    assert nvt.Dataset(write_criteo(tmp_path / "i", 100, ids="int")).schema["C5"].dtype == "int64"


def test_shape_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match=r"ids must be one of \['hex', 'text', 'int'\], got 'url'"):
        generate_criteo(10, ids="url")
    with pytest.raises(ValueError, match="nulls must be one of"):
        generate_criteo(10, nulls="many")
    with pytest.raises(ValueError, match=r"not categorical columns C1..C26: \['I1'\]"):
        generate_criteo(10, multi_hot=["C1", "I1"])
    with pytest.raises(ValueError, match="list of categorical column names, got the string 'C1'"):
        generate_criteo(10, multi_hot="C1")
    with pytest.raises(ValueError, match="raw Criteo text format holds hex ids"):
        write_criteo(tmp_path, 10, format="criteo_text", ids="text")
    assert not os.listdir(tmp_path)
