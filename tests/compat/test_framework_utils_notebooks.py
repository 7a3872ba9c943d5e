"""NVTabular training notebooks that use ``nvtabular.framework_utils``, with imports changed.

Each test condenses the training notebook's cells (MovieLens 03 / 03b PyTorch, Rossmann 03
PyTorch, scaling-Criteo 03 FastAI) and runs them end to end on tiny synthetic data prepared
the way the notebooks' ETL step prepares it. Only ``nvtabular`` -> ``tabflow`` changes,
except where a comment says otherwise.
"""

from __future__ import annotations

import glob
import json
import math
import os
from time import time

import numpy as np
import pandas as pd
import pytest
import torch

import tabflow as nvt
from tabflow import ops

# --------------------------------------------------------------------------- data


def binarize_rating(col):
    """The MovieLens ETL's label: module level so that the workflow can be saved."""
    return (col > 3).astype("int8")


@pytest.fixture(scope="module")
def movielens_dir(tmp_path_factory):
    """INPUT_DATA_DIR after the MovieLens ETL notebook: train/, valid/ and workflow/."""
    root = tmp_path_factory.mktemp("movielens")
    rng = np.random.default_rng(11)
    genres = ["Action", "Comedy", "Drama", "Horror", "Romance"]
    movies = pd.DataFrame({
        "movieId": np.arange(1, 31),
        "genres": [list(rng.choice(genres, size=rng.integers(1, 4), replace=False)) for _ in range(30)],
    })
    n = 1200
    ratings = pd.DataFrame({"userId": rng.integers(1, 41, n), "movieId": rng.integers(1, 31, n)})
    # Learnable: even users rate high, odd users low, with some noise.
    high = (ratings["userId"] % 2 == 0) ^ (rng.random(n) < 0.1)
    ratings["rating"] = np.where(high, 4.5, 2.0)
    joined = ["userId", "movieId"] >> ops.JoinExternal(movies, on=["movieId"])
    cat_features = joined >> ops.Categorify()
    ratings_label = nvt.ColumnSelector(["rating"]) >> ops.LambdaOp(binarize_rating, dtype=np.int8)
    workflow = nvt.Workflow(cat_features + ratings_label)
    train, valid = nvt.Dataset(ratings.iloc[:1000]), nvt.Dataset(ratings.iloc[1000:])
    workflow.fit(train)
    dict_dtypes = {"userId": np.int64, "movieId": np.int64, "rating": np.float32}
    common = dict(cats=["userId", "movieId", "genres"], labels=["rating"], dtypes=dict_dtypes)
    workflow.transform(train).to_parquet(output_path=str(root / "train"), shuffle=nvt.io.Shuffle.PER_PARTITION, **common)
    workflow.transform(valid).to_parquet(output_path=str(root / "valid"), shuffle=None, **common)
    workflow.save(str(root / "workflow"))
    return str(root)


def _first_losses_fall(history: list[float]) -> bool:
    return all(np.isfinite(history)) and history[-1] < history[0]


# --------------------------------------------------------------------------- MovieLens 03b


