"""Write the example notebooks (without outputs) from the cell sources below.

Run ``python notebooks/_build.py`` after editing a cell; the ``.ipynb`` files are generated.
Every notebook reads ``TABFLOW_NOTEBOOK_ROWS`` (rows of synthetic data) and works in a
temporary directory of its own that it removes at the end.
"""

from __future__ import annotations

import os
import textwrap

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = os.path.dirname(os.path.abspath(__file__))

SETUP = """\
import os
import shutil
import tempfile

# Rows of synthetic data: the default suits a laptop; CI runs with a few tens of thousands.
ROWS = int(os.environ.get("TABFLOW_NOTEBOOK_ROWS", "500000"))
WORK = tempfile.mkdtemp(prefix="tabflow-{name}-")
print(f"{{ROWS:,}} rows, working in {{WORK}}")
"""

CLEANUP = """\
shutil.rmtree(WORK, ignore_errors=True)
"""


def md(text: str) -> nbformat.NotebookNode:
    return new_markdown_cell(textwrap.dedent(text).strip())


def code(*parts: str) -> nbformat.NotebookNode:
    return new_code_cell("\n".join(textwrap.dedent(part).strip() for part in parts))


# --------------------------------------------------------------------------- 01 getting started

GETTING_STARTED = [
    md("""
    # Getting started: a Criteo-style workflow

    This notebook generates a synthetic click log with the shape of the Criteo display-ads
    data (a label, 13 count columns `I1`-`I13`, 26 hashed categorical columns `C1`-`C26`),
    then builds, fits, inspects, saves and reloads the classic preprocessing workflow:

    * categorical columns become contiguous integer ids (`Categorify`);
    * continuous columns get nulls filled, negatives clipped, a log and a normalization.
    """),
    code(SETUP.format(name="getting-started")),
    code("""
    import matplotlib.pyplot as plt
    import pandas as pd

    import tabflow as nvt
    from tabflow import ops
    from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS, LABEL_COLUMNS, write_criteo
    """),
    md("""
    ## Data

    `write_criteo` writes the log chunk by chunk into parquet files (memory stays bounded
    whatever the size). We keep the last file for validation.
    """),
    code("""
    paths = write_criteo(os.path.join(WORK, "raw"), ROWS, num_files=4, seed=0)
    train = nvt.Dataset(paths[:3])
    valid = nvt.Dataset(paths[3:])
    print(train, valid, sep="\\n")
    train.head()
    """),
    md("""
    ## The workflow

    Ops are chained with `>>` and branches joined with `+`. Nothing is computed yet: this is
    a graph that we can draw. `node.graph` is laid out by Graphviz when the `graphviz` package
    and its `dot` program are installed (statistics ops in darker boxes, with the parameters
    that differ from their defaults), else drawn with matplotlib, else described in text.
    """),
    code("""
    cats = CATEGORICAL_COLUMNS >> ops.Categorify(freq_threshold=2)
    conts = CONTINUOUS_COLUMNS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    workflow = nvt.Workflow(cats + conts + LABEL_COLUMNS)
    workflow.output_node.graph
    """),
    md("""
    ## Fit and transform

    `fit` computes the statistics (vocabularies, means and standard deviations) in passes
    over the training data; `transform` returns a lazy dataset that `to_parquet` writes.
    `progress=True` shows a bar per fit pass (Dask tasks) and per write (partitions).
    """),
    code("""
    import time

    start = time.perf_counter()
    workflow.fit(train, progress=True)
    print(f"fit: {time.perf_counter() - start:.1f} s")

    train_out = workflow.transform(train, progress=True)
    valid_out = workflow.transform(valid, progress=True)
    train_out.to_parquet(os.path.join(WORK, "train"))
    valid_out.to_parquet(os.path.join(WORK, "valid"))
    processed = nvt.Dataset(os.path.join(WORK, "train"))
    processed.head()
    """),
    md("""
    ## The output schema

    Every output column carries its dtype, tags and properties. `Categorify` records the
    cardinality (embedding rows) and a suggested embedding width.
    """),
    code("""
    schema = workflow.output_schema
    pd.DataFrame(
        [
            {
                "column": c.name,
                "dtype": c.dtype,
                "tags": ", ".join(sorted(map(str, c.tags))),
                "cardinality": c.properties.get("cardinality"),
            }
            for c in schema
        ]
    ).astype({"cardinality": "Int64"}).set_index("column").head(30)
    """),
    code("""
    embedding_sizes = ops.get_embedding_sizes(workflow)
    print({name: embedding_sizes[name] for name in CATEGORICAL_COLUMNS[:6]})
    """),
    md("""
    ## Vocabularies

    The fitted vocabulary of each column is a table of values by descending frequency.
    Index 0 is padding, 1 null, 2 out-of-vocabulary (values seen fewer than
    `freq_threshold` times, or never), and the vocabulary starts at 3. `decode` maps ids
    back to values.
    """),
    code("""
    categorify = cats.op
    vocab = categorify.vocabs_["C6"]
    first_id = 2 + categorify.oov_slots_["C6"]
    vocab.assign(id=range(first_id, first_id + len(vocab))).head(8)
    """),
    code("""
    sample = processed.head(6)[["C6", "C9"]]
    pd.concat(
        {"id": sample["C6"], "decoded": categorify.decode(sample["C6"], "C6")}, axis=1
    )
    """),
    md("""
    ## A normalized column before and after

    `I5` is a heavy-tailed count: after `FillMissing`, `Clip`, `LogOp` and `Normalize` it is
    centred with unit variance. The spike on the left is the nulls, filled with 0.
    """),
    code("""
    raw = train.to_ddf()["I5"].compute().astype("float64")
    normalized = train_out.to_ddf()["I5"].compute()

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    left.hist(raw.dropna(), bins=60, color="tab:gray")
    left.set_yscale("log")
    left.set_title("I5 raw (nulls left out)")
    right.hist(normalized, bins=60, color="tab:blue")
    right.set_title(f"I5 transformed: mean {normalized.mean():.2f}, std {normalized.std():.2f}")
    plt.show()
    """),
    md("""
    ## Save and load

    A saved workflow is a directory: JSON for the graph and parameters, parquet for the
    fitted tables. Loading it never executes code from the files.
    """),
    code("""
    workflow.save(os.path.join(WORK, "workflow"))
    print(sorted(os.listdir(os.path.join(WORK, "workflow")))[:6])

    reloaded = nvt.Workflow.load(os.path.join(WORK, "workflow"))
    some_rows = valid.head(100)
    pd.testing.assert_frame_equal(reloaded.transform(some_rows), workflow.transform(some_rows))
    print("the reloaded workflow transforms exactly like the original")
    """),
    code(CLEANUP),
]

