"""tabflow.tools.dataset_inspector: NVTabular's description JSON, written safely, and read
back by the generator (inspect -> generate -> inspect gives the same description)."""

from __future__ import annotations

import contextlib
import json
import math
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabflow as nvt
from tabflow.exceptions import SaveError
from tabflow.tools import data_gen, dataset_inspector
from tabflow.tools.dataset_inspector import DatasetInspector, NpEncoder

COLUMNS = {"conts": ["x", "n"], "cats": ["s", "i", "tags"], "labels": ["label"]}


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    rows = 2000
    x = rng.uniform(-2, 6, rows)
    x[rng.random(rows) < 0.1] = np.nan
    words = np.array(["a", "bb", "ccc", "dddd", "eeeee", "ffffff"], dtype=object)
    s = words[rng.integers(0, 6, rows)]
    s[rng.random(rows) < 0.2] = None
    tags = [list(words[rng.integers(0, 6, k)]) for k in rng.integers(1, 5, rows)]
    return pd.DataFrame({
        "x": x,
        "n": rng.integers(0, 100, rows),
        "s": pd.array(s, dtype="string"),
        "i": pd.Series(rng.integers(1, 41, rows), dtype="Int64").where(rng.random(rows) >= 0.05),
        "tags": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(tags, pa.list_(pa.string())))),
        "label": rng.integers(0, 2, rows),
    })


def _strict_json(path):
    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    with open(path, encoding="utf-8") as handle:
        return json.load(handle, parse_constant=refuse)


def test_inspect_matches_pandas(tmp_path, frame):
    out = tmp_path / "info.json"
    returned = DatasetInspector().inspect(nvt.Dataset(frame, npartitions=3), COLUMNS, str(out))
    written = _strict_json(out)
    assert written == returned
    assert list(written) == ["num_rows", "conts", "cats", "labels"] and written["num_rows"] == 2000

    x = frame["x"].dropna()
    assert written["conts"]["x"] == pytest.approx({
        "dtype": "float64", "min_val": x.min(), "max_val": x.max(), "mean": x.mean(), "std": x.std(),
        "per_nan": 100 * frame["x"].isna().mean(),
    })
    n = frame["n"]
    assert written["conts"]["n"] == pytest.approx(
        {"dtype": "int64", "min_val": n.min(), "max_val": n.max(), "mean": n.mean(), "std": n.std(), "per_nan": 0.0}
    )

    lengths = frame["s"].dropna().str.len()
    assert written["cats"]["s"] == pytest.approx({
        "dtype": "string", "cardinality": 6, "min_entry_size": 1, "max_entry_size": 6,
        "avg_entry_size": lengths.mean(), "per_nan": 100 * frame["s"].isna().mean(),
    })
    i = frame["i"]
    assert written["cats"]["i"] == pytest.approx({
        "dtype": "Int64", "cardinality": i.nunique(), "min_entry_size": int(i.min()), "max_entry_size": int(i.max()),
        "avg_entry_size": float(i.mean()), "per_nan": 100 * i.isna().mean(),
    })
    elements = frame["tags"].explode()
    list_sizes = frame["tags"].map(len)
    assert written["cats"]["tags"] == pytest.approx({
        "dtype": "list<string>", "cardinality": 6, "min_entry_size": 1, "max_entry_size": 6,
        "avg_entry_size": elements.str.len().mean(), "per_nan": 0.0,
        "multi_min": 1, "multi_max": 4, "multi_avg": list_sizes.mean(),
    })
    assert written["labels"]["label"] == {"dtype": "int64", "cardinality": 2, "per_nan": 0.0}
    # Counts are JSON integers, not floats.
    assert isinstance(written["cats"]["i"]["cardinality"], int) and isinstance(written["cats"]["tags"]["multi_max"], int)


def test_missing_statistics_are_null(tmp_path):
    out = tmp_path / "info.json"
    df = pd.DataFrame({"x": [1.5], "f": [0.25]})
    written = DatasetInspector().inspect(df, {"conts": ["x"], "labels": ["f"]}, str(out))
    assert written["conts"]["x"]["std"] is None  # the spread of one value
    assert written["labels"]["f"] == {"dtype": "float64", "cardinality": None, "per_nan": 0.0}
    assert written["cats"] == {} and _strict_json(out) == written


def test_a_path_is_opened_as_a_dataset(tmp_path, frame):
    frame.to_parquet(tmp_path / "data.parquet")
    written = DatasetInspector().inspect(str(tmp_path / "data.parquet"), {"conts": ["x"]}, str(tmp_path / "info.json"))
    assert written["num_rows"] == 2000 and written["conts"]["x"]["per_nan"] == pytest.approx(100 * frame["x"].isna().mean())