def test_movielens_03b_training_with_pytorch(movielens_dir, capsys):
    INPUT_DATA_DIR = movielens_dir
    import tabflow as nvt  # noqa: F811 - the notebook's first cell

    BATCH_SIZE = 128
    CATEGORICAL_COLUMNS = ["movieId", "userId"]
    NUMERIC_COLUMNS = []
    TRAIN_PATHS = sorted(glob.glob(os.path.join(INPUT_DATA_DIR, "train", "*.parquet")))
    VALID_PATHS = sorted(glob.glob(os.path.join(INPUT_DATA_DIR, "valid", "*.parquet")))
    proc = nvt.Workflow.load(os.path.join(INPUT_DATA_DIR, "workflow"))
    EMBEDDING_TABLE_SHAPES, MH_EMBEDDING_TABLE_SHAPES = nvt.ops.get_embedding_sizes(proc)

    from tabflow.framework_utils.torch.models import Model
    from tabflow.framework_utils.torch.utils import process_epoch
    from tabflow.loader.torch import DLDataLoader, TorchAsyncItr

    collate_fn = lambda x: x  # noqa: E731 - as the notebook writes it
    train_dataset = TorchAsyncItr(nvt.Dataset(TRAIN_PATHS), batch_size=BATCH_SIZE, cats=CATEGORICAL_COLUMNS,
                                  conts=NUMERIC_COLUMNS, labels=["rating"])
    train_loader = DLDataLoader(train_dataset, batch_size=None, collate_fn=collate_fn, pin_memory=False, num_workers=0)
    valid_dataset = TorchAsyncItr(nvt.Dataset(VALID_PATHS), batch_size=BATCH_SIZE, cats=CATEGORICAL_COLUMNS,
                                  conts=NUMERIC_COLUMNS, labels=["rating"])
    valid_loader = DLDataLoader(valid_dataset, batch_size=None, collate_fn=collate_fn, pin_memory=False, num_workers=0)

    EMBEDDING_TABLE_SHAPES_TUPLE = {
        CATEGORICAL_COLUMNS[0]: EMBEDDING_TABLE_SHAPES[CATEGORICAL_COLUMNS[0]],
        CATEGORICAL_COLUMNS[1]: EMBEDDING_TABLE_SHAPES[CATEGORICAL_COLUMNS[1]],
    }
    torch.manual_seed(0)
    model = Model(embedding_table_shapes=EMBEDDING_TABLE_SHAPES_TUPLE, num_continuous=0, emb_dropout=0.0,
                  layer_hidden_dims=[128, 128, 128], layer_dropout_rates=[0.0, 0.0, 0.0])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    history = []
    for epoch in range(4):
        start = time()
        train_loss, y_pred, y = process_epoch(train_loader, model, train=True, optimizer=optimizer)
        valid_loss, y_pred, y = process_epoch(valid_loader, model, train=False)
        print(f"Epoch {epoch:02d}. Train loss: {train_loss:.4f}. Valid loss: {valid_loss:.4f}.")
        t_final = time() - start
        total_rows = train_dataset.num_rows_processed + valid_dataset.num_rows_processed
        print(f"run_time: {t_final} - rows: {total_rows} - epochs: {epoch} - dl_thru: {total_rows / t_final}")
        history.append(train_loss)

    assert MH_EMBEDDING_TABLE_SHAPES == {"genres": MH_EMBEDDING_TABLE_SHAPES["genres"]}
    assert _first_losses_fall(history), history
    assert total_rows == 1200 and y.shape == y_pred.shape == (200,)
    out = capsys.readouterr().out
    assert "Total batches: 8" in out and "Total batches: 2" in out
    train_dataset.shutdown()
    valid_dataset.shutdown()


# --------------------------------------------------------------------------- MovieLens 03


def test_movielens_03_training_with_pytorch_multi_hot(movielens_dir):
    INPUT_DATA_DIR = movielens_dir
    BATCH_SIZE = 128
    CATEGORICAL_COLUMNS = ["movieId", "userId"]  # Single-hot
    CATEGORICAL_MH_COLUMNS = ["genres"]  # Multi-hot
    NUMERIC_COLUMNS = []
    TRAIN_PATHS = sorted(glob.glob(os.path.join(INPUT_DATA_DIR, "train", "*.parquet")))
    VALID_PATHS = sorted(glob.glob(os.path.join(INPUT_DATA_DIR, "valid", "*.parquet")))
    proc = nvt.Workflow.load(os.path.join(INPUT_DATA_DIR, "workflow"))
    EMBEDDING_TABLE_SHAPES, MH_EMBEDDING_TABLE_SHAPES = nvt.ops.get_embedding_sizes(proc)

    from tabflow.framework_utils.torch.models import Model
    from tabflow.framework_utils.torch.utils import process_epoch
    from tabflow.loader.torch import DLDataLoader

    # The one change beyond imports: NVTabular 23.08's TorchAsyncItr yielded dicts with list
    # columns; tabflow's TorchAsyncItr yields dense tuples, and Loader is the dict iterator.
    from tabflow.loader.torch import Loader as TorchAsyncItr

    train_dataset = TorchAsyncItr(nvt.Dataset(TRAIN_PATHS), batch_size=BATCH_SIZE,
                                  cats=CATEGORICAL_COLUMNS + CATEGORICAL_MH_COLUMNS, conts=NUMERIC_COLUMNS,
                                  labels=["rating"])
    train_loader = DLDataLoader(train_dataset, batch_size=None, collate_fn=lambda x: x, pin_memory=False, num_workers=0)
    valid_dataset = TorchAsyncItr(nvt.Dataset(VALID_PATHS), batch_size=BATCH_SIZE,
                                  cats=CATEGORICAL_COLUMNS + CATEGORICAL_MH_COLUMNS, conts=NUMERIC_COLUMNS,
                                  labels=["rating"])
    valid_loader = DLDataLoader(valid_dataset, batch_size=None, collate_fn=lambda x: x, pin_memory=False, num_workers=0)

    batch = next(iter(train_loader))
    assert {"genres__values", "genres__offsets", "movieId", "userId"} <= set(batch[0])
    del batch

    EMBEDDING_TABLE_SHAPES_TUPLE = (
        {
            CATEGORICAL_COLUMNS[0]: EMBEDDING_TABLE_SHAPES[CATEGORICAL_COLUMNS[0]],
            CATEGORICAL_COLUMNS[1]: EMBEDDING_TABLE_SHAPES[CATEGORICAL_COLUMNS[1]],
        },
        {CATEGORICAL_MH_COLUMNS[0]: MH_EMBEDDING_TABLE_SHAPES[CATEGORICAL_MH_COLUMNS[0]]},
    )
    torch.manual_seed(0)
    model = Model(embedding_table_shapes=EMBEDDING_TABLE_SHAPES_TUPLE, num_continuous=0, emb_dropout=0.0,
                  layer_hidden_dims=[128, 128, 128], layer_dropout_rates=[0.0, 0.0, 0.0])
    assert model.mh_cat_layer.embedding_layers[0].mode == "sum"
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    history = []
    for _ in range(4):
        train_loss, y_pred, y = process_epoch(train_loader, model, train=True, optimizer=optimizer)
        valid_loss, y_pred, y = process_epoch(valid_loader, model, train=False)
        history.append(train_loss)
    assert _first_losses_fall(history), history
    assert np.isfinite(valid_loss) and y.shape == (200,)
    assert train_dataset.num_rows_processed + valid_dataset.num_rows_processed == 1200
    train_dataset.shutdown()
    valid_dataset.shutdown()