# --------------------------------------------------------------------------- 02 fastai

FASTAI = [
    md("""
    # Training fastai's TabularModel from tabflow data

    The preprocessed parquet files are streamed to the model by `TorchAsyncItr` (batches of
    `(categorical ids, continuous values, label)` built in a background thread) wrapped in
    `DLDataLoader`, which fastai's `Learner` accepts as is.
    """),
    code(SETUP.format(name="fastai")),
    code("""
    import warnings

    import matplotlib.pyplot as plt
    import torch

    # fastai's import still uses torch.jit.script, which recent torch flags as deprecated.
    warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)
    from fastai.callback.schedule import fit_one_cycle  # noqa: F401 - adds Learner.fit_one_cycle
    from fastai.learner import Learner
    from fastai.metrics import RocAucBinary
    from fastai.tabular.data import TabularDataLoaders
    from fastai.tabular.model import TabularModel

    import tabflow as nvt
    from tabflow import ops
    from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS, LABEL_COLUMNS, write_criteo
    from tabflow.loader.torch import DLDataLoader, TorchAsyncItr

    _ = torch.manual_seed(0)
    """),
    md("## ETL: generate, fit on the training days, transform both splits"),
    code("""
    paths = write_criteo(os.path.join(WORK, "raw"), ROWS, num_files=4, seed=0)
    cats = CATEGORICAL_COLUMNS >> ops.Categorify(freq_threshold=2)
    conts = CONTINUOUS_COLUMNS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    workflow = nvt.Workflow(cats + conts + LABEL_COLUMNS)
    workflow.fit(nvt.Dataset(paths[:3]))
    for name, files in (("train", paths[:3]), ("valid", paths[3:])):
        workflow.transform(nvt.Dataset(files)).to_parquet(
            os.path.join(WORK, name), shuffle="PER_PARTITION", seed=0,
            cats=CATEGORICAL_COLUMNS, conts=CONTINUOUS_COLUMNS, labels=LABEL_COLUMNS,
        )
    train = nvt.Dataset(os.path.join(WORK, "train"))
    valid = nvt.Dataset(os.path.join(WORK, "valid"))
    train.num_rows, valid.num_rows
    """),
    md("""
    ## Data loaders

    `TorchAsyncItr` yields `x_cat` (int64, one column per categorical feature), `x_cont`
    (float32) and `y`. fastai's cross-entropy wants the label as class indices, which the
    `collate_fn` provides.
    """),
    code("""
    BATCH_SIZE = max(512, min(65536, ROWS // 40))

    def to_classes(batch):
        x_cat, x_cont, y = batch
        return x_cat, x_cont, y.reshape(-1).long()

    def dataloader(dataset, shuffle):
        itr = TorchAsyncItr(
            dataset, batch_size=BATCH_SIZE, cats=CATEGORICAL_COLUMNS, conts=CONTINUOUS_COLUMNS,
            labels=LABEL_COLUMNS, shuffle=shuffle,
        )
        return DLDataLoader(itr, collate_fn=to_classes, batch_size=None)

    dls = TabularDataLoaders(dataloader(train, True), dataloader(valid, False))
    x_cat, x_cont, y = dls.train.one_batch()
    x_cat.shape, x_cont.shape, y[:8]
    """),
    md("""
    ## Model and training

    Embedding sizes come from the fitted workflow (capped at 16 to keep the model small).
    """),
    code("""
    sizes = ops.get_embedding_sizes(workflow)
    embeddings = [(sizes[name][0], min(16, sizes[name][1])) for name in CATEGORICAL_COLUMNS]
    model = TabularModel(emb_szs=embeddings, n_cont=len(CONTINUOUS_COLUMNS), out_sz=2, layers=[200, 100])
    learn = Learner(dls, model, loss_func=torch.nn.CrossEntropyLoss(), metrics=[RocAucBinary()], path=WORK)
    learn.fit_one_cycle(2, lr_max=1e-2)
    # validate() below starts a new recording: keep the training losses (fastai's smoothed
    # loss after each batch) now.
    train_losses = [float(v) for v in learn.recorder.losses]
    batches_per_epoch = len(train_losses) // 2
    """),
    code("""
    valid_loss, auc = learn.validate()
    print(f"validation loss {valid_loss:.4f}, AUC {auc:.4f}")
    # The planted signal is strong enough that a trained model beats chance clearly.
    assert auc > 0.6
    """),
    code("""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    rows_seen = [(i + 1) * BATCH_SIZE for i in range(len(train_losses))]
    ax.plot(rows_seen, train_losses, marker=".", label="training (smoothed)")
    ax.axhline(valid_loss, color="tab:orange", linestyle="--", label=f"validation after training: {valid_loss:.3f}")
    ax.axvline(batches_per_epoch * BATCH_SIZE, color="gray", linewidth=0.8)
    ax.set_xlabel("training rows seen (the gray line ends epoch 1)")
    ax.set_ylabel("cross-entropy")
    ax.set_title("TabularModel training loss")
    ax.grid(alpha=0.3)
    ax.legend()
    plt.show()
    """),
    code("""
    for dl in (dls.train, dls.valid):
        dl.shutdown()
    """, CLEANUP),
]

