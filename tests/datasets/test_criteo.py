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