# --------------------------------------------------------------------------- Rossmann 03


@pytest.fixture(scope="module")
def rossmann_dir(tmp_path_factory):
    """PREPROCESS_DIR after the Rossmann ETL notebook: train/, valid/ and stats.json."""
    root = tmp_path_factory.mktemp("rossmann")
    rng = np.random.default_rng(5)
    n = 1500
    frame = pd.DataFrame({
        "Store": rng.integers(1, 40, n), "DayOfWeek": rng.integers(1, 8, n), "StateHoliday": rng.choice(["0", "a", "b"], n),
        "CompetitionDistance": rng.gamma(2.0, 1000.0, n), "Promo": rng.integers(0, 2, n).astype(float),
    })
    frame["Sales"] = (3000 + 80 * (frame["Store"] % 7) + 900 * frame["Promo"] - 0.05 * frame["CompetitionDistance"]
                      + rng.normal(0, 50, n)).clip(lower=100)
    CATEGORICAL_COLUMNS = ["Store", "DayOfWeek", "StateHoliday"]
    CONTINUOUS_COLUMNS = ["CompetitionDistance", "Promo"]
    LABEL_COLUMNS = ["Sales"]
    cat_features = CATEGORICAL_COLUMNS >> ops.Categorify()
    cont_features = CONTINUOUS_COLUMNS >> ops.FillMissing() >> ops.LogOp() >> ops.Normalize()
    label_feature = LABEL_COLUMNS >> ops.LogOp()
    proc = nvt.Workflow(cat_features + cont_features + label_feature)
    train, valid = nvt.Dataset(frame.iloc[:1200]), nvt.Dataset(frame.iloc[1200:])
    proc.fit(train)
    dtypes = {**{c: np.int64 for c in CATEGORICAL_COLUMNS}, **{c: np.float32 for c in CONTINUOUS_COLUMNS + LABEL_COLUMNS}}
    for name, ds in (("train", train), ("valid", valid)):
        proc.transform(ds).to_parquet(output_path=str(root / name), shuffle=None, dtypes=dtypes)
    stats = {
        "CATEGORICAL_COLUMNS": CATEGORICAL_COLUMNS, "CONTINUOUS_COLUMNS": CONTINUOUS_COLUMNS,
        "LABEL_COLUMNS": LABEL_COLUMNS, "EMBEDDING_TABLE_SHAPES": ops.get_embedding_sizes(proc),
    }
    with open(root / "stats.json", "w") as handle:
        json.dump(stats, handle)
    return str(root) + "/"