# --------------------------------------------------------------------------- 03 multi-hot

MULTIHOT = [
    md("""
    # Multi-hot features, embedding tables and DLRM in plain PyTorch

    Items here have *lists* of genres and tags. `Categorify` encodes every element of a list
    column; the dict `Loader` delivers a list column as `name__values` + `name__offsets`
    (the layout `nn.EmbeddingBag` takes). `EmbeddingTables` builds one table per vocabulary
    from the workflow's output schema and pools multi-hot features; `DLRM` puts dot-product
    interactions and MLPs on top. The embedding tables use sparse gradients, trained with
    `SparseAdam`, the dense layers with `Adam`.
    """),
    code(SETUP.format(name="multihot")),
    code("""
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import torch
    from sklearn.metrics import roc_auc_score

    import tabflow as nvt
    from tabflow import ops
    from tabflow.framework_utils.torch import DLRM, EmbeddingTables, sparse_and_dense_parameters
    from tabflow.loader.torch import Loader

    _ = torch.manual_seed(0)
    """),
    md("""
    ## Synthetic interactions with list columns

    List columns use pandas' Arrow-backed dtype, `pd.ArrowDtype(pa.list_(pa.string()))`. The
    click probability depends on the user, the item, the genres and one tag.
    """),
    code("""
    GENRES = np.array(["action", "comedy", "drama", "horror", "romance", "sci-fi", "thriller", "documentary"])
    TAGS = np.array([f"tag{i:03d}" for i in range(300)])


    def list_column(rng, n, vocabulary, max_len, null_rate=0.0):
        \"\"\"A list column of random elements: flat values + offsets -> an Arrow list array.\"\"\"
        lengths = rng.integers(0, max_len + 1, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        codes = np.minimum(rng.zipf(1.4, offsets[-1]) - 1, len(vocabulary) - 1)
        mask = pa.array(rng.random(n) < null_rate)
        array = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(vocabulary[codes]), mask=mask)
        return pd.Series(array, dtype=pd.ArrowDtype(pa.list_(pa.string()))), codes, offsets


    def make_frame(n, seed):
        rng = np.random.default_rng(seed)
        frame = pd.DataFrame({
            "user_id": rng.integers(0, 3000, n).astype(str),
            "item_id": (rng.zipf(1.2, n) % 5000).astype(str),
            "price": rng.lognormal(3, 1, n),
        })
        frame["genres"], genre_codes, genre_offsets = list_column(rng, n, GENRES, 3)
        frame["tags"], tag_codes, tag_offsets = list_column(rng, n, TAGS, 5, null_rate=0.05)
        # Planted effects: per user, per item, per genre (averaged), and tag001.
        user_effect = np.random.default_rng(100).normal(0, 0.8, 3000)[frame["user_id"].astype(int)]
        item_effect = np.where(frame["item_id"].astype(int) % 3 == 0, 1.0, -0.5)
        genre_weight = np.array([1.2, -0.8, 0.3, -1.0, 0.6, 0.9, -0.3, -1.5])
        rows = np.repeat(np.arange(n), np.diff(genre_offsets))
        genre_sum = np.bincount(rows, weights=genre_weight[genre_codes], minlength=n)
        genre_effect = genre_sum / np.maximum(np.diff(genre_offsets), 1)
        tag_rows = np.repeat(np.arange(n), np.diff(tag_offsets))
        has_tag1 = np.bincount(tag_rows, weights=(tag_codes == 1), minlength=n) > 0
        logit = -1.0 + user_effect + item_effect + genre_effect + 1.5 * has_tag1
        frame["click"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype("int64")
        return frame


    train_frame = make_frame(ROWS, seed=1)
    valid_frame = make_frame(max(ROWS // 5, 1000), seed=2)
    print(train_frame.dtypes)
    train_frame.head()
    """),
    md("## The workflow: the same `Categorify` for scalar and list columns"),
    code("""
    ids = ["user_id", "item_id"] >> ops.Categorify(freq_threshold=2)
    lists = ["genres", "tags"] >> ops.Categorify()
    conts = ["price"] >> ops.LogOp() >> ops.Normalize()
    label = ["click"] >> ops.AddTags("target")
    workflow = nvt.Workflow(ids + lists + conts + label)
    workflow.fit(nvt.Dataset(train_frame, npartitions=4))
    for name, frame in (("train", train_frame), ("valid", valid_frame)):
        workflow.transform(nvt.Dataset(frame, npartitions=4)).to_parquet(os.path.join(WORK, name))
    train = nvt.Dataset(os.path.join(WORK, "train"))
    valid = nvt.Dataset(os.path.join(WORK, "valid"))
    train.head()
    """),
    code("""
    pd.DataFrame(
        {c.name: {"dtype": c.dtype, "multi-hot": c.is_list, "cardinality": c.properties.get("cardinality")}
         for c in workflow.output_schema}
    ).T
    """),
    md("""
    ## Dict batches

    Scalar columns are `[batch]` tensors; each list column is a flat `__values` tensor and
    `batch + 1` `__offsets` (row `i` holds `values[offsets[i]:offsets[i+1]]`).
    """),
    code("""
    BATCH_SIZE = max(256, min(8192, ROWS // 50))
    with Loader(train, batch_size=4, labels=["click"]) as loader:
        inputs, target = next(iter(loader))
    {name: tensor.tolist() for name, tensor in inputs.items()}, target.tolist()
    """),
    md("""
    ## Embedding tables and DLRM

    `DLRM.from_schema` builds the tables with `EmbeddingTables.from_schema` (one 16-wide
    table per vocabulary, multi-hot features averaged, sparse gradients). The embedding
    configuration can be exported as YAML for an embedding server.
    """),
    code("""
    model = DLRM.from_schema(train.schema, embedding_dim=16, bottom_mlp=[32], top_mlp=[64, 32], combiner="mean")
    print(model.embeddings.to_yaml())
    model
    """),
    code("""
    sparse_params, dense_params = sparse_and_dense_parameters(model)
    optimizers = [torch.optim.SparseAdam(sparse_params, lr=0.005), torch.optim.Adam(dense_params, lr=0.002)]
    loss_fn = torch.nn.BCEWithLogitsLoss()


    def evaluate(dataset):
        predictions, targets = [], []
        model.eval()
        with torch.no_grad(), Loader(dataset, batch_size=BATCH_SIZE, labels=["click"]) as loader:
            for inputs, target in loader:
                predictions.append(torch.sigmoid(model(inputs)))
                targets.append(target)
        model.train()
        p, y = torch.cat(predictions).numpy(), torch.cat(targets).numpy()
        return float(loss_fn(torch.logit(torch.from_numpy(p).clamp(1e-6, 1 - 1e-6)), torch.from_numpy(y).float())), roc_auc_score(y, p)


    losses = []
    for epoch in range(2):
        with Loader(train, batch_size=BATCH_SIZE, labels=["click"], shuffle=True) as loader:
            for inputs, target in loader:
                loss = loss_fn(model(inputs), target.float())
                for optimizer in optimizers:
                    optimizer.zero_grad()
                loss.backward()
                for optimizer in optimizers:
                    optimizer.step()
                losses.append(loss.item())
        valid_loss, valid_auc = evaluate(valid)
        print(f"epoch {epoch}: train loss {np.mean(losses[-20:]):.4f}, valid loss {valid_loss:.4f}, AUC {valid_auc:.4f}")
    assert valid_auc > 0.6
    """),
    code("""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(losses, alpha=0.4, label="batch")
    window = max(1, len(losses) // 20)
    ax.plot(pd.Series(losses).rolling(window).mean(), label=f"mean of {window}")
    ax.set_xlabel("step")
    ax.set_ylabel("binary cross-entropy")
    ax.set_title("DLRM training loss (SparseAdam + Adam)")
    ax.legend()
    plt.show()
    """),
    md("""
    ## Padded dense batches give the same embeddings

    With `sparse_as_dense=True` the loader pads list columns with zeros to a fixed width.
    Index 0 is padding: it never contributes to a sum and is not counted by a mean, so the
    model's output is unchanged.
    """),
    code("""
    widths = {"genres": 3, "tags": 5}
    with Loader(valid, batch_size=512, labels=["click"]) as ragged, \\
         Loader(valid, batch_size=512, labels=["click"], sparse_as_dense=True, sparse_max=widths) as dense:
        (a, _), (b, _) = next(iter(ragged)), next(iter(dense))
    print(b["genres"][:3])
    with torch.no_grad():
        torch.testing.assert_close(model(a), model(b))
    print("same predictions from both layouts")
    """),
    code(CLEANUP),
]

