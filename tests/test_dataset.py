"""Dataset facts and conversions that do not depend on the file format."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow.backends import gpu_available
from tabflow.schema import ColumnSchema, Schema, Tags


@pytest.fixture
def frame(rng):
    return pd.DataFrame({"a": np.arange(100), "x": rng.random(100), "s": rng.choice(["p", "q"], 100)})


def test_facts(frame):
    ds = nvt.Dataset(frame, npartitions=3)
    assert ds.num_rows == 100 and ds.npartitions == 3
    assert ds.schema.column_names == ["a", "x", "s"]
    assert ds.schema.dtypes == {"a": "int64", "x": "float64", "s": "string"}
    assert "npartitions=3" in repr(ds)
    assert ds.head(4)["a"].tolist() == [0, 1, 2, 3]
    assert len(ds.compute()) == 100


def test_given_schema_keeps_tags_and_takes_data_dtypes(frame):
    given = Schema([ColumnSchema("a", dtype="float32", tags={Tags.CATEGORICAL}, properties={"cardinality": 100})])
    ds = nvt.Dataset(frame, schema=given)
    assert Tags.CATEGORICAL in ds.schema["a"].tags
    assert ds.schema["a"].properties == {"cardinality": 100}
    assert ds.schema["a"].dtype == "int64"  # what the data holds wins
    assert ds.schema["x"].tags == frozenset()


def test_schema_json_next_to_files_is_read(tmp_path, frame):
    frame.to_parquet(tmp_path / "d.parquet", index=False)
    Schema([ColumnSchema("s", dtype="string", tags={Tags.CATEGORICAL})]).to_json(str(tmp_path / "schema.json"))
    ds = nvt.Dataset(str(tmp_path))
    assert Tags.CATEGORICAL in ds.schema["s"].tags
    assert ds.num_rows == 100  # schema.json is not mistaken for data


def test_repartition(frame):
    ds = nvt.Dataset(frame, npartitions=2).repartition(5)
    assert ds.npartitions == 5 and ds.compute()["a"].tolist() == list(range(100))


def test_cpu_true_keeps_pandas(frame):
    assert nvt.Dataset(frame, cpu=True).engine == "pandas"


def test_a_cudf_that_fails_to_import_is_reported_as_it_is(tmp_path):
    # cuDF 26.10 beside numpy 2.5 fails inside numba-cuda: neither "no GPU" nor a corrupt
    # file, but that import error, with the fix, wherever the GPU engine is asked for.
    fake = tmp_path / "site" / "cudf"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise AttributeError("module \'numpy\' has no attribute \'row_stack\'")\n')
    pd.DataFrame({"a": [1, 2]}).to_parquet(tmp_path / "d.parquet")
    script = f"""
import pandas as pd, pytest, tabflow as nvt
from tabflow.backends import gpu_available, gpu_unavailable_reason
reason = gpu_unavailable_reason()
assert not gpu_available() and "cannot be imported: AttributeError: module 'numpy' has no attribute 'row_stack'" in reason, reason
assert "numpy<2.5" in reason and "gpu-cu13" in reason, reason
for data in (pd.DataFrame({{"a": [1]}}), {str(tmp_path / "d.parquet")!r}):
    with pytest.raises(ImportError, match="row_stack") as caught:
        nvt.Dataset(data, cpu=False)
    assert "corrupt" not in str(caught.value)
assert nvt.Dataset(pd.DataFrame({{"a": [1]}})).engine == "pandas"  # the default engine falls back
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.skipif(gpu_available(), reason="checks the message shown without cuDF")
def test_cpu_false_without_cudf_says_what_to_install(frame, tmp_path):
    with pytest.raises(ImportError, match="cudf"):
        nvt.Dataset(frame, cpu=False)
    frame.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(ImportError, match="cudf"):
        nvt.Dataset(str(tmp_path), cpu=False)


def test_not_a_frame():
    with pytest.raises(TypeError, match="DataFrame"):
        nvt.Dataset(42)


@pytest.mark.parametrize("part_size", [0, -1, "-5MB", "abc", "0B", 0.5, float("nan"), True, [128]])
def test_bad_part_size_is_a_clear_error(frame, tmp_path, part_size):
    frame.to_parquet(tmp_path / "f.parquet")
    for source in (frame, str(tmp_path / "f.parquet")):
        with pytest.raises(ValueError, match=r"part_size must be a positive number of bytes .*'128MB'.*got " + _escaped(part_size)):
            nvt.Dataset(source, part_size=part_size)


@pytest.mark.parametrize("fraction", [0, -0.1, 1.5, "0.5", float("nan")])
def test_bad_part_mem_fraction_is_a_clear_error(frame, fraction):
    with pytest.raises(ValueError, match=r"part_mem_fraction must be a number in \(0, 1\].*got " + _escaped(fraction)):
        nvt.Dataset(frame, part_mem_fraction=fraction)


def test_good_part_sizes_are_accepted(frame):
    assert nvt.Dataset(frame, part_size="1KB").npartitions > nvt.Dataset(frame, part_size=10**9).npartitions == 1
    assert nvt.Dataset(frame, part_size=1).npartitions == 100  # as small as one row per partition
    assert nvt.Dataset(frame, part_mem_fraction=1).npartitions == 1


def _escaped(value):
    import re

    return re.escape(repr(value))


def test_compute_passes_dask_options_on(frame):
    # merlin's Dataset.compute(*args, **kwargs) is the dask frame's compute
    workflow = nvt.Workflow(["a"] >> nvt.ops.LambdaOp(lambda col: col.astype("int16"), dtype="int16"))
    out = workflow.fit_transform(nvt.Dataset(frame, npartitions=3)).compute(scheduler="synchronous")
    assert out["a"].dtype == "int16" and out["a"].tolist() == frame["a"].tolist()
    numbers = frame[["a", "x"]]
    computed = nvt.Dataset(numbers, npartitions=3).compute(scheduler="synchronous", optimize_graph=False)
    pd.testing.assert_frame_equal(computed, numbers)
