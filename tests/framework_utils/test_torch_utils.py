"""DictTransform, FastaiTransform and process_epoch over both tabflow batch forms.

References are built with plain pandas/torch from the transformed parquet (read back with
pandas), batch by batch in file order (the loaders run unshuffled here).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from framework_data import (
    CATS,
    CONTS,
    LABEL,
    MULTI_HOT,
    NUM_ROWS,
    leaked_loader_threads,
    write_etl_output,
)

from tabflow.framework_utils.torch.models import Model
from tabflow.framework_utils.torch.utils import (
    DictTransform,
    FastaiTransform,
    process_epoch,
)
from tabflow.loader.torch import DLDataLoader, Loader, TorchAsyncItr
from tabflow.ops import get_embedding_sizes

BATCH = 64


@pytest.fixture(scope="module")
def etl(tmp_path_factory):
    return write_etl_output(tmp_path_factory.mktemp("framework_utils"))


@pytest.fixture
def dataset(etl):
    import tabflow as nvt

    return nvt.Dataset(etl[0], engine="parquet", cpu=True)


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Every loader thread a test starts is gone when the test ends."""
    import threading

    before = set(threading.enumerate())
    yield
    leaked = leaked_loader_threads(before)
    assert not leaked, f"threads left running: {leaked}"


# ------------------------------------------------------------------------------ references


def _rows(frame: pd.DataFrame, k: int, batch_size: int = BATCH) -> pd.DataFrame:
    return frame.iloc[k * batch_size : (k + 1) * batch_size]


def _stacked(rows: pd.DataFrame, names: list[str], dtype) -> torch.Tensor:
    return torch.tensor(rows[names].to_numpy().astype(dtype))


