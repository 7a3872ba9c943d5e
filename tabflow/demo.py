"""The end-to-end job behind ``tabflow demo``: click-log data, ETL, loading and training.

Each step is a function that the command and ``benchmarks/loader.py`` share:

1. :func:`raw_files` generates a synthetic Criteo-like click log (or takes real Criteo day
   files) and :func:`split_train_valid` keeps the last file(s) for validation;
2. :func:`criteo_workflow` builds the usual Criteo graph and :func:`run_etl` fits it on the
   training split and writes both splits as shuffled parquet;
3. :func:`loader_pass` reads the training split once through ``TorchAsyncItr``;
4. :func:`train_tabular` trains fastai's ``TabularModel`` on it and validates on the rest.

Long steps show tqdm progress bars on stderr; results are printed on stdout.

Examples
--------
>>> from tabflow.demo import criteo_workflow, split_train_valid
>>> criteo_workflow(freq_threshold=15)
Workflow(Categorify -> FillMissing -> Clip -> LogOp -> Normalize)
>>> split_train_valid(["a.parquet", "b.parquet", "c.parquet", "d.parquet"])
(['a.parquet', 'b.parquet', 'c.parquet'], ['d.parquet'])
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import time
import uuid
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from tabflow._install import missing_modules, pip_install
from tabflow.dataset import Dataset
from tabflow.io.readers import CRITEO_CATEGORICAL, CRITEO_CONTINUOUS, expand_paths
from tabflow.io.shuffle import Shuffle
from tabflow.workflow import Workflow

__all__ = [
    "CATEGORICAL",
    "CONTINUOUS",
    "LABEL",
    "DemoConfig",
    "DemoResult",
    "check_requirements",
    "run_demo",
    "raw_files",
    "split_train_valid",
    "criteo_workflow",
    "run_etl",
    "make_loader",
    "loader_pass",
    "train_tabular",
    "save_loss_plot",
]

CATEGORICAL = list(CRITEO_CATEGORICAL)
CONTINUOUS = list(CRITEO_CONTINUOUS)
LABEL = ["label"]

# About this many rows per generated file: several files per split keep both cores busy and
# give the validation split whole files of its own.
_ROWS_PER_FILE = 250_000
# The training split yields at least this many batches, so that one epoch takes enough
# optimizer steps for the model to learn something even on small --rows.
_MIN_STEPS = 20
# Modules of the training step (the `fastai` extra), checked before any data is generated.
_TRAINING_MODULES = ["torch", "fastai", "sklearn", "matplotlib"]


@dataclass
class DemoConfig:
    """Settings of :func:`run_demo` (the ``tabflow demo`` options)."""

    rows: int = 2_000_000
    criteo_dir: str | None = None
    workdir: str = "demo_output"
    batch_size: int = 65536
    epochs: int = 1
    cpu: bool | None = None
    seed: int = 0
    freq_threshold: int = 15
    part_size: str = "64MB"
    layers: list[int] = field(default_factory=lambda: [200, 100])
    lr: float = 1e-2
    progress: bool = True


@dataclass
class DemoResult:
    """What :func:`run_demo` measured."""

    train_rows: int
    valid_rows: int
    etl_seconds: float
    etl_rows_per_s: float
    loader_rows_per_s: float
    train_rows_per_s: float
    valid_auc: float
    loss_plot: str
    batch_size: int


def _say(message: str) -> None:
    print(message, flush=True)


# ----------------------------------------------------------------------------------- data


def raw_files(config: DemoConfig, say: Callable[[str], None] = _say) -> tuple[list[str], str]:
    """The raw click-log files and their engine: real Criteo files, or synthetic parquet.

    Synthetic data is written once per (rows, seed) under ``workdir`` and reused afterwards;
    it is written to a temporary directory renamed at the end, so an interrupted run never
    leaves a directory that looks complete.
    """
    if config.criteo_dir:
        files = expand_paths(config.criteo_dir, "csv")
        say(f"data: {len(files)} Criteo file(s) from {config.criteo_dir} (--rows is ignored)")
        return files, "criteo"
    target = os.path.join(os.path.abspath(config.workdir), f"raw_rows{config.rows}_seed{config.seed}")
    if os.path.isdir(target):
        files = expand_paths(target, "parquet")
        say(f"data: reusing {config.rows:,} synthetic rows in {target}")
        return files, "parquet"
    try:
        from tabflow.datasets import write_criteo
    except ImportError as err:
        raise RuntimeError(f"the synthetic data generator is unavailable ({err}); pass --criteo-dir") from err
    num_files = max(4, math.ceil(config.rows / _ROWS_PER_FILE))
    tmp = f"{target}.tmp-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    try:
        write_criteo(tmp, config.rows, num_files=num_files, format="parquet", seed=config.seed, progress=config.progress)
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    seconds = time.perf_counter() - start
    say(f"data: generated {config.rows:,} synthetic rows in {num_files} files in {seconds:.1f} s -> {target}")
    return expand_paths(target, "parquet"), "parquet"


def split_train_valid(files: Sequence[str], valid_fraction: float = 0.125) -> tuple[list[str], list[str]]:
    """Split a list of files into training files and the last file(s) for validation.

    At least one file goes to each side (so at least two files are needed); the validation
    side gets about ``valid_fraction`` of the files.
    """
    files = list(files)
    if len(files) < 2:
        raise ValueError(f"need at least 2 files to split train/validation by file, got {len(files)}")
    n_valid = min(len(files) - 1, max(1, round(len(files) * valid_fraction)))
    return files[:-n_valid], files[-n_valid:]


def _split_datasets(files: list[str], engine: str, config: DemoConfig) -> tuple[Dataset, Dataset]:
    def dataset(source: Any) -> Dataset:
        return Dataset(source, engine=engine, part_size=config.part_size, cpu=config.cpu)

    if len(files) >= 2:
        train_files, valid_files = split_train_valid(files)
        return dataset(train_files), dataset(valid_files)
    # A single file: split its partitions instead (the last one or few validate).
    whole = dataset(files)
    if whole.npartitions < 2:
        raise ValueError(f"{files[0]} is a single partition; use more files or a smaller part_size")
    n_valid = max(1, round(whole.npartitions * 0.125))
    ddf = whole.to_ddf(arrow_lists=True)
    cpu = whole.engine == "pandas"
    return (
        Dataset(ddf.partitions[: whole.npartitions - n_valid], cpu=cpu, schema=whole.schema),
        Dataset(ddf.partitions[whole.npartitions - n_valid :], cpu=cpu, schema=whole.schema),
    )


# ------------------------------------------------------------------------------------ ETL


def criteo_workflow(freq_threshold: int = 15) -> Workflow:
    """The usual Criteo workflow: categorify the C columns, log-normalize the I columns."""
    from tabflow import ops

    cats = CATEGORICAL >> ops.Categorify(freq_threshold=freq_threshold)
    conts = CONTINUOUS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    return Workflow(cats + conts + LABEL)


def run_etl(
    workflow: Workflow,
    train: Dataset,
    valid: Dataset | None,
    output_dir: str,
    progress: bool = True,
    seed: int | None = 0,
) -> dict[str, float]:
    """Fit ``workflow`` on ``train``; write both splits to ``output_dir/{train,valid}``.

    Returns the seconds each step took (``fit``, ``transform``) and the rows written.
    """
    start = time.perf_counter()
    workflow.fit(train, progress=progress)
    fitted = time.perf_counter()
    rows = 0
    for name, split in (("train", train), ("valid", valid)):
        if split is None:
            continue
        workflow.transform(split).to_parquet(
            os.path.join(output_dir, name), shuffle=Shuffle.PER_PARTITION, seed=seed,
            cats=CATEGORICAL, conts=CONTINUOUS, labels=LABEL, progress=progress,
        )
        rows += split.num_rows
    workflow.save(os.path.join(output_dir, "workflow"))
    done = time.perf_counter()
    return {"fit": fitted - start, "transform": done - fitted, "rows": float(rows)}


# --------------------------------------------------------------------------------- loading


def make_loader(dataset: Dataset, batch_size: int, shuffle: bool, device: Any = "cpu", seed: int = 0, parts_per_chunk: int = 1) -> Any:
    """``TorchAsyncItr`` over the Criteo columns of a transformed dataset."""
    from tabflow.loader.torch import TorchAsyncItr

    return TorchAsyncItr(
        dataset, batch_size=batch_size, cats=CATEGORICAL, conts=CONTINUOUS, labels=LABEL,
        # A new seed per epoch (reproducible across runs, different across epochs).
        shuffle=shuffle, seed_fn=itertools.count(seed).__next__ if shuffle else None, parts_per_chunk=parts_per_chunk, device=device,
    )


def loader_pass(itr: Any, progress: bool = True, desc: str = "loader pass") -> tuple[int, float]:
    """Iterate ``itr`` once without a model; return (rows, seconds)."""
    from tqdm.auto import tqdm

    rows = 0
    start = time.perf_counter()
    with tqdm(total=_length(itr), desc=desc, unit="batch", disable=not progress) as bar:
        for x_cat, _x_cont, _y in itr:
            rows += int(x_cat.shape[0])
            bar.update(1)
    return rows, time.perf_counter() - start


def _length(itr: Any) -> int | None:
    try:
        return len(itr)
    except TypeError:
        return None


# -------------------------------------------------------------------------------- training


def _as_target(batch: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
    # CrossEntropyLoss wants class indices: a flat int64 vector.
    x_cat, x_cont, y = batch
    return x_cat, x_cont, y.reshape(-1).long()


def train_tabular(
    workflow: Workflow,
    train: Dataset,
    valid: Dataset,
    config: DemoConfig,
    device: Any = "cpu",
) -> dict[str, Any]:
    """Train fastai's ``TabularModel`` for ``config.epochs`` through ``TorchAsyncItr``.

    Returns training seconds (training batches only, not validation), the per-batch training
    losses, the validation loss and AUC of the last epoch.
    """
    import torch

    with warnings.catch_warnings():
        # fastai's import-time deprecation notices (torch.jit.script, a pandas option) are
        # about fastai itself and tell a user of this command nothing actionable.
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        from fastai.callback.core import Callback as LearnerCallback
        from fastai.callback.schedule import fit_one_cycle  # noqa: F401 - adds Learner.fit_one_cycle
        from fastai.learner import Learner
        from fastai.metrics import RocAucBinary
        from fastai.tabular.data import TabularDataLoaders
        from fastai.tabular.model import TabularModel

    from tabflow.loader.torch import DLDataLoader
    from tabflow.ops import get_embedding_sizes

    sizes = get_embedding_sizes(workflow)
    assert isinstance(sizes, dict)  # one table per column: the demo's categorical columns hold no lists
    # Order by the loader's column order, not by the mapping's.
    embeddings = [(sizes[c][0], min(16, sizes[c][1])) for c in CATEGORICAL]

    def dataloader(split: Dataset, shuffle: bool) -> Any:
        itr = make_loader(split, config.batch_size, shuffle, device=device, seed=config.seed)
        return DLDataLoader(itr, collate_fn=_as_target, batch_size=None, pin_memory=False, num_workers=0)

    dls = TabularDataLoaders(dataloader(train, True), dataloader(valid, False))
    torch.manual_seed(config.seed)
    model = TabularModel(emb_szs=embeddings, n_cont=len(CONTINUOUS), out_sz=2, layers=list(config.layers))
    if str(device) != "cpu":
        model = model.cuda()

    class TrainClock(LearnerCallback):
        """Wall-clock of the training phases only (validation excluded)."""

        order = -10  # before the progress bar, so its printing is not timed

        def before_fit(self) -> None:
            self.seconds = 0.0

        def before_train(self) -> None:
            self.started = time.perf_counter()

        def after_train(self) -> None:
            self.seconds += time.perf_counter() - self.started

    clock = TrainClock()
    learn = Learner(
        dls, model, loss_func=torch.nn.CrossEntropyLoss(), metrics=[RocAucBinary()], cbs=[clock],
        path=config.workdir,
    )
    try:
        if config.progress:
            learn.fit_one_cycle(config.epochs, lr_max=config.lr)
        else:
            # Without the bar fastai would print each epoch's raw metric list; the caller reports them.
            with learn.no_bar(), learn.no_logging():
                learn.fit_one_cycle(config.epochs, lr_max=config.lr)
    finally:
        for loader in dls.loaders:
            loader.shutdown()
    valid_loss, auc = learn.recorder.values[-1][1:3]
    return {
        "seconds": clock.seconds,
        "losses": [float(v) for v in learn.recorder.losses],
        "valid_loss": float(valid_loss),
        "auc": float(auc),
    }


def save_loss_plot(losses: Sequence[float], batch_size: int, path: str) -> str:
    """Write the training-loss curve to a PNG (no pyplot, so no global backend change)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 3.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.plot([(i + 1) * batch_size for i in range(len(losses))], list(losses), marker=".")
    axes.set_xlabel("training rows seen")
    axes.set_ylabel("cross-entropy (smoothed)")
    axes.set_title("TabularModel training loss")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    return path


