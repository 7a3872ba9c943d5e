"""CUDA delivery: pinned asynchronous copies (pandas engine) and DLPack (cuDF engine).

Each test compares what arrives on the GPU with the same loader on the CPU (the reference
path, itself checked against pandas in the other loader tests): same rows, same order, same
values, every row exactly once. Each test asks for what it needs, and says it when skipped:
PyTorch on a CUDA device (``needs_cuda``), the cuDF engine (``needs_cudf``), or both, as
every test of the cuDF engine here does: its columns reach torch by DLPack from CuPy, which a
CPU build of torch cannot take, whatever the device the batches go to.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from loader_data import CATS, CONTS, LABEL, NUM_ROWS, write_dataset

import tabflow as nvt
from tabflow.loader.torch import DLDataLoader, Loader, TorchAsyncItr

pytestmark = [pytest.mark.gpu]
needs_cuda = pytest.mark.usefixtures("cuda_device")
needs_cudf = pytest.mark.usefixtures("cudf_engine")


def _itr(dataset, device, **kwargs):
    kwargs.setdefault("batch_size", 32)
    kwargs.setdefault("shuffle", True)
    kwargs.setdefault("parts_per_chunk", 2)
    return TorchAsyncItr(dataset, cats=["row_id", *CATS], conts=CONTS, labels=[LABEL], device=device, **kwargs)


def _tuples(dataset, device, **kwargs):
    with _itr(dataset, device, **kwargs) as itr:
        return list(itr)


def _assert_same_batches(on_gpu, on_cpu):
    assert len(on_gpu) == len(on_cpu)
    for gpu_batch, cpu_batch in zip(on_gpu, on_cpu):
        for g, c in zip(gpu_batch, cpu_batch):
            assert g.is_cuda
            torch.testing.assert_close(g.cpu(), c, equal_nan=True, rtol=0, atol=0)


@needs_cuda
@pytest.mark.parametrize("parts_per_chunk", [1, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_host_engine_batches_arrive_on_the_gpu(dataset, shuffle, parts_per_chunk):
    # The GPU path permutes rows on the device; the permutation is the CPU path's.
    kwargs = dict(shuffle=shuffle, parts_per_chunk=parts_per_chunk)
    _assert_same_batches(_tuples(dataset, "cuda", **kwargs), _tuples(dataset, "cpu", **kwargs))


@needs_cuda
@pytest.mark.parametrize("global_size", [1, 3])
def test_every_row_exactly_once_per_epoch(dataset, frame, global_size):
    seen = []
    for rank in range(global_size):
        with _itr(dataset, "cuda", batch_size=17, global_size=global_size, global_rank=rank) as itr:
            for epoch in range(2):
                rows = torch.cat([x_cat[:, 0] for x_cat, _, _ in itr]).cpu().numpy()
                assert len(rows) == NUM_ROWS // global_size
                if epoch == 0:
                    seen.append(rows)
    rows = np.concatenate(seen)
    assert len(np.unique(rows)) == len(rows) == NUM_ROWS - NUM_ROWS % global_size
    assert set(rows) <= set(frame["row_id"])


@needs_cuda
def test_values_match_pandas(dataset, frame):
    with _itr(dataset, "cuda", batch_size=64, shuffle=True) as itr:
        batches = list(itr)
    x_cat = torch.cat([b[0] for b in batches]).cpu().numpy()
    x_cont = torch.cat([b[1] for b in batches]).cpu().numpy()
    y = torch.cat([b[2] for b in batches]).cpu().numpy()
    expected = frame.set_index("row_id").loc[x_cat[:, 0]]
    np.testing.assert_array_equal(x_cat[:, 1:], expected[CATS].to_numpy())
    np.testing.assert_allclose(x_cont, expected[CONTS].to_numpy(dtype="float32"), equal_nan=True)
    np.testing.assert_array_equal(y, expected[LABEL].to_numpy(dtype="float32"))


@needs_cuda
@pytest.mark.parametrize("shuffle", [False, True])
def test_kept_batches_are_not_overwritten(dataset, shuffle):
    # Chunks come from recycled pinned buffers and the CUDA caching allocator: batches the
    # consumer keeps (views of chunk tensors) hold their values while later epochs run.
    with _itr(dataset, "cuda", batch_size=16, shuffle=shuffle, parts_per_chunk=1) as itr:
        kept, copies = [], []
        for x_cat, x_cont, y in itr:
            kept.append((x_cat[:, 0], x_cont, y))
            copies.append((x_cat[:, 0].cpu(), x_cont.cpu(), y.cpu()))
        for _ in range(2):
            for _batch in itr:
                pass
    for (ids, conts, y), (ids0, conts0, y0) in zip(kept, copies):
        assert torch.equal(ids.cpu(), ids0) and torch.equal(y.cpu(), y0)
        torch.testing.assert_close(conts.cpu(), conts0, equal_nan=True, rtol=0, atol=0)
    assert sorted(i for ids, _, _ in copies for i in ids.tolist()) == list(range(NUM_ROWS))


@needs_cuda
def test_resume_mid_epoch_on_the_gpu(dataset):
    with _itr(dataset, "cuda", batch_size=20) as itr:
        whole = [x_cat.cpu() for x_cat, _, _ in itr]
    with _itr(dataset, "cuda", batch_size=20) as itr:
        it = iter(itr)
        head = [next(it)[0].cpu() for _ in range(4)]
        state = itr.state_dict()
    with _itr(dataset, "cuda", batch_size=20) as resumed:
        resumed.load_state_dict(state)
        tail = [x_cat.cpu() for x_cat, _, _ in resumed]
    assert all(torch.equal(a, b) for a, b in zip(head + tail, whole)) and len(head + tail) == len(whole)


@needs_cuda
@pytest.mark.parametrize("shuffle", [False, True])
def test_every_copy_to_the_gpu_reads_pinned_memory(dataset, monkeypatch, shuffle):
    # A copy from pageable memory is synchronous (and first allocates pinned memory): every
    # tensor a chunk moves to the GPU must already be in the loader's pinned pool.
    from tabflow.loader import _chunks, _tensors

    sources = []

    def recording(chunk, device):
        sources.extend(t.is_pinned() for t in _tensors._tensors(chunk) if t.device.type == "cpu")
        return _tensors.chunk_to_device(chunk, device)

    monkeypatch.setattr(_chunks, "chunk_to_device", recording)
    with _itr(dataset, "cuda", batch_size=64, shuffle=shuffle) as itr:
        list(itr)
    assert sources and all(sources)


@needs_cuda
def test_gpu_memory_stays_bounded_over_epochs(tmp_path):
    # 40 partitions of 5,000 rows: device memory in use during an epoch is a few chunks,
    # not the dataset, and it does not grow from epoch to epoch.
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"row_id": np.arange(200_000), "c1": rng.integers(0, 9, 200_000), "c2": rng.integers(0, 9, 200_000),
                          "x1": rng.random(200_000), "x2": rng.random(200_000), "label": rng.integers(0, 2, 200_000)})
    write_dataset(str(tmp_path / "d"), frame, files=[(100_000, 5_000), (100_000, 5_000)])
    dataset = nvt.Dataset(str(tmp_path / "d"), engine="parquet", part_size=1, cpu=True)
    row_bytes = 8 * 3 + 4 * 2 + 4
    chunk_bytes = 2 * 5_000 * row_bytes
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    peaks = []
    with _itr(dataset, "cuda", batch_size=1000, parts_per_chunk=2) as itr:
        for _ in range(3):
            for batch in itr:
                del batch
            peaks.append(torch.cuda.max_memory_allocated() - base)
    # queue (2) + the chunk being cut + the one being built and its shuffled copy, with
    # room for the allocator's rounding.
    assert peaks[-1] <= 8 * chunk_bytes, (peaks, chunk_bytes)
    assert peaks[-1] <= peaks[0] * 1.5 + chunk_bytes


@needs_cuda
def test_errors_in_the_loader_thread_reach_the_consumer(tmp_path):
    frame = pd.DataFrame({"row_id": np.arange(40), "c1": pd.array([1] * 39 + [None], dtype="Int64"), "c2": 1,
                          "x1": 0.5, "x2": 0.5, "label": 1})
    write_dataset(str(tmp_path / "d"), frame, files=[(40, 10)])
    dataset = nvt.Dataset(str(tmp_path / "d"), engine="parquet", part_size=1, cpu=True)
    with pytest.raises(ValueError, match="'c1'.*null"):
        with _itr(dataset, "cuda", batch_size=8) as itr:
            list(itr)


@needs_cuda
def test_device_index_and_dataloader(dataset):
    itr = TorchAsyncItr(dataset, batch_size=64, cats=CATS, conts=CONTS, labels=[LABEL], device=0)
    with DLDataLoader(itr, collate_fn=lambda b: (b[0], b[1], b[2].long()), batch_size=None) as dl:
        assert dl.device == torch.device("cuda", 0)
        assert all(b[0].is_cuda and b[2].dtype == torch.int64 for b in dl)


@needs_cuda
@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_loader_lists_on_the_gpu(dataset, sparse_as_dense):
    options = dict(batch_size=50, sparse_names=["tags"], sparse_max={"tags": 4}, sparse_as_dense=sparse_as_dense, shuffle=True)
    with Loader(dataset, device="cuda", **options) as gpu, Loader(dataset, device="cpu", **options) as cpu:
        gpu_batches, cpu_batches = list(gpu), list(cpu)
    assert len(gpu_batches) == len(cpu_batches)
    for (gi, gt), (ci, ct) in zip(gpu_batches, cpu_batches):
        assert gi["tags"].is_cuda and gt.is_cuda
        torch.testing.assert_close(gi["tags"].to_dense().cpu(), ci["tags"].to_dense())
        torch.testing.assert_close(gi["row_id"].cpu(), ci["row_id"])
        torch.testing.assert_close(gt.cpu(), ct)


def _cudf_dataset(data_dir):
    return nvt.Dataset(data_dir, engine="parquet", part_size=1, cpu=False)


@needs_cuda
@needs_cudf
@pytest.mark.parametrize("shuffle", [False, True])
def test_cudf_engine_uses_dlpack(data_dir, shuffle):
    gpu_ds = _cudf_dataset(data_dir)
    cpu_ds = nvt.Dataset(data_dir, engine="parquet", part_size=1, cpu=True)
    _assert_same_batches(_tuples(gpu_ds, None, shuffle=shuffle), _tuples(cpu_ds, "cpu", shuffle=shuffle))


@needs_cuda
@needs_cudf
def test_cudf_engine_to_a_cpu_device(data_dir):
    gpu_ds = _cudf_dataset(data_dir)
    cpu_ds = nvt.Dataset(data_dir, engine="parquet", part_size=1, cpu=True)
    for gpu_batch, cpu_batch in zip(_tuples(gpu_ds, "cpu"), _tuples(cpu_ds, "cpu")):
        for g, c in zip(gpu_batch, cpu_batch):
            assert not g.is_cuda
            torch.testing.assert_close(g, c, equal_nan=True, rtol=0, atol=0)


@needs_cuda
@needs_cudf
def test_cudf_engine_lists(data_dir):
    gpu_ds = _cudf_dataset(data_dir)
    cpu_ds = nvt.Dataset(data_dir, engine="parquet", part_size=1, cpu=True)
    options = dict(batch_size=50, sparse_names=["tags"], sparse_max={"tags": 4}, sparse_as_dense=True, shuffle=True)
    with Loader(gpu_ds, **options) as gpu, Loader(cpu_ds, device="cpu", **options) as cpu:
        pairs = list(zip(gpu, cpu))
    assert pairs
    for (gi, _), (ci, _) in pairs:
        assert gi["tags"].is_cuda
        torch.testing.assert_close(gi["tags"].cpu(), ci["tags"])
        torch.testing.assert_close(gi["row_id"].cpu(), ci["row_id"])
