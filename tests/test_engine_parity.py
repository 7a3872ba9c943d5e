"""The pandas and cuDF engines give the same workflow outputs on Criteo-like data.

Same vocabularies (values, order, counts), same stable hashes, same statistics, normalised
values equal to float tolerance; a workflow fitted on one engine transforms the other's data
identically, and a saved workflow written on one engine loads and runs on the other.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabflow as nvt
from tabflow import ops
from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS, write_criteo

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("cudf_engine")]

ROWS = 120_000


@pytest.fixture(scope="module")
def raw_dir(tmp_path_factory) -> str:
    directory = tmp_path_factory.mktemp("criteo")
    # A small cardinality scale gives frequent values, so freq_threshold keeps and drops some.
    write_criteo(directory, ROWS, num_files=3, seed=5, cardinality_scale=0.01, row_group_size=15_000)
    return str(directory)


def _criteo_workflow() -> nvt.Workflow:
    cats = CATEGORICAL_COLUMNS >> ops.Categorify(freq_threshold=3)
    conts = CONTINUOUS_COLUMNS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    return nvt.Workflow(cats + conts + ["label"])


def _features_workflow() -> nvt.Workflow:
    hashed = CATEGORICAL_COLUMNS[:6] >> ops.HashBucket(num_buckets=1000)
    crossed = [CATEGORICAL_COLUMNS[0:2], ["C3", "I1"]] >> ops.HashedCross(num_buckets=5000)
    bucketed = CATEGORICAL_COLUMNS[6:9] >> ops.Categorify(num_buckets=64, freq_threshold=5)
    combo = [["C1", "C2"]] >> ops.Categorify(encode_type="combo")
    target = ["C4", "C5"] >> ops.TargetEncoding("label", kfold=3, p_smooth=10)
    grouped = ["C6"] >> ops.JoinGroupby(cont_cols=["I2"], stats=["count", "mean", "std"])
    medians = CONTINUOUS_COLUMNS[:4] >> ops.FillMedian() >> ops.NormalizeMinMax()
    return nvt.Workflow(hashed + crossed + bucketed + combo + target + grouped + medians + ["label"])


def _datasets(raw_dir: str) -> tuple[nvt.Dataset, nvt.Dataset]:
    return (nvt.Dataset(raw_dir, engine="parquet", part_size="2MB", cpu=True),
            nvt.Dataset(raw_dir, engine="parquet", part_size="2MB", cpu=False))


def _host(dataset_or_frame) -> pd.DataFrame:
    from tabflow.backends import backend_for

    frame = dataset_or_frame.compute() if hasattr(dataset_or_frame, "compute") else dataset_or_frame
    return backend_for(frame).to_host(frame).reset_index(drop=True)


def _assert_outputs_equal(cpu: pd.DataFrame, gpu: pd.DataFrame) -> None:
    assert list(cpu.columns) == list(gpu.columns)
    for name in cpu.columns:
        left, right = cpu[name], gpu[name]
        if pd.api.types.is_float_dtype(left.dtype):
            np.testing.assert_allclose(right.to_numpy(dtype="float64", na_value=np.nan),
                                       left.to_numpy(dtype="float64", na_value=np.nan),
                                       rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(right.to_numpy(), left.to_numpy(), err_msg=name)
    assert (cpu.dtypes.astype(str) == gpu.dtypes.astype(str)).all(), (cpu.dtypes, gpu.dtypes)


def test_criteo_workflow_same_vocabularies_statistics_and_outputs(raw_dir):
    cpu_ds, gpu_ds = _datasets(raw_dir)
    assert gpu_ds.engine == "cudf"
    on_cpu, on_gpu = _criteo_workflow(), _criteo_workflow()
    on_cpu.fit(cpu_ds)
    on_gpu.fit(gpu_ds)

    fitted_cpu = {type(op).__name__: op for op in on_cpu.ops}
    fitted_gpu = {type(op).__name__: op for op in on_gpu.ops}
    for key, vocab in fitted_cpu["Categorify"].vocabs_.items():
        pd.testing.assert_frame_equal(
            _host(fitted_gpu["Categorify"].vocabs_[key]), _host(vocab), check_dtype=False, obj=f"vocabulary of {key}"
        )
    assert fitted_gpu["Categorify"].null_counts_ == fitted_cpu["Categorify"].null_counts_
    for name, mean in fitted_cpu["Normalize"].means_.items():
        assert fitted_gpu["Normalize"].means_[name] == pytest.approx(mean, rel=1e-9)
        assert fitted_gpu["Normalize"].stds_[name] == pytest.approx(fitted_cpu["Normalize"].stds_[name], rel=1e-9)
    assert nvt.ops.get_embedding_sizes(on_cpu) == nvt.ops.get_embedding_sizes(on_gpu)

    cpu_out = _host(on_cpu.transform(cpu_ds))
    gpu_out = _host(on_gpu.transform(gpu_ds))
    assert len(cpu_out) == ROWS
    _assert_outputs_equal(cpu_out, gpu_out)
    # A workflow fitted on one engine transforms the other engine's data the same way.
    _assert_outputs_equal(cpu_out, _host(on_cpu.transform(gpu_ds)))
    _assert_outputs_equal(cpu_out, _host(on_gpu.transform(cpu_ds)))


def test_hashes_crosses_and_statistics_ops_agree(raw_dir):
    cpu_ds, gpu_ds = _datasets(raw_dir)
    on_cpu, on_gpu = _features_workflow(), _features_workflow()
    cpu_out = _host(on_cpu.fit_transform(cpu_ds))
    gpu_out = _host(on_gpu.fit_transform(gpu_ds))
    _assert_outputs_equal(cpu_out, gpu_out)


def test_saved_workflow_runs_on_the_other_engine(raw_dir, tmp_path):
    cpu_ds, gpu_ds = _datasets(raw_dir)
    workflow = _criteo_workflow()
    workflow.fit(gpu_ds)
    workflow.save(str(tmp_path / "wf"))
    loaded = nvt.Workflow.load(str(tmp_path / "wf"))
    _assert_outputs_equal(_host(workflow.transform(gpu_ds)), _host(loaded.transform(cpu_ds)))


def test_written_parquet_is_the_same(raw_dir, tmp_path):
    cpu_ds, gpu_ds = _datasets(raw_dir)
    workflow = _criteo_workflow()
    workflow.fit(cpu_ds)
    workflow.transform(cpu_ds).to_parquet(str(tmp_path / "cpu"))
    workflow.transform(gpu_ds).to_parquet(str(tmp_path / "gpu"))
    cpu_read = nvt.Dataset(str(tmp_path / "cpu"), cpu=True)
    gpu_read = nvt.Dataset(str(tmp_path / "gpu"), cpu=True)
    assert cpu_read.schema.column_names == gpu_read.schema.column_names
    _assert_outputs_equal(_host(cpu_read), _host(gpu_read))
