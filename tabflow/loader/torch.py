"""PyTorch data loading: ``TorchAsyncItr`` (fastai-style tuples), ``Loader`` (dicts) and
``DLDataLoader`` (a ``torch.utils.data.DataLoader`` that fastai's ``Learner`` accepts).

Both iterators read a :class:`tabflow.Dataset` a few partitions at a time in a background
thread, convert each column to a tensor once per chunk and deliver batches as views of the
chunk tensors. Rows are split between data-parallel ranks, shuffled per epoch with a
reproducible seed, and an epoch can be resumed mid-way from :meth:`TorchAsyncItr.state_dict`.

Examples
--------
>>> import pandas as pd
>>> import tabflow as nvt
>>> from tabflow.loader.torch import TorchAsyncItr
>>> df = pd.DataFrame({"c": [1, 2, 3, 4, 5], "x": [0.1, 0.2, 0.3, 0.4, 0.5], "y": [0, 1, 0, 1, 1]})
>>> with TorchAsyncItr(nvt.Dataset(df), batch_size=2, cats=["c"], conts=["x"], labels=["y"]) as itr:
...     [tuple(x_cat.shape) for x_cat, x_cont, y in itr]
[(2, 1), (2, 1), (1, 1)]
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

import torch

from tabflow.loader._builders import (
    ColumnSpec,
    DictBuilder,
    TupleBuilder,
    natural_dtype,
    ragged_coordinates,
    widths,
)
from tabflow.loader._pipeline import ChunkLoader, resolve_device
from tabflow.loader._tensors import Ragged
from tabflow.loader.embeddings import (
    EmbeddingTables,
    embedding_config,
    sparse_and_dense_parameters,
)
from tabflow.loader.models import DLRM
from tabflow.schema import Tags

__all__ = [
    "TorchAsyncItr",
    "Loader",
    "DLDataLoader",
    "EmbeddingTables",
    "embedding_config",
    "sparse_and_dense_parameters",
    "DLRM",
]

_SHARED_DOC = """
    batch_size : int
        Rows per batch (default 1, as in NVTabular). Every batch is full except possibly the
        last of an epoch.
    shuffle : bool
        Each epoch, shuffle the partition order and the rows inside each chunk.
    seed_fn : callable, optional
        Called once at the start of every epoch; returns a non-negative integer that is
        mixed with the epoch number into the epoch's seed (NumPy's
        ``SeedSequence(seed, spawn_key=(epoch,))``). So ``seed_fn=lambda: 1234`` gives a
        different order every epoch and the same orders in every run, and seeds returned
        for consecutive epochs may be consecutive numbers without repeating an order. In a
        data-parallel job it must return the same value on every rank, which then all cut
        their shares from the same global order. Without it, epoch ``e`` uses a fixed seed
        derived from ``e`` (reproducible, and identical on all ranks). An epoch resumed with
        ``load_state_dict`` keeps the seed saved with it; ``seed_fn`` is not called for it.
    parts_per_chunk : int
        Partitions concatenated (and shuffled together) per chunk. Memory holds up to about
        eight chunks' worth: one being cut into batches, two queued, one being shuffled (its
        converted partitions and their shuffled copy) and up to three partitions being read
        and converted ahead. Host memory of chunks is reused once no batch of it is
        referenced any more, and released by ``shutdown()``.
    device : str, int or torch.device, optional
        ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a CUDA index. Default: CPU for the pandas
        engine, the current CUDA device for cuDF. CUDA chunks are copied from pinned host
        memory asynchronously, in the loader thread, ahead of their use (cuDF columns go to
        CUDA through DLPack without a host copy).
    global_size, global_rank : int, optional
        Data-parallel world size and rank; default from ``torch.distributed`` when it is
        initialised, else 1 and 0. The epoch's global row order (partitions in the, possibly
        shuffled, epoch order) is cut into ``global_size`` contiguous shares of
        ``num_rows // global_size`` rows; rank ``r`` gets share ``r``. The last
        ``num_rows % global_size`` rows of that order (fewer than ``global_size``) are not
        used that epoch; with shuffling they differ from epoch to epoch. All ranks thus
        deliver disjoint rows and the same number of batches, and each reads only the
        partitions overlapping its share.
    drop_last : bool
        Drop the last, incomplete batch of each epoch."""


def _check_columns(dataset: Any, names: Sequence[str], role: str) -> list[str]:
    if isinstance(names, (int, float)) or not (isinstance(names, str) or hasattr(names, "__iter__")):
        raise TypeError(
            f"{role} columns must be column names, got {names!r}; the arguments come in NVTabular's "
            "order (dataset, cats, conts, labels, batch_size, ...): pass batch_size=... by keyword"
        )
    names = [names] if isinstance(names, str) else list(names)
    schema = dataset.schema
    missing = [n for n in names if n not in schema]
    if missing:
        raise KeyError(f"{role} column(s) {missing} are not in the dataset; its columns are {schema.column_names}")
    return names


class TorchAsyncItr(ChunkLoader):
    """Batches ``(x_cat, x_cont, y)`` ready for fastai's ``TabularModel``.

    ``x_cat`` is int64 ``[bs, len(cats)]``, ``x_cont`` float32 ``[bs, len(conts)]``, in the
    given column order; ``y`` is float32 ``[bs]`` for one label (``y.long()`` gives the class
    indices ``CrossEntropyLoss`` expects) or ``[bs, len(labels)]`` for several. A null in a
    continuous column becomes NaN; a null in a categorical or label column is an error that
    names the column.

    The arguments are in NVTabular's order (``dataset, cats, conts, labels, batch_size, ...``).

    Parameters
    ----------
    dataset : tabflow.Dataset
    cats, conts, labels : list of str, optional
        Column roles; each defaults to the dataset schema's columns tagged CATEGORICAL,
        CONTINUOUS or TARGET. A role with no columns gives a ``[bs, 0]`` tensor. List
        (multi-hot) columns are not accepted: use :class:`Loader`.
    batch_size, shuffle, seed_fn, parts_per_chunk, device, global_size, global_rank, drop_last :
        See below.
    sparse_names, sparse_max, sparse_as_dense :
        Accepted for NVTabular's signature; anything but their defaults is an error
        pointing to :class:`Loader`, which delivers list columns.
    {shared}

    Attributes
    ----------
    cat_names, cont_names, label_names : list of str
    num_rows_processed : int
        Rows delivered so far in the current epoch.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow.loader.torch import TorchAsyncItr
    >>> ds = nvt.Dataset(pd.DataFrame({{"c": [3, 1, 2], "x": [1.0, None, 2.0], "y": [1, 0, 1]}}))
    >>> itr = TorchAsyncItr(ds, batch_size=3, cats=["c"], conts=["x"], labels=["y"])
    >>> x_cat, x_cont, y = next(iter(itr))
    >>> x_cat.dtype, x_cont[:, 0].tolist(), y.long().tolist(), len(itr)
    (torch.int64, [1.0, nan, 2.0], [1, 0, 1], 1)
    >>> itr.shutdown()
    """

    def __init__(
        self,
        dataset: Any,
        cats: Sequence[str] | None = None,
        conts: Sequence[str] | None = None,
        labels: Sequence[str] | None = None,
        batch_size: int = 1,
        shuffle: bool = False,
        seed_fn: Callable[[], int] | None = None,
        parts_per_chunk: int = 1,
        device: Any = None,
        global_size: int | None = None,
        global_rank: int | None = None,
        drop_last: bool = False,
        sparse_names: Sequence[str] | None = None,
        sparse_max: Mapping[str, int] | None = None,
        sparse_as_dense: bool = False,
    ) -> None:
        if sparse_names or sparse_max or sparse_as_dense:
            raise TypeError(
                "TorchAsyncItr yields dense (x_cat, x_cont, y) tensors; sparse_names, sparse_max and "
                "sparse_as_dense describe list (multi-hot) columns, which tabflow.loader.torch.Loader "
                "delivers (as values/offsets, padded dense or sparse tensors): use Loader(dataset, "
                "batch_size, cats=..., conts=..., labels=..., sparse_names=..., sparse_max=..., sparse_as_dense=...)"
            )
        schema = dataset.schema
        self.cat_names = _check_columns(dataset, schema.select_by_tag(Tags.CATEGORICAL).column_names if cats is None else cats, "categorical")
        self.cont_names = _check_columns(dataset, schema.select_by_tag(Tags.CONTINUOUS).column_names if conts is None else conts, "continuous")
        self.label_names = _check_columns(dataset, schema.select_by_tag(Tags.TARGET).column_names if labels is None else labels, "label")
        for name in [*self.cat_names, *self.cont_names, *self.label_names]:
            column = schema[name]
            if column.is_list:
                raise TypeError(
                    f"column {name!r} is a list (multi-hot) column; TorchAsyncItr yields dense "
                    "tensors only. Use tabflow.loader.torch.Loader, which yields list columns as "
                    "values/offsets, padded dense or sparse tensors"
                )
            natural_dtype(str(column.dtype))  # raises for strings, naming the dtype
        self._setup(dataset, batch_size, shuffle, seed_fn, parts_per_chunk, device, global_size, global_rank, drop_last)
        self._columns = list(dict.fromkeys([*self.cat_names, *self.cont_names, *self.label_names]))
        self._builder = TupleBuilder(self.cat_names, self.cont_names, self.label_names)

    def _format(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return batch["cats"], batch["conts"], batch["labels"]

    def _params(self) -> dict[str, Any]:
        return dict(
            dataset=self.dataset, batch_size=self.batch_size, cats=self.cat_names, conts=self.cont_names,
            labels=self.label_names, shuffle=self.shuffle, seed_fn=self.seed_fn, parts_per_chunk=self.parts_per_chunk,
            device=self.device, global_size=self.global_size, global_rank=self.global_rank, drop_last=self.drop_last,
        )


class Loader(ChunkLoader):
    """Batches ``(inputs, targets)`` with ``inputs`` a dict of named tensors.

    Scalar columns are ``[bs]`` tensors under their own name. A list (multi-hot) column
    ``name`` is, by default, two tensors: ``name__values`` (all elements of the batch's rows)
    and ``name__offsets`` (int64, ``bs + 1`` entries, row ``i`` is
    ``values[offsets[i]:offsets[i + 1]]``, the layout ``nn.EmbeddingBag`` takes with
    ``include_last_offset=True``). With ``sparse_as_dense=True`` every list column is instead
    a zero-padded ``[bs, sparse_max[name]]`` tensor; a column listed in ``sparse_names`` (and
    not made dense) is a ``torch.sparse_coo_tensor`` of shape
    ``[bs, sparse_max.get(name, longest row in the batch)]``. A row longer than its
    ``sparse_max`` is an error naming the column and the length; rows are never truncated.

    ``targets`` is one tensor for one target column, a dict for several (multi-task), None
    for none.

    Parameters
    ----------
    dataset : tabflow.Dataset
    batch_size, shuffle, seed_fn, parts_per_chunk, device, global_size, global_rank, drop_last :
        See below.
    cats, conts, labels : list of str, optional
        Categorical columns become int64, continuous float32 (nulls -> NaN). ``labels``
        defaults to the columns tagged TARGET. When ``cats`` and ``conts`` are both omitted,
        every other column is an input, with int64 for integers and float32 for floats.
    transforms : callable or list of callables, optional
        Applied in order to every ``(inputs, targets)`` pair; each returns a new pair.
    sparse_names : list of str, optional
        List columns to deliver as sparse COO tensors.
    sparse_max : dict, optional
        Maximum row length of list columns (the dense / sparse width).
    sparse_as_dense : bool
        Deliver all list columns padded dense (each needs a ``sparse_max`` entry).
    {shared}

    Examples
    --------
    >>> import pandas as pd, pyarrow as pa
    >>> import tabflow as nvt
    >>> from tabflow.loader.torch import Loader
    >>> df = pd.DataFrame({{"item": [1, 2], "y": [0.0, 1.0]}})
    >>> df["tags"] = pd.Series([[1, 2], [3]], dtype=pd.ArrowDtype(pa.list_(pa.int64())))
    >>> with Loader(nvt.Dataset(df), batch_size=2, labels=["y"]) as loader:
    ...     inputs, y = next(iter(loader))
    >>> sorted(inputs), inputs["tags__offsets"].tolist(), y.tolist()
    (['item', 'tags__offsets', 'tags__values'], [0, 2, 3], [0.0, 1.0])
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int = 1,
        shuffle: bool = False,
        seed_fn: Callable[[], int] | None = None,
        parts_per_chunk: int = 1,
        device: Any = None,
        global_size: int | None = None,
        global_rank: int | None = None,
        drop_last: bool = False,
        cats: Sequence[str] | None = None,
        conts: Sequence[str] | None = None,
        labels: Sequence[str] | None = None,
        transforms: Callable | Iterable[Callable] | None = None,
        sparse_names: Sequence[str] | None = None,
        sparse_max: Mapping[str, int] | None = None,
        sparse_as_dense: bool = False,
    ) -> None:
        schema = dataset.schema
        self.label_names = _check_columns(dataset, schema.select_by_tag(Tags.TARGET).column_names if labels is None else labels, "label")
        self._given = (cats, conts)
        if cats is None and conts is None:
            # The dict form feeds every column to the model unless told otherwise.
            self.cat_names = [n for n in schema.select_by_tag(Tags.CATEGORICAL).column_names if n not in self.label_names]
            self.cont_names = [n for n in schema.select_by_tag(Tags.CONTINUOUS).column_names if n not in self.label_names]
            self.input_names = [n for n in schema.column_names if n not in self.label_names]
        else:
            self.cat_names = _check_columns(dataset, cats or [], "categorical")
            self.cont_names = _check_columns(dataset, conts or [], "continuous")
            self.input_names = list(dict.fromkeys([*self.cat_names, *self.cont_names]))
        self.sparse_names = list(sparse_names or [])
        self.sparse_max = widths(sparse_max)
        self.sparse_as_dense = bool(sparse_as_dense)
        self.transforms = transforms
        role_dtype = {**{n: "int64" for n in self.cat_names}, **{n: "float32" for n in self.cont_names}}
        specs = []
        for name in dict.fromkeys([*self.input_names, *self.label_names]):
            column = schema[name]
            natural = natural_dtype(column.element_dtype)  # raises for strings, naming the dtype
            dtype = natural if name in self.label_names else role_dtype.get(name, natural)
            if not column.is_list:
                if name in self.sparse_names:
                    raise TypeError(f"sparse_names lists {name!r}, which is not a list (multi-hot) column")
                specs.append(ColumnSpec(name, dtype))
                continue
            if name in self.label_names:
                raise TypeError(f"target column {name!r} is a list column; targets must be scalar columns")
            dense = self.sparse_as_dense
            if dense and name not in self.sparse_max:
                raise ValueError(f"sparse_as_dense=True needs the padded width of list column {name!r}: pass sparse_max={{{name!r}: ...}}")
            specs.append(ColumnSpec(name, dtype, is_list=True, width=self.sparse_max.get(name), dense=dense))
        unknown = [n for n in self.sparse_names if n not in schema]
        if unknown:
            raise KeyError(f"sparse_names {unknown} are not in the dataset; its columns are {schema.column_names}")
        self._setup(dataset, batch_size, shuffle, seed_fn, parts_per_chunk, device, global_size, global_rank, drop_last)
        self._specs = {spec.name: spec for spec in specs}
        self._columns = [spec.name for spec in specs]
        self._builder = DictBuilder(specs)

    def _format(self, batch: dict) -> tuple[dict[str, torch.Tensor], Any]:
        inputs: dict[str, torch.Tensor] = {}
        for name in self.input_names:
            column, spec = batch[name], self._specs[name]
            if not isinstance(column, Ragged):
                inputs[name] = column
            elif name in self.sparse_names:
                inputs[name] = _to_sparse(column, spec.width)
            else:
                inputs[f"{name}__values"] = column.values
                inputs[f"{name}__offsets"] = column.offsets
        if not self.label_names:
            targets = None
        elif len(self.label_names) == 1:
            targets = batch[self.label_names[0]]
        else:
            targets = {name: batch[name] for name in self.label_names}
        out: Any = (inputs, targets)
        transforms = [self.transforms] if callable(self.transforms) else list(self.transforms or [])
        for transform in transforms:
            out = transform(out)
        return out

    def _params(self) -> dict[str, Any]:
        cats, conts = self._given
        return dict(
            dataset=self.dataset, batch_size=self.batch_size, shuffle=self.shuffle, seed_fn=self.seed_fn,
            parts_per_chunk=self.parts_per_chunk, device=self.device, global_size=self.global_size,
            global_rank=self.global_rank, drop_last=self.drop_last, cats=cats, conts=conts,
            labels=self.label_names, transforms=self.transforms, sparse_names=self.sparse_names,
            sparse_max=self.sparse_max, sparse_as_dense=self.sparse_as_dense,
        )