def _flat_lists(rows: pd.DataFrame, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    lists = [list(v) for v in rows[name]]
    values = torch.tensor([v for row in lists for v in row], dtype=torch.int64)
    offsets = torch.tensor(np.concatenate([[0], np.cumsum([len(r) for r in lists])]), dtype=torch.int64)
    return values, offsets


def _padded(rows: pd.DataFrame, name: str, width: int) -> torch.Tensor:
    return torch.tensor([list(v) + [0] * (width - len(v)) for v in rows[name]], dtype=torch.int64)


def _itr(dataset, **kwargs) -> TorchAsyncItr:
    return TorchAsyncItr(dataset, batch_size=BATCH, cats=CATS, conts=CONTS, labels=[LABEL], **kwargs)


def _loader(dataset, cats=CATS + MULTI_HOT, **kwargs) -> Loader:
    return Loader(dataset, batch_size=BATCH, cats=cats, conts=CONTS, labels=[LABEL], **kwargs)


# ------------------------------------------------------------------------------ DictTransform


def test_dict_transform_of_torch_async_itr_batches(dataset, etl):
    frame = etl[2]
    with _itr(dataset) as itr:
        transform = DictTransform(itr)
        assert (transform.cats, transform.conts, transform.labels) == (CATS, CONTS, [LABEL])
        for k, batch in enumerate(itr):
            (x_single, multi_hot), x_cont, y = transform.transform(batch)
            rows = _rows(frame, k)
            assert torch.equal(x_single, _stacked(rows, CATS, np.int64)) and multi_hot == {}
            torch.testing.assert_close(x_cont, _stacked(rows, CONTS, np.float32))
            torch.testing.assert_close(y, torch.tensor(rows[LABEL].to_numpy()))


def test_dict_transform_of_loader_batches(dataset, etl):
    frame = etl[2]
    with _loader(dataset) as loader:
        transform = DictTransform(loader)
        assert transform.cats == CATS + MULTI_HOT
        for k, batch in enumerate(loader):
            (x_single, multi_hot), x_cont, y = transform.transform(batch)
            rows = _rows(frame, k)
            assert x_single.dtype == torch.int64 and torch.equal(x_single, _stacked(rows, CATS, np.int64))
            values, offsets = multi_hot["tags"]
            expected_values, expected_offsets = _flat_lists(rows, "tags")
            assert torch.equal(values, expected_values) and torch.equal(offsets, expected_offsets)
            torch.testing.assert_close(x_cont, _stacked(rows, CONTS, np.float32))
            torch.testing.assert_close(y, torch.tensor(rows[LABEL].to_numpy()))


def test_dict_transform_stacks_in_the_loaders_column_order(dataset, etl):
    frame = etl[2]
    with _loader(dataset, cats=["item", "tags", "user"]) as loader:
        (x_single, multi_hot), _, _ = DictTransform(loader).transform(next(iter(loader)))
    assert torch.equal(x_single, _stacked(_rows(frame, 0), ["item", "user"], np.int64))
    assert list(multi_hot) == ["tags"]


def test_dict_transform_padded_and_sparse_list_columns(dataset, etl):
    rows = _rows(etl[2], 0)
    width = int(etl[2]["tags"].map(len).max())
    with _loader(dataset, sparse_as_dense=True, sparse_max={"tags": width}) as loader:
        (_, multi_hot), _, _ = DictTransform(loader).transform(next(iter(loader)))
    assert torch.equal(multi_hot["tags"], _padded(rows, "tags", width))
    with _loader(dataset, sparse_names=["tags"], sparse_max={"tags": width}) as loader:
        (_, multi_hot), _, _ = DictTransform(loader).transform(next(iter(loader)))
    assert multi_hot["tags"].is_sparse and torch.equal(multi_hot["tags"].to_dense(), _padded(rows, "tags", width))


def test_dict_transform_agrees_across_batch_forms(dataset):
    with _itr(dataset) as itr, _loader(dataset, cats=CATS) as loader:
        for tuple_batch, dict_batch in zip(itr, loader, strict=True):
            (a_cat, _), a_cont, a_y = DictTransform(itr).transform(tuple_batch)
            (b_cat, _), b_cont, b_y = DictTransform(loader).transform(dict_batch)
            assert torch.equal(a_cat, b_cat) and torch.equal(a_cont, b_cont) and torch.equal(a_y, b_y)


def test_dict_transform_without_categorical_or_continuous_columns(dataset):
    with TorchAsyncItr(dataset, batch_size=BATCH, cats=CATS, conts=[], labels=[LABEL]) as itr:
        cats, conts, _ = DictTransform(itr).transform(next(iter(itr)))
    assert conts is None and cats[0].shape == (BATCH, 2)
    with Loader(dataset, batch_size=BATCH, cats=[], conts=CONTS, labels=[LABEL]) as loader:
        cats, conts, _ = DictTransform(loader).transform(next(iter(loader)))
    assert cats is None and conts.shape == (BATCH, 2)


def test_dict_transform_errors(dataset):
    with pytest.raises(TypeError, match="cat_names"):
        DictTransform(object())
    with _loader(dataset) as loader:
        transform = DictTransform(loader)
        with pytest.raises(TypeError, match="TorchAsyncItr"):
            transform.transform(torch.zeros(3))
        with pytest.raises(KeyError, match="'user'"):
            transform.transform(({"item": torch.zeros(2)}, torch.zeros(2)))


def test_dict_transform_takes_a_dldataloader(dataset):
    with _itr(dataset) as itr:
        assert DictTransform(DLDataLoader(itr, batch_size=None)).cats == CATS


# ------------------------------------------------------------------------------ FastaiTransform


def test_fastai_transform_of_both_batch_forms(dataset, etl):
    frame = etl[2]
    with _itr(dataset) as itr, _loader(dataset) as loader:
        for k, (tuple_batch, dict_batch) in enumerate(zip(itr, loader, strict=True)):
            rows = _rows(frame, k)
            converted = [FastaiTransform(itr).transform(tuple_batch), FastaiTransform(loader).transform(dict_batch)]
            for x_cat, x_cont, y in converted:
                # The list column "tags" is left out: TabularModel has no multi-hot input.
                assert x_cat.dtype == torch.int64 and torch.equal(x_cat, _stacked(rows, CATS, np.int64))
                torch.testing.assert_close(x_cont, _stacked(rows, CONTS, np.float32))
                assert y.dtype == torch.int64 and torch.equal(y, torch.tensor(rows[LABEL].to_numpy()).long())


def test_fastai_transform_empty_roles_and_several_labels(dataset, etl):
    rows = _rows(etl[2], 0)
    with Loader(dataset, batch_size=BATCH, cats=["user"], conts=[], labels=[LABEL, "item"]) as loader:
        x_cat, x_cont, y = FastaiTransform(loader).transform(next(iter(loader)))
    assert x_cont.shape == (BATCH, 0) and x_cont.dtype == torch.float32
    assert torch.equal(y, torch.tensor(np.stack([rows[LABEL].to_numpy(), rows["item"].to_numpy()], axis=1)).long())
    with Loader(dataset, batch_size=BATCH, cats=[], conts=CONTS, labels=[]) as loader:
        transform = FastaiTransform(loader)
        with pytest.raises(ValueError, match="labels"):
            transform.transform(next(iter(loader)))


# ------------------------------------------------------------------------------ process_epoch


def _model(workflow, multi_hot: bool = False, seed: int = 0) -> Model:
    torch.manual_seed(seed)
    single, multi = get_embedding_sizes(workflow)
    shapes = (single, multi) if multi_hot else single
    return Model(shapes, num_continuous=len(CONTS), emb_dropout=0.0, layer_hidden_dims=[32, 16],
                 layer_dropout_rates=[0.0, 0.0])


def _train(loader, model, epochs: int = 6) -> list[float]:
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    return [process_epoch(loader, model, train=True, optimizer=optimizer)[0] for _ in range(epochs)]


def test_process_epoch_trains_through_torch_async_itr(dataset, etl, capsys):
    _, workflow, frame = etl
    model = _model(workflow)
    with _itr(dataset) as itr:
        losses = _train(itr, model)
        assert losses[-1] < 0.5 * losses[0], losses
        loss, y_pred, y = process_epoch(itr, model)
    assert not model.training
    assert capsys.readouterr().out.splitlines()[-1] == f"Total batches: {-(-NUM_ROWS // BATCH)}"
    assert y_pred.shape == (NUM_ROWS,) and y_pred.dtype == torch.float32 and not y_pred.requires_grad
    torch.testing.assert_close(y, torch.tensor(frame[LABEL].to_numpy()))
    assert loss == pytest.approx(torch.nn.functional.mse_loss(y_pred, y).item())


def test_process_epoch_through_dldataloader_as_the_notebooks_do(dataset, etl):
    model = _model(etl[1])
    with _itr(dataset, shuffle=True) as itr:
        loader = DLDataLoader(itr, batch_size=None, collate_fn=lambda x: x, pin_memory=False, num_workers=0)
        losses = _train(loader, model)
        assert losses[-1] < 0.5 * losses[0], losses
        before = [p.detach().clone() for p in model.parameters()]
        valid_loss, y_pred, y = process_epoch(loader, model, train=False)
        assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
        assert itr.num_rows_processed == NUM_ROWS and y_pred.shape == y.shape == (NUM_ROWS,)
        assert np.isfinite(valid_loss)


def test_process_epoch_with_multi_hot_columns(dataset, etl):
    model = _model(etl[1], multi_hot=True)
    width = int(etl[2]["tags"].map(len).max())
    with _loader(dataset) as flat, _loader(dataset, sparse_as_dense=True, sparse_max={"tags": width}) as padded:
        losses = _train(flat, model)
        assert losses[-1] < 0.5 * losses[0], losses
        # Both list layouts reach the same embedding bags: identical predictions.
        _, from_flat, _ = process_epoch(flat, model)
        _, from_padded, _ = process_epoch(padded, model)
    torch.testing.assert_close(from_flat, from_padded)


@pytest.mark.parametrize("form", ["class", "instance", "bound method", "none"])
def test_process_epoch_transform_forms(dataset, etl, form):
    model = _model(etl[1])
    with _itr(dataset) as itr:
        transform = {"class": DictTransform, "instance": DictTransform(itr),
                     "bound method": DictTransform(itr).transform, "none": None}[form]
        _, y_pred, _ = process_epoch(itr, model, transform=transform)
        _, reference, _ = process_epoch(itr, model)
    torch.testing.assert_close(y_pred, reference)


def test_process_epoch_device_moves_nested_batches(dataset, etl):
    model = _model(etl[1], multi_hot=True)
    with _loader(dataset) as loader:
        _, y_pred, _ = process_epoch(loader, model, device="cpu")
    assert y_pred.device == torch.device("cpu") and y_pred.shape == (NUM_ROWS,)


def test_process_epoch_errors(dataset, etl):
    model = _model(etl[1])
    with _loader(dataset, cats=CATS) as loader:
        with pytest.raises(ValueError, match="optimizer"):
            process_epoch(loader, model, train=True)
        with pytest.raises(TypeError, match="DictTransform"):
            process_epoch(loader, model, transform=None)
    with pytest.raises(ValueError, match="no batches"):
        process_epoch([], model, transform=None)
    with pytest.raises(TypeError, match="transform"):
        process_epoch([], model, transform=3)


@pytest.mark.gpu
def test_process_epoch_with_amp_on_the_gpu(dataset, etl, cuda_device):
    model = _model(etl[1], multi_hot=True).to("cuda")
    with _loader(dataset, device="cuda") as loader:
        losses = _train(loader, model)
        _, y_pred, y = process_epoch(loader, model)
    assert losses[-1] < 0.5 * losses[0], losses
    assert y_pred.is_cuda and y.is_cuda and y_pred.shape == y.shape == (NUM_ROWS,)
    assert bool(torch.isfinite(y_pred.float()).all())


def test_dense_fixed_shape_list_batches_in_the_torch_modules():
    # A list column whose schema fixes its shape reaches the modules as one dense tensor.
    import tabflow as nvt
    from tabflow.framework_utils.torch import EmbeddingFeature, EmbeddingTables
    from tabflow.framework_utils.torch.utils import DictTransform

    df = pd.DataFrame({"c": [1, 2, 3, 4], "x": [0.5, 1.0, 1.5, 2.0], "y": [0, 1, 0, 1]})
    df["fixed"] = [[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 2]]
    df["cube"] = np.arange(1, 25).reshape(4, 3, 2).tolist()
    ds = nvt.Dataset(df)
    ds.schema["fixed"] = ds.schema["fixed"].with_shape((None, 3))
    ds.schema["cube"] = ds.schema["cube"].with_shape((None, 3, 2))
    loader = Loader(ds, batch_size=4, cats=["c", "fixed", "cube"], conts=["x"], labels=["y"])
    inputs, _ = next(iter(loader))
    loader.shutdown()
    assert inputs["fixed"].shape == (4, 3) and inputs["cube"].shape == (4, 3, 2)
    tables = EmbeddingTables([EmbeddingFeature("fixed", "fixed", 10, 2, "sum", True)])
    ragged = {"fixed__values": torch.tensor(np.ravel(df["fixed"].tolist())), "fixed__offsets": torch.tensor([0, 3, 6, 9, 12])}
    # Pooled as the same bags as values/offsets give.
    torch.testing.assert_close(tables(inputs)["fixed"], tables(ragged)["fixed"])
    cube = EmbeddingTables([EmbeddingFeature("cube", "cube", 30, 2, "sum", True)])
    with pytest.raises(ValueError, match=r"'cube'.*\[batch, width\].*\(4, 3, 2\)"):
        cube(inputs)
    (single, multi_hot), x_cont, _ = DictTransform(loader).transform((inputs, None))
    assert single.shape == (4, 1) and set(multi_hot) == {"fixed", "cube"} and x_cont.shape == (4, 1)
    with Loader(ds, batch_size=4, cats=["c"], conts=["x", "cube"], labels=["y"]) as conts_loader:
        batch = next(iter(conts_loader))
        with pytest.raises(ValueError, match=r"continuous column\(s\) \['cube'\] are list columns"):
            DictTransform(conts_loader).transform(batch)