def test_columns_listed_wrongly_are_refused(tmp_path, frame):
    with pytest.raises(ValueError, match=r"more than one kind \(or twice\): \['x'\]"):
        DatasetInspector().inspect(frame, {"conts": ["x"], "cats": ["x"]}, str(tmp_path / "info.json"))
    with pytest.raises(ValueError, match=r"unknown column kinds \['targets'\]"):
        DatasetInspector().inspect(frame, {"targets": ["label"]}, str(tmp_path / "info.json"))
    assert os.listdir(tmp_path) == []


def test_output_replaces_a_file_atomically_and_never_a_directory(tmp_path, frame, monkeypatch):
    out = tmp_path / "info.json"
    out.write_text("previous")
    DatasetInspector().inspect(frame, {"conts": ["x"]}, str(out))
    assert _strict_json(out)["conts"]["x"]["dtype"] == "float64"
    assert os.listdir(tmp_path) == ["info.json"]

    @contextlib.contextmanager
    def failing_open(path, mode="rb"):
        with open(path, mode) as handle:
            handle.write(b'{"num_rows": ')
            yield handle
            raise OSError("disk full")

    before = out.read_text()
    monkeypatch.setattr(dataset_inspector, "open_file", failing_open)
    with pytest.raises(OSError, match="disk full"):
        DatasetInspector().inspect(frame, {"conts": ["n"]}, str(out))
    assert out.read_text() == before and os.listdir(tmp_path) == ["info.json"]

    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "keep.txt").write_text("keep")
    with pytest.raises(SaveError, match="is a directory; refusing to replace it"):
        DatasetInspector().inspect(frame, {"conts": ["x"]}, str(tmp_path / "folder"))
    assert os.listdir(tmp_path / "folder") == ["keep.txt"]


def test_np_encoder():
    text = json.dumps({"i": np.int32(7), "f": np.float64(0.5), "b": np.bool_(False), "a": np.array([[1, 2]])}, cls=NpEncoder)
    assert json.loads(text) == {"i": 7, "f": 0.5, "b": False, "a": [[1, 2]]}
    with pytest.raises(TypeError):
        json.dumps({"o": object()}, cls=NpEncoder)


def test_inspect_datagen_round_trip(tmp_path, frame):
    """NVTabular's test_inspect_datagen: a description written by the inspector generates a
    dataset whose description is the same (exactly for counts and ranges of sizes)."""
    first = DatasetInspector().inspect(nvt.Dataset(frame), COLUMNS, str(tmp_path / "info1.json"))
    cols = data_gen._get_cols_from_schema(_strict_json(tmp_path / "info1.json"))
    gen = data_gen.DatasetGen(data_gen.UniformDistro(), seed=21, cpu=True, gpu_frac=1e-5)
    files = gen.full_df_create(first["num_rows"], cols, entries=True, output=tmp_path / "generated")
    second = DatasetInspector().inspect(nvt.Dataset(files, engine="parquet"), COLUMNS, str(tmp_path / "info2.json"))

    assert second["num_rows"] == first["num_rows"]
    rows = first["num_rows"]
    for section in ("conts", "cats", "labels"):
        assert list(second[section]) == list(first[section])
        for name, described in first[section].items():
            again = second[section][name]
            assert list(again) == list(described), name
            for key, value in described.items():
                if key in ("dtype", "cardinality", "min_entry_size", "max_entry_size", "multi_min", "multi_max"):
                    assert again[key] == value, (name, key)
                elif key == "per_nan":
                    share = value / 100
                    assert abs(again[key] - value) <= 100 * 5 * math.sqrt(share * (1 - share) / rows) + 1e-9, name
                elif key in ("min_val", "max_val"):
                    span = described["max_val"] - described["min_val"]
                    assert again[key] == pytest.approx(value, abs=0.02 * span), (name, key)
                elif key in ("mean", "avg_entry_size", "multi_avg"):
                    # Five standard errors of the difference of two sample means; the spread of
                    # sizes is at most half their range.
                    spread = described.get("std") or (described.get("max_entry_size", 0) - described.get("min_entry_size", 0)) / 2
                    if key == "multi_avg":
                        spread = (described["multi_max"] - described["multi_min"]) / 2
                    assert abs(again[key] - value) <= 5 * spread * math.sqrt(2 / rows), (name, key)
                elif key == "std":
                    assert again[key] == pytest.approx(value, rel=0.1), (name, key)
                else:
                    raise AssertionError(f"unexpected key {key}")