def _to_sparse(column: Ragged, width: int | None) -> torch.Tensor:
    rows, cols = ragged_coordinates(column)
    nrows = len(column.host_offsets) - 1
    if width is None:
        width = int((column.host_offsets[1:] - column.host_offsets[:-1]).max()) if nrows else 0
    # Coordinates come sorted by (row, position) without duplicates: the tensor is coalesced
    # by construction, so the invariant check would only cost time.
    return torch.sparse_coo_tensor(
        torch.stack([rows, cols]), column.values, size=(nrows, width), check_invariants=False, is_coalesced=True
    )


def _identity(batch: Any) -> Any:
    return batch


class DLDataLoader(torch.utils.data.DataLoader):
    """A ``torch.utils.data.DataLoader`` over a :class:`TorchAsyncItr` or :class:`Loader`.

    The iterator already yields whole batches, so ``batch_size`` must be None and loading
    happens in the iterator's own thread (``num_workers=0``). Besides the DataLoader API it
    offers what fastai's ``Learner`` uses: ``device``, ``to()``, ``one_batch()``, ``new()``,
    ``n_inp``, ``bs`` and ``n``, so ``DataLoaders(train_dl, valid_dl)`` (or fastai's
    ``TabularDataLoaders``) can drive ``fit``, ``validate``, ``get_preds``, ``summary`` and
    ``lr_find``.

    Parameters
    ----------
    dataset : TorchAsyncItr or Loader
    batch_size : None
    collate_fn : callable, optional
        Applied to each batch, e.g. ``lambda b: (b[0], b[1], b[2].long())``; default: none.
    pin_memory : bool
    num_workers : int
        Must be 0.
    **kwargs
        Passed to ``torch.utils.data.DataLoader``.

    Examples
    --------
    >>> import pandas as pd
    >>> import tabflow as nvt
    >>> from tabflow.loader.torch import DLDataLoader, TorchAsyncItr
    >>> ds = nvt.Dataset(pd.DataFrame({"c": [1, 2, 3], "x": [1.0, 2.0, 3.0], "y": [0, 1, 1]}))
    >>> itr = TorchAsyncItr(ds, batch_size=2, cats=["c"], conts=["x"], labels=["y"])
    >>> dl = DLDataLoader(itr, collate_fn=lambda b: (b[0], b[1], b[2].long()), batch_size=None)
    >>> len(dl), dl.device, [b[2].tolist() for b in dl]
    (2, device(type='cpu'), [[0, 1], [1]])
    """

    def __init__(
        self,
        dataset: ChunkLoader,
        batch_size: None = None,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        num_workers: int = 0,
        **kwargs: Any,
    ) -> None:
        if batch_size is not None:
            raise ValueError("DLDataLoader: the iterator makes the batches; pass batch_size=None")
        if num_workers:
            raise ValueError(
                "DLDataLoader: num_workers must be 0; the iterator reads ahead in its own thread "
                "(worker processes would each read the whole dataset)"
            )
        self._user_collate = collate_fn
        self._n_inp: int | None = None
        super().__init__(
            dataset, batch_size=None, collate_fn=collate_fn or _identity, pin_memory=pin_memory, num_workers=0, **kwargs
        )

    @property
    def device(self) -> torch.device:
        return self.dataset.device

    def to(self, device: Any) -> "DLDataLoader":
        """Deliver later epochs' batches on ``device``."""
        self.dataset.device = resolve_device(device, getattr(self.dataset.dataset, "engine", "pandas"))
        return self

    def __len__(self) -> int:
        return len(self.dataset)

    @property
    def n_inp(self) -> int:
        """How many leading batch elements are model inputs (fastai splits batches with it).

        fastai's rule: every element of a tuple batch but the last. Without a ``collate_fn``
        that is 2 for ``TorchAsyncItr`` and 1 for ``Loader``; with one (say
        ``FastaiTransform(loader).transform``, which makes ``Loader`` batches 3-tuples) it
        is read off one collated batch, once.
        """
        if self._n_inp is None:
            if self._user_collate is None:
                self._n_inp = 2 if isinstance(self.dataset, TorchAsyncItr) else 1
            else:
                batch = self.one_batch()
                self._n_inp = len(batch) - 1 if isinstance(batch, (tuple, list)) and len(batch) > 1 else 1
        return self._n_inp

    @property
    def bs(self) -> int:
        return self.dataset.batch_size

    @property
    def n(self) -> int:
        """Rows per epoch on this rank."""
        return self.dataset.rows_per_epoch

    def one_batch(self) -> Any:
        """The first batch of an unshuffled epoch, collated; the loader's own state is untouched."""
        probe = self.dataset.new(shuffle=False)
        try:
            batch = next(iter(probe))
        finally:
            probe.shutdown()
        return self.collate_fn(batch)

    def new(self, dataset: ChunkLoader | None = None, **kwargs: Any) -> "DLDataLoader":
        """A DLDataLoader like this one; ``kwargs`` (``shuffle``, ``drop_last``, ...) go to the iterator."""
        if dataset is None:
            dataset = self.dataset.new(**kwargs)
        return type(self)(dataset, collate_fn=self._user_collate, pin_memory=self.pin_memory)

    def state_dict(self) -> dict[str, Any]:
        """The iterator's :meth:`TorchAsyncItr.state_dict` (for mid-epoch checkpoints)."""
        return self.dataset.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.dataset.load_state_dict(state)

    def shutdown(self) -> None:
        """Stop the iterator's background thread."""
        self.dataset.shutdown()

    def __enter__(self) -> "DLDataLoader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


for _cls in (TorchAsyncItr, Loader):
    if _cls.__doc__:  # None under python -OO
        _cls.__doc__ = _cls.__doc__.format(shared=_SHARED_DOC)
del _cls