# --------------------------------------------------------------------------- 04 scaling out

SCALING = [
    md("""
    # Scaling out with Dask

    The same workflow runs on a Dask cluster without changes: each statistics pass and the
    transform become tasks on the workers. Here a `LocalCluster` of CPU workers; on a GPU
    machine a `LocalCUDACluster` (one worker per GPU, cuDF partitions) is the drop-in
    replacement. The result is identical to the single-process run.
    """),
    code(SETUP.format(name="scaling")),
    code("""
    import time

    import pandas as pd
    from distributed import Client, LocalCluster, progress

    import tabflow as nvt
    from tabflow import ops
    from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS, LABEL_COLUMNS, write_criteo

    paths = write_criteo(os.path.join(WORK, "raw"), ROWS, num_files=8, seed=0)


    def criteo_workflow():
        cats = CATEGORICAL_COLUMNS >> ops.Categorify(freq_threshold=2)
        conts = CONTINUOUS_COLUMNS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
        return nvt.Workflow(cats + conts + LABEL_COLUMNS)
    """),
    md("## Single process (dask's local scheduler)"),
    code("""
    start = time.perf_counter()
    local_workflow = criteo_workflow().fit(nvt.Dataset(paths))
    local_result = local_workflow.transform(nvt.Dataset(paths)).to_ddf().compute()
    print(f"single process: {time.perf_counter() - start:.1f} s for {len(local_result):,} rows")
    """),
    md("""
    ## A local cluster

    Two worker processes with one thread each. The dashboard (needs `bokeh`) shows the task
    stream while the cells below run.
    """),
    code("""
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    client = Client(cluster)
    print("dashboard:", client.dashboard_link)
    client
    """),
    md("""
    A GPU machine with RAPIDS would use one worker per GPU instead; the cell only runs when
    `dask_cuda` and a GPU are present.
    """),
    code("""
    from tabflow.backends import gpu_available

    if gpu_available():
        from dask_cuda import LocalCUDACluster

        with LocalCUDACluster() as gpu_cluster, Client(gpu_cluster) as gpu_client:
            gpu_workflow = criteo_workflow().fit(nvt.Dataset(paths, cpu=False, client=gpu_client))
            print("fitted on", len(gpu_client.scheduler_info()["workers"]), "GPU worker(s)")
    else:
        print("no GPU with RAPIDS here: the CPU cluster does the work")
    """),
    md("""
    Fit on the cluster, then persist the transformed data on the workers with a progress
    bar (`distributed.progress`) before collecting it. With a distributed client,
    `fit(..., progress=True)` shows distributed's bar for each pass too (tqdm's Dask callback,
    which it uses on the local scheduler, does not see a cluster's tasks).
    """),
    code("""
    start = time.perf_counter()
    dataset = nvt.Dataset(paths, client=client)
    workflow = criteo_workflow()
    workflow.client = client
    workflow.fit(dataset, progress=True)
    fitted = time.perf_counter()
    transformed = workflow.transform(dataset).to_ddf().persist()
    progress(transformed, notebook=False)
    cluster_result = transformed.compute()
    print(f"\\ncluster: fit {fitted - start:.1f} s, transform {time.perf_counter() - fitted:.1f} s")
    """),
    code("""
    pd.testing.assert_frame_equal(cluster_result, local_result)
    for column in CATEGORICAL_COLUMNS:
        assert workflow.output_schema[column] == local_workflow.output_schema[column]
    print("cluster and single-process results are identical")
    """),
    md("Writing from the cluster: each worker writes its partitions."),
    code("""
    files = workflow.transform(dataset).to_parquet(os.path.join(WORK, "processed"), shuffle="PER_WORKER", seed=0)
    print(len(files), "files,", nvt.Dataset(os.path.join(WORK, "processed")).num_rows, "rows")
    """),
    code("""
    client.close()
    cluster.close()
    """, CLEANUP),
]