# ------------------------------------------------------------------------------------ demo


def _torch_device(cpu: bool | None) -> str:
    import torch

    if cpu:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    if cpu is False:
        raise RuntimeError("--gpu was given but PyTorch sees no CUDA device")
    return "cpu"


def check_requirements(cpu: bool | None = None) -> None:
    """Fail early, saying what to install, when a package the demo needs is missing.

    Raises
    ------
    ImportError
        When PyTorch, fastai, scikit-learn or matplotlib is missing (the ``fastai`` extra), or
        for ``cpu=False`` when RAPIDS cuDF is (a ``gpu-cu12`` / ``gpu-cu13`` extra).

    Examples
    --------
    >>> import sys
    >>> from unittest import mock
    >>> from tabflow.demo import check_requirements
    >>> with mock.patch.dict(sys.modules, {"fastai": None}):
    ...     check_requirements()
    Traceback (most recent call last):
    ImportError: the demo trains with fastai, which is not installed: pip install ...[fastai]"
    """
    missing = missing_modules(_TRAINING_MODULES)
    if missing:
        which = "is" if len(missing) == 1 else "are"
        raise ImportError(f"the demo trains with {', '.join(missing)}, which {which} not installed: {pip_install('fastai')}")
    if cpu is False:
        from tabflow.backends import get_backend

        get_backend("cudf")  # an ImportError naming the GPU extras when cuDF is missing


