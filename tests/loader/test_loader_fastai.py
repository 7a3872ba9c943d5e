"""DLDataLoader drives fastai's Learner: fit, validate with RocAucBinary, get_preds,
one_batch, summary and lr_find."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("fastai")
import fastai.tabular.all  # noqa: E402,F401 - patches Learner with fit callbacks, summary, lr_find
from fastai.learner import Learner  # noqa: E402
from fastai.metrics import RocAucBinary  # noqa: E402
from fastai.tabular.data import TabularDataLoaders  # noqa: E402
from fastai.tabular.model import TabularModel  # noqa: E402

import tabflow as nvt  # noqa: E402
from tabflow.loader.torch import DLDataLoader, TorchAsyncItr  # noqa: E402

CATS, CONTS = ["c1", "c2"], ["x1", "x2"]


def _frame(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"c1": rng.integers(0, 6, rows), "c2": rng.integers(0, 3, rows),
                          "x1": rng.normal(size=rows), "x2": rng.normal(size=rows)})
    frame["label"] = ((frame["x1"] + (frame["c1"] > 2)) > 0.5).astype(np.int64)
    return frame


def _dl(path, batch_size, shuffle):
    itr = TorchAsyncItr(nvt.Dataset(path, engine="parquet", part_size=1, cpu=True), batch_size=batch_size,
                        cats=CATS, conts=CONTS, labels=["label"], shuffle=shuffle, parts_per_chunk=2)
    return DLDataLoader(itr, collate_fn=lambda b: (b[0], b[1], b[2].long()), batch_size=None, pin_memory=False, num_workers=0)


@pytest.fixture(scope="module")
def learner(tmp_path_factory):
    root = tmp_path_factory.mktemp("fastai")
    for name, rows, seed in (("train", 256, 1), ("valid", 96, 2)):
        (root / name).mkdir()
        frame = _frame(rows, seed)
        for k in range(2):
            frame.iloc[k * rows // 2 : (k + 1) * rows // 2].to_parquet(root / name / f"p{k}.parquet", row_group_size=50)
    train, valid = _dl(str(root / "train"), 32, True), _dl(str(root / "valid"), 40, False)
    dls = TabularDataLoaders(train, valid)
    emb = [(6, 3), (3, 2)]  # (cardinality, width) per categorical column
    model = TabularModel(emb, len(CONTS), 2, [16, 8])
    # path=root: lr_find saves a temporary model under path/models, never in the repository.
    learn = Learner(dls, model, loss_func=torch.nn.CrossEntropyLoss(), metrics=[RocAucBinary()], path=root)
    yield learn
    train.shutdown()
    valid.shutdown()


def test_dataloader_protocol(learner):
    train = learner.dls.train
    assert len(train) == 8 and train.bs == 32 and train.n == 256 and train.n_inp == 2
    assert learner.dls.device == torch.device("cpu")
    assert train.to("cpu") is train


def test_fit_and_validate(learner):
    with learner.no_bar(), learner.no_logging():
        learner.fit(2, 1e-2)
    train_loss, valid_loss, auc = learner.recorder.values[-1]
    assert np.isfinite(train_loss) and np.isfinite(valid_loss) and 0.5 < auc <= 1.0
    loss, auc_again = learner.validate()
    assert np.isclose(loss, valid_loss) and np.isclose(auc, auc_again)


def test_get_preds(learner):
    with learner.no_bar():
        preds, targets = learner.get_preds()
    assert preds.shape == (96, 2) and targets.shape == (96,)
    assert targets.dtype == torch.int64


def test_one_batch_and_summary(learner):
    x_cat, x_cont, y = learner.dls.one_batch()
    assert x_cat.shape == (32, 2) and x_cont.shape == (32, 2) and y.dtype == torch.int64
    assert "TabularModel" in learner.summary()


def test_lr_find(learner):
    with learner.no_bar():
        suggestion = learner.lr_find(num_it=12, show_plot=False)
    assert suggestion.valley > 0
    # The interrupted epochs left the loader usable.
    assert sum(len(b[0]) for b in learner.dls.train) == 256


def test_n_inp_follows_the_collated_batch(tmp_path):
    from tabflow.loader.torch import Loader

    _frame(64, 3).to_parquet(tmp_path / "p.parquet")
    dataset = nvt.Dataset(str(tmp_path), engine="parquet", cpu=True)
    with Loader(dataset, batch_size=16, cats=CATS, conts=CONTS, labels=["label"]) as loader:
        assert DLDataLoader(loader).n_inp == 1  # (inputs dict, targets)

        def to_tuple(batch):
            inputs, y = batch
            return torch.stack([inputs[c] for c in CATS], 1), torch.stack([inputs[c] for c in CONTS], 1), y.long()

        collated = DLDataLoader(loader, collate_fn=to_tuple, batch_size=None)
        assert collated.n_inp == 2
        assert loader.num_rows_processed == 0  # read off a separate probe