# --------------------------------------------------------------------------- 05 serving

SERVING = [
    md("""
    # Serving: the fitted workflow on a single request

    At serving time a model receives a few raw rows. The saved workflow turns them into
    exactly the features the model was trained on: unseen categories map to the
    out-of-vocabulary id, nulls are filled, continuous values are normalized with the
    training statistics.

    The first part trains a small DLRM and saves the workflow and the weights; the second
    part is what a serving process does: load both, transform a request, predict.
    """),
    code(SETUP.format(name="serving")),
    code("""
    import time

    import numpy as np
    import pandas as pd
    import torch

    import tabflow as nvt
    from tabflow import ops
    from tabflow.datasets import CATEGORICAL_COLUMNS, CONTINUOUS_COLUMNS, LABEL_COLUMNS, generate_criteo
    from tabflow.framework_utils.torch import DLRM, sparse_and_dense_parameters
    from tabflow.loader.torch import Loader

    torch.manual_seed(0)
    MODEL_ARGS = dict(embedding_dim=8, bottom_mlp=[32], top_mlp=[32], combiner="sum")
    """),
    md("## Training side: fit, train briefly, save the workflow and the weights"),
    code("""
    raw = generate_criteo(ROWS, seed=0)
    cats = CATEGORICAL_COLUMNS >> ops.Categorify(freq_threshold=2)
    conts = CONTINUOUS_COLUMNS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    workflow = nvt.Workflow(cats + conts + (LABEL_COLUMNS >> ops.AddTags("target")))
    train = workflow.fit_transform(nvt.Dataset(raw, npartitions=2))

    model = DLRM.from_schema(workflow.output_schema, **MODEL_ARGS)
    sparse_params, dense_params = sparse_and_dense_parameters(model)
    optimizers = [torch.optim.SparseAdam(sparse_params, lr=0.01), torch.optim.Adam(dense_params, lr=0.003)]
    loss_fn = torch.nn.BCEWithLogitsLoss()
    with Loader(train, batch_size=max(1024, ROWS // 20), labels=LABEL_COLUMNS, shuffle=True) as loader:
        for inputs, target in loader:
            loss = loss_fn(model(inputs), target.float())
            for optimizer in optimizers:
                optimizer.zero_grad()
            loss.backward()
            for optimizer in optimizers:
                optimizer.step()
    print(f"last batch loss {loss.item():.4f}")

    workflow.save(os.path.join(WORK, "workflow"))
    torch.save(model.state_dict(), os.path.join(WORK, "dlrm.pt"))
    sorted(os.listdir(WORK))
    """),
    md("""
    ## Serving side

    A fresh process knows only the two saved artifacts (and the model's constructor
    arguments). The model is rebuilt from the saved workflow's output schema, so the
    embedding tables have the trained shapes.
    """),
    code("""
    serving_workflow = nvt.Workflow.load(os.path.join(WORK, "workflow"))
    serving_model = DLRM.from_schema(serving_workflow.output_schema, **MODEL_ARGS)
    serving_model.load_state_dict(torch.load(os.path.join(WORK, "dlrm.pt"), weights_only=True))
    serving_model.eval()
    """),
    md("""
    A request of three rows: one ordinary, one with categories never seen in training, one
    with nulls everywhere they are allowed.
    """),
    code("""
    request = generate_criteo(3, seed=12345).drop(columns=LABEL_COLUMNS)
    request.loc[1, ["C1", "C2", "C3"]] = ["deadbeef", "cafebabe", "0badf00d"]
    request.loc[2, CONTINUOUS_COLUMNS] = pd.NA
    request.loc[2, CATEGORICAL_COLUMNS] = pd.NA
    request[["I1", "I2", "I5", "C1", "C2", "C3", "C6"]]
    """),
    code("""
    # Only the feature columns: the label is not part of a request.
    features = serving_workflow.output_schema.without(LABEL_COLUMNS).column_names
    request_with_label = request.assign(label=0)
    transformed = serving_workflow.transform(request_with_label)[features]
    transformed[["I1", "I2", "I5", "C1", "C2", "C3", "C6"]]
    """),
    md("""
    Row 1's unseen values got id 2 (out of vocabulary), row 2's null categories id 1 and its
    continuous values the normalized fill value. Now the model:
    """),
    code("""
    def to_batch(frame):
        # One tensor per column, as the Loader delivers them (copies: pandas arrays are read-only).
        return {name: torch.tensor(frame[name].to_numpy()) for name in frame.columns}


    with torch.no_grad():
        probabilities = torch.sigmoid(serving_model(to_batch(transformed)))
    assert transformed.loc[1, "C1"] == 2 and transformed.loc[2, "C1"] == 1
    assert torch.isfinite(probabilities).all()
    pd.DataFrame({"click probability": probabilities.numpy()})
    """),
    md("## Latency of the single-request transform"),
    code("""
    one_row = request_with_label.iloc[:1]
    timings = []
    for _ in range(30):
        start = time.perf_counter()
        serving_workflow.transform(one_row)
        timings.append(time.perf_counter() - start)
    print(f"workflow.transform on 1 row: median {1000 * np.median(timings):.2f} ms, p90 {1000 * np.percentile(timings, 90):.2f} ms")

    start = time.perf_counter()
    with torch.no_grad():
        serving_model(to_batch(serving_workflow.transform(one_row)[features]))
    print(f"transform + predict: {1000 * (time.perf_counter() - start):.2f} ms")
    """),
    code(CLEANUP),
]