def run_demo(config: DemoConfig, say: Callable[[str], None] = _say) -> DemoResult:
    """Generate (or read) data, run the ETL, time the loader, train; print and return rates."""
    check_requirements(config.cpu)
    os.makedirs(config.workdir, exist_ok=True)
    files, engine = raw_files(config, say)
    train_raw, valid_raw = _split_datasets(files, engine, config)
    say(f"split: {train_raw.npartitions} training and {valid_raw.npartitions} validation partition(s)")

    processed = os.path.join(config.workdir, "processed")
    workflow = criteo_workflow(config.freq_threshold)
    etl = run_etl(workflow, train_raw, valid_raw, processed, progress=config.progress, seed=config.seed)
    etl_seconds = etl["fit"] + etl["transform"]
    etl_rate = etl["rows"] / etl_seconds
    say(
        f"ETL: {int(etl['rows']):,} rows in {etl_seconds:.1f} s (fit {etl['fit']:.1f} s, transform+write "
        f"{etl['transform']:.1f} s): {etl_rate:,.0f} rows/s; workflow saved to {processed}/workflow"
    )

    cpu = train_raw.engine == "pandas" if config.cpu is None else config.cpu
    device = _torch_device(config.cpu)
    train = Dataset(os.path.join(processed, "train"), engine="parquet", part_size=config.part_size, cpu=cpu)
    valid = Dataset(os.path.join(processed, "valid"), engine="parquet", part_size=config.part_size, cpu=cpu)
    batch_size = min(config.batch_size, max(256, train.num_rows // _MIN_STEPS))
    if batch_size != config.batch_size:
        say(f"batch size {config.batch_size:,} lowered to {batch_size:,} so that an epoch has >= {_MIN_STEPS} steps")
        config = replace(config, batch_size=batch_size)

    with make_loader(train, batch_size, True, device=device, seed=config.seed) as itr:
        rows, seconds = loader_pass(itr, config.progress)
    loader_rate = rows / seconds
    say(f"loader: {rows:,} rows in {seconds:.2f} s: {loader_rate:,.0f} rows/s (TorchAsyncItr, batch {batch_size:,}, shuffled, no model)")

    trained = train_tabular(workflow, train, valid, config, device=device)
    train_rate = train.num_rows * config.epochs / trained["seconds"]
    say(
        f"training: {train.num_rows * config.epochs:,} rows in {trained['seconds']:.1f} s: {train_rate:,.0f} rows/s "
        f"(TabularModel {config.layers}, {config.epochs} epoch(s), {device})"
    )
    say(f"validation: AUC {trained['auc']:.4f}, loss {trained['valid_loss']:.4f} on {valid.num_rows:,} rows")
    plot = save_loss_plot(trained["losses"], batch_size, os.path.join(os.path.abspath(config.workdir), "loss_curve.png"))
    say(f"loss curve: {plot}")
    return DemoResult(
        train_rows=train.num_rows, valid_rows=valid.num_rows, etl_seconds=etl_seconds, etl_rows_per_s=etl_rate,
        loader_rows_per_s=loader_rate, train_rows_per_s=train_rate, valid_auc=trained["auc"], loss_plot=plot,
        batch_size=batch_size,
    )