def test_rossmann_03_training_with_pytorch(rossmann_dir):
    PREPROCESS_DIR = rossmann_dir
    PREPROCESS_DIR_TRAIN = os.path.join(PREPROCESS_DIR, "train")
    PREPROCESS_DIR_VALID = os.path.join(PREPROCESS_DIR, "valid")
    stats = json.load(open(PREPROCESS_DIR + "/stats.json", "r"))
    CATEGORICAL_COLUMNS = stats["CATEGORICAL_COLUMNS"]
    CONTINUOUS_COLUMNS = stats["CONTINUOUS_COLUMNS"]
    LABEL_COLUMNS = stats["LABEL_COLUMNS"]
    EMBEDDING_TABLE_SHAPES = stats["EMBEDDING_TABLE_SHAPES"]  # lists after the JSON round trip

    EMBEDDING_DROPOUT_RATE = 0.04
    DROPOUT_RATES = [0.001, 0.01]
    HIDDEN_DIMS = [64, 32]
    BATCH_SIZE = 256
    LEARNING_RATE = 0.01
    EPOCHS = 5
    MAX_SALES_IN_TRAINING_SET = 38722.0
    MAX_LOG_SALES_PREDICTION = 1.2 * math.log(MAX_SALES_IN_TRAINING_SET + 1.0)
    TRAIN_PATHS = sorted(glob.glob(os.path.join(PREPROCESS_DIR_TRAIN, "*.parquet")))
    VALID_PATHS = sorted(glob.glob(os.path.join(PREPROCESS_DIR_VALID, "*.parquet")))

    from tabflow.framework_utils.torch.models import Model
    from tabflow.framework_utils.torch.utils import DictTransform, process_epoch
    from tabflow.loader.torch import DLDataLoader, TorchAsyncItr

    train_dataset = TorchAsyncItr(nvt.Dataset(TRAIN_PATHS), batch_size=BATCH_SIZE, cats=CATEGORICAL_COLUMNS,
                                  conts=CONTINUOUS_COLUMNS, labels=LABEL_COLUMNS)
    train_loader = DLDataLoader(train_dataset, batch_size=None, collate_fn=lambda x: x, pin_memory=False, num_workers=0)
    valid_dataset = TorchAsyncItr(nvt.Dataset(VALID_PATHS), batch_size=BATCH_SIZE, cats=CATEGORICAL_COLUMNS,
                                  conts=CONTINUOUS_COLUMNS, labels=LABEL_COLUMNS)
    valid_loader = DLDataLoader(valid_dataset, batch_size=None, collate_fn=lambda x: x, pin_memory=False, num_workers=0)

    torch.manual_seed(0)
    model = Model(embedding_table_shapes=EMBEDDING_TABLE_SHAPES, num_continuous=len(CONTINUOUS_COLUMNS),
                  emb_dropout=EMBEDDING_DROPOUT_RATE, layer_hidden_dims=HIDDEN_DIMS, layer_dropout_rates=DROPOUT_RATES,
                  max_output=MAX_LOG_SALES_PREDICTION)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)

    def rmspe_func(y_pred, y):
        "Return y_pred and y to non-log space and compute RMSPE"
        y_pred, y = torch.exp(y_pred) - 1, torch.exp(y) - 1
        pct_var = (y_pred - y) / y
        return (pct_var**2).mean().pow(0.5)

    history = []
    for epoch in range(EPOCHS):
        train_loss, y_pred, y = process_epoch(train_loader, model, train=True,
                                              transform=DictTransform(train_loader.dataset).transform, optimizer=optimizer)
        train_rmspe = rmspe_func(y_pred, y)
        valid_loss, y_pred, y = process_epoch(valid_loader, model, transform=DictTransform(valid_loader.dataset).transform,
                                              train=False)
        valid_rmspe = rmspe_func(y_pred, y)
        print(f"Epoch {epoch:02d}. Train loss: {train_loss:.4f}. Train RMSPE: {train_rmspe:.4f}. "
              f"Valid loss: {valid_loss:.4f}. Valid RMSPE: {valid_rmspe:.4f}.")
        history.append(train_loss)

    assert _first_losses_fall(history), history
    assert bool(((y_pred > 0) & (y_pred < MAX_LOG_SALES_PREDICTION)).all())
    assert torch.isfinite(valid_rmspe) and y.shape == (300,)
    train_dataset.shutdown()
    valid_dataset.shutdown()