# --------------------------------------------------------------------------- 06 incremental training

INCREMENTAL = [
    md("""
    # Incremental training: a model retrained every day on the newest log

    A recommender is retrained every day on yesterday's events, starting from yesterday's
    weights. New items appear every day, so the preprocessing must learn their ids too.
    Refitting the workflow on the whole history would renumber every category, and the
    model's embedding rows would no longer match their values: the model must start over.

    `Workflow.partial_fit` continues the fitted statistics with the new day instead: known
    values keep their ids, new ones get ids after them, and `grow_embeddings` gives the
    model's tables (and its optimizer's state) rows for the new ids. This notebook trains
    both ways over a week of a synthetic log whose item vocabulary drifts, and compares the
    next-day validation AUC and the time each approach takes a day.
    """),
    code(SETUP.format(name="incremental")),
    code("""
    import time

    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    import torch
    from sklearn.metrics import roc_auc_score

    import tabflow as nvt
    from tabflow import ops
    from tabflow.framework_utils.torch import DLRM, grow_embeddings
    from tabflow.loader.torch import Loader
    from tabflow.ops import get_embedding_sizes

    torch.set_num_threads(2)
    _ = torch.manual_seed(0)
    """),
    md("""
    ## A log whose vocabulary drifts

    Each day draws items from a window of ids that moves forward: a fifth of the items of a
    day were never seen before. Every item has a hidden appeal and every user a bias; the
    click probability follows them and the hour of the day.
    """),
    code("""
    DAYS = 7
    ROWS_PER_DAY = max(ROWS // 4, 5000)
    ITEM_APPEAL = np.random.default_rng(7).normal(0.0, 1.5, 10_000)
    USER_BIAS = np.random.default_rng(8).normal(0.0, 0.8, 500)


    def day_log(day):
        rng = np.random.default_rng(day)
        items = 60 * day + rng.zipf(1.3, ROWS_PER_DAY) % 300
        users = rng.integers(0, len(USER_BIAS), ROWS_PER_DAY)
        hour = rng.integers(0, 24, ROWS_PER_DAY)
        logit = -1.0 + ITEM_APPEAL[items] + USER_BIAS[users] + 0.4 * np.cos(hour / 24 * 2 * np.pi)
        return pd.DataFrame({
            "item": pd.Series(items.astype(str), dtype="str"),
            "user": pd.Series(users.astype(str), dtype="str"),
            "hour": hour.astype("float64"),
            "click": (rng.random(ROWS_PER_DAY) < 1 / (1 + np.exp(-logit))).astype("int64"),
        })


    days = [day_log(day) for day in range(DAYS)]
    new_items = [len(set(days[d]["item"]) - set(pd.concat(days[:d])["item"])) if d else days[0]["item"].nunique() for d in range(DAYS)]
    pd.DataFrame({"rows": [len(d) for d in days], "items": [d["item"].nunique() for d in days], "new items": new_items})
    """),
    md("""
    ## The workflow and the model

    The same workflow and model serve both approaches. `Categorify` gives the items and users
    their ids; the hour is normalized; DLRM embeds the ids (dense Adam, so that the
    optimizer's state has rows to grow).
    """),
    code("""
    BATCH_SIZE = 512


    def build_workflow():
        cats = ["item", "user"] >> ops.Categorify()
        return nvt.Workflow(cats + (["hour"] >> ops.Normalize()) + (["click"] >> ops.AddTags("target")))


    def build_model(workflow):
        model = DLRM.from_schema(workflow.output_schema, embedding_dim=8, bottom_mlp=[8], top_mlp=[32], sparse=False)
        return model, torch.optim.Adam(model.parameters(), lr=0.01)


    def loader(workflow, frame, shuffle=False):
        data = nvt.Dataset(workflow.transform(frame), schema=workflow.output_schema)
        return Loader(data, batch_size=BATCH_SIZE, labels=["click"], shuffle=shuffle)


    def train(model, optimizer, workflow, frame):
        loss_fn = torch.nn.BCEWithLogitsLoss()
        with loader(workflow, frame, shuffle=True) as batches:
            for inputs, target in batches:
                optimizer.zero_grad()
                loss_fn(model(inputs), target.float()).backward()
                optimizer.step()


    def validation_auc(model, workflow, frame):
        model.eval()
        with torch.no_grad(), loader(workflow, frame) as batches:
            pairs = [(torch.sigmoid(model(inputs)), target) for inputs, target in batches]
        model.train()
        return roc_auc_score(torch.cat([t for _, t in pairs]).numpy(), torch.cat([p for p, _ in pairs]).numpy())


    # Not timed: the first fit and the first batches compile kernels that both approaches use.
    warm_up = build_workflow().fit(days[0])
    train(*build_model(warm_up), warm_up, days[0])
    """),
    md("""
    ## Every day: update the workflow, grow the model, train on the new day

    Before training on a day, the model of the day before is validated on it (next-day
    AUC). Then `partial_fit` adds the day to the workflow's statistics, `grow_embeddings`
    gives the item table rows for the day's new items (learned rows unchanged, Adam's moments
    grown with zeros), and the model trains one epoch on the day.
    """),
    code("""
    incremental = {"auc": [], "seconds": [], "rows": []}
    workflow, model, optimizer = build_workflow(), None, None
    for day, frame in enumerate(days):
        if model is not None:
            incremental["auc"].append(validation_auc(model, workflow, frame))
        start = time.perf_counter()
        workflow.partial_fit(frame)
        if model is None:
            model, optimizer = build_model(workflow)
        else:
            grown = grow_embeddings(model, get_embedding_sizes(workflow), optimizer)
        train(model, optimizer, workflow, frame)
        incremental["seconds"].append(time.perf_counter() - start)
        incremental["rows"].append(model.embeddings.tables["item"].num_embeddings)
    print(f"{workflow.n_updates_} updates, {workflow.n_samples_seen_:,} rows seen; last growth: {grown}")
    """),
    md("""
    ## Refitting from scratch every day

    Without updates, each day the workflow is fitted again on the whole history, which
    renumbers the items, so a new model trains on the whole history too.
    """),
    code("""
    refit = {"auc": [], "seconds": []}
    model = None
    for day, frame in enumerate(days):
        if model is not None:
            refit["auc"].append(validation_auc(model, workflow, frame))
        start = time.perf_counter()
        history = pd.concat(days[: day + 1], ignore_index=True)
        workflow = build_workflow().fit(history)
        model, optimizer = build_model(workflow)
        train(model, optimizer, workflow, history)
        refit["seconds"].append(time.perf_counter() - start)
    """),
    code("""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    validated = range(2, DAYS + 1)
    left.plot(validated, incremental["auc"], marker="o", label="update + grow (partial_fit)")
    left.plot(validated, refit["auc"], marker="s", label="refit from scratch")
    left.set_xlabel("day validated (model of the day before)")
    left.set_ylabel("validation AUC")
    left.legend()
    trained = range(1, DAYS + 1)
    right.plot(trained, incremental["seconds"], marker="o", label="update + grow + train the day")
    right.plot(trained, refit["seconds"], marker="s", label="refit + train the history")
    right.set_xlabel("day")
    right.set_ylabel("seconds")
    right.legend()
    fig.tight_layout()
    plt.show()
    pd.DataFrame({
        "update AUC": [np.nan, *incremental["auc"]], "refit AUC": [np.nan, *refit["auc"]],
        "update s": incremental["seconds"], "refit s": refit["seconds"], "item table rows": incremental["rows"],
    }, index=pd.RangeIndex(1, DAYS + 1, name="day")).round(3)
    """),
    md("""
    The updated model keeps what it learned about the items it has seen, learns the new
    ones from their first day, and its daily cost stays that of one day; a refit's grows
    with the history. The item table grows every day, and the rows of earlier items never
    move.
    """),
    code("""
    assert np.mean(incremental["auc"][-3:]) > 0.6 and incremental["rows"] == sorted(incremental["rows"])
    """),
    code(CLEANUP),
]

NOTEBOOKS = {
    "01-getting-started.ipynb": GETTING_STARTED,
    "02-fastai-training.ipynb": FASTAI,
    "03-pytorch-multihot.ipynb": MULTIHOT,
    "04-scaling-out.ipynb": SCALING,
    "05-serving.ipynb": SERVING,
    "06-incremental-training.ipynb": INCREMENTAL,
}


def build(directory: str = HERE) -> list[str]:
    """Write every notebook into ``directory``; return the paths."""
    written = []
    for name, cells in NOTEBOOKS.items():
        notebook = new_notebook(
            cells=cells,
            metadata={
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                "language_info": {"name": "python"},
            },
        )
        # Stable cell ids keep regenerated notebooks free of spurious diffs.
        stem = name.split("-", 1)[0]
        for i, cell in enumerate(notebook.cells):
            cell.id = f"nb{stem}-{i:02d}"
        nbformat.validate(notebook)
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as handle:
            nbformat.write(notebook, handle)
        written.append(path)
    return written


if __name__ == "__main__":
    for path in build():
        print(path)
