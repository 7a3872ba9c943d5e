"""DataStats: per-column statistics in NVTabular 23.08's ``output`` format; data unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from _op_helpers import dataset_with_empty_partitions

import tabflow as nvt
from tabflow import ops
from tabflow.testing import assert_frame_equal

# pandas' own text dtype (``str`` on pandas 3), what tabflow holds strings as.
STRING = pd.Series(["x"]).dtype if isinstance(pd.Series(["x"]).dtype, pd.StringDtype) else pd.StringDtype("pyarrow")


@pytest.fixture
def frame(rng):
    n = 120
    x = rng.normal(5, 2, n)
    x[[1, 2, 3]] = np.nan
    s = rng.choice(["a", "b", "c", "d"], n).astype(object)
    s[[0, 9]] = None
    rows = [list(map(int, rng.integers(0, 10, k))) for k in rng.integers(0, 5, n)]
    rows[7] = None
    return pd.DataFrame(
        {
            "x": x,
            "i": pd.array(rng.integers(0, 50, n), dtype="Int64"),
            "s": pd.array(s, dtype=STRING),
            "l": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(pa.int64())))),
        }
    )


def _fit(frame, dataset):
    stats = ops.DataStats()
    workflow = nvt.Workflow(["x", "i", "s", "l"] >> stats)
    out = workflow.fit_transform(dataset)
    return stats, out


def test_statistics_match_pandas(frame, engine, to_engine):
    stats, out = _fit(frame, nvt.Dataset(to_engine(frame), npartitions=4))
    assert_frame_equal(out.to_ddf(arrow_lists=True).compute(), frame)
    output = stats.output
    assert list(output) == ["x", "i", "s", "l"]
    x = frame["x"]
    assert set(output["x"]) == {"dtype", "min", "max", "per_nan", "mean", "std"}  # floats: no cardinality
    assert output["x"]["dtype"] == "float64" and output["x"]["per_nan"] == pytest.approx(100 * 3 / len(x))
    np.testing.assert_allclose([output["x"][k] for k in ("min", "max", "mean", "std")], [x.min(), x.max(), x.mean(), x.std()])
    i = frame["i"]
    # A cuDF frame has no masked integer dtypes: its Int64 column without a null is int64 there
    # (docs/migrating.md, "What differs on purpose"); data read from files keep their planned Int64.
    assert output["i"] == {
        "dtype": "int64" if engine == "cudf" else "Int64", "min": int(i.min()), "max": int(i.max()), "per_nan": 0.0,
        "mean": pytest.approx(i.mean()), "std": pytest.approx(i.std()), "cardinality": i.nunique(),
    }
    # Strings are measured by their lengths, as NVTabular measured them.
    lengths_s = frame["s"].str.len()
    assert output["s"]["cardinality"] == frame["s"].nunique() and output["s"]["dtype"] == "string"
    assert (output["s"]["min"], output["s"]["max"]) == (lengths_s.min(), lengths_s.max())
    assert output["s"]["per_nan"] == pytest.approx(100 * 2 / len(frame))
    # Lists: element statistics, plus the lengths (tabflow's addition).
    lengths = frame["l"].map(lambda r: 0 if r is pd.NA else len(r))
    elements = frame["l"].dropna().explode().dropna().astype(float)
    assert output["l"]["per_nan"] == pytest.approx(100 / len(frame))
    assert (output["l"]["list_min"], output["l"]["list_max"]) == (lengths.min(), lengths.max())
    assert output["l"]["list_mean"] == pytest.approx(lengths.mean())
    assert output["l"]["max"] == elements.max() and output["l"]["mean"] == pytest.approx(elements.mean())
    assert output["l"]["cardinality"] == elements.nunique()
    # The fitted table keeps the counts too.
    assert stats.stats_.set_index("column").loc["x", "nulls"] == 3


def test_output_is_plain_python_and_json_serialisable(frame):
    import json

    stats, _ = _fit(frame, frame)
    assert json.loads(json.dumps(stats.output, allow_nan=True)).keys() == stats.output.keys()
    assert all(type(v) in (str, int, float) for column in stats.output.values() for v in column.values())


def test_many_partitions_equal_one(frame):
    one, _ = _fit(frame, nvt.Dataset(frame, npartitions=1))
    many, _ = _fit(frame, dataset_with_empty_partitions(frame, 7))
    pd.testing.assert_frame_equal(one.stats_, many.stats_, check_exact=False, rtol=1e-12)


def test_save_load_round_trip(frame, tmp_path):
    stats = ops.DataStats()
    workflow = nvt.Workflow(["x", "s", "l"] >> stats).fit(frame)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.ops[0].stats_, stats.stats_)
    with pytest.raises(ops.NotFittedError):
        ops.DataStats().output