# --------------------------------------------------------------------------- Criteo 03 FastAI


def test_scaling_criteo_03_training_with_fastai(tmp_path):
    pytest.importorskip("fastai")
    from fastai.basics import Learner
    from fastai.metrics import APScoreBinary, RocAucBinary
    from fastai.tabular.data import TabularDataLoaders
    from fastai.tabular.model import TabularModel

    from tabflow.framework_utils.torch.utils import FastaiTransform
    from tabflow.loader.torch import DLDataLoader, TorchAsyncItr
    from tabflow.ops import get_embedding_sizes

    CONTINUOUS_COLUMNS = ["I" + str(x) for x in range(1, 5)]
    CATEGORICAL_COLUMNS = ["C" + str(x) for x in range(1, 5)]
    LABEL_COLUMNS = ["label"]
    rng = np.random.default_rng(3)
    raw = pd.DataFrame({name: rng.integers(0, 20, 1600) for name in CATEGORICAL_COLUMNS})
    for name in CONTINUOUS_COLUMNS:
        raw[name] = rng.exponential(5.0, 1600)
    raw["label"] = ((raw["C1"] % 2 == 0) ^ (rng.random(1600) < 0.1)).astype(np.int64)
    cat_features = CATEGORICAL_COLUMNS >> ops.Categorify()
    cont_features = CONTINUOUS_COLUMNS >> ops.LogOp() >> ops.Normalize()
    workflow = nvt.Workflow(cat_features + cont_features + LABEL_COLUMNS)
    workflow.fit(nvt.Dataset(raw.iloc[:1200]))
    for name, part in (("train", raw.iloc[:1200]), ("valid", raw.iloc[1200:])):
        workflow.transform(nvt.Dataset(part, npartitions=2)).to_parquet(str(tmp_path / name), shuffle=None)
    input_path = str(tmp_path)
    BATCH_SIZE, PARTS_PER_CHUNK = 200, 2

    train_paths = glob.glob(os.path.join(input_path, "train", "*.parquet"))
    valid_paths = glob.glob(os.path.join(input_path, "valid", "*.parquet"))
    train_data = nvt.Dataset(train_paths, engine="parquet", part_mem_fraction=0.04 / PARTS_PER_CHUNK)
    valid_data = nvt.Dataset(valid_paths, engine="parquet", part_mem_fraction=0.04 / PARTS_PER_CHUNK)
    train_data_itrs = TorchAsyncItr(train_data, batch_size=BATCH_SIZE, cats=CATEGORICAL_COLUMNS, conts=CONTINUOUS_COLUMNS,
                                    labels=LABEL_COLUMNS, parts_per_chunk=PARTS_PER_CHUNK)
    valid_data_itrs = TorchAsyncItr(valid_data, batch_size=BATCH_SIZE, cats=CATEGORICAL_COLUMNS, conts=CONTINUOUS_COLUMNS,
                                    labels=LABEL_COLUMNS, parts_per_chunk=PARTS_PER_CHUNK)
    train_dataloader = DLDataLoader(train_data_itrs, collate_fn=FastaiTransform(train_data_itrs).transform,
                                    batch_size=None, pin_memory=False, num_workers=0)
    valid_dataloader = DLDataLoader(valid_data_itrs, collate_fn=FastaiTransform(valid_data_itrs).transform,
                                    batch_size=None, pin_memory=False, num_workers=0)
    databunch = TabularDataLoaders(train_dataloader, valid_dataloader)

    embeddings = list(get_embedding_sizes(workflow).values())
    embeddings = [[emb[0], min(16, emb[1])] for emb in embeddings]
    torch.manual_seed(0)
    model = TabularModel(emb_szs=embeddings, n_cont=len(CONTINUOUS_COLUMNS), out_sz=2, layers=[32, 16])
    learn = Learner(databunch, model, loss_func=torch.nn.CrossEntropyLoss(), metrics=[RocAucBinary(), APScoreBinary()],
                    path=tmp_path)
    learn.fit(2, 1.32e-2)
    train_loss, valid_loss, auc, average_precision = learn.recorder.values[-1]
    assert np.isfinite(train_loss) and np.isfinite(valid_loss) and auc > 0.7
    assert train_data_itrs.num_rows_processed + valid_data_itrs.num_rows_processed == 1600
    train_data_itrs.shutdown()
    valid_data_itrs.shutdown()
